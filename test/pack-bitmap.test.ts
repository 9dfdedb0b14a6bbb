/**
 * Reading git's bitmaps: EWAH round trips, every stored commit bitmap of
 * files git wrote decoded to exactly the objects `git rev-list --objects`
 * reaches, type bitmaps and the name-hash cache; damaged files (flipped
 * bytes, truncation, a bitmap of another pack, a midx without its reverse
 * index) give no plan or the right one, never a wrong one or a throw; and
 * the resident cache (hits, drops when the pack set changes, the budget).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { allTips, bitmapPath, diff, makeBitmapRepo, oracleSet, planSet, request, rev } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { RepositoryPool } from '../src/repo/pool.js';
import { ObjType } from '../src/repo/object-type.js';
import { childNameHash } from '../src/pack/name-hash.js';
import { Bitset, BitmapCorrupt, Ewah, bitmapPlan, openBitmap, packNameHash, residentBitmaps, setBitmapBudget, DEFAULT_BITMAP_BUDGET, TypeIndex } from '../src/pack/bitmap/index.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-bitmap-'); });
after(() => t.cleanup());

/** A seeded generator (xorshift32). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x / 2 ** 32; };
}

function randomBitset(r: () => number, bits: number): Bitset {
  const b = new Bitset(bits);
  // runs of zeros, runs of ones and noise, as real reachability bitmaps have
  let i = 0;
  while (i < bits) {
    const kind = r();
    const len = Math.floor(r() * 300) + 1;
    for (let k = 0; k < len && i < bits; k++, i++) if (kind < 0.3 ? true : kind < 0.6 ? false : r() < 0.5) b.set(i);
  }
  return b;
}

function bitsOf(b: Bitset, n: number): number[] {
  const out: number[] = [];
  b.forEach((i) => out.push(i), 0, n);
  return out;
}

test('EWAH: compress, serialize, parse and combine round trip', () => {
  const r = rng(42);
  for (const bits of [0, 1, 63, 64, 65, 1000, 4096, 20011]) {
    for (let k = 0; k < 5; k++) {
      const a = randomBitset(r, bits), b = randomBitset(r, bits);
      const ea = Ewah.fromBitset(a, bits);
      const bytes = ea.serialize();
      const back = Ewah.parse(bytes, 0, bytes.length, bits);
      assert.equal(back.end, bytes.length);
      assert.deepEqual(bitsOf(back.ewah.toBitset(bits), bits), bitsOf(a, bits), `round trip of ${bits} bits`);
      assert.equal(back.ewah.count(), a.count(0, bits));
      // or / xor / and-not against the plain words
      const eb = Ewah.fromBitset(b, bits);
      const or = a.words.slice(), xor = a.words.slice(), andNot = a.words.slice();
      for (let i = 0; i < or.length; i++) { or[i]! |= b.words[i]!; xor[i]! ^= b.words[i]!; andNot[i]! &= ~b.words[i]!; }
      const o = new Bitset(0, a.words.slice()); eb.orInto(o);
      const x = new Bitset(0, a.words.slice()); eb.xorInto(x);
      const an = new Bitset(0, a.words.slice()); eb.andNotInto(an);
      assert.deepEqual(bitsOf(o, bits), bitsOf(new Bitset(0, or), bits));
      assert.deepEqual(bitsOf(x, bits), bitsOf(new Bitset(0, xor), bits));
      assert.deepEqual(bitsOf(an, bits), bitsOf(new Bitset(0, andNot), bits));
    }
  }
});

test('EWAH: damaged input is refused, never read past its end', () => {
  const b = new Bitset(200);
  for (let i = 0; i < 200; i += 3) b.set(i);
  const good = Ewah.fromBitset(b, 200).serialize();
  for (let cut = 0; cut < good.length; cut++) assert.throws(() => Ewah.parse(good.subarray(0, cut), 0, cut, 200), BitmapCorrupt, `cut at ${cut}`);
  // a bit past the number of objects
  assert.throws(() => Ewah.parse(good, 0, good.length, 150), BitmapCorrupt);
  // a run-length word claiming more literal words than there are
  const bad = Buffer.from(good);
  bad.writeUInt32BE(0x7fffffff, 8);
  assert.throws(() => Ewah.parse(bad, 0, bad.length, 200), BitmapCorrupt);
  // a huge run of ones
  const ones = Buffer.alloc(8 + 8 + 4);
  ones.writeUInt32BE(64, 0); ones.writeUInt32BE(1, 4);
  ones.writeUInt32BE(0x1, 8); ones.writeUInt32BE(0xffffffff, 12);
  assert.throws(() => Ewah.parse(ones, 0, ones.length, 1 << 20), BitmapCorrupt);
  // a huge run of zeros is fine and costs nothing
  const zeros = Buffer.from(ones); zeros.writeUInt32BE(0xfffffffe, 12);
  const z = Ewah.parse(zeros, 0, zeros.length, 64);
  assert.equal(z.ewah.count(), 0);
});

test('name hashes: a path\'s hash continues its parent\'s, blanks skipped', () => {
  const seg = (s: string) => Buffer.from(s);
  const a = childNameHash(0, true, seg('dir one'), 0, 7);
  const b = childNameHash(a, false, seg('sub'), 0, 3);
  const c = childNameHash(b, false, seg('f\t.c'), 0, 4);
  assert.equal(c, packNameHash('dir one/sub/f\t.c'));
  assert.equal(packNameHash('dir one/sub/f\t.c'), packNameHash('dirone/sub/f.c'));
  assert.equal(packNameHash(''), 0);
  // by hand: (0x61 << 24 >>> 2) + (0x62 << 24)
  assert.equal(packNameHash('ab'), 0x7a400000);
});

/** The objects `git rev-list --objects` reaches from `what`. */
function reach(repo: string, what: string): Set<string> {
  return new Set(git(['rev-list', '--objects', what], { cwd: repo }).trim().split('\n').map((l) => l.split(' ')[0]!));
}

