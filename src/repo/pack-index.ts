/**
 * Pack .idx v1 and v2, searched in place: binary search bounded by the
 * fan-out table on the raw bytes, 64-bit offsets decoded only when asked.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GitwireError } from '../errors.js';
import { ByteLru } from './lru.js';
import { LITTLE } from './reverse-index.js';

/** Index pages are carved from 256 KiB slabs (one allocation per 64 pages, not per page). */
let pageSlab: Buffer | undefined;
let pageSlabUsed = 0;
function allocPage(n: number): Buffer {
  if (!pageSlab || pageSlabUsed + n > pageSlab.length) { pageSlab = Buffer.allocUnsafe(256 * 1024); pageSlabUsed = 0; }
  const b = pageSlab.subarray(pageSlabUsed, pageSlabUsed + n);
  pageSlabUsed += n;
  return b;
}

/**
 * The bytes of an index file, read in place as git maps it: 4 KiB pages
 * read on demand into a bounded LRU, so one lookup reads a handful of
 * pages, not the file. A workload that reads most of the file anyway
 * (iterating every object, thousands of lookups) switches to one whole
 * copy when the file is at most `wholeLimit` bytes.
 */
/** bytes read through pages after which a large index is read whole (see IndexBytes.page) */
const WHOLE_AFTER = 256 * 1024;

export class IndexBytes {
  static readonly PAGE = 4096;
  private static readonly SHIFT = 12;
  /** pages kept per index (bytes) */
  static pageBudget = 8 * 1024 * 1024;
  private pages: ByteLru<Buffer> | undefined;
  private lastPage = -1;
  private lastBuf: Buffer | undefined;
  private whole: Buffer | undefined;
  private dv: DataView | undefined;
  /** bytes read from the file so far (tests and tracing) */
  bytesRead = 0;

  constructor(readonly length: number, whole?: Buffer, private readonly fd?: number, private readonly wholeLimit = 0) {
    this.whole = whole;
    if (whole) this.dv = new DataView(whole.buffer, whole.byteOffset, whole.length);
    if (!whole) this.pages = new ByteLru<Buffer>(Math.max(IndexBytes.pageBudget, IndexBytes.PAGE * 16));
  }

  static fromBuffer(b: Buffer): IndexBytes { return new IndexBytes(b.length, b); }

  get isWhole(): boolean { return this.whole !== undefined; }

  /** The whole file, when it is held whole (after loadWhole). */
  wholeBytes(): Buffer | undefined { return this.whole; }

  /** (a method, so that checks after a page read are not narrowed away) */
  private wholeBuf(): Buffer | undefined { return this.whole; }

  private readInto(b: Buffer, pos: number): void {
    let got = 0;
    while (got < b.length) {
      const n = readSync(this.fd!, b, got, b.length - got, pos + got);
      if (n <= 0) throw new GitwireError('GW_OBJECT_CORRUPT', 'index file shrank while being read');
      got += n;
    }
    this.bytesRead += b.length;
  }

  /**
   * Bytes [pos, pos+len) as a buffer of their own: one positional read
   * when the file is not held whole (no pages kept: a table read once, as
   * the offsets for a reverse index, does not count toward holding the
   * file whole).
   */
  copy(pos: number, len: number, into?: Buffer): Buffer {
    const b = into ?? Buffer.allocUnsafe(len);
    if (this.whole) { this.whole.copy(b, 0, pos, pos + len); return b; }
    let got = 0;
    while (got < len) {
      const n = readSync(this.fd!, b, got, len - got, pos + got);
      if (n <= 0) throw new GitwireError('GW_OBJECT_CORRUPT', 'index file shrank while being read');
      got += n;
    }
    return b;
  }

