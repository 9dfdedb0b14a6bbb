/**
 * One reftable block (git's reftable/block.c): a type byte, a uint24
 * length, prefix-compressed records, the restart offsets and their count.
 * Log blocks are deflated after their 4-byte header and inflated here.
 *
 * `BlockIter` walks a block's records in order, decoding each key into
 * one growing buffer (prefix compression: the prior key's first bytes,
 * then the suffix) and the value's fields into offsets of the block; a
 * seek binary-searches the restart points (each holds a whole key), then
 * scans forward. Every length is checked against the block: a corrupt
 * table gives `corrupt reftable file`, never a read past the end.
 */
import { inflateSync } from 'node:zlib';
import { BlockType, LogValue, RefValue, be16, be24, corrupt, cursor, getVarint, isBlockType } from './basics.js';

/** Bytes a table reads blocks from: positional reads of an open file. */
export interface BlockSource {
  readonly name: string;
  /** the file's path, for errors */
  readonly file: string;
  /** bytes of the file before its footer */
  readonly size: number;
  read(off: number, len: number): Buffer;
}

export class Block {
  constructor(
    /** the block's bytes from its start (the first block: from the file's start), a log block inflated */
    readonly buf: Buffer,
    readonly type: BlockType,
    /** where the type byte is: the file header's size for the first block, else 0 */
    readonly headerOff: number,
    /** block_len: where the restart table ends */
    readonly len: number,
    /** where the restart offsets begin */
    readonly restartAt: number,
    readonly restartCount: number,
    /** bytes the block takes in the file: the next block starts this far after this one */
    readonly fullSize: number,
  ) {}

  /**
   * The block at `off`; undefined at the end of the section (past the
   * table, or a block of another type when `want` is given).
   */
  static read(src: BlockSource, off: number, headerOff: number, tableBlockSize: number, hashLen: number, want?: BlockType): Block | undefined {
    void hashLen;
    if (off >= src.size) return undefined;
    const guess = tableBlockSize || 4096;
    let buf = src.read(off, guess);
    if (buf.length < headerOff + 4) throw corrupt(src.file, `truncated block at ${off}`);
    const type = buf[headerOff]!;
    if (!isBlockType(type)) throw corrupt(src.file, `bad block type 0x${type.toString(16)} at ${off}`);
    if (want !== undefined && type !== want) return undefined;
    const len = be24(buf, headerOff + 1);
    if (len < headerOff + 4 + 2) throw corrupt(src.file, `block length ${len} too small at ${off}`);
    let fullSize: number;
    if (type === BlockType.Log) {
      // the length is the inflated size; the deflated bytes run to wherever the stream ends
      const skip = headerOff + 4;
      // (deflate never grows data by more than a few bytes per 16 KiB)
      const whole = src.read(off, Math.min(src.size - off, len + (len >>> 8) + 64));
      let inflated: { buffer: Buffer; engine: { bytesWritten: number } };
      try {
        inflated = inflateSync(whole.subarray(skip), { info: true, maxOutputLength: Math.max(1, len - skip) }) as unknown as typeof inflated;
      } catch (e) {
        throw corrupt(src.file, `log block at ${off}: ${(e as Error).message}`);
      }
      if (inflated.buffer.length + skip !== len) throw corrupt(src.file, `log block at ${off} inflates to ${inflated.buffer.length + skip} bytes, not ${len}`);
      const b = Buffer.allocUnsafe(len);
      whole.copy(b, 0, 0, skip);
      inflated.buffer.copy(b, skip);
      buf = b;
      fullSize = skip + inflated.engine.bytesWritten;
    } else {
      if (len > buf.length) {
        if (off + len > src.size) throw corrupt(src.file, `block at ${off} runs past the table (${len} bytes)`);
        buf = src.read(off, len);
      }
      if (!tableBlockSize) fullSize = len;
      // aligned files pad a block with NULs; a shorter block followed by data is unaligned
      else if (len < tableBlockSize && len < buf.length && buf[len] !== 0) fullSize = len;
      else fullSize = Math.max(len, tableBlockSize);
      buf = buf.subarray(0, len);
    }
    const restartCount = be16(buf, len - 2);
    const restartAt = len - 2 - 3 * restartCount;
    if (restartCount === 0 || restartAt < headerOff + 4) throw corrupt(src.file, `bad restart table in block at ${off}`);
    // restart offsets rise inside the records (a flipped one would send a seek into the middle of a record)
    for (let i = 0, last = headerOff + 3; i < restartCount; i++) {
      const r = be24(buf, restartAt + 3 * i);
      if (r <= last || r >= restartAt) throw corrupt(src.file, `bad restart offset ${r} in block at ${off}`);
      last = r;
    }
    return new Block(buf, type, headerOff, len, restartAt, restartCount, fullSize);
  }