for (const [name, opts] of [
  ['pack', { lookupTable: false }],
  ['pack-lookup', { lookupTable: true }],
  ['midx', { layout: 'midx-many' as const, lookupTable: true }],
  ['sha256', { objectFormat: 'sha256' as const, lookupTable: true }],
] as const) {
  test(`every stored bitmap of a file git wrote (${name}) is what git reaches`, async () => {
    const repo = makeBitmapRepo(t.dir, `decode-${name}`, opts);
    const r = Repository.open(repo);
    try {
      const o = await openBitmap(r.odb);
      assert.ok(o);
      const { bound } = o;
      const idx = bound.index;
      const oidOfBit = (b: number) => (bound.midx ? bound.midx.oid(idx.posOfBit[b]!) : bound.packs[0]!.index.oid(idx.posOfBit[b]!)).toString('hex');
      const positions = idx.file.commitPositions();
      assert.ok(positions.length >= 5, 'several commits have bitmaps');
      for (const p of positions) {
        const e = bound.commitBitmap(p);
        assert.ok(e);
        const bits = e.toBitset(idx.objectCount);
        const got = new Set<string>();
        bits.forEach((b) => got.add(oidOfBit(b)), 0, idx.objectCount);
        const c = bound.midx ? bound.midx.oid(p).toString('hex') : bound.packs[0]!.index.oid(p).toString('hex');
        assert.deepEqual(diff(got, reach(repo, c)), { onlyA: [], onlyB: [] }, `bitmap of ${c}`);
      }
      // the type bitmaps
      const ids: string[] = [];
      for (let b = 0; b < idx.objectCount; b++) ids.push(oidOfBit(b));
      const types = git(['cat-file', '--batch-check=%(objecttype)'], { cwd: repo, input: ids.join('\n') + '\n' }).trim().split('\n');
      const ti: Record<string, TypeIndex> = { commit: TypeIndex.Commit, tree: TypeIndex.Tree, blob: TypeIndex.Blob, tag: TypeIndex.Tag };
      types.forEach((ty, b) => assert.ok(idx.file.types[ti[ty]!].get(b), `type of bit ${b}`));
      // the name-hash cache holds pack_name_hash() of the path git found each object at
      if (idx.file.hasNameHashes) {
        const paths = new Map<string, string>();
        for (const l of git(['rev-list', '--objects', '--all'], { cwd: repo }).trim().split('\n')) {
          const sp = l.indexOf(' ');
          if (sp > 0) paths.set(l.slice(0, sp), l.slice(sp + 1));
        }
        let checked = 0;
        for (let b = 0; b < idx.objectCount; b++) {
          const path = paths.get(ids[b]!);
          if (path === undefined) continue;
          // (a midx bitmap's cache has names only for the objects its writer walked to)
          if (bound.midx && idx.nameOfBit![b] === 0) continue;
          assert.equal(idx.nameOfBit![b], packNameHash(path), `name hash of ${path}`);
          checked++;
        }
        if (!bound.midx) assert.ok(checked > 50);
      }
    } finally { r.close(); }
  });
}

/** Write `bytes` over a read-only file git made. */
function overwrite(path: string, bytes: Buffer): void {
  chmodSync(path, 0o644);
  unlinkSync(path);
  writeFileSync(path, bytes);
}

