/**
 * multi-pack-index: one sorted id table over many packs, searched in place
 * like a .idx (fan-out, binary search on the raw bytes, 64-bit offsets).
 */
import { readFileSync } from 'node:fs';
import { GitwireError } from '../errors.js';

export class MultiPackIndex {
  readonly packNames: string[] = [];
  readonly count: number;
  private readonly fanoutAt: number;
  private readonly oidsAt: number;
  private readonly offsAt: number;
  private readonly largeAt: number;

  constructor(readonly buf: Buffer, readonly hashLen: number, readonly path = '') {
    const bad = (why: string) => new GitwireError('GW_OBJECT_CORRUPT', `multi-pack-index ${path} is corrupt: ${why}`);
    if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'MIDX') throw bad('signature');
    if (buf[4] !== 1) throw bad(`version ${buf[4]}`);
    const chunks = buf[6]!;
    if (buf[7] !== 0) throw bad('incremental chains are not supported');
    const packs = buf.readUInt32BE(8);
    const table = new Map<string, number>();
    for (let i = 0; i <= chunks; i++) {
      const at = 12 + i * 12;
      const id = buf.toString('latin1', at, at + 4);
      const off = buf.readUInt32BE(at + 4) * 2 ** 32 + buf.readUInt32BE(at + 8);
      if (i < chunks) table.set(id, off);
    }
    const need = (id: string) => { const o = table.get(id); if (o === undefined) throw bad(`missing chunk ${id}`); return o; };
    let p = need('PNAM');
    for (let i = 0; i < packs; i++) {
      const end = buf.indexOf(0, p);
      this.packNames.push(buf.toString('utf8', p, end));
      p = end + 1;
    }
    this.fanoutAt = need('OIDF');
    this.count = buf.readUInt32BE(this.fanoutAt + 255 * 4);
    this.oidsAt = need('OIDL');
    this.offsAt = need('OOFF');
    this.largeAt = table.get('LOFF') ?? -1;
  }

  static open(path: string, hashLen: number): MultiPackIndex {
    return new MultiPackIndex(readFileSync(path), hashLen, path);
  }

  private fanout(b: number): number { return b < 0 ? 0 : this.buf.readUInt32BE(this.fanoutAt + b * 4); }

  /** Position of `oid`, or -1. */
  find(oid: Buffer): number {
    let lo = this.fanout(oid[0]! - 1), hi = this.fanout(oid[0]!);
    const h = this.hashLen;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.oidsAt + mid * h;
      const c = this.buf.compare(oid, 0, h, at, at + h);
      if (c === 0) return mid;
      if (c > 0) hi = mid; else lo = mid + 1;
    }
    return -1;
  }

  /** The pack (by its .idx name) and offset of the object at position i. */
  location(i: number): { pack: string; offset: number } {
    const at = this.offsAt + i * 8;
    const packId = this.buf.readUInt32BE(at);
    let off = this.buf.readUInt32BE(at + 4);
    if (off & 0x80000000 && this.largeAt >= 0) {
      const j = off & 0x7fffffff;
      off = this.buf.readUInt32BE(this.largeAt + j * 8) * 2 ** 32 + this.buf.readUInt32BE(this.largeAt + j * 8 + 4);
    }
    return { pack: this.packNames[packId]!, offset: off };
  }
}
