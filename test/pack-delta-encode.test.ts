/**
 * The delta encoder (src/pack/produce/delta/create-delta.ts): applyDelta()
 * rebuilds every target (random buffers, edge cases, a property test), the
 * format's limits hold (inserts ≤ 127 bytes, copies ≤ 64 KiB, maxSize), and
 * for the pairs git's pack-objects chose in a real history our delta is
 * git's delta, byte for byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import { createDelta, createDeltaFrom, createDeltaIndex } from '../src/pack/produce/delta/index.js';
import { applyDelta } from '../src/repo/delta.js';
import { PackFile } from '../src/repo/pack.js';
import { git, tmp } from './helpers/git.js';
import { writeHistory } from './helpers/delta-history.js';

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

function randomBytes(rnd: () => number, n: number, alphabet = 256): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rnd() * alphabet);
  return b;
}

/** Walk a delta's ops: every op is well formed, inserts ≤ 127, copies ≤ 64 KiB and inside the base. */
function ops(delta: Buffer, baseLen: number): { copies: number; inserts: number; copied: number } {
  let p = 0;
  const varint = () => { let v = 0, m = 1, c: number; do { c = delta[p++]!; v += (c & 0x7f) * m; m *= 128; } while (c & 0x80); return v; };
  assert.equal(varint(), baseLen);
  varint();
  let copies = 0, inserts = 0, copied = 0;
  while (p < delta.length) {
    const op = delta[p++]!;
    if (op & 0x80) {
      let off = 0, size = 0;
      for (let i = 0; i < 4; i++) if (op & (1 << i)) off += delta[p++]! * 2 ** (8 * i);
      for (let i = 0; i < 3; i++) if (op & (0x10 << i)) size += delta[p++]! * 2 ** (8 * i);
      assert.equal(op & 0x40, 0, 'copies are at most 64 KiB: no third size byte');
      if (size === 0) size = 0x10000;
      assert.ok(off + size <= baseLen);
      copies++;
      copied += size;
    } else {
      assert.ok(op > 0 && op <= 127, `insert of ${op}`);
      p += op;
      inserts++;
    }
  }
  assert.equal(p, delta.length);
  return { copies, inserts, copied };
}

function roundTrip(base: Buffer, target: Buffer): Buffer {
  const d = createDelta(base, target);
  assert.ok(d && d.length >= 4, 'git refuses deltas under 4 bytes');
  assert.ok(applyDelta(base, d).equals(target), 'applyDelta rebuilds the target');
  ops(d, base.length);
  return d;
}

test('random bases and targets made of slices of the base, inserts and repeats', () => {
  const rnd = prng(1);
  for (let t = 0; t < 400; t++) {
    const n = Math.floor(rnd() * 6000);
    const base = randomBytes(rnd, n, t % 3 === 0 ? 4 : 256);
    const parts: Buffer[] = [];
    for (let k = Math.floor(rnd() * 12); k > 0; k--) {
      const a = Math.floor(rnd() * n);
      parts.push(base.subarray(a, a + Math.floor(rnd() * 500)));
      if (rnd() < 0.4) parts.push(randomBytes(rnd, Math.floor(rnd() * 300)));
    }
    const target = Buffer.concat(parts);
    if (target.length === 0) assert.equal(createDelta(base, target), undefined);
    else roundTrip(base, target);
  }
});