test('damaged bitmaps: no plan or the right one, with git\'s message, never a throw', async () => {
  const repo = makeBitmapRepo(t.dir, 'damaged', { lookupTable: true, hashCache: true, after: true });
  const path = bitmapPath(repo);
  const good = readFileSync(path);
  const clone = request(repo, { wants: allTips(repo) });
  const fetch = request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~9')] });
  const want = { clone: oracleSet(repo, clone), fetch: oracleSet(repo, fetch) };
  const damages: Array<[string, Buffer]> = [];
  const step = Math.max(1, Math.floor(good.length / 24));
  for (let at = 0; at < good.length; at += step) { const b = Buffer.from(good); b[at]! ^= 0x5a; damages.push([`byte ${at} flipped`, b]); }
  for (const at of [4, 5, 6, 7, 8, 11, good.length - 1, good.length - 21]) { const b = Buffer.from(good); b[at]! ^= 0x01; damages.push([`bit at ${at} flipped`, b]); }
  for (const len of [0, 3, 11, 31, 40, Math.floor(good.length / 2), good.length - 1]) damages.push([`truncated to ${len}`, good.subarray(0, len)]);
  damages.push(['grown by a byte', Buffer.concat([good, Buffer.from([0])])]);
  const lines = new Set<string>();
  for (const [what, bytes] of damages) {
    overwrite(path, bytes);
    for (const [label, req] of [['clone', clone], ['fetch', fetch]] as const) {
      const r = Repository.open(repo);
      try {
        const warnings: string[] = [];
        const plan = await bitmapPlan(r, req, { warn: (l) => warnings.push(l) });
        if (plan) assert.deepEqual(diff(planSet(plan), want[label]), { onlyA: [], onlyB: [] }, `${what}: ${label}`);
        else {
          assert.ok(warnings.length > 0, `${what}: a warning when the bitmap is ignored`);
          for (const w of warnings) { assert.match(w, /^(error|warning): /); lines.add(w.replace(path, '<file>')); }
        }
      } finally { r.close(); }
    }
  }
  // git's words for the damage it names
  assert.ok(lines.has('error: corrupted bitmap index file (wrong header)'), [...lines].join('\n'));
  assert.ok(lines.has('error: corrupted bitmap index (too small)'));
  assert.ok([...lines].some((l) => l === "error: bitmap file '<file>' has invalid checksum"));
  assert.ok([...lines].some((l) => /^error: unsupported version '\d+' for bitmap index file$/.test(l)));
  overwrite(path, good);
});

test('a bitmap of another pack is ignored (checksum), and git\'s midx warnings', async () => {
  const a = makeBitmapRepo(t.dir, 'other-a', {});
  const b = makeBitmapRepo(t.dir, 'other-b', { commits: 30 });
  const pa = bitmapPath(a), pb = bitmapPath(b);
  chmodSync(pa, 0o644);
  copyFileSync(pb, pa);
  const r = Repository.open(a);
  try {
    const warnings: string[] = [];
    const plan = await bitmapPlan(r, request(a, { wants: allTips(a) }), { warn: (l) => warnings.push(l) });
    assert.equal(plan, undefined);
    assert.ok(warnings.some((w) => /checksum/.test(w)), warnings.join('\n'));
  } finally { r.close(); }
  // a midx bitmap whose reverse index is gone (git 2.39 writes it as a .rev file)
  const m = makeBitmapRepo(t.dir, 'midx-norev', { layout: 'midx-many' });
  const dir = join(m, 'objects', 'pack');
  const rev0 = readdirSync(dir).find((x) => x.startsWith('multi-pack-index-') && x.endsWith('.rev'));
  if (rev0) rmSync(join(dir, rev0));
  else {
    // the reverse index is the midx's RIDX chunk (git 2.39 and later): rename it in the chunk table
    const midxPath = join(dir, 'multi-pack-index');
    const b = readFileSync(midxPath);
    const at = b.indexOf('RIDX', 12, 'latin1');
    assert.ok(at > 0 && at < 12 + 12 * (b[6]! + 1));
    b.write('XIDR', at, 'latin1');
    overwrite(midxPath, b);
  }
  const rm = Repository.open(m);
  try {
    const warnings: string[] = [];
    const plan = await bitmapPlan(rm, request(m, { wants: allTips(m) }), { warn: (l) => warnings.push(l) });
    // no midx bitmap: no plan (the packs have no bitmaps of their own here)
    assert.equal(plan, undefined);
    assert.deepEqual(warnings, ['warning: multi-pack bitmap is missing required reverse index']);
  } finally { rm.close(); }
});

