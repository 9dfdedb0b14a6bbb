/**
 * Pack .idx v1 and v2, searched in place: binary search bounded by the
 * fan-out table on the raw bytes, 64-bit offsets decoded only when asked.
 */
import { readFileSync } from 'node:fs';
import { GitwireError } from '../errors.js';

export class PackIndex {
  readonly count: number;
  private readonly version: 1 | 2;
  private readonly namesAt: number;
  private readonly stride: number; // bytes between names
  private readonly offsAt: number;
  private readonly largeAt: number;

  constructor(readonly buf: Buffer, readonly hashLen: number, readonly path = '') {
    const bad = () => new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is corrupt`);
    if (buf.length >= 8 && buf.readUInt32BE(0) === 0xff744f63) {
      if (buf.readUInt32BE(4) !== 2) throw new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is version ${buf.readUInt32BE(4)} and is not supported by this binary`);
      this.version = 2;
      this.count = buf.readUInt32BE(8 + 255 * 4);
      this.namesAt = 8 + 256 * 4;
      this.stride = hashLen;
      this.offsAt = this.namesAt + this.count * hashLen + this.count * 4;
      this.largeAt = this.offsAt + this.count * 4;
      if (buf.length < this.largeAt + 2 * hashLen) throw bad();
    } else {
      this.version = 1;
      this.count = buf.readUInt32BE(255 * 4);
      this.namesAt = 256 * 4 + 4;
      this.stride = hashLen + 4;
      this.offsAt = 256 * 4;
      this.largeAt = 0;
      if (buf.length < 256 * 4 + this.count * this.stride + 2 * hashLen) throw bad();
    }
  }

  static open(path: string, hashLen: number): PackIndex {
    return new PackIndex(readFileSync(path), hashLen, path);
  }

  private fanout(b: number): number {
    const base = this.version === 2 ? 8 : 0;
    return b < 0 ? 0 : this.buf.readUInt32BE(base + b * 4);
  }

  nameOffset(i: number): number { return this.namesAt + i * this.stride; }

  /** Object id at position i (a view). */
  oid(i: number): Buffer {
    const at = this.nameOffset(i);
    return this.buf.subarray(at, at + this.hashLen);
  }

  /** Position of `oid`, or -1. */
  find(oid: Buffer): number {
    let lo = this.fanout(oid[0]! - 1);
    let hi = this.fanout(oid[0]!);
    const h = this.hashLen;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.nameOffset(mid);
      const c = this.buf.compare(oid, 0, h, at, at + h);
      if (c === 0) return mid;
      if (c > 0) hi = mid; else lo = mid + 1;
    }
    return -1;
  }

  /** Positions whose ids start with the given hex prefix (at most `limit`). */
  findPrefix(prefix: Buffer, oddNibble: number | undefined, limit: number): number[] {
    const out: number[] = [];
    const first = prefix.length > 0 ? prefix[0]! : oddNibble !== undefined ? oddNibble << 4 : 0;
    let lo = prefix.length > 0 || oddNibble !== undefined ? this.fanout(first - 1) : 0;
    const hiAll = prefix.length > 0 ? this.fanout(first) : this.count;
    let hi = hiAll;
    const n = prefix.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.nameOffset(mid);
      if (this.buf.compare(prefix, 0, n, at, at + n) >= 0) hi = mid; else lo = mid + 1;
    }
    for (let i = lo; i < this.count && out.length < limit; i++) {
      const at = this.nameOffset(i);
      if (n > 0 && this.buf.compare(prefix, 0, n, at, at + n) !== 0) break;
      if (oddNibble !== undefined) {
        const nib = this.buf[at + n]! >> 4;
        if (nib < oddNibble) continue;
        if (nib > oddNibble) break;
      }
      out.push(i);
    }
    return out;
  }

  /** Pack offset of the object at position i. */
  offset(i: number): number {
    if (this.version === 1) return this.buf.readUInt32BE(this.offsAt + i * this.stride);
    const v = this.buf.readUInt32BE(this.offsAt + i * 4);
    if (!(v & 0x80000000)) return v;
    const j = v & 0x7fffffff;
    const at = this.largeAt + j * 8;
    return this.buf.readUInt32BE(at) * 2 ** 32 + this.buf.readUInt32BE(at + 4);
  }
}
