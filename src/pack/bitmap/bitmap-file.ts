/**
 * One `.bitmap` file (gitformat-pack(5), bitmap format v1), for a pack or a
 * multi-pack index: the header (`BITM`, version 1, options, entry count,
 * the checksum of the pack or midx it belongs to), the four type bitmaps,
 * the commit entries (index position, xor offset, flags, EWAH), and the
 * optional trailing sections: pseudo-merges (skipped), the lookup table,
 * the name-hash cache, then the file's own checksum.
 *
 * The whole file is checked against its trailing checksum when it is
 * loaded: a flipped byte anywhere makes the file unusable (git only looks
 * at that in fsck; a server that keeps the file for many requests can
 * afford it once, and a damaged bitmap must never give a wrong pack).
 *
 * Commit bitmaps are found by the commit's index position (its place in
 * the .idx or midx id table): through the lookup table when there is one
 * (nothing else is read until asked), else from a table of the entries
 * built by one pass over their headers. An entry is xor-compressed
 * against an earlier one; resolved bitmaps are kept (compressed again),
 * within a byte cap.
 */
import { createHash } from 'node:crypto';
import { bigEndianWords } from '../../repo/reverse-index.js';
import { Bitset } from './bitset.js';
import { BitmapCorrupt } from './corrupt.js';
import { Ewah } from './ewah.js';

export const BITMAP_OPT_FULL_DAG = 0x1;
export const BITMAP_OPT_HASH_CACHE = 0x4;
export const BITMAP_OPT_LOOKUP_TABLE = 0x10;
export const BITMAP_OPT_PSEUDO_MERGES = 0x20;
const TRIPLET = 16;
const MAX_XOR_OFFSET = 160;
const NO_XOR = 0xffffffff;

/** Object types in the order of the type bitmaps. */
export const enum TypeIndex { Commit = 0, Tree = 1, Blob = 2, Tag = 3 }

export interface BitmapFileOptions {
  hashLen: number;
  /** objects in the pack or midx (bits of every bitmap) */
  objectCount: number;
  /** the id at an index position (for git's messages that name a commit) */
  oidAt?: (pos: number) => Buffer | undefined;
  /** resolved bitmaps kept, in bytes (default 32 MiB) */
  resolvedCap?: number;
  /** the trailing checksum was checked already (verifyBitmapChecksum) */
  checksumVerified?: boolean;
  /** the checksum of the pack or midx the bitmap must belong to, and git's message when it does not */
  owner?: { checksum: Buffer; mismatch: string };
}

/**
 * The header's first checks (in git's order: size, signature, version),
 * then the file's trailing checksum, hashed in pieces with `pause` between
 * them (a file of tens of megabytes is not hashed in one go on the event loop).
 * @throws BitmapCorrupt with git's message
 */
export async function verifyBitmapChecksum(buf: Buffer, path: string, hashLen: number, pause: () => Promise<void> | undefined): Promise<void> {
  if (buf.length < 12 + 2 * hashLen) throw new BitmapCorrupt('corrupted bitmap index (too small)');
  if (buf.toString('latin1', 0, 4) !== 'BITM') throw new BitmapCorrupt('corrupted bitmap index file (wrong header)');
  const version = buf.readUInt16BE(4);
  if (version !== 1) throw new BitmapCorrupt(`unsupported version '${version}' for bitmap index file`);
  const h = createHash(hashLen === 32 ? 'sha256' : 'sha1');
  const end = buf.length - hashLen;
  for (let at = 0; at < end; at += 1 << 20) {
    h.update(buf.subarray(at, Math.min(end, at + (1 << 20))));
    const p = pause();
    if (p) await p;
  }
  if (!h.digest().equals(buf.subarray(end))) throw new BitmapCorrupt(`bitmap file '${path}' has invalid checksum`);
}

/**
 * Whether every object (bits [0, n)) has exactly one type: in each word
 * the four bitmaps share no bit and together set every bit below n. One
 * pass over the words (this runs once per load, cold, in a one-shot
 * process: no count per bitmap).
 */