test('resident bitmaps: loaded once, shared, dropped with the pack set, within the budget', async () => {
  const repo = makeBitmapRepo(t.dir, 'resident', {});
  const req = request(repo, { wants: [rev(repo, 'main')] });
  const s0 = { ...residentBitmaps.stats };
  const r1 = Repository.open(repo);
  const r2 = Repository.open(repo);
  assert.ok(await bitmapPlan(r1, req));
  assert.ok(await bitmapPlan(r1, req));
  assert.ok(await bitmapPlan(r2, req));
  assert.equal(residentBitmaps.stats.loads - s0.loads, 1, 'loaded once for both copies');
  assert.equal(residentBitmaps.stats.hits - s0.hits, 2);
  const size = residentBitmaps.size;
  r1.close();
  assert.equal(residentBitmaps.size, size, 'still held by the other copy');
  r2.close();
  assert.equal(residentBitmaps.size, size - 1, 'dropped with its last holder');

  // through the pool: a repack makes a new pack and bitmap; the old one goes once its lease ends
  const pool = new RepositoryPool();
  const l1 = pool.acquire(repo);
  assert.ok(await bitmapPlan(l1.repo, req));
  const work = join(t.dir, 'resident-work');
  git(['clone', '-q', repo, work]);
  commit(work, 'more', { 'more.txt': 'more\n' });
  git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
  git(['repack', '-adbq'], { cwd: repo });
  const drops = residentBitmaps.stats.drops;
  const loads = residentBitmaps.stats.loads;
  const l2 = pool.acquire(repo);
  assert.notEqual(l2.repo, l1.repo, 'the pool reopened the repository');
  const p2 = await bitmapPlan(l2.repo, request(repo, { wants: [rev(repo, 'main')] }));
  assert.ok(p2);
  assert.equal(residentBitmaps.stats.loads - loads, 1, 'the new bitmap is loaded');
  l1.release();
  assert.equal(residentBitmaps.stats.drops - drops, 1, 'the old bitmap is dropped with the old repository');
  l2.release();
  pool.close();

  // requests that arrive together share one load
  const fresh = makeBitmapRepo(t.dir, 'resident-together', {});
  const fa = Repository.open(fresh), fb = Repository.open(fresh);
  const before2 = residentBitmaps.stats.loads;
  const both = await Promise.all([bitmapPlan(fa, request(fresh, { wants: [rev(fresh, 'main')] })), bitmapPlan(fb, request(fresh, { wants: [rev(fresh, 'main')] }))]);
  assert.ok(both[0] && both[1]);
  assert.equal(residentBitmaps.stats.loads - before2, 1);
  fa.close();
  fb.close();

  // the budget: a second repository's bitmap pushes the first out
  const other = makeBitmapRepo(t.dir, 'resident-2', {});
  const ra = Repository.open(repo), rb = Repository.open(other);
  try {
    setBitmapBudget(1);
    const ev = residentBitmaps.stats.evictions;
    assert.ok(await bitmapPlan(ra, request(repo, { wants: [rev(repo, 'main')] })));
    assert.ok(await bitmapPlan(rb, request(other, { wants: [rev(other, 'main')] })));
    assert.ok(residentBitmaps.stats.evictions > ev);
    assert.equal(residentBitmaps.size, 1);
    // evicted: loaded again, and still right
    const again = await bitmapPlan(ra, request(repo, { wants: [rev(repo, 'main')] }));
    assert.deepEqual(diff(planSet(again!), oracleSet(repo, request(repo, { wants: [rev(repo, 'main')] }))), { onlyA: [], onlyB: [] });
    assert.throws(() => setBitmapBudget(-1), RangeError);
  } finally {
    setBitmapBudget(DEFAULT_BITMAP_BUDGET);
    ra.close();
    rb.close();
  }
});

test('the extended part carries types and name hashes of objects after the bitmap', async () => {
  const repo = makeBitmapRepo(t.dir, 'ext', { after: true });
  const r = Repository.open(repo);
  try {
    const plan = await bitmapPlan(r, request(repo, { wants: [rev(repo, 'main'), rev(repo, 'v2')], haves: [rev(repo, 'main~5')] }));
    const ids = plan!.parts.find((p) => p.kind === 'ids');
    assert.ok(ids?.kind === 'ids' && ids.types && ids.names);
    const hl = ids.ids.length / ids.count;
    const lines: string[] = [];
    for (let i = 0; i < ids.count; i++) lines.push(ids.ids.subarray(i * hl, (i + 1) * hl).toString('hex'));
    const types = git(['cat-file', '--batch-check=%(objecttype)'], { cwd: repo, input: lines.join('\n') + '\n' }).trim().split('\n');
    const code: Record<string, ObjType> = { commit: ObjType.Commit, tree: ObjType.Tree, blob: ObjType.Blob, tag: ObjType.Tag };
    types.forEach((ty, i) => assert.equal(ids.types![i], code[ty], `type of ${lines[i]}`));
    const looseBlob = git(['rev-parse', 'main:loose.txt'], { cwd: repo }).trim();
    const k = lines.indexOf(looseBlob);
    assert.ok(k >= 0);
    assert.equal(ids.names[k], packNameHash('loose.txt'));
  } finally { r.close(); }
});
