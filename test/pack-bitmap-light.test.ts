/**
 * Bitmaps loaded light (what `gitwire upload-pack`, one process per
 * request, does: setLightBitmaps): nothing built per object, lookups
 * through the .idx and the reverse index. The plan is git pack-objects'
 * object set and, part for part (ranks, name hashes, extended ids), the
 * plan of a bitmap loaded with every table; with and without the pack's
 * .rev file, SHA-1 and SHA-256, lookup table or not. And end to end: git
 * fetches through `gitwire upload-pack` from such repositories, fsck'd.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, run, tmp } from './helpers/git.js';
import { addAfter, allTips, diff, makeBitmapRepo, oracleSet, planSet, request, rev, type BitmapRepoOptions } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { bitmapPlan, openBitmap, residentBitmaps, setLightBitmaps } from '../src/pack/bitmap/index.js';
import type { PackObjectsRequest } from '../src/pack/pack-objects.js';
import type { PackPlan } from '../src/pack/produce/plan.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-bitmap-light-'); });
after(() => { setLightBitmaps(false); residentBitmaps.clear(); t.cleanup(); });

/** A bitmap repository; `rev`: repacked with git's .rev file (before the objects added after the bitmap). */
function repoWith(name: string, opts: BitmapRepoOptions & { rev?: boolean }): string {
  const repo = makeBitmapRepo(t.dir, name, { ...opts, after: false });
  if (opts.rev) git(['-c', 'pack.writeReverseIndex=true', '-c', `pack.writeBitmapLookupTable=${opts.lookupTable ?? false}`, 'repack', '-adbq'], { cwd: repo });
  const revs = readdirSync(join(repo, 'objects', 'pack')).filter((f) => f.endsWith('.rev'));
  assert.equal(revs.length, opts.rev ? 1 : 0);
  if (opts.after) addAfter(repo);
  return repo;
}

async function planOf(repoDir: string, req: PackObjectsRequest, light: boolean): Promise<PackPlan> {
  residentBitmaps.clear();
  setLightBitmaps(light);
  const repo = Repository.open(repoDir);
  try {
    const o = await openBitmap(repo.odb);
    assert.ok(o, 'a bitmap');
    assert.equal(o.entry.index!.light, light, 'loaded as asked');
    const plan = await bitmapPlan(repo, req);
    assert.ok(plan, 'a plan from bitmaps');
    return plan;
  } finally {
    repo.close();
    setLightBitmaps(false);
  }
}

function sameParts(a: PackPlan, b: PackPlan, label: string): void {
  assert.equal(a.count, b.count, `${label}: count`);
  assert.equal(a.parts.length, b.parts.length, `${label}: parts`);
  a.parts.forEach((p, i) => {
    const q = b.parts[i]!;
    assert.equal(p.kind, q.kind);
    if (p.kind === 'ranks' && q.kind === 'ranks') {
      assert.deepEqual([...p.ranks], [...q.ranks], `${label}: ranks`);
      assert.deepEqual(p.names && [...p.names], q.names && [...q.names], `${label}: name hashes`);
    } else if (p.kind === 'ids' && q.kind === 'ids') {
      assert.ok(p.ids.equals(q.ids), `${label}: ids`);
      assert.deepEqual(p.names && [...p.names], q.names && [...q.names], `${label}: name hashes of ids`);
    }
  });
}