  /** Read the whole file now (when every byte will be needed), within the limit. */
  loadWhole(limit = this.wholeLimit): boolean {
    if (this.whole) return true;
    if (this.length > limit || this.fd === undefined) return false;
    const b = Buffer.allocUnsafe(this.length);
    this.readInto(b, 0);
    this.whole = b;
    this.dv = new DataView(b.buffer, b.byteOffset, b.length);
    this.pages = undefined;
    this.lastBuf = undefined;
    this.lastPage = -1;
    return true;
  }

  private page(p: number): Buffer {
    if (p === this.lastPage) return this.lastBuf!;
    const pages = this.pages!;
    let b = pages.get(p);
    if (!b) {
      const at = p * IndexBytes.PAGE;
      b = allocPage(Math.min(IndexBytes.PAGE, this.length - at));
      this.readInto(b, at);
      pages.set(p, b, b.length);
      // a good part of the file read through pages (half of a small one, a sixteenth of a
      // large one, at least 256 KiB): one copy is cheaper from here on, and the page path
      // goes cold before it gets optimized as well
      if (this.bytesRead > Math.min(this.length / 2, Math.max(WHOLE_AFTER, this.length / 16)) && this.loadWhole()) return this.whole!.subarray(at, at + b.length);
    }
    this.lastPage = p;
    this.lastBuf = b;
    return b;
  }

  /** bytes [pos, pos+len): a view when they sit in one page */
  slice(pos: number, len: number): Buffer {
    if (this.whole) return this.whole.subarray(pos, pos + len);
    const p = pos >>> IndexBytes.SHIFT;
    const off = pos - p * IndexBytes.PAGE;
    const pg = this.page(p);
    const w2 = this.wholeBuf();
    if (w2) return w2.subarray(pos, pos + len);
    if (off + len <= pg.length) return pg.subarray(off, off + len);
    const out = Buffer.allocUnsafe(len);
    for (let i = 0; i < len;) {
      const q = (pos + i) >>> IndexBytes.SHIFT;
      const o = pos + i - q * IndexBytes.PAGE;
      const src = this.page(q);
      const n = Math.min(len - i, src.length - o);
      src.copy(out, i, o, o + n);
      i += n;
    }
    return out;
  }

  u32(pos: number): number {
    const dv = this.dv;
    if (dv) return dv.getUint32(pos);
    const p = pos >>> IndexBytes.SHIFT;
    const off = pos - p * IndexBytes.PAGE;
    if (off + 4 <= IndexBytes.PAGE) {
      const pg = this.page(p);
      const w2 = this.wholeBuf();
      if (w2) return this.dv!.getUint32(pos);
      // (element reads, not Buffer.readUInt32BE: this runs cold, in one-shot processes, where
      // that method runs as interpreted JavaScript)
      return ((pg[off]! << 24) | (pg[off + 1]! << 16) | (pg[off + 2]! << 8) | pg[off + 3]!) >>> 0;
    }
    return this.slice(pos, 4).readUInt32BE(0);
  }

  /** compare the index bytes [at, at+n) with target[0..n) (like Buffer.compare of index vs target) */
  cmp(target: Buffer, n: number, at: number): number {
    const w = this.whole;
    if (w) return w.compare(target, 0, n, at, at + n);
    const p = at >>> IndexBytes.SHIFT;
    const off = at - p * IndexBytes.PAGE;
    if (off + n <= IndexBytes.PAGE) {
      const pg = this.page(p);
      const w2 = this.wholeBuf();
      if (w2) return w2.compare(target, 0, n, at, at + n);
      return pg.compare(target, 0, n, off, off + n);
    }
    return this.slice(at, n).compare(target, 0, n, 0, n);
  }

  close(): void {
    if (this.fd !== undefined) { try { closeSync(this.fd); } catch { /* closed */ } }
    this.pages?.clear();
  }
}

export class PackIndex {
  readonly count: number;
  private readonly version: 1 | 2;
  private readonly namesAt: number;
  private readonly stride: number; // bytes between names
  private readonly offsAt: number;
  private readonly largeAt: number;
  private readonly fan: Uint32Array;

