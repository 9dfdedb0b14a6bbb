/**
 * A growing hash table from object id to a dense number (0, 1, 2, … in
 * the order added), the ids kept back to back in one buffer: what a
 * bitmap walk uses for the objects it meets outside the bitmapped pack(s)
 * (their extended positions) and for the commits it has queued. A lookup
 * probes the table with the id where it lies (a tree's bytes, a request's
 * id) and compares it in place: no string made per id, no buffer per id.
 *
 * The slot of an id comes from a keyed mix of its bytes 1-8 (a seed drawn
 * per process), so ids made to share their leading bytes do not pile up in
 * one run of slots.
 */
import { randomBytes } from 'node:crypto';

const seed = randomBytes(8);
const SEED_A = seed.readUInt32LE(0) | 1;
const SEED_B = seed.readUInt32LE(4);

function slotHash(b: Buffer, at: number): number {
  const x = ((b[at + 1]! << 24) | (b[at + 2]! << 16) | (b[at + 3]! << 8) | b[at + 4]!) ^ SEED_B;
  const y = (b[at + 5]! << 24) | (b[at + 6]! << 16) | (b[at + 7]! << 8) | b[at + 8]!;
  let h = Math.imul(x, 0x9e3779b1) ^ Math.imul(y ^ SEED_A, 0x85ebca77);
  h ^= h >>> 15;
  return Math.imul(h, 0xc2b2ae3d) ^ (h >>> 13);
}

export class OidIndex {
  /** number + 1 per slot (0: empty); at most half full */
  private slots: Int32Array;
  private mask: number;
  private store: Buffer;
  private n = 0;

  constructor(readonly hashLen: number, room = 64) {
    let size = 64;
    while (size < room * 2) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
    this.store = Buffer.allocUnsafe(Math.max(room, 16) * hashLen);
  }

  /** ids held */
  get count(): number { return this.n; }

  /** Bytes held. */
  get bytes(): number { return this.slots.byteLength + this.store.length; }

  /** The number of the id at buf[at…at+hashLen), or -1. */
  find(buf: Buffer, at: number): number {
    const s = this.slots, m = this.mask, st = this.store, hl = this.hashLen;
    let h = slotHash(buf, at) & m;
    for (;;) {
      const v = s[h]!;
      if (v === 0) return -1;
      const o = (v - 1) * hl;
      let k = 0;
      while (k < hl && st[o + k] === buf[at + k]) k++;
      if (k === hl) return v - 1;
      h = (h + 1) & m;
    }
  }

  /** The number of the id at buf[at…], added (numbered next) when it is not held. */
  add(buf: Buffer, at: number): number {
    const s = this.slots, m = this.mask, st = this.store, hl = this.hashLen;
    let h = slotHash(buf, at) & m;
    for (;;) {
      const v = s[h]!;
      if (v === 0) break;
      const o = (v - 1) * hl;
      let k = 0;
      while (k < hl && st[o + k] === buf[at + k]) k++;
      if (k === hl) return v - 1;
      h = (h + 1) & m;
    }
    const i = this.n++;
    if ((i + 1) * hl > this.store.length) {
      const grown = Buffer.allocUnsafe(this.store.length * 2);
      this.store.copy(grown, 0, 0, i * hl);
      this.store = grown;
    }
    buf.copy(this.store, i * hl, at, at + hl);
    s[h] = i + 1;
    if (this.n * 2 > s.length) this.rehash();
    return i;
  }

  /** Copy the id numbered `i` into `to` at `at` (no view made). */
  copyId(i: number, to: Buffer, at: number): void {
    const hl = this.hashLen;
    this.store.copy(to, at, i * hl, (i + 1) * hl);
  }

  /** The id numbered `i` (a view: valid as long as this table, not to be written). */
  id(i: number): Buffer {
    const hl = this.hashLen;
    return this.store.subarray(i * hl, (i + 1) * hl);
  }

  private rehash(): void {
    const size = this.slots.length * 2;
    const s = new Int32Array(size);
    const m = size - 1;
    const st = this.store, hl = this.hashLen;
    for (let i = 0; i < this.n; i++) {
      let h = slotHash(st, i * hl) & m;
      while (s[h] !== 0) h = (h + 1) & m;
      s[h] = i + 1;
    }
    this.slots = s;
    this.mask = m;
  }
}
