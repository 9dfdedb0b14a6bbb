/**
 * An index of a delta base: where each 16-byte block of it lies, by its
 * Rabin hash (as git's create_delta_index() in diff-delta.c). One index
 * serves every target tried against the same base in a delta window.
 *
 * Blocks are taken every 16 bytes, skipping the first byte (the encoder
 * primes its hash on the target's first 16 bytes). Of a run of identical
 * consecutive blocks only the lowest is kept. A bucket holding more than 64
 * blocks is thinned out evenly to 64, so pathological input (a base of one
 * repeated block) cannot make matching O(base × target).
 *
 * Layout, typed arrays only: `heads[b] … heads[b+1]` is bucket b's range
 * in `pos` (the offset just past each block's first byte of match, as git's
 * entry->ptr: the block's last byte) and `vals` (its full hash), in
 * ascending offset.
 */
import { RABIN_SHIFT, RABIN_WINDOW, T } from './rabin.js';

/** most blocks kept in one hash bucket (git's HASH_LIMIT) */
const HASH_LIMIT = 64;

export class DeltaIndex {
  constructor(
    readonly base: Uint8Array,
    /** bucket of a hash: hash & mask */
    readonly mask: number,
    readonly heads: Uint32Array,
    readonly pos: Uint32Array,
    readonly vals: Int32Array,
  ) {}

  /** bytes this index holds besides the base (what a window's memory bound counts) */
  get memSize(): number { return this.heads.byteLength + this.pos.byteLength + this.vals.byteLength; }
}

/**
 * The hash of each block (block j: bytes 16j+1 … 16j+16). Each hash is a
 * chain of dependent steps; four blocks at a time let the processor run
 * four chains side by side (about twice as fast as one at a time).
 */
function blockHashes(base: Uint8Array, blocks: number): Int32Array {
  const out = new Int32Array(blocks);
  let j = 0;
  for (; j + 4 <= blocks; j += 4) {
    const a = j * RABIN_WINDOW;
    let v0 = 0, v1 = 0, v2 = 0, v3 = 0;
    for (let i = 1; i <= RABIN_WINDOW; i++) {
      v0 = ((v0 << 8) | base[a + i]!) ^ T[v0 >>> RABIN_SHIFT]!;
      v1 = ((v1 << 8) | base[a + 16 + i]!) ^ T[v1 >>> RABIN_SHIFT]!;
      v2 = ((v2 << 8) | base[a + 32 + i]!) ^ T[v2 >>> RABIN_SHIFT]!;
      v3 = ((v3 << 8) | base[a + 48 + i]!) ^ T[v3 >>> RABIN_SHIFT]!;
    }
    out[j] = v0; out[j + 1] = v1; out[j + 2] = v2; out[j + 3] = v3;
  }
  for (; j < blocks; j++) {
    const a = j * RABIN_WINDOW;
    let v = 0;
    for (let i = 1; i <= RABIN_WINDOW; i++) v = ((v << 8) | base[a + i]!) ^ T[v >>> RABIN_SHIFT]!;
    out[j] = v;
  }
  return out;
}

export function createDeltaIndex(base: Uint8Array): DeltaIndex {
  const len = base.length;
  // offsets are 32 bits in the delta format: index no block past 4 GiB
  let entries = len > 0 ? Math.floor((Math.min(len, 0xffffffff) - 1) / RABIN_WINDOW) : 0;
  const want = entries >>> 2;
  let bits = 4;
  while (2 ** bits < want) bits++;
  const hsize = 2 ** bits;
  const mask = hsize - 1;

  // 1. blocks from the last one down (a repeat of the block above replaces it: the lowest wins)
  const hashes = blockHashes(base, entries);
  const tmpPos = new Uint32Array(entries);
  const tmpVal = new Int32Array(entries);
  const counts = new Uint32Array(hsize + 1);
  let k = 0;
  let prev = -1;
  for (let j = entries - 1; j >= 0; j--) {
    const at = j * RABIN_WINDOW;
    const val = hashes[j]!;
    if (val === prev) {
      tmpPos[k - 1] = at + RABIN_WINDOW;
    } else {
      prev = val;
      tmpPos[k] = at + RABIN_WINDOW;
      tmpVal[k] = val;
      counts[val & mask]!++;
      k++;
    }
  }
  entries = k;

  // 2. group by bucket, ascending offset (the blocks were found in descending order)
  const start = new Uint32Array(hsize + 1);
  for (let b = 0; b < hsize; b++) start[b + 1] = start[b]! + counts[b]!;
  const fill = start.slice(0, hsize);
  const grpPos = new Uint32Array(entries);
  const grpVal = new Int32Array(entries);
  for (let i = entries - 1; i >= 0; i--) {
    const b = tmpVal[i]! & mask;
    const at = fill[b]!++;
    grpPos[at] = tmpPos[i]!;
    grpVal[at] = tmpVal[i]!;
  }

  // 3. thin out crowded buckets evenly, keeping HASH_LIMIT blocks spread over the base
  let kept = 0;
  for (let b = 0; b < hsize; b++) kept += Math.min(counts[b]!, HASH_LIMIT);
  const heads = new Uint32Array(hsize + 1);
  const pos = new Uint32Array(kept);
  const vals = new Int32Array(kept);
  let o = 0;
  for (let b = 0; b < hsize; b++) {
    heads[b] = o;
    const from = start[b]!;
    const c = counts[b]!;
    if (c <= HASH_LIMIT) {
      for (let i = 0; i < c; i++) { pos[o] = grpPos[from + i]!; vals[o++] = grpVal[from + i]!; }
      continue;
    }
    // keep one, then skip as many as the excess owed so far (git's accumulator: exactly HASH_LIMIT kept)
    let acc = 0;
    let i = 0;
    while (i < c) {
      pos[o] = grpPos[from + i]!;
      vals[o++] = grpVal[from + i]!;
      acc += c - HASH_LIMIT;
      let skip = 0;
      while (acc > 0) { skip++; acc -= HASH_LIMIT; }
      i += 1 + skip;
    }
  }
  heads[hsize] = o;
  return new DeltaIndex(base, mask, heads, o === kept ? pos : pos.slice(0, o), o === kept ? vals : vals.slice(0, o));
}
