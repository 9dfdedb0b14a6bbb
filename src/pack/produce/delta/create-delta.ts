/**
 * The delta encoder: a target as copies from an indexed base and inserts,
 * in git's delta format (gitformat-pack(5), "Deltified representation"):
 *
 *   base size, result size   varints, 7 bits a byte, low bits first
 *   copy    1xxxxxxx         offset bytes (flags 0x01–0x08), size bytes
 *                            (0x10–0x40; 0 means 0x10000); only nonzero
 *                            bytes are written
 *   insert  0nnnnnnn         n literal bytes, 1 ≤ n ≤ 127
 *
 * The search is git's create_delta() (diff-delta.c): roll a Rabin hash over
 * the target, look the last 16 bytes up in the base's index, take the
 * longest match among the bucket's blocks (stop early at 4096 bytes),
 * extend it backwards over bytes just inserted, and copy it in pieces of at
 * most 64 KiB. Same tables, same choices: our deltas are git's, byte for
 * byte, which keeps packs the size git makes them.
 *
 * Output goes to one scratch buffer reused across calls (no allocation per
 * byte or per op); the result is copied out once.
 */
import { createDeltaIndex, type DeltaIndex } from './delta-index.js';
import { RABIN_SHIFT, RABIN_WINDOW, T, U } from './rabin.js';

/** the longest any one step writes: two header varints, an op, a window of literals and a copy (git's MAX_OP_SIZE) */
const MAX_OP_SIZE = 5 + 5 + 1 + RABIN_WINDOW + 7;
/** a match this long is good enough: stop looking for a longer one */
const GOOD_ENOUGH = 4096;
/** the largest copy one op can say */
const MAX_COPY = 0x10000;
/** longest insert op */
const MAX_INSERT = 0x7f;

/** matches are compared byte by byte up to this long, then natively */
const SHORT_MATCH = 64;
const LONG_CHUNK = 512;

