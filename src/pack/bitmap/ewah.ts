/**
 * EWAH compressed bitmaps in git's on-disk form (ewah/ewah_io.c, the
 * JavaEWAH serialization): a 32-bit bit count, a 32-bit word count, that
 * many 64-bit words, the 32-bit position of the last run-length word; all
 * big-endian.
 *
 * The words are chunks: a run-length word (RLW) — bit 0 the repeated bit,
 * bits 1-32 how many 64-bit words of it, bits 33-63 how many literal words
 * follow — then those literal words. Within a word lower bits come first.
 *
 * Parsing checks the whole chain once: every chunk inside the buffer and
 * no bit set at or past the number of objects the bitmap is for. After
 * that the combining loops cannot read out of range, and each runs in
 * time bounded by the word count plus the (bounded) decoded length.
 */
import { LITTLE } from '../../repo/reverse-index.js';
import { Bitset } from './bitset.js';
import { BitmapCorrupt } from './corrupt.js';

const TWO32 = 2 ** 32;

export class Ewah {
  /**
   * @param words the 64-bit words as (low, high) 32-bit pairs
   * @param bitSize the bit count from the header (informative)
   */
  constructor(readonly words: Uint32Array, readonly bitSize: number) {}

  /** Bytes held. */
  get bytes(): number { return this.words.byteLength; }

  /**
   * Parse the EWAH at `buf[at…end)`. Returns it and where it ends.
   * `limitBits`: the number of objects; a set bit at or past it is corruption.
   */
  static parse(buf: Buffer, at: number, end: number, limitBits: number): { ewah: Ewah; end: number } {
    if (end - at < 4) throw new BitmapCorrupt('corrupt ewah bitmap: eof before bit size');
    const bitSize = buf.readUInt32BE(at);
    if (end - at < 8) throw new BitmapCorrupt('corrupt ewah bitmap: eof before length');
    const n = buf.readUInt32BE(at + 4);
    const dataLen = n * 8;
    const avail = end - at - 8;
    if (avail < dataLen) throw new BitmapCorrupt(`corrupt ewah bitmap: eof in data (${dataLen - avail} bytes short)`);
    if (avail - dataLen < 4) throw new BitmapCorrupt('corrupt ewah bitmap: eof before rlw');
    const words = new Uint32Array(n * 2);
    if (LITTLE) {
      // each 64-bit word's bytes reversed in native code: (low, high) 32-bit pairs
      const view = Buffer.from(words.buffer, words.byteOffset, dataLen);
      buf.copy(view, 0, at + 8, at + 8 + dataLen);
      view.swap64();
    } else {
      let p = at + 8;
      for (let i = 0; i < n; i++, p += 8) {
        words[2 * i + 1] = buf.readUInt32BE(p);
        words[2 * i] = buf.readUInt32BE(p + 4);
      }
    }
    const e = new Ewah(words, bitSize);
    e.check(limitBits);
    return { ewah: e, end: at + 8 + dataLen + 4 };
  }

  /** Walk the chunks once: in bounds, and no bit at or past `limitBits`. */
  private check(limitBits: number): void {
    const w = this.words;
    const n = w.length >>> 1;
    const fullWords = Math.floor(limitBits / 64);
    const tailBits = limitBits % 64;
    let i = 0;
    let pos = 0; // in 64-bit words
    while (i < n) {
      const lo = w[2 * i]!, hi = w[2 * i + 1]!;
      const run = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
      const lits = hi >>> 1;
      if (lo & 1 && run > 0 && pos + run > fullWords) throw new BitmapCorrupt('corrupt ewah bitmap: bit past the end of the object list');
      pos += run;
      if (i + 1 + lits > n) throw new BitmapCorrupt('corrupt ewah bitmap: literal words past the end');
      for (let k = 0; k < lits; k++) {
        const llo = w[2 * (i + 1 + k)]!, lhi = w[2 * (i + 1 + k) + 1]!;
        const at = pos + k;
        if ((llo | lhi) === 0 || at < fullWords) continue;
        if (at > fullWords || tailBits === 0) throw new BitmapCorrupt('corrupt ewah bitmap: bit past the end of the object list');
        // the last, partial word: bits [tailBits, 64) must be clear
        const badLo = tailBits >= 32 ? 0 : llo & ~((1 << tailBits) - 1);
        const badHi = tailBits <= 32 ? lhi : lhi & ~((1 << (tailBits - 32)) - 1);
        if (badLo || badHi) throw new BitmapCorrupt('corrupt ewah bitmap: bit past the end of the object list');
      }
      pos += lits;
      i += 1 + lits;
    }
  }

  /** dst |= this */
  orInto(dst: Bitset): void {
    this.apply(dst, 0);
  }

