/**
 * Pack .idx v1 and v2, searched in place: binary search bounded by the
 * fan-out table on the raw bytes, 64-bit offsets decoded only when asked.
 */
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { GitwireError } from '../errors.js';

/**
 * The bytes of an index file: the whole file when it is small, otherwise
 * 64 KiB windows read on demand (an LRU of at most 16 MiB per index), so
 * a repository with millions of objects is not read whole to find one.
 */
export class IndexBytes {
  private readonly windows = new Map<number, Buffer>();
  static readonly WINDOW = 64 * 1024;
  static readonly MAX_WINDOWS = 256;
  constructor(readonly length: number, private readonly whole?: Buffer, private readonly fd?: number) {}

  static fromBuffer(b: Buffer): IndexBytes { return new IndexBytes(b.length, b); }

  private window(w: number): Buffer {
    let b = this.windows.get(w);
    if (b) { this.windows.delete(w); this.windows.set(w, b); return b; }
    const len = Math.min(IndexBytes.WINDOW, this.length - w * IndexBytes.WINDOW);
    b = Buffer.allocUnsafe(len);
    let got = 0;
    while (got < len) {
      const n = readSync(this.fd!, b, got, len - got, w * IndexBytes.WINDOW + got);
      if (n <= 0) break;
      got += n;
    }
    this.windows.set(w, b);
    if (this.windows.size > IndexBytes.MAX_WINDOWS) this.windows.delete(this.windows.keys().next().value as number);
    return b;
  }

  /** bytes [pos, pos+len): a view when they sit in one window */
  slice(pos: number, len: number): Buffer {
    if (this.whole) return this.whole.subarray(pos, pos + len);
    const w = Math.floor(pos / IndexBytes.WINDOW);
    const off = pos - w * IndexBytes.WINDOW;
    const win = this.window(w);
    if (off + len <= win.length) return win.subarray(off, off + len);
    const out = Buffer.allocUnsafe(len);
    for (let i = 0; i < len;) {
      const ww = Math.floor((pos + i) / IndexBytes.WINDOW);
      const o = pos + i - ww * IndexBytes.WINDOW;
      const src = this.window(ww);
      const n = Math.min(len - i, src.length - o);
      src.copy(out, i, o, o + n);
      i += n;
    }
    return out;
  }

  u32(pos: number): number { return this.whole ? this.whole.readUInt32BE(pos) : this.slice(pos, 4).readUInt32BE(0); }

  /** compare the index bytes [at, at+n) with target[0..n) (like Buffer.compare of index vs target) */
  cmp(target: Buffer, n: number, at: number): number {
    if (this.whole) return this.whole.compare(target, 0, n, at, at + n);
    return this.slice(at, n).compare(target, 0, n, 0, n);
  }

  close(): void { if (this.fd !== undefined) { try { closeSync(this.fd); } catch { /* closed */ } } }
}

export class PackIndex {
  readonly count: number;
  private readonly version: 1 | 2;
  private readonly namesAt: number;
  private readonly stride: number; // bytes between names
  private readonly offsAt: number;
  private readonly largeAt: number;

  readonly buf: IndexBytes;

  constructor(bytes: Buffer | IndexBytes, readonly hashLen: number, readonly path = '') {
    const buf = Buffer.isBuffer(bytes) ? IndexBytes.fromBuffer(bytes) : bytes;
    this.buf = buf;
    const bad = () => new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is corrupt`);
    if (buf.length >= 8 && buf.u32(0) === 0xff744f63) {
      if (buf.u32(4) !== 2) throw new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is version ${buf.u32(4)} and is not supported by this binary`);
      this.version = 2;
      this.count = buf.u32(8 + 255 * 4);
      this.namesAt = 8 + 256 * 4;
      this.stride = hashLen;
      this.offsAt = this.namesAt + this.count * hashLen + this.count * 4;
      this.largeAt = this.offsAt + this.count * 4;
      if (buf.length < this.largeAt + 2 * hashLen) throw bad();
    } else {
      this.version = 1;
      this.count = buf.u32(255 * 4);
      this.namesAt = 256 * 4 + 4;
      this.stride = hashLen + 4;
      this.offsAt = 256 * 4;
      this.largeAt = 0;
      if (buf.length < 256 * 4 + this.count * this.stride + 2 * hashLen) throw bad();
    }
  }

  /** Index files up to this size are read whole; larger ones through windows. */
  static wholeFileLimit = 16 * 1024 * 1024;

  static open(path: string, hashLen: number): PackIndex {
    const fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    if (size <= PackIndex.wholeFileLimit) {
      closeSync(fd);
      return new PackIndex(readFileSync(path), hashLen, path);
    }
    try {
      return new PackIndex(new IndexBytes(size, undefined, fd), hashLen, path);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  close(): void { this.buf.close(); }

  private fanout(b: number): number {
    const base = this.version === 2 ? 8 : 0;
    return b < 0 ? 0 : this.buf.u32(base + b * 4);
  }

  nameOffset(i: number): number { return this.namesAt + i * this.stride; }

  /** Object id at position i (a view). */
  oid(i: number): Buffer {
    return this.buf.slice(this.nameOffset(i), this.hashLen);
  }

  /** Position of `oid`, or -1. */
  find(oid: Buffer): number {
    let lo = this.fanout(oid[0]! - 1);
    let hi = this.fanout(oid[0]!);
    const h = this.hashLen;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.nameOffset(mid);
      const c = this.buf.cmp(oid, h, at);
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
      if (this.buf.cmp(prefix, n, at) >= 0) hi = mid; else lo = mid + 1;
    }
    for (let i = lo; i < this.count && out.length < limit; i++) {
      const at = this.nameOffset(i);
      if (n > 0 && this.buf.cmp(prefix, n, at) !== 0) break;
      if (oddNibble !== undefined) {
        const nib = this.buf.slice(at + n, 1)[0]! >> 4;
        if (nib < oddNibble) continue;
        if (nib > oddNibble) break;
      }
      out.push(i);
    }
    return out;
  }

  /** Pack offset of the object at position i. */
  offset(i: number): number {
    if (this.version === 1) return this.buf.u32(this.offsAt + i * this.stride);
    const v = this.buf.u32(this.offsAt + i * 4);
    if (!(v & 0x80000000)) return v;
    const j = v & 0x7fffffff;
    const at = this.largeAt + j * 8;
    return this.buf.u32(at) * 2 ** 32 + this.buf.u32(at + 4);
  }
}
