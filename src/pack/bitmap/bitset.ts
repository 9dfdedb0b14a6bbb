/**
 * A plain (uncompressed) bitmap over object positions: 32-bit words, bit
 * i in word i >>> 5 at (i & 31). What EWAH bitmaps are decoded into to be
 * combined (git's `struct bitmap`). It grows on demand: positions past the
 * bitmapped objects are the extended ones (objects outside the bitmapped
 * pack, numbered from there on), as git's ext_index does.
 */

/** bits set in a 32-bit word */
export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

export class Bitset {
  words: Uint32Array;

  /** @param bits room for this many bits to start with */
  constructor(bits = 0, words?: Uint32Array) {
    this.words = words ?? new Uint32Array((bits + 31) >>> 5);
  }

  /** bits this bitmap holds room for (a multiple of 32) */
  get capacity(): number { return this.words.length * 32; }

  /** Bytes held. */
  get bytes(): number { return this.words.byteLength; }

  /** Make room for bit `i` (words added are zero). */
  grow(i: number): void {
    const need = (i >>> 5) + 1;
    if (need <= this.words.length) return;
    const w = new Uint32Array(Math.max(need, this.words.length + (this.words.length >>> 1) + 16));
    w.set(this.words);
    this.words = w;
  }

  get(i: number): boolean {
    const w = i >>> 5;
    return w < this.words.length && (this.words[w]! & (1 << (i & 31))) !== 0;
  }

  set(i: number): void {
    const w = i >>> 5;
    if (w >= this.words.length) this.grow(i);
    this.words[w]! |= 1 << (i & 31);
  }

  clear(i: number): void {
    const w = i >>> 5;
    if (w < this.words.length) this.words[w]! &= ~(1 << (i & 31));
  }

  /** this |= other */
  or(other: Bitset): void {
    const o = other.words;
    if (o.length > this.words.length) this.grow(o.length * 32 - 1);
    const w = this.words;
    for (let i = 0; i < o.length; i++) w[i]! |= o[i]!;
  }

  /** this &= ~other */
  andNot(other: Bitset): void {
    const w = this.words, o = other.words;
    const n = Math.min(w.length, o.length);
    for (let i = 0; i < n; i++) w[i]! &= ~o[i]!;
  }

  /** this &= ~other over words [from, to) only */
  andNotRange(other: Bitset, fromWord: number, toWord: number): void {
    const w = this.words, o = other.words;
    const n = Math.min(w.length, o.length, toWord);
    for (let i = fromWord; i < n; i++) w[i]! &= ~o[i]!;
  }

  /** Bits set in [from, to) (all by default). */
  count(from = 0, to = this.capacity): number {
    to = Math.min(to, this.capacity);
    if (from >= to) return 0;
    const w = this.words;
    let n = 0;
    const fw = from >>> 5, lw = (to - 1) >>> 5;
    if (fw === lw) return popcount32(w[fw]! & rangeMask(from & 31, ((to - 1) & 31) + 1));
    n += popcount32(w[fw]! & rangeMask(from & 31, 32));
    for (let i = fw + 1; i < lw; i++) { const x = w[i]!; if (x) n += popcount32(x); }
    n += popcount32(w[lw]! & rangeMask(0, ((to - 1) & 31) + 1));
    return n;
  }

  /** Call `fn` with each set bit in [from, to), ascending. */
  forEach(fn: (i: number) => void, from = 0, to = this.capacity): void {
    to = Math.min(to, this.capacity);
    const w = this.words;
    for (let wi = from >>> 5; wi * 32 < to; wi++) {
      let x = w[wi]!;
      if (!x) continue;
      const base = wi * 32;
      if (base < from) x &= rangeMask(from - base, 32);
      if (base + 32 > to) x &= rangeMask(0, to - base);
      while (x) {
        const t = x & -x;
        fn(base + 31 - Math.clz32(t));
        x ^= t;
      }
    }
  }

  /** The set bits in [from, to), ascending, mapped through `map` when given. */
  collect(from: number, to: number, map?: Uint32Array): Uint32Array {
    return this.extract(from, to, map).values;
  }

  /**
   * The set bits in [from, to), ascending: each mapped through `map` when
   * given, and beside it `side[bit]` when `side` is given. One pass, no
   * call per bit (a full clone sets every bit of hundreds of thousands).
   */
  extract(from: number, to: number, map?: Uint32Array, side?: Uint32Array): { values: Uint32Array; side?: Uint32Array } {
    to = Math.min(to, this.capacity);
    const n = this.count(from, to);
    const values = new Uint32Array(n);
    const sideOut = side ? new Uint32Array(n) : undefined;
    const w = this.words;
    let k = 0;
    for (let wi = from >>> 5; wi * 32 < to; wi++) {
      let x = w[wi]!;
      if (!x) continue;
      const base = wi * 32;
      if (base < from) x &= rangeMask(from - base, 32);
      if (base + 32 > to) x &= rangeMask(0, to - base);
      if (x === 0xffffffff || x === -1) {
        for (let i = base; i < base + 32; i++, k++) {
          values[k] = map ? map[i]! : i;
          if (sideOut) sideOut[k] = side![i]!;
        }
        continue;
      }
      while (x) {
        const t = x & -x;
        const i = base + 31 - Math.clz32(t);
        values[k] = map ? map[i]! : i;
        if (sideOut) sideOut[k] = side![i]!;
        k++;
        x ^= t;
      }
    }
    return sideOut ? { values, side: sideOut } : { values };
  }
}

/** A mask of bits [lo, hi) of a 32-bit word (0 <= lo <= hi <= 32). */
function rangeMask(lo: number, hi: number): number {
  if (hi <= lo) return 0;
  const upper = hi === 32 ? 0xffffffff : ((1 << hi) - 1) >>> 0;
  const lower = lo === 0 ? 0 : ((1 << lo) - 1) >>> 0;
  return (upper & ~lower) >>> 0;
}
