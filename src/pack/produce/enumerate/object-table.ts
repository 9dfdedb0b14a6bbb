/**
 * Every object a walk has met, by number: ids back to back in one buffer,
 * an open-addressing table from id to number, and per number git's object
 * flags and type. A walk over millions of objects holds a few bytes per
 * object here, never a JavaScript object per object.
 */
import type { ObjType } from '../../../repo/object-type.js';

/** git's object flags, as far as enumeration uses them (object.h / revision.h) */
export const enum Flag {
  Seen = 1 << 0,
  Uninteresting = 1 << 1,
  Shown = 1 << 3,
  Added = 1 << 4,
  NotUserGiven = 1 << 6,
  /** list-objects-filter.c FILTER_SHOWN_BUT_REVISIT */
  ShownButRevisit = 1 << 7,
  /** in the pack's list (pack-objects' to_pack) */
  Packed = 1 << 8,
  /** a commit whose parents are known (git's parsed commit) */
  Parsed = 1 << 9,
  /** in the list as an excluded entry: a thin pack's preferred base, not sent */
  PreferredBase = 1 << 10,
}

const EMPTY = 0;
/** the word compare below reads ids as little-endian words */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class ObjectTable {
  /** ids of objects 0..count-1, hashLen bytes each */
  private ids: Buffer;
  /** slot -> object number + 1 (0: empty) */
  private slots: Int32Array;
  private mask: number;
  flags: Uint16Array;
  types: Uint8Array;
  count = 0;

  constructor(readonly hashLen: number, expect = 1024) {
    let cap = 1024;
    while (cap < expect * 2) cap *= 2;
    this.slots = new Int32Array(cap);
    this.mask = cap - 1;
    const n = cap >> 1;
    this.ids = Buffer.allocUnsafeSlow(n * hashLen);
    this.words = new Int32Array(this.ids.buffer, this.ids.byteOffset, this.ids.length >> 2);
    this.flags = new Uint16Array(n);
    this.types = new Uint8Array(n);
  }

  /** bytes held */
  get bytes(): number { return this.ids.length + this.slots.byteLength + this.flags.byteLength + this.types.byteLength; }

  private static hash(oid: Buffer, at: number): number {
    // ids are uniformly distributed: four of their bytes are a good hash
    return (oid[at]! | (oid[at + 1]! << 8) | (oid[at + 2]! << 16) | (oid[at + 3]! << 24)) >>> 0;
  }

  /** ids as little-endian words (ids' buffer is its own, so aligned) */
  private words: Int32Array;

  private same(n: number, oid: Buffer, at: number): boolean {
    if (!LITTLE_ENDIAN) return this.ids.compare(oid, at, at + this.hashLen, n * this.hashLen, (n + 1) * this.hashLen) === 0;
    const w = this.words;
    const nw = this.hashLen >> 2;
    const base = n * nw;
    for (let i = 0; i < nw; i++, at += 4) {
      if (w[base + i] !== (oid[at]! | (oid[at + 1]! << 8) | (oid[at + 2]! << 16) | (oid[at + 3]! << 24))) return false;
    }
    return true;
  }

  /** The number of an object, or -1. */
  find(oid: Buffer, at = 0): number {
    const mask = this.mask, slots = this.slots;
    for (let s = ObjectTable.hash(oid, at) & mask; ; s = (s + 1) & mask) {
      const v = slots[s]!;
      if (v === EMPTY) return -1;
      if (this.same(v - 1, oid, at)) return v - 1;
    }
  }

  /** The number of an object, added (with type `type`, no flags) when new. */
  intern(oid: Buffer, type: ObjType | 0, at = 0): number {
    const mask = this.mask, slots = this.slots;
    let s = ObjectTable.hash(oid, at) & mask;
    for (; ; s = (s + 1) & mask) {
      const v = slots[s]!;
      if (v === EMPTY) break;
      if (this.same(v - 1, oid, at)) return v - 1;
    }
    const n = this.count;
    if (n * this.hashLen >= this.ids.length) this.growRecords();
    oid.copy(this.ids, n * this.hashLen, at, at + this.hashLen);
    this.types[n] = type;
    this.count = n + 1;
    slots[s] = n + 1;
    if (this.count * 2 > this.slots.length) this.rehash();
    return n;
  }

  /** A view of object n's id (valid until the table grows: copy it to keep it). */
  oidView(n: number): Buffer { return this.ids.subarray(n * this.hashLen, (n + 1) * this.hashLen); }
  /** A copy of object n's id. */
  oid(n: number): Buffer { return Buffer.from(this.oidView(n)); }
  /** Copy object n's id into `out` at `at`. */
  copyOid(n: number, out: Buffer, at: number): void { this.ids.copy(out, at, n * this.hashLen, (n + 1) * this.hashLen); }

  private growRecords(): void {
    const n = Math.max(1024, (this.ids.length / this.hashLen) * 2);
    const ids = Buffer.allocUnsafeSlow(n * this.hashLen);
    this.ids.copy(ids, 0, 0, this.count * this.hashLen);
    this.ids = ids;
    this.words = new Int32Array(ids.buffer, ids.byteOffset, ids.length >> 2);
    const f = new Uint16Array(n); f.set(this.flags); this.flags = f;
    const t = new Uint8Array(n); t.set(this.types); this.types = t;
  }

  private rehash(): void {
    const cap = this.slots.length * 2;
    const slots = new Int32Array(cap);
    const mask = cap - 1;
    for (let n = 0; n < this.count; n++) {
      let s = ObjectTable.hash(this.ids, n * this.hashLen) & mask;
      while (slots[s] !== EMPTY) s = (s + 1) & mask;
      slots[s] = n + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

/** A growable list of numbers (object numbers, name hashes). */
export class IntList {
  a: Int32Array;
  length = 0;
  constructor(cap = 256) { this.a = new Int32Array(cap); }
  push(v: number): void {
    if (this.length === this.a.length) { const b = new Int32Array(this.a.length * 2); b.set(this.a); this.a = b; }
    this.a[this.length++] = v;
  }
  pop(): number { return this.a[--this.length]!; }
  get(i: number): number { return this.a[i]!; }
}
