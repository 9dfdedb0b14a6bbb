/**
 * The property test of #37 end to end: over random repositories (some with
 * reachability bitmaps, one SHA-256) and random requests (wants, haves,
 * shallow grafts, thin, ofs-delta or not, include-tag, every filter), the
 * pack the native producer makes (enumeration, then the writer with its
 * delta search) is accepted by `git index-pack --strict`, and its objects
 * are exactly what git pack-objects packs for the same request (counted
 * the same way: with bitmaps when the producer used them), a thin pack's
 * bases being objects the client has. Seeded: a failure names the seed.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { git, run, tmp } from './helpers/git.js';
import { ORACLE_GIT, gitPackSet, request } from './helpers/pack-walk.js';
import { randomRepo, rng, type RandomRepo } from './helpers/random-repo.js';
import { nativePack, type NativePackResult } from '../src/pack/produce/producer.js';
import type { PackObjectsRequest } from '../src/pack/pack-objects.js';
import { Repository } from '../src/repo/repository.js';

const t = tmp('gitwire-nativeprop-');
after(() => t.cleanup());

const FILTERS = [undefined, undefined, undefined, undefined, 'blob:none', 'blob:limit=200', 'tree:0', 'tree:1', 'object:type=blob',
  'sparse:oid=PATTERNS', 'combine:tree:2+blob:limit=300'];

/** The whole pack the producer makes for `req`, pulled as the relay pulls it. */
async function produce(req: PackObjectsRequest): Promise<{ pack: Buffer; ok: boolean; result?: NativePackResult; stderr: string }> {
  const repo = Repository.open(req.gitDir);
  try {
    let result: NativePackResult | undefined;
    const src = nativePack(repo, req, { onDone: (r) => { result = r; } });
    let stderr = '';
    const progress = (async () => { for await (const b of src.stderr!) stderr += b.toString(); })();
    const chunks: Buffer[] = [];
    const views = [Buffer.alloc(65515), Buffer.alloc(65515), Buffer.alloc(30000)];
    for (;;) {
      const n = await src.readInto!(views);
      if (n === 0) break;
      let left = n;
      for (const v of views) { const k = Math.min(left, v.length); chunks.push(Buffer.from(v.subarray(0, k))); left -= k; if (!left) break; }
    }
    const { ok } = await src.done;
    await progress;
    return { pack: Buffer.concat(chunks), ok, result, stderr };
  } finally { repo.close(); }
}

let seq = 0;

test('random repositories and requests: the native pack is what git packs, and git index-pack --strict takes it', async () => {
  const repos: RandomRepo[] = [randomRepo(t.dir, 5), randomRepo(t.dir, 17), randomRepo(t.dir, 29), randomRepo(t.dir, 43, 'sha256')];
  // reachability bitmaps in two of them (one single pack, one multi-pack index)
  git(['--git-dir', repos[0]!.gitDir, 'repack', '-adbq']);
  git(['--git-dir', repos[2]!.gitDir, 'repack', '-adq', '--write-midx', '--write-bitmap-index']);
  let cases = 0, bitmapCases = 0, thinCases = 0;
  await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => one(seed).catch((e: unknown) => { console.error(e); throw e; })),
    { seed: 3737, numRuns: 120, endOnFailure: true });
  async function one(seed: number): Promise<void> {
    const r = rng(seed);
    const repo = repos[seed % repos.length]!;
    const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
    const some = (a: string[], max: number) => Array.from({ length: Math.floor(r() * (max + 1)) }, () => pick(a));
    const wants = [pick(repo.commits), ...some(repo.commits, 2)];
    if (r() < 0.15 && repo.tags.length) wants.push(pick(repo.tags));
    const haves = some(repo.commits, 3);
    const useShallow = r() < 0.2;
    const req = request(repo.gitDir, {
      wants: wants.map((h) => Buffer.from(h, 'hex')),
      haves: haves.map((h) => Buffer.from(h, 'hex')),
      shallow: useShallow ? some(repo.commits, 2).map((h) => Buffer.from(h, 'hex')) : [],
      useShallow,
      thin: r() < 0.6,
      ofsDelta: r() < 0.8,
      includeTag: r() < 0.5,
      progress: r() < 0.3,
      filter: pick(FILTERS)?.replaceAll('PATTERNS', repo.patterns),
    });
    const got = await produce(req);
    const what = `seed ${seed}: ${JSON.stringify({ wants, haves, thin: req.thin, ofsDelta: req.ofsDelta, useShallow, filter: req.filter, includeTag: req.includeTag })}`;
    assert.ok(got.ok, `${what}: the producer failed: ${got.stderr}`);
    cases++;
    if (got.result?.source === 'bitmap') bitmapCases++;
    if (req.thin) thinCases++;
    // git's own index-pack judges the pack, thin bases from the server's objects (through alternates)
    const scratch = join(t.dir, `scratch-${seq++}.git`);
    git(['init', '-q', '--bare', `--object-format=${repo.gitDir.includes('r43') ? 'sha256' : 'sha1'}`, scratch]);
    mkdirSync(join(scratch, 'objects', 'info'), { recursive: true });
    writeFileSync(join(scratch, 'objects', 'info', 'alternates'), `${join(repo.gitDir, 'objects')}\n`);
    const ix = run(ORACLE_GIT, ['--git-dir', scratch, 'index-pack', '--strict', '--stdin', '--fix-thin', '--keep'], { input: got.pack });
    assert.equal(ix.status, 0, `${what}: git index-pack --strict: ${ix.stderr.toString()}`);
    const idx = join(scratch, 'objects', 'pack', `pack-${ix.stdout.toString().split(/\s+/)[1]}.idx`);
    const inPack = run(ORACLE_GIT, ['show-index', `--object-format=${repo.gitDir.includes('r43') ? 'sha256' : 'sha1'}`], { input: readFileSync(idx) })
      .stdout.toString().split('\n').filter(Boolean).map((l) => l.split(' ')[1]!);
    const count = got.pack.readUInt32BE(8);
    const want = gitPackSet(req, t.dir, got.result?.source === 'bitmap' ? ['pack.useBitmaps=true'] : []);
    assert.equal(count, want.length, `${what}: ${count} objects in the pack, git packs ${want.length}`);
    const set = new Set(inPack);
    const lacking = want.filter((o) => !set.has(o));
    assert.deepEqual(lacking, [], `${what}: objects git packs that are missing`);
    // what index-pack added to complete a thin pack are objects the client has
    const extra = inPack.filter((o) => !want.includes(o));
    assert.equal(extra.length, inPack.length - count, `${what}: the pack holds objects git would not pack`);
    if (extra.length) {
      assert.ok(req.thin, `${what}: a pack that is not thin needed bases`);
      const have = new Set(git(['--git-dir', repo.gitDir, 'rev-list', '--objects', ...haves, '--']).split('\n').map((l) => l.slice(0, l.indexOf(' ') < 0 ? undefined : l.indexOf(' '))));
      for (const o of extra) assert.ok(have.has(o), `${what}: thin base ${o} is not the client's`);
    }
  }
  assert.equal(cases, 120);
  assert.ok(bitmapCases > 5, `bitmaps answered ${bitmapCases} requests`);
  assert.ok(thinCases > 20);
});