  readonly buf: IndexBytes;

  constructor(bytes: Buffer | IndexBytes, readonly hashLen: number, readonly path = '') {
    const buf = Buffer.isBuffer(bytes) ? IndexBytes.fromBuffer(bytes) : bytes;
    this.buf = buf;
    const bad = () => new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is corrupt`);
    if (buf.length < 8 + 256 * 4) throw new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is too small`);
    let fanAt: number;
    if (buf.u32(0) === 0xff744f63) {
      if (buf.u32(4) !== 2) throw new GitwireError('GW_OBJECT_CORRUPT', `index file ${path} is version ${buf.u32(4)} and is not supported by this binary`);
      this.version = 2;
      fanAt = 8;
      this.count = buf.u32(8 + 255 * 4);
      this.namesAt = 8 + 256 * 4;
      this.stride = hashLen;
      this.offsAt = this.namesAt + this.count * hashLen + this.count * 4;
      this.largeAt = this.offsAt + this.count * 4;
      if (buf.length < this.largeAt + 2 * hashLen) throw bad();
    } else {
      this.version = 1;
      fanAt = 0;
      this.count = buf.u32(255 * 4);
      this.namesAt = 256 * 4 + 4;
      this.stride = hashLen + 4;
      this.offsAt = 256 * 4;
      this.largeAt = 0;
      if (buf.length < 256 * 4 + this.count * this.stride + 2 * hashLen) throw bad();
    }
    const fan = new Uint32Array(257);
    for (let b = 0; b < 256; b++) fan[b + 1] = buf.u32(fanAt + b * 4);
    for (let b = 0; b < 256; b++) if (fan[b + 1]! < fan[b]!) throw bad();
    this.fan = fan;
  }

  /** Index files up to this size may be held whole once a workload reads most of them. */
  static wholeFileLimit = 64 * 1024 * 1024;

  /** Open an index in place: only its fan-out is read now. */
  static open(path: string, hashLen: number): PackIndex {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      return new PackIndex(new IndexBytes(size, undefined, fd, PackIndex.wholeFileLimit), hashLen, path);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  close(): void { this.buf.close(); }

  /** Read the whole index now when a caller is about to touch every entry (bounded by wholeFileLimit). */
  preload(): void { this.buf.loadWhole(); }

  nameOffset(i: number): number { return this.namesAt + i * this.stride; }

  /** Object id at position i (a view). */
  oid(i: number): Buffer {
    return this.buf.slice(this.namesAt + i * this.stride, this.hashLen);
  }

  /** Position of `oid`, or -1. */
  find(oid: Buffer): number {
    return oid.length >= this.hashLen ? this.findAt(oid, 0) : this.findShort(oid);
  }

  /**
   * Position of the id at `oid[at…at+hashLen)`, or -1: find() without a
   * view made per lookup (a tree walk asks for every entry it meets).
   */
  findAt(oid: Buffer, at: number): number {
    const h = this.hashLen;
    if (h < 5) return this.findShort(oid.subarray(at, at + h));
    const b0 = oid[at]!;
    let lo = this.fan[b0]!;
    let hi = this.fan[b0 + 1]!;
    const buf = this.buf;
    // ids in one fan-out bucket share their first byte: bytes 1-4 decide almost every step;
    // the rest is compared byte by byte (Buffer.compare with offsets is a native call).
    // An index read in pages takes the same probes: each lands in a page, so interpolating
    // reads one or two pages per lookup instead of a bisection's four or five
    const key = ((oid[at + 1]! << 24) | (oid[at + 2]! << 16) | (oid[at + 3]! << 8) | oid[at + 4]!) >>> 0;
    const at0 = this.namesAt + 1, stride = this.stride;
    // ids are uniformly spread: the first probes interpolate between the bounds' keys
    // (every entry in [lo, hi) has its key in [kLo, kHi]), which takes a bucket of
    // thousands to a few entries in two or three probes instead of a dozen cache misses;
    // then plain bisection, so that no distribution costs more than a few extra probes
    let kLo = 0, kHi = 0xffffffff, probes = 0;
    while (lo < hi) {
      let mid: number;
      if (probes < 4 && hi - lo > 8 && kHi > kLo) {
        probes++;
        mid = lo + Math.floor(((key - kLo) / (kHi - kLo + 1)) * (hi - lo));
        if (mid >= hi) mid = hi - 1;
      } else mid = (lo + hi) >>> 1;
      const p = at0 + mid * stride;
      const v = buf.u32(p);
      if (v === key) {
        // (a page read above may have switched the index to whole)
        const whole = buf.wholeBytes();
        let c: number;
        if (whole) {
          let k = 5;
          const base = p - 1;
          while (k < h && whole[base + k] === oid[at + k]) k++;
          if (k === h) return mid;
          c = whole[base + k]! - oid[at + k]!;
        } else {
          c = buf.cmp(at === 0 && oid.length === h ? oid : oid.subarray(at, at + h), h, p - 1);
          if (c === 0) return mid;
        }
        if (c > 0) { hi = mid; kHi = v; } else { lo = mid + 1; kLo = v; }
      } else if (v > key) { hi = mid; kHi = v; } else { lo = mid + 1; kLo = v; }
    }
    return -1;
  }

  /** find() for an id shorter than the hash (never found) or a hash under 5 bytes (tests). */
  private findShort(oid: Buffer): number {
    const b0 = oid[0]!;
    let lo = this.fan[b0]!;
    let hi = this.fan[b0 + 1]!;
    const h = this.hashLen;
    const buf = this.buf;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = buf.cmp(oid, h, this.namesAt + mid * this.stride);
      if (c === 0) return mid;
      if (c > 0) hi = mid; else lo = mid + 1;
    }
    return -1;
  }

  /** Positions whose ids start with the given hex prefix (at most `limit`). */
  findPrefix(prefix: Buffer, oddNibble: number | undefined, limit: number): number[] {
    const out: number[] = [];
    const first = prefix.length > 0 ? prefix[0]! : oddNibble !== undefined ? oddNibble << 4 : 0;
    let lo = prefix.length > 0 || oddNibble !== undefined ? this.fan[first]! : 0;
    const hiAll = prefix.length > 0 ? this.fan[first + 1]! : this.count;
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

  /** The CRC-32 of the packed entry at position i (idx v2), undefined for a v1 index. */
  crc32(i: number): number | undefined {
    if (this.version === 1) return undefined;
    return this.buf.u32(this.namesAt + this.count * this.hashLen + i * 4);
  }

  /** The checksum of the pack this index is for (the first of its trailing checksums). */
  packChecksum(): Buffer {
    return Buffer.from(this.buf.slice(this.buf.length - 2 * this.hashLen, this.hashLen));
  }

  /**
   * The offset of every position, when all are below 2^32 (else
   * undefined): one read of the offset table, swapped in native code;
   * only entries in the 64-bit table are decoded one by one.
   */
  offsetKeys(): Uint32Array | undefined {
    const n = this.count;
    if (this.version === 1) {
      const out = new Uint32Array(n);
      for (let i = 0; i < n; i++) out[i] = this.buf.u32(this.offsAt + i * this.stride);
      return out;
    }
    const out = new Uint32Array(n);
    const bytes = Buffer.from(out.buffer, out.byteOffset, n * 4);
    this.buf.copy(this.offsAt, n * 4, bytes);
    if (LITTLE) bytes.swap32();
    if (this.largeAt + 2 * this.hashLen === this.buf.length) return out;
    for (let i = 0; i < n; i++) {
      if (!(out[i]! & 0x80000000)) continue;
      const o = this.offset(i);
      if (o >= 2 ** 32) return undefined;
      out[i] = o;
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
