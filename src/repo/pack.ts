/**
 * A .pack file read with positional reads, never loaded whole.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { inflateSync, constants as zc } from 'node:zlib';
import { GitwireError } from '../errors.js';
import { ObjType } from './object-type.js';
import { PackIndex } from './pack-index.js';

export interface EntryHeader {
  /** raw type, may be a delta type */
  type: ObjType;
  /** inflated size of this entry (for deltas: the delta's size) */
  size: number;
  /** where the zlib data starts */
  dataAt: number;
  baseOffset?: number;
  baseOid?: Buffer;
}

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);
/**
 * Pack windows: aligned slices kept in one LRU with a byte budget shared by
 * every pack (git maps pack windows the same way, core.packedGitLimit).
 */
const WINDOW = 256 * 1024;
const WINDOW_BUDGET = 256 * 1024 * 1024;
const windows = new Map<number, Buffer>();
let windowBytes = 0;
let lastKey = -1;
let lastWin: Buffer | undefined;
let packSeq = 0;

/** Inflate with an output buffer sized for the expected result (one allocation). */
function inflateOnce(raw: Buffer, expect = 0): Buffer {
  return inflateSync(raw, { finishFlush: zc.Z_SYNC_FLUSH, chunkSize: Math.max(64, Math.min(expect + 1, 1 << 20)) });
}

export class PackFile {
  readonly fd: number;
  readonly size: number;
  private sortedOffsets: Float64Array | undefined;

  constructor(readonly packPath: string, readonly index: PackIndex, readonly hashLen: number) {
    this.fd = openSync(packPath, 'r');
    this.size = fstatSync(this.fd).size;
    const hdr = this.read(0, 12);
    if (hdr.toString('latin1', 0, 4) !== 'PACK') {
      closeSync(this.fd);
      throw corrupt(`file ${packPath} is not a GIT packfile`);
    }
  }

  close(): void {
    // a closed pack's windows leave the shared cache with it
    for (const key of this.windowKeys) {
      const w = windows.get(key);
      if (w) { windowBytes -= w.length; windows.delete(key); }
    }
    this.windowKeys.clear();
    if (lastKey >= this.id * 1e7 && lastKey < (this.id + 1) * 1e7) { lastKey = -1; lastWin = undefined; }
    this.index.close();
    try { closeSync(this.fd); } catch { /* already closed */ }
  }

  private readonly windowKeys = new Set<number>();

  /**
   * Bytes [pos, pos+len) of the pack. Reads go through a small cache of
   * aligned windows (as git maps pack windows), so neighbouring entries
   * cost no extra system call; what does not fit a window is read directly.
   */
  read(pos: number, len: number): Buffer {
    const w = Math.floor(pos / WINDOW);
    const end = Math.min(pos + len, this.size);
    if (end <= (w + 1) * WINDOW && end > pos) {
      const key = this.id * 1e7 + w;
      let win = key === lastKey ? lastWin : windows.get(key);
      if (win) {
        if (key !== lastKey) { windows.delete(key); windows.set(key, win); }
      } else {
        win = this.readDirect(w * WINDOW, WINDOW);
        windows.set(key, win);
        this.windowKeys.add(key);
        windowBytes += win.length;
        while (windowBytes > WINDOW_BUDGET) {
          const oldest = windows.keys().next().value as number;
          windowBytes -= windows.get(oldest)!.length;
          windows.delete(oldest);
        }
      }
      lastKey = key;
      lastWin = win;
      const off = pos - w * WINDOW;
      return win.subarray(off, off + (end - pos));
    }
    return this.readDirect(pos, len);
  }

  private readonly id = ++packSeq;

  private readDirect(pos: number, len: number): Buffer {
    const n0 = Math.max(0, Math.min(len, this.size - pos));
    const b = Buffer.allocUnsafe(n0);
    let got = 0;
    while (got < n0) {
      const n = readSync(this.fd, b, got, n0 - got, pos + got);
      if (n <= 0) break;
      got += n;
    }
    return got === n0 ? b : b.subarray(0, got);
  }

  header(offset: number, head?: Buffer): EntryHeader {
    const b = head ?? this.read(offset, 32 + this.hashLen);
    let p = 0;
    let c = b[p++]!;
    const type = (c >> 4) & 7;
    let size = c & 15;
    let shift = 4;
    while (c & 0x80) {
      c = b[p++]!;
      size += (c & 0x7f) * 2 ** shift;
      shift += 7;
    }
    const h: EntryHeader = { type, size, dataAt: 0 };
    if (type === ObjType.OfsDelta) {
      c = b[p++]!;
      let off = c & 127;
      while (c & 128) {
        c = b[p++]!;
        off = (off + 1) * 128 + (c & 127);
      }
      h.baseOffset = offset - off;
      if (h.baseOffset < 0) throw corrupt(`delta base offset out of bound for ${this.packPath}`);
    } else if (type === ObjType.RefDelta) {
      h.baseOid = Buffer.from(b.subarray(p, p + this.hashLen));
      p += this.hashLen;
    } else if (type < 1 || type > 4) {
      throw corrupt(`unknown object type ${type} at offset ${offset} in ${this.packPath}`);
    }
    h.dataAt = offset + p;
    return h;
  }

  /** Inflate the entry's zlib stream; `size` is the expected result size. */
  inflate(h: EntryHeader): Buffer {
    // deflate rarely grows data by more than 0.1% + a few bytes
    let want = h.size + (h.size >>> 9) + 64;
    for (;;) {
      const raw = this.read(h.dataAt, want);
      let out: Buffer;
      try {
        out = inflateOnce(raw, h.size);
      } catch (e) {
        throw corrupt(`corrupt zlib data in ${this.packPath} at ${h.dataAt}: ${(e as Error).message}`);
      }
      if (out.length === h.size) return out;
      if (out.length > h.size || raw.length < want) throw corrupt(`inflated size mismatch in ${this.packPath} at ${h.dataAt}`);
      want *= 2;
    }
  }

  /** Inflate only the first bytes (for delta headers). */
  inflatePrefix(h: EntryHeader, bytes: number): Buffer {
    const raw = this.read(h.dataAt, bytes + 64);
    try {
      return inflateOnce(raw, bytes);
    } catch (e) {
      throw corrupt(`corrupt zlib data in ${this.packPath}: ${(e as Error).message}`);
    }
  }

  /** Offsets sorted ascending, built on first use (reverse index). */
  private sorted(): Float64Array {
    if (!this.sortedOffsets) {
      const n = this.index.count;
      const a = new Float64Array(n);
      for (let i = 0; i < n; i++) a[i] = this.index.offset(i);
      a.sort();
      this.sortedOffsets = a;
    }
    return this.sortedOffsets;
  }

  /** Bytes the entry at `offset` takes in the pack (for %(objectsize:disk)). */
  diskSize(offset: number): number {
    const a = this.sorted();
    let lo = 0, hi = a.length;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (a[m]! <= offset) lo = m + 1; else hi = m;
    }
    const next = lo < a.length ? a[lo]! : this.size - this.hashLen;
    return next - offset;
  }

  /** Index positions in pack order (for --unordered). */
  positionsInPackOrder(): Uint32Array {
    const n = this.index.count;
    const pos = new Uint32Array(n);
    for (let i = 0; i < n; i++) pos[i] = i;
    const off = new Float64Array(n);
    for (let i = 0; i < n; i++) off[i] = this.index.offset(i);
    return pos.sort((a, b) => off[a]! - off[b]!);
  }
}
