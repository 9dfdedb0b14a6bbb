/**
 * A pack's reverse index (src/repo/reverse-index.ts, radix-sort.ts) against
 * the `.rev` file git writes for the same pack: sorted in WebAssembly, in
 * JavaScript (bucket pass and radix passes), read from the file; SHA-1 and
 * SHA-256; an index whose offsets sit in the 64-bit table (git index-pack
 * --index-version=2,<offset>) and one with an offset past 4 GiB; a .rev
 * whose checksum is wrong is not used.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, renameSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { history } from './helpers/bitmap-repo.js';
import { PackFile } from '../src/repo/pack.js';
import { PackIndex } from '../src/repo/pack-index.js';
import { RADIX_SORT_WASM, radixSort } from '../src/repo/radix-sort.js';
import { radixSortModule } from '../src/repo/radix-sort-asm.js';
import { sortByOffset } from '../src/repo/reverse-index.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-rev-'); });
after(() => t.cleanup());

interface Fixture { pack: string; idx: string; rev: string; hashLen: number; order: number[]; offsets: Map<string, number> }

/**
 * A repository packed by git with a .rev file; `largeAbove`: the index
 * rewritten by `git index-pack --index-version=2,<n>`, which puts every
 * offset above n in the 64-bit table (the .rev is written again with it).
 */