for (const [name, opts] of [
  ['pack-hashcache', { after: true }],
  ['pack-rev', { after: true, rev: true }],
  ['pack-lookup-nohash-rev', { lookupTable: true, hashCache: false, rev: true }],
  ['sha256-lookup', { objectFormat: 'sha256', lookupTable: true, after: true }],
  ['sha256-rev', { objectFormat: 'sha256', rev: true, after: true }],
] as const) {
  test(`a bitmap loaded light gives git's objects and the plan a resident one gives (${name})`, async () => {
    const repo = repoWith(name, opts);
    const requests: Array<[string, PackObjectsRequest]> = [
      ['clone', request(repo, { wants: allTips(repo) })],
      ['incremental', request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~8')] })],
      ['thin incremental', request(repo, { wants: [rev(repo, 'main'), rev(repo, 'side')], haves: [rev(repo, 'main~8'), rev(repo, 'old')], thin: true })],
      ['tags as wants', request(repo, { wants: [rev(repo, 'v1-outer'), rev(repo, 'treetag'), rev(repo, 'blobtag')], haves: [rev(repo, 'light')] })],
      ['include-tag', request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~6')], includeTag: true })],
      ['clone --filter=blob:none', request(repo, { wants: allTips(repo), filter: 'blob:none' })],
      ['fetch --filter=blob:limit=1500', request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~9')], filter: 'blob:limit=1500' })],
    ];
    for (const [label, req] of requests) {
      const light = await planOf(repo, req, true);
      assert.deepEqual(diff(planSet(light), oracleSet(repo, req)), { onlyA: [], onlyB: [] }, `${label}: light plan vs pack-objects`);
      sameParts(light, await planOf(repo, req, false), label);
      if (req.thin) {
        const has = git(['rev-list', '--objects', ...req.haves.map((h) => h.toString('hex'))], { cwd: repo }).trim().split('\n').map((l) => l.split(' ')[0]!);
        for (const h of has) assert.ok(light.clientHas!(Buffer.from(h, 'hex')), `client has ${h}`);
      }
    }
  });
}

test('a damaged bitmap or .rev loaded light: the right plan or none (with git\'s warning), never a throw', async () => {
  const repo = repoWith('light-damaged', { rev: true, after: true, lookupTable: true });
  const dir = join(repo, 'objects', 'pack');
  const bitmap = join(dir, readdirSync(dir).find((f) => f.endsWith('.bitmap'))!);
  const revFile = join(dir, readdirSync(dir).find((f) => f.endsWith('.rev'))!);
  const req = request(repo, { wants: [rev(repo, 'main'), rev(repo, 'side')], haves: [rev(repo, 'main~9')], includeTag: true });
  const want = oracleSet(repo, req);
  for (const [file, label] of [[bitmap, 'bitmap'], [revFile, '.rev']] as const) {
    const good = readFileSync(file);
    const cuts: Array<[string, Buffer]> = [];
    for (let at = 0; at < good.length; at += Math.max(1, Math.floor(good.length / 12))) { const b = Buffer.from(good); b[at]! ^= 0x41; cuts.push([`byte ${at} flipped`, b]); }
    cuts.push(['truncated', good.subarray(0, good.length >> 1)], ['empty', Buffer.alloc(0)]);
    try {
      for (const [what, bytes] of cuts) {
        chmodSync(file, 0o644);
        writeFileSync(file, bytes);
        residentBitmaps.clear();
        setLightBitmaps(true);
        const r = Repository.open(repo);
        try {
          const warnings: string[] = [];
          const plan = await bitmapPlan(r, req, { warn: (l) => warnings.push(l) });
          if (plan) assert.deepEqual(diff(planSet(plan), want), { onlyA: [], onlyB: [] }, `${label} ${what}`);
          else assert.ok(warnings.length > 0, `${label} ${what}: a warning when the bitmap is not used`);
        } finally { r.close(); setLightBitmaps(false); }
      }
    } finally {
      writeFileSync(file, good);
    }
  }
});

test('git fetches through gitwire upload-pack from repositories with bitmaps, with and without a .rev file', () => {
  for (const [name, opts] of [['e2e', { after: true }], ['e2e-rev', { after: true, rev: true }], ['e2e-sha256-rev', { objectFormat: 'sha256', rev: true, after: true }]] as const) {
    const server = repoWith(name, opts);
    const client = join(t.dir, `${name}-client.git`);
    const fmt = opts.objectFormat ?? 'sha1';
    git(['init', '-q', '--bare', `--object-format=${fmt}`, client]);
    // the client has `old` (from git's own upload-pack), then fetches the rest from gitwire
    git(['-C', client, 'fetch', '-q', '--no-tags', server, '+refs/heads/old:refs/heads/old']);
    for (const v of ['2', '0']) {
      const r = run('git', ['-c', `protocol.version=${v}`, '-C', client, 'fetch', '-q', `--upload-pack=${BIN} upload-pack`, server, '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*']);
      assert.equal(r.status, 0, `${name} v${v}: ${r.stderr.toString()}`);
    }
    assert.equal(git(['-C', client, 'for-each-ref']), git(['-C', server, 'for-each-ref']), `${name}: refs`);
    const fsck = run('git', ['-C', client, 'fsck', '--strict', '--no-dangling']);
    assert.equal(fsck.status, 0, `${name}: fsck: ${fsck.stderr.toString()}`);
    rmSync(client, { recursive: true, force: true });
  }
});