test('edge cases: empty base or target, identical, nothing in common, tiny, repeated patterns', () => {
  const rnd = prng(2);
  const some = randomBytes(rnd, 3000);
  // empty target: no delta (it would be the two sizes alone, which git's patch_delta() refuses)
  assert.equal(createDelta(some, Buffer.alloc(0)), undefined);
  assert.equal(createDelta(Buffer.alloc(0), Buffer.alloc(0)), undefined);
  // empty base: inserts only, in runs of 127
  const onlyInserts = ops(roundTrip(Buffer.alloc(0), some), 0);
  assert.equal(onlyInserts.copies, 0);
  assert.equal(onlyInserts.inserts, Math.ceil(3000 / 127));
  // identical: one copy after the primed window is taken back
  const same = roundTrip(some, some);
  assert.ok(same.length < 12, `identical: ${same.length} bytes`);
  assert.deepEqual(ops(same, some.length), { copies: 1, inserts: 0, copied: 3000 });
  // nothing in common: no copy, and the delta is the target plus op bytes
  const a = randomBytes(rnd, 5000, 16);
  const b = Buffer.from(a.map((x) => x + 100));
  const none = roundTrip(a, b);
  assert.equal(ops(none, a.length).copies, 0);
  // tiny
  for (let n = 1; n <= 40; n++) {
    roundTrip(some.subarray(0, n), some.subarray(0, n));
    roundTrip(some.subarray(5, 5 + n), some.subarray(0, n));
    roundTrip(some.subarray(0, n), some.subarray(100, 100 + n));
  }
  // a base of one byte value, a target of another pattern, and long runs (the bucket limit)
  const zeros = Buffer.alloc(200_000);
  const abab = Buffer.from('ab'.repeat(100_000));
  roundTrip(zeros, abab);
  assert.ok(roundTrip(zeros, Buffer.concat([zeros.subarray(0, 150_000), Buffer.from('x'), zeros.subarray(0, 50_000)])).length < 40);
  const pattern = Buffer.from('0123456789abcdef'.repeat(20_000)); // every block hashes the same
  const idx = createDeltaIndex(pattern);
  assert.equal(idx.pos.length, 1, 'identical consecutive blocks are indexed once');
  roundTrip(pattern, Buffer.concat([pattern.subarray(7, 90_000), Buffer.from('--'), pattern]));
  // many blocks in one bucket: at most 64 kept
  const crowded = Buffer.concat(Array.from({ length: 500 }, (_, i) => Buffer.concat([Buffer.from('0123456789abcdef'), Buffer.from(String(i).padStart(16, '.'))])));
  const ci = createDeltaIndex(crowded);
  for (let b = 0; b + 1 < ci.heads.length; b++) assert.ok(ci.heads[b + 1]! - ci.heads[b]! <= 64);
  roundTrip(crowded, Buffer.concat([crowded.subarray(1000), crowded.subarray(0, 1000)]));
});

test('copies longer than 64 KiB are split, offsets past 16 MiB use four bytes; a target over 16 MiB', () => {
  const rnd = prng(3);
  const base = randomBytes(rnd, 17 * 1024 * 1024 + 333);
  const target = Buffer.concat([base.subarray(16 * 1024 * 1024 + 5), Buffer.from('inserted text'), base.subarray(0, 300_000), base.subarray(0x1000000, 0x1000000 + 70_000)]);
  const d = roundTrip(base, target);
  const o = ops(d, base.length);
  assert.ok(o.copies >= 8 && o.inserts === 1, JSON.stringify(o));
  // and a 17 MiB target against a small base
  roundTrip(base.subarray(0, 4096), base);
});

test('maxSize: a delta larger than the limit is undefined, one that fits is the same delta', () => {
  const rnd = prng(4);
  const base = randomBytes(rnd, 20_000, 8);
  const target = Buffer.concat([base.subarray(0, 5000), randomBytes(rnd, 3000), base.subarray(9000)]);
  const full = createDelta(base, target)!;
  assert.deepEqual(createDelta(base, target, full.length + 1000), full);
  assert.equal(createDelta(base, target, full.length - 1), undefined);
  assert.equal(createDelta(base, target, 10), undefined);
  // plain typed arrays (not Buffers), views at an offset included
  const wide = new Uint8Array(base.length + 7);
  wide.set(base, 7);
  assert.deepEqual(createDelta(wide.subarray(7), new Uint8Array(target)), full);
  // one index, several targets
  const idx = createDeltaIndex(base);
  for (const t of [target, base, base.subarray(100), Buffer.from('x')]) assert.ok(applyDelta(base, createDeltaFrom(idx, t)!).equals(t));
});

