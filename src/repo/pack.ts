/**
 * A .pack file read with positional reads through windows, never loaded
 * whole. Opened lazily: neither the .pack nor its .idx is touched until a
 * lookup needs them.
 */
import { kMaxLength } from 'node:buffer';
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { GitwireError } from '../errors.js';
import type { Slicer } from '../util/budget.js';
import { InflateCursor, InflateError, Inflater, cursorChunks, inflateWhole, sharedInflater, type Feed } from './inflate.js';
import { ByteLru, type LruSpace } from './lru.js';
import { ObjType } from './object-type.js';
import { PackIndex } from './pack-index.js';
import { radixSort } from './radix-sort.js';
import { PackOrder, bigEndianWords, revFilePositions, sortByOffset } from './reverse-index.js';

/** Type and size of every entry, by rank in pack order (PackFile.infoTable). */
export interface PackInfoTable {
  type: Uint8Array;
  size: Float64Array;
  /** rank of the delta base: -1 none, -2 outside this pack */
  base: Int32Array;
  rankOfPos: Uint32Array;
  offsets: Float64Array;
  positions: Uint32Array;
}

export interface EntryHeader {
  /** raw type, may be a delta type */
  type: ObjType;
  /** inflated size of this entry (for deltas: the delta's size) */
  size: number;
  /** where the entry starts */
  offset: number;
  /** where the zlib data starts */
  dataAt: number;
  baseOffset?: number;
  baseOid?: Buffer;
}

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);

/**
 * Pack windows: aligned slices kept in one LRU with a byte budget shared by
 * every pack of the process (git maps pack windows the same way, bounded
 * by core.packedGitLimit; core.packedGitWindowSize sets their size).
 */
export const packWindows = {
  /** default window size in bytes */
  size: 64 * 1024,
  cache: new ByteLru<Buffer>(16 * 1024 * 1024),
  /** window reads from disk (tests) */
  reads: 0,
  /** true when core.packedGitLimit was configured (a walk then keeps to it) */
  configured: false,
};

/**
 * Window buffers come from 4 MiB slabs and are recycled when evicted:
 * memory is touched once, then reused (fresh pages are what reading a
 * pack into user memory costs most, and the budget bounds them).
 */
const pooled = new WeakSet<Buffer>();
const freeWindows: Buffer[] = [];
let slab: Buffer | undefined;
let slabUsed = 0;
const SLAB = 4 << 20;

function allocWindow(size: number): Buffer {
  if (size !== packWindows.size) return Buffer.allocUnsafe(size);
  const f = freeWindows.pop();
  if (f) return f;
  if (!slab || slabUsed + size > slab.length) { slab = Buffer.allocUnsafe(Math.max(SLAB, size)); slabUsed = 0; }
  const b = slab.subarray(slabUsed, slabUsed + size);
  slabUsed += size;
  pooled.add(b);
  return b;
}

packWindows.cache.onDrop = (b) => {
  if (pooled.has(b) && b.length === packWindows.size && freeWindows.length * b.length < packWindows.cache.limit) freeWindows.push(b);
};

/** Apply git's pack window settings (process-wide: the window cache is shared). */
export function setPackWindowLimits(o: { limit?: number; windowSize?: number }): void {
  if (o.limit !== undefined && o.limit > 0) {
    packWindows.cache.limit = o.limit;
    packWindows.cache.maxEntry = o.limit;
    packWindows.configured = true;
    packWindows.cache.trim();
  }
  if (o.windowSize !== undefined && o.windowSize > 0 && o.windowSize !== packWindows.size) {
    packWindows.size = o.windowSize;
    freeWindows.length = 0;
    slab = undefined;
  }
}

/**
 * Raise the window budget to hold `bytes` of packs (at most 1 GiB) for a
 * walk that reads them at random; returns the function that restores it.
 * A configured core.packedGitLimit is kept as it is.
 */