function oneTypeEach(types: Bitset[], n: number): boolean {
  const [a, b, c, d] = types.map((t) => t.words) as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  const full = n >>> 5;
  const words = (n + 31) >>> 5;
  for (let i = 0; i < words; i++) {
    const w = a[i]!, x = b[i]!, y = c[i]!, z = d[i]!;
    if ((w & x) | (w & y) | (w & z) | (x & y) | (x & z) | (y & z)) return false;
    const want = i < full ? -1 : (((1 << (n & 31)) >>> 0) - 1) | 0;
    if ((w | x | y | z) !== want) return false;
  }
  return true;
}

export class BitmapFile {
  readonly flags: number;
  readonly entryCount: number;
  /** the pack's or midx's checksum as the bitmap records it */
  readonly checksum: Buffer;
  /** commits, trees, blobs, tags */
  readonly types: [Bitset, Bitset, Bitset, Bitset];
  readonly objectCount: number;
  private readonly hashesAt: number;
  private readonly tableAt: number;
  /** without a lookup table: each entry's header offset, parent entry (-1 none), and commit position */
  private entryAt: Float64Array | undefined;
  private entryParent: Int32Array | undefined;
  private entryByPos: Map<number, number> | undefined;
  private readonly resolved = new Map<number, Ewah>();
  private resolvedBytes = 0;
  private readonly resolvedCap: number;
  /** set once an entry turned out damaged: no bitmap is used from this file after it */
  damaged: BitmapCorrupt | undefined;

  /**
   * @throws BitmapCorrupt with git's message when the file cannot be used
   */
  constructor(readonly buf: Buffer, readonly path: string, private readonly o: BitmapFileOptions) {
    const hl = o.hashLen;
    const n = o.objectCount;
    this.objectCount = n;
    this.resolvedCap = o.resolvedCap ?? 32 << 20;
    const headerSize = 12 + hl;
    if (buf.length < headerSize + hl) throw new BitmapCorrupt('corrupted bitmap index (too small)');
    if (buf.toString('latin1', 0, 4) !== 'BITM') throw new BitmapCorrupt('corrupted bitmap index file (wrong header)');
    const version = buf.readUInt16BE(4);
    if (version !== 1) throw new BitmapCorrupt(`unsupported version '${version}' for bitmap index file`);
    if (!o.checksumVerified) {
      const sum = createHash(hl === 32 ? 'sha256' : 'sha1').update(buf.subarray(0, buf.length - hl)).digest();
      if (!sum.equals(buf.subarray(buf.length - hl))) throw new BitmapCorrupt(`bitmap file '${path}' has invalid checksum`);
    }
    const flags = buf.readUInt16BE(6);
    this.flags = flags;
    if (!(flags & BITMAP_OPT_FULL_DAG)) throw new BitmapCorrupt('unsupported options for bitmap index file (Git requires BITMAP_OPT_FULL_DAG)');
    this.entryCount = buf.readUInt32BE(8);
    this.checksum = Buffer.from(buf.subarray(12, 12 + hl));
    if (o.owner && !o.owner.checksum.equals(this.checksum)) throw new BitmapCorrupt(o.owner.mismatch);
    let end = buf.length - hl;
    this.hashesAt = -1;
    if (flags & BITMAP_OPT_HASH_CACHE) {
      if (n * 4 > end - headerSize) throw new BitmapCorrupt('corrupted bitmap index file (too short to fit hash cache)');
      end -= n * 4;
      this.hashesAt = end;
    }
    this.tableAt = -1;
    if (flags & BITMAP_OPT_LOOKUP_TABLE) {
      const size = this.entryCount * TRIPLET;
      if (size > end - headerSize) throw new BitmapCorrupt('corrupted bitmap index file (too short to fit lookup table)');
      end -= size;
      this.tableAt = end;
    }
    if (flags & BITMAP_OPT_PSEUDO_MERGES) {
      if (8 > end - headerSize) throw new BitmapCorrupt('corrupted bitmap index file (too short to fit pseudo-merge table header)');
      const size = Number(buf.readBigUInt64BE(end - 8));
      if (size > end - headerSize) throw new BitmapCorrupt('corrupted bitmap index file (too short to fit pseudo-merge table)');
      end -= size;
    }
    // the four type bitmaps
    let p = headerSize;
    const types: Bitset[] = [];
    for (let t = 0; t < 4; t++) {
      const r = Ewah.parse(buf, p, end, n);
      types.push(r.ewah.toBitset(n));
      p = r.end;
    }
    this.types = types as [Bitset, Bitset, Bitset, Bitset];
    if (!oneTypeEach(this.types, n)) throw new BitmapCorrupt('corrupted bitmap index: type bitmaps do not cover the objects');
    if (this.tableAt >= 0) this.checkTable(p);
    else this.readEntries(p, end);
  }