  /** dst ^= this */
  xorInto(dst: Bitset): void {
    this.apply(dst, 1);
  }

  /** dst &= ~this */
  andNotInto(dst: Bitset): void {
    this.apply(dst, 2);
  }

  private apply(dst: Bitset, op: 0 | 1 | 2): void {
    const w = this.words;
    const n = w.length >>> 1;
    const last = this.lastWord();
    if (last > 0) dst.grow(last * 64 - 1);
    const d = dst.words;
    let i = 0;
    let pos = 0;
    while (i < n) {
      const lo = w[2 * i]!, hi = w[2 * i + 1]!;
      const run = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
      const lits = hi >>> 1;
      if (lo & 1 && run > 0) {
        const a = 2 * pos, b = 2 * (pos + run);
        if (op === 0) d.fill(0xffffffff, a, b);
        else if (op === 1) for (let k = a; k < b; k++) d[k] = ~d[k]!;
        else d.fill(0, a, b);
      }
      pos += run;
      let q = 2 * (i + 1), t = 2 * pos;
      const qe = q + 2 * lits;
      if (op === 0) for (; q < qe; q++, t++) d[t]! |= w[q]!;
      else if (op === 1) for (; q < qe; q++, t++) d[t]! ^= w[q]!;
      else for (; q < qe; q++, t++) d[t]! &= ~w[q]!;
      pos += lits;
      i += 1 + lits;
    }
  }

  /** One past the last 64-bit word that may hold a set bit (after check(): within the object count). */
  private lastWord(): number {
    const w = this.words;
    const n = w.length >>> 1;
    let i = 0, pos = 0, last = 0;
    while (i < n) {
      const lo = w[2 * i]!, hi = w[2 * i + 1]!;
      const run = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
      const lits = hi >>> 1;
      pos += run;
      if (lo & 1 && run > 0) last = pos;
      pos += lits;
      if (lits > 0) last = pos;
      i += 1 + lits;
    }
    return last;
  }

  /** Decoded into a new bitset with room for `bits` bits. */
  toBitset(bits: number): Bitset {
    const b = new Bitset(bits);
    this.orInto(b);
    return b;
  }

  /** Number of set bits. */
  count(): number {
    const b = this.toBitset(0);
    return b.count();
  }

  /** EWAH-compress the first `bits` bits of `b` (trailing zero words are left out). */
  static fromBitset(b: Bitset, bits = b.capacity): Ewah {
    const d = b.words;
    let nw = Math.min(Math.ceil(bits / 64), Math.ceil(d.length / 2));
    const at = (k: number, h: 0 | 1) => (2 * k + h < d.length ? d[2 * k + h]! : 0);
    while (nw > 0 && at(nw - 1, 0) === 0 && at(nw - 1, 1) === 0) nw--;
    // classify: 0 zero word, 1 all ones, 2 literal
    const kind = (k: number) => {
      const lo = at(k, 0), hi = at(k, 1);
      if ((lo | hi) === 0) return 0;
      if (lo === 0xffffffff && hi === 0xffffffff) return 1;
      return 2;
    };
    const out: number[] = [];
    let k = 0;
    while (k < nw) {
      const r = out.length;
      out.push(0, 0);
      let runBit = 0, run = 0;
      const k0 = kind(k);
      if (k0 !== 2) {
        runBit = k0;
        while (k < nw && kind(k) === runBit && run < TWO32 - 1) { run++; k++; }
      }
      let lits = 0;
      while (k < nw && kind(k) === 2 && lits < 0x7fffffff) { out.push(at(k, 0), at(k, 1)); lits++; k++; }
      out[r] = ((run << 1) | runBit) >>> 0;
      out[r + 1] = (((run >>> 31) & 1) | (lits << 1)) >>> 0;
    }
    return new Ewah(Uint32Array.from(out), bits);
  }

  /** The on-disk bytes (for tests and tools). */
  serialize(): Buffer {
    const n = this.words.length >>> 1;
    const b = Buffer.alloc(12 + n * 8);
    b.writeUInt32BE(this.bitSize >>> 0, 0);
    b.writeUInt32BE(n, 4);
    let rlw = 0;
    for (let i = 0; i < n;) {
      rlw = i;
      const lits = this.words[2 * i + 1]! >>> 1;
      i += 1 + lits;
    }
    for (let i = 0; i < n; i++) {
      b.writeUInt32BE(this.words[2 * i + 1]!, 8 + i * 8);
      b.writeUInt32BE(this.words[2 * i]!, 12 + i * 8);
    }
    b.writeUInt32BE(rlw, 8 + n * 8);
    return b;
  }
}