export function reserveWindows(bytes: number): () => void {
  const c = packWindows.cache;
  const before = c.limit;
  if (packWindows.configured || bytes <= before) return () => {};
  c.limit = c.maxEntry = Math.min(bytes + packWindows.size * 4, 1 << 30);
  return () => { c.limit = c.maxEntry = before; c.trim(); };
}

/** Entries inflated to more than this stream their input past the window cache. */
const DIRECT_INPUT = 1024 * 1024;
const SCRATCH_INPUT = 256 * 1024;
let packSeq = 0;

export class PackFile {
  /** entries moved per entry, at most, by the reverse index's insertion pass before it sorts by radix instead (tests lower it) */
  static sortMoves = 64;
  /** sort offsets in WebAssembly when it is available (radix-sort.ts; tests turn it off to reach the JavaScript sort) */
  static wasmSort = true;
  private fdNum = -1;
  private sizeNum = -1;
  private idx: PackIndex | undefined;
  /** a number for tracing */
  readonly id = ++packSeq;
  private readonly winSize: number;
  private lastW = -1;
  private lastWin: Buffer | undefined;
  /** this pack's windows in the shared cache (keyed by window number) */
  private readonly wins: LruSpace<Buffer> = packWindows.cache.space();
  private readonly forgetLast = (w: number) => { if (w === this.lastW) { this.lastW = -1; this.lastWin = undefined; } };
  private rev: { offsets: Float64Array; positions: Uint32Array } | undefined;
  private light: PackOrder | undefined;
  /** the light form's sort, when it was sorted (the full form starts from it) */
  private sorted: { offsets: Uint32Array; positions: Uint32Array } | undefined;
  private closed = false;

  /**
   * @param index the .idx path (opened on first use) or an opened index
   */
  constructor(readonly packPath: string, index: string | PackIndex, readonly hashLen: number, opts: { windowSize?: number } = {}) {
    if (typeof index === 'string') this.idxPath = index;
    else { this.idx = index; this.idxPath = index.path; }
    this.winSize = Math.max(4096, opts.windowSize ?? packWindows.size);
    this.wins.onDrop = this.forgetLast;
  }

  readonly idxPath: string;

  /** The pack's index, opened (in place) on first use. */
  get index(): PackIndex {
    if (!this.idx) this.idx = PackIndex.open(this.idxPath, this.hashLen);
    return this.idx;
  }

  get indexOpened(): boolean { return this.idx !== undefined; }

  get fd(): number {
    if (this.fdNum < 0) this.openPack();
    return this.fdNum;
  }

  get size(): number {
    if (this.sizeNum < 0) this.openPack();
    return this.sizeNum;
  }

  private openPack(): void {
    if (this.closed) throw corrupt(`pack ${this.packPath} was closed`);
    const fd = openSync(this.packPath, 'r');
    const size = fstatSync(fd).size;
    const hdr = Buffer.alloc(12);
    if (size < 12 + this.hashLen || readSync(fd, hdr, 0, 12, 0) !== 12 || hdr.toString('latin1', 0, 4) !== 'PACK') {
      closeSync(fd);
      throw corrupt(`file ${this.packPath} is not a GIT packfile`);
    }
    this.fdNum = fd;
    this.sizeNum = size;
  }

  close(): void {
    this.closed = true;
    // a closed pack's windows leave the shared cache with it
    this.wins.clear();
    this.lastWin = undefined;
    this.idx?.close();
    if (this.fdNum >= 0) { try { closeSync(this.fdNum); } catch { /* already closed */ } }
    this.fdNum = -1;
  }

  /** The window holding `pos` (its first byte is at w * winSize). */
  private window(w: number): Buffer {
    if (w === this.lastW) return this.lastWin!;
    let win = this.wins.get(w);
    if (!win) {
      const pos = w * this.winSize;
      const n = Math.max(0, Math.min(this.winSize, this.size - pos));
      win = this.readDirect(pos, n, n === this.winSize ? allocWindow(n) : undefined);
      packWindows.reads++;
      if (!this.wins.set(w, win, win.length)) { this.lastW = -1; return win; }
    }
    this.lastW = w;
    this.lastWin = win;
    return win;
  }