// Two trees of five entries that differ in the first entry's id (from a repository made by test
// pack-progress-git). Without a limit the delta is 37 bytes. git 2.55's pack-objects tried this pair with
// max_size 49 and made no delta: create_delta() gives up once its output passes the limit at the end of
// a step (its buffer is the limit and one step), and here the new id's literals pass it before the match
// after them is extended back over their last bytes. The search takes the deltas git takes, no others.
const TREE_A = Buffer.from('3130303634342030007273c0fa8c522b7eed7762a353d46f7768e9b6f2313030363434203100aabe6ec3909c9d4871f8f89ef88ca3b6795ebd293130303634342032002bd5a0a98a36cc08ada88b804d3be047e6aa5b8a313030363434203300409940768f2a684935a7d15a29f96e82c487f439313030363434203400a45fd52cc5891570d6299fab38643103c3955474', 'hex');
const TREE_B = Buffer.from('313030363434203000209e3ef4b6247ce746048d5711befda46206d235313030363434203100aabe6ec3909c9d4871f8f89ef88ca3b6795ebd293130303634342032002bd5a0a98a36cc08ada88b804d3be047e6aa5b8a313030363434203300409940768f2a684935a7d15a29f96e82c487f439313030363434203400a45fd52cc5891570d6299fab38643103c3955474', 'hex');

test('maxSize as git\'s create_delta(): the output passing the limit at the end of a step gives up, though backward extension would bring it under', () => {
  const full = createDelta(TREE_A, TREE_B)!;
  assert.equal(full.length, 37);
  assert.ok(applyDelta(TREE_A, full).equals(TREE_B));
  assert.equal(createDelta(TREE_A, TREE_B, 49), undefined, 'git makes no delta at max_size 49');
  assert.equal(createDelta(TREE_A, TREE_B, full.length), undefined);
  // a limit the output never passes gives the same delta
  assert.deepEqual(createDelta(TREE_A, TREE_B, 1000), full);
});

test('property: applyDelta(base, createDelta(base, target)) is target', () => {
  const chunk = fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((a) => ({ kind: 'bytes' as const, a })),
    fc.record({ kind: fc.constant('slice' as const), at: fc.nat(), len: fc.nat({ max: 2000 }) }),
  );
  fc.assert(fc.property(fc.uint8Array({ maxLength: 4000 }), fc.array(chunk, { maxLength: 12 }), (baseArr, chunks) => {
    const base = Buffer.from(baseArr);
    const target = Buffer.concat(chunks.map((c) => c.kind === 'bytes' ? Buffer.from(c.a) : base.subarray(base.length ? c.at % base.length : 0).subarray(0, c.len)));
    const d = createDelta(base, target);
    if (target.length === 0) return assert.equal(d, undefined);
    assert.ok(d && d.length >= 4 && applyDelta(base, d).equals(target));
    ops(d, base.length);
    const limited = createDelta(base, target, d.length - 1);
    assert.equal(limited, undefined);
  }), { seed: 20261204, numRuns: 300 });
});

test('our delta is the delta git pack-objects wrote, byte for byte, for every pair it chose in a real history', () => {
  const { dir, cleanup } = tmp('gitwire-delta-');
  try {
    const repo = join(dir, 'r.git');
    git(['init', '-q', '--bare', repo]);
    const blobs = writeHistory(repo);
    const byOid = new Map(blobs.map((b) => [b.oid, b]));
    const input = blobs.map((b) => `${b.oid} ${b.path}\n`).join('');
    const name = git(['pack-objects', '-q', '--window=10', '--depth=50', '--threads=1', join(repo, 'objects/pack/pack')], { cwd: repo, input }).trim();
    const packPath = join(repo, `objects/pack/pack-${name}`);
    const pack = new PackFile(`${packPath}.pack`, `${packPath}.idx`, 20);
    let compared = 0;
    try {
      for (const line of git(['verify-pack', '-v', `${packPath}.idx`]).split('\n')) {
        const f = line.split(/\s+/);
        if (f.length < 7 || !byOid.has(f[0]!)) continue;
        const h = pack.header(Number(f[4]));
        const theirs = pack.inflate(h);
        const ours = createDelta(byOid.get(f[6]!)!.data, byOid.get(f[0]!)!.data);
        assert.ok(ours && ours.equals(theirs), `delta of ${f[0]} against ${f[6]}: ${ours?.length} bytes, git's ${theirs.length}`);
        compared++;
      }
    } finally { pack.close(); }
    assert.ok(compared >= blobs.length / 2, `${compared} deltas compared of ${blobs.length} blobs`);
  } finally { cleanup(); }
});