function fixture(name: string, format: 'sha1' | 'sha256', largeAbove?: number): Fixture {
  const repo = join(t.dir, name);
  git(['init', '-q', '--bare', `--object-format=${format}`, repo]);
  git(['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], { cwd: repo, input: history({ n: 30, mark0: 0, branch: 'main', time0: 1700000000, seed: 5, side: true }) });
  git(['-c', 'pack.writeReverseIndex=true', 'repack', '-adq'], { cwd: repo });
  const dir = join(repo, 'objects', 'pack');
  const base = join(dir, readdirSync(dir).find((f) => f.endsWith('.pack'))!.slice(0, -5));
  if (largeAbove !== undefined) {
    for (const ext of ['.idx', '.rev']) { chmodSync(base + ext, 0o644); renameSync(base + ext, `${base}${ext}.old`); }
    git(['index-pack', '--rev-index', `--index-version=2,${largeAbove}`, '-o', `${base}.idx`, `${base}.pack`], { cwd: repo });
  }
  const hashLen = format === 'sha256' ? 32 : 20;
  const rev = readFileSync(`${base}.rev`);
  const n = (rev.length - 12 - 2 * hashLen) / 4;
  const order: number[] = [];
  for (let r = 0; r < n; r++) order.push(rev.readUInt32BE(12 + 4 * r));
  const offsets = new Map<string, number>();
  for (const line of git(['show-index', `--object-format=${format}`], { cwd: repo, input: readFileSync(`${base}.idx`) }).trim().split('\n')) {
    const [off, oid] = line.split(' ');
    offsets.set(oid!, Number(off));
  }
  return { pack: `${base}.pack`, idx: `${base}.idx`, rev: `${base}.rev`, hashLen, order, offsets };
}

/** The pack's light order, built with the .rev file moved away (`how`: which sort), or with it there. */
function orderOf(f: Fixture, how: 'file' | 'wasm' | 'js-buckets' | 'js-radix'): PackFile {
  const saved = { wasm: PackFile.wasmSort, moves: PackFile.sortMoves };
  if (how !== 'file') renameSync(f.rev, `${f.rev}.away`);
  PackFile.wasmSort = how === 'wasm';
  PackFile.sortMoves = how === 'js-radix' ? -1 : saved.moves;
  try {
    const p = new PackFile(f.pack, f.idx, f.hashLen);
    p.order();
    return p;
  } finally {
    PackFile.wasmSort = saved.wasm;
    PackFile.sortMoves = saved.moves;
    if (how !== 'file') renameSync(`${f.rev}.away`, f.rev);
  }
}

function checkOrder(f: Fixture, p: PackFile, label: string): void {
  try {
    const o = p.order();
    assert.deepEqual([...o.positions], f.order, `${label}: positions are git's .rev`);
    const idx = p.index;
    for (let r = 0; r < f.order.length; r++) {
      const pos = f.order[r]!;
      const off = f.offsets.get(idx.oid(pos).toString('hex'));
      assert.equal(idx.offset(pos), off, `${label}: offset of position ${pos}`);
      assert.equal(o.offsetAt(r), off);
      assert.equal(p.rankOfPosition(pos), r, `${label}: rank of position ${pos}`);
      assert.equal(p.positionAtRank(r), pos);
      assert.equal(p.rankOfOffset(off!), r);
      // an offset inside an entry is no entry's
      assert.equal(p.rankOfOffset(off! + 1), r + 1 < f.order.length && o.offsetAt(r + 1) === off! + 1 ? r + 1 : -1);
    }
    // the full form agrees (what cat-file --unordered and the pack writer read)
    assert.deepEqual([...p.positionsInPackOrder()], f.order, `${label}: full form`);
  } finally {
    p.close();
  }
}

for (const [name, format, large] of [
  ['sha1', 'sha1', undefined],
  ['sha256', 'sha256', undefined],
  ['sha1-64bit-offsets', 'sha1', 0x100],
  ['sha256-64bit-offsets', 'sha256', 0x100],
] as const) {
  test(`the reverse index of a pack (${name}) is the .rev file git writes: sorted in WebAssembly, in JavaScript, or read`, () => {
    const f = fixture(name, format, large);
    assert.ok(f.order.length > 100);
    if (large !== undefined) {
      // the index really holds 64-bit entries
      const b = readFileSync(f.idx);
      const n = f.order.length;
      const offsAt = 8 + 1024 + n * f.hashLen + n * 4;
      let big = 0;
      for (let i = 0; i < n; i++) if (b.readUInt32BE(offsAt + i * 4) & 0x80000000) big++;
      assert.ok(big > n / 2, `most offsets in the 64-bit table (${big} of ${n})`);
    }
    for (const how of ['file', 'wasm', 'js-buckets', 'js-radix'] as const) checkOrder(f, orderOf(f, how), `${name} ${how}`);
    // a .rev whose checksum does not match its bytes is not used (two entries swapped): the sort answers
    const good = readFileSync(f.rev);
    const bad = Buffer.from(good);
    bad.copy(bad, 12, 16, 20);
    good.copy(bad, 16, 12, 16);
    chmodSync(f.rev, 0o644);
    writeFileSync(f.rev, bad);
    try { checkOrder(f, orderOf(f, 'file'), `${name} bad .rev`); } finally { writeFileSync(f.rev, good); }
  });
}

test('an index with an offset past 4 GiB is sorted as numbers, the offset last', () => {
  const f = fixture('past-4g', 'sha1', 0x100);
  const b = Buffer.from(readFileSync(f.idx));
  const n = f.order.length;
  const offsAt = 8 + 1024 + n * 20 + n * 4;
  const largeAt = offsAt + n * 4;
  // the entry whose 64-bit slot is the first one: moved 4 GiB further
  let pos = -1;
  for (let i = 0; i < n; i++) if (b.readUInt32BE(offsAt + i * 4) === 0x80000000) pos = i;
  assert.ok(pos >= 0);
  b.writeUInt32BE(b.readUInt32BE(largeAt) + 1, largeAt);
  const idx = new PackIndex(b, 20, f.idx);
  assert.equal(idx.offsetKeys(), undefined);
  const p = new PackFile(join(t.dir, 'none.pack'), idx, 20);
  const want = f.order.filter((x) => x !== pos).concat(pos);
  assert.deepEqual([...p.order().positions], want);
  assert.equal(p.rankOfPosition(pos), n - 1);
  assert.equal(p.order().offsetAt(n - 1), idx.offset(pos));
  assert.ok(idx.offset(pos) >= 2 ** 32);
});

test('the WebAssembly radix sort and the JavaScript sorts agree on any keys', () => {
  // the module's bytes are what its assembler writes
  assert.equal(Buffer.from(radixSortModule()).toString('base64'), RADIX_SORT_WASM);
  let x = 12345;
  const rnd = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
  for (const n of [0, 1, 2, 3, 100, 65537, 200000]) {
    for (const kind of ['random', 'high bits', 'dense', 'duplicates']) {
      const keys = new Uint32Array(n);
      for (let i = 0; i < n; i++) {
        keys[i] = kind === 'random' ? rnd() : kind === 'high bits' ? (0x80000000 | rnd()) >>> 0 : kind === 'dense' ? (n - i) * 3 : rnd() & 0xff;
      }
      const w = radixSort(keys);
      assert.ok(w, 'WebAssembly runs here');
      for (const moves of [64, -1]) {
        const j = sortByOffset(keys.slice(), moves);
        assert.deepEqual([...w.offsets], [...j.offsets], `${kind} ${n}: keys (moves ${moves})`);
        // (a stable sort: equal keys keep their positions' order)
        assert.deepEqual([...w.positions], [...j.positions], `${kind} ${n}: positions (moves ${moves})`);
      }
      for (let i = 1; i < n; i++) assert.ok(w.offsets[i - 1]! <= w.offsets[i]!);
      for (let i = 0; i < n; i++) assert.equal(keys[w.positions[i]!], w.offsets[i]);
    }
  }
});