function asBuffer(a: Uint8Array): Buffer {
  return Buffer.isBuffer(a) ? a : Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/** scratch output, kept between calls while small */
let scratch: Uint8Array = new Uint8Array(64 * 1024);
const KEEP_SCRATCH = 1024 * 1024;

function grow(used: number): Uint8Array {
  const next = new Uint8Array(Math.max(scratch.length * 2, used + MAX_OP_SIZE * 2));
  next.set(scratch.subarray(0, used));
  scratch = next;
  return next;
}

function putVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

/**
 * A delta from `base` to `target`; undefined when it would be larger than
 * `maxSize` bytes (no limit when maxSize is undefined), and for an empty
 * target (its delta would be the two sizes alone, shorter than the 4 bytes
 * git's patch_delta() accepts). An empty base gives inserts only.
 */
export function createDelta(base: Uint8Array, target: Uint8Array, maxSize?: number): Buffer | undefined {
  return createDeltaFrom(createDeltaIndex(base), target, maxSize);
}

/** createDelta() against a base already indexed (one index serves many targets). */
export function createDeltaFrom(index: DeltaIndex, target: Uint8Array, maxSize?: number): Buffer | undefined {
  const limit = maxSize ?? Infinity;
  if (limit < 0 || target.length === 0) return undefined;
  const base = index.base;
  const baseLen = base.length;
  const { heads, pos, vals, mask } = index;
  const top = target.length;
  const bse = asBuffer(base);
  const tgt = asBuffer(target);
  let out = scratch;
  if (out.length < MAX_OP_SIZE * 2) out = grow(0);
  let cap = out.length - MAX_OP_SIZE;

  let outpos = putVarint(out, 0, baseLen);
  outpos = putVarint(out, outpos, top);

  // the first window goes in as literals: it primes the hash
  let d = 0;
  let val = 0;
  outpos++; // the insert's count, written when the run ends
  for (; d < RABIN_WINDOW && d < top; d++) {
    const c = target[d]!;
    out[outpos++] = c;
    val = ((val << 8) | c) ^ T[val >>> RABIN_SHIFT]!;
  }
  let inscnt = d;

  let moff = 0;
  let msize = 0;
  while (d < top) {
    if (msize < GOOD_ENOUGH) {
      val ^= U[target[d - RABIN_WINDOW]!]!;
      val = ((val << 8) | target[d]!) ^ T[val >>> RABIN_SHIFT]!;
      const b = val & mask;
      const end = heads[b + 1]!;
      for (let e = heads[b]!; e < end; e++) {
        if (vals[e] !== val) continue;
        const ref = pos[e]!;
        let refSize = baseLen - ref;
        if (refSize > top - d) refSize = top - d;
        if (refSize <= msize) break;
        let n = 0;
        while (n < SHORT_MATCH && n < refSize && base[ref + n] === target[d + n]) n++;
        if (n === SHORT_MATCH) {
          // a long match: compare natively, a chunk at a time, then finish byte by byte
          while (n + LONG_CHUNK <= refSize && tgt.compare(bse, ref + n, ref + n + LONG_CHUNK, d + n, d + n + LONG_CHUNK) === 0) n += LONG_CHUNK;
          while (n < refSize && base[ref + n] === target[d + n]) n++;
        }
        if (msize < n) {
          msize = n;
          moff = ref;
          if (msize >= GOOD_ENOUGH) break;
        }
      }
    }

    if (msize < 4) {
      // a literal
      if (!inscnt) outpos++;
      out[outpos++] = target[d++]!;
      if (++inscnt === MAX_INSERT) {
        out[outpos - inscnt - 1] = inscnt;
        inscnt = 0;
      }
      msize = 0;
    } else {
      if (inscnt) {
        // take back literals that the match also covers
        while (moff && base[moff - 1] === target[d - 1]) {
          msize++;
          moff--;
          d--;
          outpos--;
          if (--inscnt === 0) { outpos--; break; } // the whole run went: drop its count byte too
        }
        if (inscnt) out[outpos - inscnt - 1] = inscnt;
        inscnt = 0;
      }
      const left = msize < MAX_COPY ? 0 : msize - MAX_COPY;
      msize -= left;
      const op = outpos++;
      let bits = 0x80;
      if (moff & 0xff) { out[outpos++] = moff & 0xff; bits |= 0x01; }
      if (moff & 0xff00) { out[outpos++] = (moff >>> 8) & 0xff; bits |= 0x02; }
      if (moff & 0xff0000) { out[outpos++] = (moff >>> 16) & 0xff; bits |= 0x04; }
      if (moff & 0xff000000) { out[outpos++] = (moff >>> 24) & 0xff; bits |= 0x08; }
      if (msize & 0xff) { out[outpos++] = msize & 0xff; bits |= 0x10; }
      if (msize & 0xff00) { out[outpos++] = (msize >>> 8) & 0xff; bits |= 0x20; }
      out[op] = bits;
      d += msize;
      moff += msize;
      msize = left;
      if (moff > 0xffffffff) msize = 0;
      if (msize < GOOD_ENOUGH) {
        val = 0;
        for (let j = d - RABIN_WINDOW; j < d; j++) val = ((val << 8) | target[j]!) ^ T[val >>> RABIN_SHIFT]!;
      }
    }

    // past the limit at the end of a step: given up, as git's create_delta() gives up there (its
    // buffer is the limit plus one step), though pending literals might still have been taken back
    // by a match extended backwards: the search then takes the deltas git takes, and no others
    if (outpos > limit) return dropScratch(undefined);
    if (outpos >= cap) {
      out = grow(outpos);
      cap = out.length - MAX_OP_SIZE;
    }
  }
  if (inscnt) out[outpos - inscnt - 1] = inscnt;
  if (outpos > limit) return dropScratch(undefined);

  const result = Buffer.allocUnsafe(outpos);
  result.set(out.subarray(0, outpos));
  return dropScratch(result);
}

/** `r`, after letting a scratch buffer grown for a large delta go */
function dropScratch<R>(r: R): R {
  if (scratch.length > KEEP_SCRATCH) scratch = new Uint8Array(64 * 1024);
  return r;
}