  /** Bytes held (the file, type bitmaps, tables and resolved bitmaps). */
  get bytes(): number {
    let b = this.buf.length + this.types.reduce((s, t) => s + t.bytes, 0) + this.resolvedBytes;
    if (this.entryAt) b += this.entryAt.byteLength + this.entryParent!.byteLength + this.entryCount * 40;
    return b;
  }

  /** The name-hash cache's value for an index position (0 without the cache). */
  nameHash(pos: number): number {
    return this.hashesAt >= 0 && pos < this.objectCount ? this.buf.readUInt32BE(this.hashesAt + pos * 4) : 0;
  }

  get hasNameHashes(): boolean { return this.hashesAt >= 0; }

  /** The name-hash cache in the order `posOfBit` gives (the value of each bit's index position); undefined without the cache. */
  nameHashesInOrder(posOfBit: Uint32Array): Uint32Array | undefined {
    if (this.hashesAt < 0) return undefined;
    const byPos = bigEndianWords(this.buf, this.hashesAt, this.objectCount);
    const n = Math.min(posOfBit.length, this.objectCount);
    const out = new Uint32Array(n);
    for (let b = 0; b < n; b++) out[b] = byPos[posOfBit[b]!]!;
    return out;
  }

  /** The lookup table: sorted by commit position, offsets inside the entry area, xor rows inside the table. */
  private checkTable(entriesAt: number): void {
    const b = this.buf;
    let last = -1;
    for (let i = 0; i < this.entryCount; i++) {
      const at = this.tableAt + i * TRIPLET;
      const pos = b.readUInt32BE(at);
      const off = Number(b.readBigUInt64BE(at + 4));
      const xor = b.readUInt32BE(at + 12);
      if (pos >= this.objectCount) throw new BitmapCorrupt(`corrupt bitmap lookup table: commit index ${pos} out of range`);
      if (pos <= last) throw new BitmapCorrupt('corrupt bitmap lookup table: entries out of order');
      if (off < entriesAt || off + 6 > this.tableAt) throw new BitmapCorrupt(`corrupt ewah bitmap: truncated header for bitmap of commit "${this.hexAt(pos)}"`);
      if (xor !== NO_XOR && xor >= this.entryCount) throw new BitmapCorrupt('corrupt bitmap lookup table: triplet position out of index');
      last = pos;
    }
  }