  /**
   * Bytes [pos, pos+len) of the pack: a view into a cached window when
   * they sit in one, otherwise read directly.
   */
  read(pos: number, len: number): Buffer {
    const w = Math.floor(pos / this.winSize);
    const end = Math.min(pos + len, this.size);
    if (end <= (w + 1) * this.winSize && end > pos) {
      const off = pos - w * this.winSize;
      // a copy: windows are recycled once evicted
      return Buffer.from(this.window(w).subarray(off, off + (end - pos)));
    }
    return this.readDirect(pos, len);
  }

  private readDirect(pos: number, len: number, into?: Buffer): Buffer {
    const n0 = Math.max(0, Math.min(len, this.size - pos));
    const b = into ?? Buffer.allocUnsafe(n0);
    let got = 0;
    while (got < n0) {
      const n = readSync(this.fd, b, got, n0 - got, pos + got);
      if (n <= 0) break;
      got += n;
    }
    return got === b.length ? b : b.subarray(0, got);
  }

  /** Parse the entry header at `offset`. */
  header(offset: number): EntryHeader {
    const ws = this.winSize;
    const w = Math.floor(offset / ws);
    let b = this.window(w);
    let p = offset - w * ws;
    // a header near the end of a window: read it whole (it is at most 32 + hash bytes)
    if (p + 32 + this.hashLen > b.length && (w + 1) * ws < this.size) { b = this.readDirect(offset, 32 + this.hashLen); p = 0; }
    return this.parseHeader(b, p, offset);
  }

  /** Parse the entry header found at b[p…] (the entry starts at pack `offset`). */
  parseHeader(b: Buffer, p: number, offset: number): EntryHeader {
    const start = p;
    const n = b.length;
    if (p >= n) throw corrupt(`offset ${offset} beyond end of packfile ${this.packPath}`);
    let c = b[p++]!;
    const type = (c >> 4) & 7;
    let size = c & 15;
    let shift = 4, m = 16;
    while (c & 0x80) {
      if (p >= n || shift > 49) throw corrupt(`bad object header at offset ${offset} in ${this.packPath}`);
      c = b[p++]!;
      size += (c & 0x7f) * m; // (a multiplier: 2 ** shift is a slow call on this path)
      m *= 128;
      shift += 7;
    }
    const h: EntryHeader = { type, size, offset, dataAt: 0, baseOffset: undefined, baseOid: undefined };
    if (type === ObjType.OfsDelta) {
      if (p >= n) throw corrupt(`bad object header at offset ${offset} in ${this.packPath}`);
      c = b[p++]!;
      let off = c & 127;
      while (c & 128) {
        if (p >= n || off > 2 ** 45) throw corrupt(`bad delta base offset at ${offset} in ${this.packPath}`);
        c = b[p++]!;
        off = (off + 1) * 128 + (c & 127);
      }
      h.baseOffset = offset - off;
      if (h.baseOffset <= 0 || off === 0) throw corrupt(`delta base offset out of bound for ${this.packPath}`);
    } else if (type === ObjType.RefDelta) {
      if (p + this.hashLen > n) throw corrupt(`bad object header at offset ${offset} in ${this.packPath}`);
      h.baseOid = Buffer.from(b.subarray(p, p + this.hashLen));
      p += this.hashLen;
    } else if (type < 1 || type > 4) {
      throw corrupt(`unknown object type ${type} at offset ${offset} in ${this.packPath}`);
    }
    h.dataAt = offset + (p - start);
    return h;
  }