  restart(i: number): number { return be24(this.buf, this.restartAt + 3 * i); }

  /** A file name for errors (set by the table). */
  file = '';
}

/** Records of one block, in order. */
export class BlockIter {
  /** the current key: key[0..keyLen) */
  key = Buffer.allocUnsafe(256);
  keyLen = 0;
  /** the low 3 bits of the suffix-length varint: the value type */
  vt = 0;
  /** ref: update index delta; index: block position; obj: count of positions */
  n = 0;
  /** where the value's fields start (ids, a symref's target, a log's fields, obj positions) */
  valAt = 0;
  /** ref symref / log: extra lengths and offsets (see the decoders) */
  symAt = 0;
  symLen = 0;
  /** how many bytes the current key shares with the one before (0: written whole) */
  shared = 0;
  private at: number;
  /** a record decoded by seek() and not yet handed over */
  private pending = false;
  /**
   * Structure checked as records are walked in order: `ordered` when
   * `key` holds the record before (the next must sort after it, the
   * previous block's last key included), `ri` the next restart point the
   * walk must land on (-1: not tracked, during a seek's probes).
   */
  private ordered = false;
  private ri = 0;
  /** the first record of a block continued from the one before: no shared prefix */
  private blockStart = false;

  constructor(public block: Block, private readonly hashLen: number) {
    this.at = block.headerOff + 4;
  }

  /**
   * Walk `b` from its start (one iterator serves block after block);
   * `continued`: `b` follows the block walked so far, its keys after it.
   */
  reset(b: Block, continued = false): void {
    this.block = b;
    this.at = b.headerOff + 4;
    this.ordered = continued && this.keyLen > 0;
    this.blockStart = this.ordered;
    if (!this.ordered) this.keyLen = 0;
    this.ri = 0;
    this.pending = false;
  }

  private bad(why: string): Error { return corrupt(this.block.file, `${why} in block at record ${this.at}`); }

  /** Decode the next record; false at the end of the block. */
  next(): boolean {
    if (this.pending) { this.pending = false; return true; }
    const blk = this.block, b = blk.buf, end = blk.restartAt;
    let p = this.at;
    if (p >= end) {
      if (this.ri >= 0 && this.ri < blk.restartCount) throw this.bad('a restart point past the last record');
      return false;
    }
    const prefix = getVarint(b, p, end);
    if (prefix < 0) throw this.bad('bad prefix length');
    if (this.ri >= 0 && this.ri < blk.restartCount) {
      const r = blk.restart(this.ri);
      if (r === p) {
        if (prefix !== 0) throw this.bad('a restart point with a shared prefix');
        this.ri++;
      } else if (r < p) throw this.bad(`restart point ${r} inside a record`);
    }
    if (this.blockStart && prefix !== 0) throw this.bad('the first key of a block with a shared prefix');
    p = cursor.pos;
    const sv = getVarint(b, p, end);
    if (sv < 0) throw this.bad('bad suffix length');
    p = cursor.pos;
    const suffix = Math.floor(sv / 8);
    this.vt = sv & 7;
    if (prefix > this.keyLen || p + suffix > end) throw this.bad('bad key lengths');
    if (this.ordered) {
      // the new key is the old one's first `prefix` bytes and the suffix: it must sort after the old one
      const old = this.key, oldLen = this.keyLen;
      let c = 0;
      for (let i = 0; ; i++) {
        const a = prefix + i;
        if (i >= suffix) { c = -1; break; } // a prefix of the old key, or the same key
        if (a >= oldLen) { c = 1; break; }
        c = b[p + i]! - old[a]!;
        if (c !== 0) break;
      }
      if (c < 0) throw this.bad('keys out of order');
    }
    this.ordered = true;
    this.blockStart = false;
    this.shared = prefix;
    const klen = prefix + suffix;
    if (klen > this.key.length) {
      const k = Buffer.allocUnsafe(Math.max(klen, this.key.length * 2));
      this.key.copy(k, 0, 0, prefix);
      this.key = k;
    }
    // (short suffixes byte by byte: Buffer.copy's own cost is more than the copy)
    const key = this.key;
    if (suffix > 32) b.copy(key, prefix, p, p + suffix);
    else for (let i = 0; i < suffix; i++) key[prefix + i] = b[p + i]!;
    this.keyLen = klen;
    p += suffix;
    p = this.value(b, p, end);
    this.at = p;
    return true;
  }