  /** Without a lookup table: one pass over the entry headers (the EWABs are skipped, not decoded). */
  private readEntries(p: number, end: number): void {
    const b = this.buf;
    const n = this.entryCount;
    if (n > (end - p) / 18) throw new BitmapCorrupt(`corrupt ewah bitmap: truncated header for entry ${Math.floor((end - p) / 18)}`);
    const at = new Float64Array(n);
    const parent = new Int32Array(n);
    const byPos = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      if (end - p < 6) throw new BitmapCorrupt(`corrupt ewah bitmap: truncated header for entry ${i}`);
      const pos = b.readUInt32BE(p);
      const xor = b[p + 4]!;
      if (pos >= this.objectCount) throw new BitmapCorrupt(`corrupt ewah bitmap: commit index ${pos} out of range`);
      if (xor > MAX_XOR_OFFSET || xor > i) throw new BitmapCorrupt('corrupted bitmap pack index');
      if (byPos.has(pos)) throw new BitmapCorrupt(`duplicate entry in bitmap index: '${this.hexAt(pos)}'`);
      at[i] = p;
      parent[i] = xor > 0 ? i - xor : -1;
      byPos.set(pos, i);
      // skip the EWAH: bit count, word count, words, rlw position
      const q = p + 6;
      if (end - q < 8) throw new BitmapCorrupt('corrupt ewah bitmap: eof before length');
      const words = b.readUInt32BE(q + 4);
      const len = 8 + words * 8 + 4;
      if (end - q < len) throw new BitmapCorrupt(`corrupt ewah bitmap: eof in data (${len - (end - q)} bytes short)`);
      p = q + len;
    }
    this.entryAt = at;
    this.entryParent = parent;
    this.entryByPos = byPos;
  }

  private hexAt(pos: number): string {
    return this.o.oidAt?.(pos)?.toString('hex') ?? String(pos);
  }

  /** The entry (an opaque number) holding the bitmap of the commit at index position `pos`, or -1. */
  entryFor(pos: number): number {
    if (this.damaged) return -1;
    if (this.entryByPos) return this.entryByPos.get(pos) ?? -1;
    const b = this.buf;
    let lo = 0, hi = this.entryCount;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      const v = b.readUInt32BE(this.tableAt + m * TRIPLET);
      if (v === pos) return m;
      if (v < pos) lo = m + 1; else hi = m;
    }
    return -1;
  }

  private entryHeaderAt(e: number): number {
    return this.entryAt ? this.entryAt[e]! : Number(this.buf.readBigUInt64BE(this.tableAt + e * TRIPLET + 4));
  }

  private entryParentOf(e: number): number {
    if (this.entryParent) return this.entryParent[e]!;
    const x = this.buf.readUInt32BE(this.tableAt + e * TRIPLET + 12);
    return x === NO_XOR ? -1 : x;
  }

  /** The entry's own (xor-compressed) EWAH. */
  private root(e: number): Ewah {
    const at = this.entryHeaderAt(e);
    const end = this.tableAt >= 0 ? this.tableAt : this.buf.length - this.o.hashLen;
    if (this.tableAt >= 0) {
      // the entry's header names its commit: it must be the table's
      const pos = this.buf.readUInt32BE(this.tableAt + e * TRIPLET);
      if (this.buf.readUInt32BE(at) !== pos) throw new BitmapCorrupt(`corrupt ewah bitmap: truncated header for bitmap of commit "${this.hexAt(pos)}"`);
    }
    return Ewah.parse(this.buf, at + 6, end, this.objectCount).ewah;
  }

  /**
   * The bitmap of entry `e`, its xor chain resolved. Undefined (and the
   * file marked damaged, with the reason in `damaged`) when the entry or
   * one of its chain is corrupt.
   */
  bitmap(e: number): Ewah | undefined {
    if (this.damaged) return undefined;
    const hit = this.resolved.get(e);
    if (hit) return hit;
    try {
      const chain: number[] = [e];
      let p = this.entryParentOf(e);
      while (p >= 0 && !this.resolved.has(p)) {
        if (chain.length >= this.entryCount) throw new BitmapCorrupt('corrupt bitmap lookup table: xor chain exceeds entry count');
        chain.push(p);
        p = this.entryParentOf(p);
      }
      const acc = p >= 0 ? this.resolved.get(p)!.toBitset(this.objectCount) : new Bitset(this.objectCount);
      let out: Ewah | undefined;
      for (let i = chain.length - 1; i >= 0; i--) {
        const id = chain[i]!;
        this.root(id).xorInto(acc);
        out = Ewah.fromBitset(acc, this.objectCount);
        this.keep(id, out);
      }
      return out;
    } catch (err) {
      if (!(err instanceof BitmapCorrupt)) throw err;
      this.damaged = err;
      this.resolved.clear();
      this.resolvedBytes = 0;
      return undefined;
    }
  }

  private keep(e: number, b: Ewah): void {
    if (this.resolvedBytes + b.bytes > this.resolvedCap) { this.resolved.clear(); this.resolvedBytes = 0; }
    this.resolved.set(e, b);
    this.resolvedBytes += b.bytes;
  }

  /** The index position of every commit that has a bitmap (tests and tools). */
  commitPositions(): number[] {
    const out: number[] = [];
    if (this.entryByPos) for (const pos of this.entryByPos.keys()) out.push(pos);
    else for (let i = 0; i < this.entryCount; i++) out.push(this.buf.readUInt32BE(this.tableAt + i * TRIPLET));
    return out;
  }
}