  /**
   * Type and size of every entry from one sequential pass over the pack
   * (headers, and the first bytes of each delta for its result size),
   * through one reused buffer: no window cache, no content inflated.
   * By rank in pack order; `base` is the base's rank (-1 none, -2 outside
   * the pack). `externalType` answers for bases in other packs.
   */
  infoTable(externalType: (oid: Buffer) => ObjType): PackInfoTable {
    const offs = this.offsetsInPackOrder();
    const positions = this.positionsInPackOrder();
    const n = offs.length;
    const rankOfPos = new Uint32Array(n);
    for (let r = 0; r < n; r++) rankOfPos[positions[r]!] = r;
    const type = new Uint8Array(n);
    const size = new Float64Array(n);
    const base = new Int32Array(n);
    const idx = this.index;
    const end = this.size - this.hashLen;
    const buf = Buffer.allocUnsafe(SCRATCH_INPUT);
    let bufStart = 0, bufEnd = 0;
    const fillAt = (pos: number) => {
      const got = this.readDirect(pos, Math.min(buf.length, this.size - pos), buf);
      bufStart = pos;
      bufEnd = pos + got.length;
    };
    const feed: Feed = (pos) => {
      if (pos >= end) return undefined;
      if (pos < bufStart || pos >= bufEnd) fillAt(pos);
      return buf.subarray(pos - bufStart, Math.min(bufEnd, end) - bufStart);
    };
    const head = Buffer.allocUnsafe(24);
    const hl = this.hashLen;
    let pending = false;
    for (let r = 0; r < n; r++) {
      const off = offs[r]!;
      if (off < bufStart || off + 32 + hl > bufEnd) fillAt(off);
      // the entry header, parsed in place (no header object: this runs once per entry)
      const lim = bufEnd - bufStart;
      let p = off - bufStart;
      if (p >= lim) throw corrupt(`offset ${off} beyond end of packfile ${this.packPath}`);
      let c = buf[p++]!;
      const ty = (c >> 4) & 7;
      let sz = c & 15;
      let shift = 4, mul = 16;
      while (c & 0x80) {
        if (p >= lim || shift > 49) throw corrupt(`bad object header at offset ${off} in ${this.packPath}`);
        c = buf[p++]!;
        sz += (c & 0x7f) * mul;
        mul *= 128;
        shift += 7;
      }
      if (ty !== ObjType.OfsDelta && ty !== ObjType.RefDelta) {
        if (ty < 1 || ty > 4) throw corrupt(`unknown object type ${ty} at offset ${off} in ${this.packPath}`);
        type[r] = ty;
        size[r] = sz;
        base[r] = -1;
        continue;
      }
      let b: number;
      let t = 0;
      if (ty === ObjType.OfsDelta) {
        if (p >= lim) throw corrupt(`bad object header at offset ${off} in ${this.packPath}`);
        c = buf[p++]!;
        let rel = c & 127;
        while (c & 128) {
          if (p >= lim || rel > 2 ** 45) throw corrupt(`bad delta base offset at ${off} in ${this.packPath}`);
          c = buf[p++]!;
          rel = (rel + 1) * 128 + (c & 127);
        }
        if (rel === 0 || off - rel <= 0) throw corrupt(`delta base offset out of bound for ${this.packPath}`);
        // the base precedes the delta, most often right before it (a chain written in
        // order); else search the ranks before this one
        const bo = off - rel;
        if (r > 0 && offs[r - 1] === bo) b = r - 1;
        else {
          let lo = 0, hi = r;
          while (lo < hi) {
            const m = (lo + hi) >>> 1;
            if (offs[m]! < bo) lo = m + 1; else hi = m;
          }
          b = lo < r && offs[lo] === bo ? lo : -1;
        }
      } else {
        if (p + hl > lim) throw corrupt(`bad object header at offset ${off} in ${this.packPath}`);
        const baseOid = buf.subarray(p, p + hl);
        p += hl;
        const pos = idx.find(baseOid);
        b = pos >= 0 ? rankOfPos[pos]! : -2;
        if (b === -2) t = externalType(Buffer.from(baseOid));
      }
      if (b === -1) throw corrupt(`delta base offset out of bound for ${this.packPath}`);
      if (b >= 0) t = b < r ? type[b]! : 0;
      if (t === 0) pending = true;
      type[r] = t;
      base[r] = b;
      const dataAt = bufStart + p;
      let got: number;
      const want = Math.min(24, sz);
      try {
        // mostly the delta's first bytes sit in the buffer: one inflate step, no cursor
        const inf = sharedInflater;
        const avail = Math.min(bufEnd, end) - bufStart;
        if (p < avail) {
          inf.reset();
          got = inf.stepOut(buf, p, avail, head, 0, want);
          if (got < want && inf.used === avail - p) got = -1;
        } else got = -1;
        if (got < 0) {
          const h: EntryHeader = { type: ty, size: sz, offset: off, dataAt };
          got = new InflateCursor(sharedInflater, feed, dataAt, this.what(h)).read(head, 0, want);
        }
      } catch (e) {
        if (e instanceof InflateError) throw corrupt(`corrupt zlib data in ${this.packPath} at ${dataAt}: ${e.message}`);
        throw e;
      }
      // the delta's header: base size, then result size (varints)
      let q = 0, v = 0, sh = 0, vm = 1;
      do { if (q >= got) throw corrupt('delta header truncated'); c = head[q++]!; sh += 7; } while (c & 0x80 && sh < 64);
      sh = 0;
      do { if (q >= got) throw corrupt('delta header truncated'); c = head[q++]!; v += (c & 0x7f) * vm; vm *= 128; sh += 7; } while (c & 0x80 && sh < 64);
      size[r] = v;
    }
    // bases after their deltas (REF_DELTA forward references): follow the chains
    if (pending) {
      for (let r = 0; r < n; r++) {
        if (type[r] !== 0) continue;
        let b = r, guard = 0;
        while (type[b] === 0) {
          b = base[b]!;
          if (b < 0 || ++guard > n) throw corrupt(`delta chain loop in ${this.packPath}`);
        }
        type[r] = type[b]!;
      }
    }
    return { type, size, base, rankOfPos, offsets: offs, positions };
  }

