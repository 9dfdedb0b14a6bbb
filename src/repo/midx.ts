/**
 * multi-pack-index: one sorted id table over many packs, searched in place
 * like a .idx (fan-out, binary search on the raw bytes through pages,
 * 64-bit offsets).
 */
import { closeSync, fstatSync, openSync } from 'node:fs';
import { GitwireError } from '../errors.js';
import { IndexBytes, PackIndex } from './pack-index.js';

export class MultiPackIndex {
  readonly packNames: string[] = [];
  readonly count: number;
  private readonly fanoutAt: number;
  private readonly oidsAt: number;
  private readonly offsAt: number;
  private readonly largeAt: number;
  readonly buf: IndexBytes;
  /** where each chunk starts, by id (the chunk table) */
  readonly chunks = new Map<string, number>();

  constructor(bytes: Buffer | IndexBytes, readonly hashLen: number, readonly path = '') {
    const buf = Buffer.isBuffer(bytes) ? IndexBytes.fromBuffer(bytes) : bytes;
    this.buf = buf;
    const bad = (why: string) => new GitwireError('GW_OBJECT_CORRUPT', `multi-pack-index ${path} is corrupt: ${why}`);
    if (buf.length < 12 || buf.slice(0, 4).toString('latin1') !== 'MIDX') throw bad('signature');
    const head = buf.slice(0, 12);
    if (head[4] !== 1) throw bad(`version ${head[4]}`);
    const chunks = head[6]!;
    if (head[7] !== 0) throw bad('incremental chains are not supported');
    const packs = buf.u32(8);
    const table = this.chunks;
    if (buf.length < 12 + (chunks + 1) * 12) throw bad('chunk table');
    for (let i = 0; i <= chunks; i++) {
      const at = 12 + i * 12;
      const id = buf.slice(at, 4).toString('latin1');
      const off = buf.u32(at + 4) * 2 ** 32 + buf.u32(at + 8);
      if (i < chunks) table.set(id, off);
    }
    const need = (id: string) => { const o = table.get(id); if (o === undefined || o >= buf.length) throw bad(`missing chunk ${id}`); return o; };
    let p = need('PNAM');
    for (let i = 0; i < packs; i++) {
      let end = p;
      for (;;) {
        if (end >= buf.length) throw bad('pack names');
        const chunk = buf.slice(end, Math.min(256, buf.length - end));
        const z = chunk.indexOf(0);
        if (z >= 0) { end += z; break; }
        end += chunk.length;
      }
      this.packNames.push(buf.slice(p, end - p).toString('utf8'));
      p = end + 1;
    }
    this.fanoutAt = need('OIDF');
    this.count = buf.u32(this.fanoutAt + 255 * 4);
    this.oidsAt = need('OIDL');
    this.offsAt = need('OOFF');
    this.largeAt = table.get('LOFF') ?? -1;
    if (this.oidsAt + this.count * hashLen > buf.length || this.offsAt + this.count * 8 > buf.length) throw bad('chunk sizes');
  }

  /** Open in place: pages are read on demand, as for a pack .idx. */
  static open(path: string, hashLen: number): MultiPackIndex {
    const fd = openSync(path, 'r');
    try {
      return new MultiPackIndex(new IndexBytes(fstatSync(fd).size, undefined, fd, PackIndex.wholeFileLimit), hashLen, path);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  close(): void { this.buf.close(); }

  private fanout(b: number): number { return b < 0 ? 0 : this.buf.u32(this.fanoutAt + b * 4); }

  /** Position of `oid`, or -1. */
  find(oid: Buffer): number {
    let lo = this.fanout(oid[0]! - 1), hi = this.fanout(oid[0]!);
    const h = this.hashLen;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.buf.cmp(oid, h, this.oidsAt + mid * h);
      if (c === 0) return mid;
      if (c > 0) hi = mid; else lo = mid + 1;
    }
    return -1;
  }

  /** The pack (by its .idx name) and offset of the object at position i. */
  location(i: number): { pack: string; offset: number } {
    return { pack: this.packNames[this.packId(i)]!, offset: this.offset(i) };
  }

  /** The number of the pack (in packNames) the object at position i is taken from. */
  packId(i: number): number { return this.buf.u32(this.offsAt + i * 8); }

  /** The object's offset in its pack. */
  offset(i: number): number {
    const at = this.offsAt + i * 8;
    const off = this.buf.u32(at + 4);
    if (off & 0x80000000 && this.largeAt >= 0) {
      const j = off & 0x7fffffff;
      return this.buf.u32(this.largeAt + j * 8) * 2 ** 32 + this.buf.u32(this.largeAt + j * 8 + 4);
    }
    return off;
  }

  /** Where the id of position i starts in the file. */
  nameOffset(i: number): number { return this.oidsAt + i * this.hashLen; }

  /** The id of the object at position i. */
  oid(i: number): Buffer { return Buffer.from(this.buf.slice(this.oidsAt + i * this.hashLen, this.hashLen)); }

  /** The file's trailing checksum (what its .rev and .bitmap files name and record). */
  checksum(): Buffer { return Buffer.from(this.buf.slice(this.buf.length - this.hashLen, this.hashLen)); }
}