  /** Decode the value after a key; returns where the record ends. */
  private value(b: Buffer, p: number, end: number): number {
    const h = this.hashLen;
    switch (this.block.type) {
      case BlockType.Ref: {
        this.n = getVarint(b, p, end);
        if (this.n < 0) throw this.bad('bad update index');
        p = cursor.pos;
        this.valAt = p;
        switch (this.vt) {
          case RefValue.Deletion: return p;
          case RefValue.Val1: p += h; break;
          case RefValue.Val2: p += 2 * h; break;
          case RefValue.Symref: {
            const l = getVarint(b, p, end);
            if (l < 0) throw this.bad('bad symref length');
            this.symAt = cursor.pos;
            this.symLen = l;
            p = cursor.pos + l;
            break;
          }
          default: throw this.bad(`bad ref value type ${this.vt}`);
        }
        if (p > end) throw this.bad('ref value past the block');
        return p;
      }
      case BlockType.Index: {
        this.n = getVarint(b, p, end);
        if (this.n < 0) throw this.bad('bad block position');
        return cursor.pos;
      }
      case BlockType.Obj: {
        let cnt = this.vt;
        if (cnt === 0) {
          cnt = getVarint(b, p, end);
          if (cnt < 0) throw this.bad('bad position count');
          p = cursor.pos;
        }
        this.n = cnt;
        this.valAt = p;
        for (let i = 0; i < cnt; i++) {
          if (getVarint(b, p, end) < 0) throw this.bad('bad position');
          p = cursor.pos;
        }
        return p;
      }
      case BlockType.Log: {
        this.valAt = p;
        if (this.vt === LogValue.Deletion) return p;
        if (this.vt !== LogValue.Update) throw this.bad(`bad log value type ${this.vt}`);
        p += 2 * h;
        for (let i = 0; i < 2; i++) {
          const l = getVarint(b, p, end);
          if (l < 0) throw this.bad('bad log field');
          p = cursor.pos + l;
        }
        if (getVarint(b, p, end) < 0) throw this.bad('bad log time');
        p = cursor.pos + 2;
        const m = getVarint(b, p, end);
        if (m < 0) throw this.bad('bad log message');
        p = cursor.pos + m;
        if (p > end) throw this.bad('log record past the block');
        return p;
      }
    }
    throw this.bad('bad block type');
  }

  /** Does the current key begin with `p`? */
  keyStartsWith(p: Buffer): boolean {
    const n = p.length;
    if (this.keyLen < n) return false;
    const k = this.key;
    for (let i = 0; i < n; i++) if (k[i] !== p[i]) return false;
    return true;
  }

  /** The current key against another iterator's: <0, 0, >0. */
  cmpIter(o: BlockIter): number {
    const a = this.key, b = o.key, n = this.keyLen, m = o.keyLen;
    const l = n < m ? n : m;
    for (let i = 0; i < l; i++) {
      const d = a[i]! - b[i]!;
      if (d !== 0) return d;
    }
    return n - m;
  }

  /** The current key against `want`: <0, 0, >0 (a prefix sorts first), as Buffer.compare, without its call. */
  cmpKey(want: Buffer): number {
    const k = this.key, n = this.keyLen, m = want.length;
    const l = n < m ? n : m;
    for (let i = 0; i < l; i++) {
      const d = k[i]! - want[i]!;
      if (d !== 0) return d;
    }
    return n - m;
  }

  /**
   * Position so that next() gives the first record whose key is >= want
   * (false: every key of the block is smaller). Binary search on the
   * restart points, then a scan from the last restart at or below it.
   */
  seek(want: Buffer): boolean {
    const blk = this.block;
    let lo = 0, hi = blk.restartCount;
    // the first restart whose key is > want
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      this.at = blk.restart(mid);
      if (this.at < blk.headerOff + 4 || this.at >= blk.restartAt) throw this.bad('bad restart offset');
      this.keyLen = 0;
      this.pending = false;
      this.ordered = false;
      this.blockStart = false;
      this.ri = -1;
      this.next();
      if (this.cmpKey(want) > 0) hi = mid; else lo = mid + 1;
    }
    this.at = lo === 0 ? blk.headerOff + 4 : blk.restart(lo - 1);
    this.keyLen = 0;
    this.pending = false;
    this.ordered = false;
    this.blockStart = false;
    // the walk from a restart point lands on the ones after it (from the block's start: on every one)
    this.ri = lo === 0 ? 0 : lo - 1;
    while (this.next()) {
      if (this.cmpKey(want) >= 0) { this.pending = true; return true; }
    }
    return false;
  }

  /** where the current record ends */
  get end(): number { return this.at; }

  /** The start of the block again. */
  rewind(): void { this.at = this.block.headerOff + 4; this.keyLen = 0; this.pending = false; this.ordered = false; this.blockStart = false; this.ri = 0; }
}