  /** Input for inflating at `pos`: cached windows, or direct reads into `scratch` for large entries. */
  private feed(direct: boolean, scratch?: Buffer): Feed {
    const end = this.size - this.hashLen;
    const ws = this.winSize;
    let first = true;
    return (pos: number) => {
      if (pos >= end) return undefined;
      if (!direct || first) {
        first = false;
        const w = Math.floor(pos / ws);
        const win = this.window(w);
        const off = pos - w * ws;
        return win.subarray(off, Math.min(win.length, end - w * ws));
      }
      return this.readDirect(pos, Math.min(SCRATCH_INPUT, end - pos), scratch);
    };
  }

  private what(h: EntryHeader): () => string {
    return () => `object at offset ${h.offset} in ${this.packPath}`;
  }

  /** A cursor over the entry's zlib stream. */
  cursor(h: EntryHeader, inf: Inflater = sharedInflater, scratch?: Buffer): InflateCursor {
    const direct = h.size > DIRECT_INPUT;
    return new InflateCursor(inf, this.feed(direct, direct ? scratch ?? Buffer.allocUnsafe(SCRATCH_INPUT) : undefined), h.dataAt, this.what(h));
  }

  /**
   * Inflate the entry into dst[off, off+h.size); dst must have one spare
   * byte of room past that (it catches a stream longer than announced).
   */
  inflateInto(h: EntryHeader, dst: Buffer, off = 0, inf: Inflater = sharedInflater): void {
    try {
      // most entries sit inside one window: one inflate call over the window's
      // bytes, no cursor (an entry running past the window's end is redone below)
      if (h.size <= DIRECT_INPUT && inf.native) {
        const ws = this.winSize;
        const w = Math.floor(h.dataAt / ws);
        const win = this.window(w);
        const at = h.dataAt - w * ws;
        const avail = Math.min(win.length, this.size - this.hashLen - w * ws);
        if (at < avail) {
          inf.reset();
          const out = inf.stepOut(win, at, avail, dst, off, off + h.size + 1);
          if (inf.used < avail - at) {
            // zlib stopped with input left and room for one more byte: the stream ended
            if (out > h.size) throw new InflateError(`inflated data longer than expected (${this.what(h)()})`);
            if (out !== h.size) throw new InflateError(`inflated ${out} of ${h.size} bytes (${this.what(h)()})`);
            return;
          }
        }
      }
      const c = this.cursor(h, inf);
      c.fill(dst, off, h.size, true);
      c.finish();
    } catch (e) {
      if (e instanceof InflateError) throw corrupt(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${e.message}`);
      throw e;
    }
  }

  /** Inflate the entry into a new buffer of exactly h.size bytes. */
  inflate(h: EntryHeader): Buffer {
    checkSize(h.size, this.packPath);
    if (!sharedInflater.native) return this.inflateFallback(h);
    const out = Buffer.allocUnsafe(h.size + 1);
    this.inflateInto(h, out);
    return out.subarray(0, h.size);
  }

  private inflateFallback(h: EntryHeader): Buffer {
    let want = h.size + (h.size >>> 9) + 64;
    for (;;) {
      const raw = this.readDirect(h.dataAt, want);
      let out: Buffer;
      try { out = inflateWhole(raw, h.size); } catch (e) { throw corrupt(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${(e as Error).message}`); }
      if (out.length === h.size) return out;
      if (out.length > h.size || raw.length < want) throw corrupt(`inflated size mismatch in ${this.packPath} at ${h.dataAt}`);
      want *= 2;
    }
  }

  /** Inflate only the first `bytes` of the entry (for delta headers); fewer when the entry is shorter. */
  inflatePrefix(h: EntryHeader, bytes: number, into?: Buffer): Buffer {
    const n = Math.min(bytes, h.size);
    if (!sharedInflater.native) return this.inflateFallback(h).subarray(0, n);
    const out = into && into.length >= n ? into : Buffer.allocUnsafe(n);
    try {
      const got = this.cursor(h).read(out, 0, n);
      return out.subarray(0, got);
    } catch (e) {
      if (e instanceof InflateError) throw corrupt(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${e.message}`);
      throw e;
    }
  }

  /**
   * The entry's content in chunks of `chunkSize` bytes, inflated as they
   * are consumed: memory stays at one chunk and one input buffer, whatever
   * the entry's size. Each chunk is a new buffer, or with `reuse` a view
   * valid until two more chunks have been taken (inflate.ts cursorChunks).
   */
  *inflateChunks(h: EntryHeader, chunkSize: number, inf: Inflater = new Inflater(), reuse = false): Generator<Buffer> {
    if (!inf.native) { yield* chunksOf(this.inflateFallback(h), chunkSize); return; }
    const scratch = Buffer.allocUnsafe(SCRATCH_INPUT);
    const c = new InflateCursor(inf, this.feed(true, scratch), h.dataAt, this.what(h));
    try {
      yield* cursorChunks(c, h.size, chunkSize, reuse);
      c.finish();
    } catch (e) {
      if (e instanceof InflateError) throw corrupt(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${e.message}`);
      throw e;
    } finally {
      if (inf !== sharedInflater) inf.close();
    }
  }

  /**
   * The reverse index in its light form (reverse-index.ts): the positions
   * in pack order from the .rev file when there is a sound one, else
   * sorted from the index's offsets. What looking up the ranks of a few
   * objects needs; nothing is done per entry beyond reading or sorting.
   */
  order(): PackOrder {
    if (this.light) return this.light;
    const idx = this.index;
    const at = (pos: number) => idx.offset(pos);
    if (this.rev) return (this.light = new PackOrder(this.rev.positions, this.rev.offsets, at));
    const file = this.revFile(idx.count);
    if (file) return (this.light = new PackOrder(file, undefined, at));
    const keys = idx.offsetKeys();
    if (keys) {
      const s = (PackFile.wasmSort ? radixSort(keys) : undefined) ?? sortByOffset(keys, PackFile.sortMoves);
      this.sorted = s;
      return (this.light = new PackOrder(s.positions, s.offsets, at));
    }
    const r = this.reverse();
    return (this.light = new PackOrder(r.positions, r.offsets, at));
  }

  /** The .rev file's positions when its header, size and checksums are right (revFilePositions). */
  private revFile(n: number): Uint32Array | undefined {
    if (!this.packPath.endsWith('.pack')) return undefined;
    let b: Buffer;
    try { b = readFileSync(`${this.packPath.slice(0, -5)}.rev`); } catch { return undefined; }
    return revFilePositions(b, n, this.hashLen, this.index.packChecksum());
  }

  /**
   * The reverse index in full: offsets ascending with their index
   * positions (git's .rev, built in memory on first use), every entry
   * of a .rev file checked.
   */
  private reverse(): { offsets: Float64Array; positions: Uint32Array } {
    if (this.rev) return this.rev;
    const sorted = this.sorted;
    if (sorted) {
      // sorted already: the offsets as numbers
      this.rev = { offsets: Float64Array.from(sorted.offsets), positions: sorted.positions };
      this.sorted = undefined;
      return this.rev;
    }
    const idx = this.index;
    const n = idx.count;
    idx.preload();
    const fromFile = this.reverseFromFile(n);
    if (fromFile) { this.rev = fromFile; this.light = undefined; return fromFile; }
    // (a .rev whose entries are not in offset order: its light form goes too)
    this.light = undefined;
    const keys = idx.offsetKeys();
    if (keys) {
      const s = (PackFile.wasmSort ? radixSort(keys) : undefined) ?? sortByOffset(keys, PackFile.sortMoves);
      this.rev = { offsets: Float64Array.from(s.offsets), positions: s.positions };
      return this.rev;
    }
    // offsets past 4 GiB
    const raw = new Float64Array(n);
    for (let i = 0; i < n; i++) raw[i] = idx.offset(i);
    const positions = new Uint32Array(n);
    for (let i = 0; i < n; i++) positions[i] = i;
    positions.sort((a, b) => raw[a]! - raw[b]!);
    const offsets = new Float64Array(n);
    for (let r = 0; r < n; r++) offsets[r] = raw[positions[r]!]!;
    this.rev = { offsets, positions };
    return this.rev;
  }

  /**
   * git's .rev file next to the pack (written by default since git 2.41):
   * header `RIDX`, version 1, hash id, then every index position in pack
   * order. Used only when the offsets it gives are strictly increasing,
   * which makes it exactly the sorted order (a bad file is ignored and the
   * order is sorted instead), so the answer never depends on it.
   */
  private reverseFromFile(n: number): { offsets: Float64Array; positions: Uint32Array } | undefined {
    if (!this.packPath.endsWith('.pack')) return undefined;
    let b: Buffer;
    try { b = readFileSync(`${this.packPath.slice(0, -5)}.rev`); } catch { return undefined; }
    if (!revHeaderOk(b, n, this.hashLen)) return undefined;
    const idx = this.index;
    const positions = bigEndianWords(b, 12, n);
    const offsets = new Float64Array(n);
    let last = -1;
    for (let r = 0; r < n; r++) {
      const pos = positions[r]!;
      if (pos >= n) return undefined;
      const off = idx.offset(pos);
      if (off <= last) return undefined;
      offsets[r] = off;
      last = off;
    }
    return { offsets, positions };
  }

  /** Rank of `offset` among the pack's entries (its place in pack order), or -1. */
  rankOfOffset(offset: number): number {
    return this.order().rankOf(offset);
  }

  /** Index position of the entry at `offset`, or -1. */
  positionOfOffset(offset: number): number {
    const o = this.order();
    const r = o.rankOf(offset);
    return r < 0 ? -1 : o.positions[r]!;
  }

  /** Rank (place in pack order) of the object at index position `pos`. */
  rankOfPosition(pos: number): number {
    return this.order().rankOf(this.index.offset(pos));
  }

  /** Index position of the object at `rank` in pack order. */
  positionAtRank(rank: number): number {
    return this.order().positions[rank]!;
  }

  /** Bytes the entry at `offset` takes in the pack (for %(objectsize:disk)). */
  diskSize(offset: number): number {
    const o = this.order();
    let lo = 0, hi = o.count;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (o.offsetAt(m) <= offset) lo = m + 1; else hi = m;
    }
    const next = lo < o.count ? o.offsetAt(lo) : this.size - this.hashLen;
    return next - offset;
  }

  /**
   * Build the full reverse index (positionsInPackOrder, offsetsInPackOrder)
   * yielding the event loop on `slicer`, so that the first request to need
   * it does not hold the loop for it (a pack of millions of objects: a
   * check of every .rev entry against the index, or offsets converted to
   * numbers, 100-240 ms in one go). The sort of a pack without a .rev (a
   * radix sort) still runs in one piece. Afterwards the synchronous
   * accessors return at once.
   */
  async prepareOrder(slicer: Slicer): Promise<void> {
    if (this.rev) return;
    const idx = this.index;
    const n = idx.count;
    idx.preload();
    const tick = async (i: number) => { if ((i & 4095) === 0) { const p = slicer.due(); if (p) await p; } };
    let file: Buffer | undefined;
    if (this.packPath.endsWith('.pack')) {
      try { file = await readFile(`${this.packPath.slice(0, -5)}.rev`); } catch { /* none */ }
    }
    if (this.rev) return;
    if (file && revHeaderOk(file, n, this.hashLen)) {
      const positions = bigEndianWords(file, 12, n);
      const offsets = new Float64Array(n);
      let last = -1;
      let ok = true;
      for (let r = 0; r < n; r++) {
        await tick(r);
        if (this.rev) return;
        const pos = positions[r]!;
        const off = pos < n ? idx.offset(pos) : -1;
        if (off <= last) { ok = false; break; }
        offsets[r] = off;
        last = off;
      }
      if (ok) { this.rev = { offsets, positions }; this.light = undefined; return; }
    }
    let sorted = this.sorted;
    if (!sorted) {
      const keys = idx.offsetKeys();
      if (keys) sorted = (PackFile.wasmSort ? radixSort(keys) : undefined) ?? sortByOffset(keys, PackFile.sortMoves);
    }
    if (!sorted) { this.reverse(); return; }
    const offsets = new Float64Array(n);
    for (let r = 0; r < n; r++) {
      await tick(r);
      if (this.rev) return;
      offsets[r] = sorted.offsets[r]!;
    }
    if (this.rev) return;
    // (a .rev whose entries are not in offset order: its light form goes too)
    if (file) this.light = undefined;
    this.rev = { offsets, positions: sorted.positions };
    this.sorted = undefined;
  }

  /** Index positions in pack order (for --unordered). */
  positionsInPackOrder(): Uint32Array { return this.reverse().positions; }

  /** Offsets in pack order (parallel to positionsInPackOrder). */
  offsetsInPackOrder(): Float64Array { return this.reverse().offsets; }
}

/** A .rev file's header and size, for `n` entries (git's RIDX, version 1, the hash's id). */
function revHeaderOk(b: Buffer, n: number, hashLen: number): boolean {
  return b.length === 12 + 4 * n + 2 * hashLen && b.readUInt32BE(0) === 0x52494458 && b.readUInt32BE(4) === 1 && b.readUInt32BE(8) === (hashLen === 32 ? 2 : 1);
}

/** An announced size this process cannot hold is corruption (or too large an object to read whole). */
export function checkSize(n: number, where: string): void {
  if (n >= kMaxLength) throw corrupt(`object of ${n} bytes in ${where} is too large to read whole`);
}

function* chunksOf(b: Buffer, n: number): Generator<Buffer> {
  for (let off = 0; off < b.length; off += n) yield b.subarray(off, off + n);
}
