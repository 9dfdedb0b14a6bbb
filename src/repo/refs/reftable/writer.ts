/**
 * Writes one reftable file (git's reftable/writer.c): ref records, then
 * log records, each section cut into blocks of the configured size with
 * prefix-compressed keys and a restart point every `restartInterval`
 * records; ref blocks padded to the block size but for the last one of
 * the section, log blocks deflated; an index after a section of more
 * than three blocks (one level: the format lets it be larger than a
 * block); the footer with its CRC-32. Version 1 for SHA-1, 2 (with the
 * hash id) for SHA-256, as git writes them.
 */
import { deflateSync } from 'node:zlib';
import {
  BlockType, FOOTER_V1, FOOTER_V2, HASH_SHA256, HEADER_V1, HEADER_V2, LogValue, MAGIC, MAX_BLOCK_SIZE, RefValue, crc32, putBe24, putBe64, putVarint, varintLen,
} from './basics.js';

export interface RefRecord {
  name: Buffer;
  updateIndex: number;
  type: RefValue;
  /** the id (Val1, Val2) */
  value?: Buffer;
  /** the peeled id (Val2) */
  peeled?: Buffer;
  /** a symref's target (Symref) */
  target?: Buffer;
}

export interface LogRecord {
  name: Buffer;
  updateIndex: number;
  type: LogValue;
  old?: Buffer;
  new?: Buffer;
  who?: Buffer;
  email?: Buffer;
  time?: number;
  /** git's HHMM offset as a signed number (+0130 → 130) */
  tz?: number;
  /** the message, a single line; written with its LF */
  message?: Buffer;
  /** the value bytes as another table holds them (compaction copies them as they are) */
  raw?: Buffer;
}

export interface TableLayout { blockSize: number; restartInterval: number }

/** A log record's key: name, NUL, the reversed update index (newest first). */
export function logKey(name: Buffer, updateIndex: number): Buffer {
  const k = Buffer.allocUnsafe(name.length + 9);
  writeLogKey(k, name, updateIndex);
  return k;
}

function writeLogKey(k: Buffer, name: Buffer, updateIndex: number): void {
  name.copy(k, 0);
  k[name.length] = 0;
  // 0xffffffffffffffff - i, in two 32-bit halves (i < 2^53)
  const hi = Math.floor(updateIndex / 0x100000000), lo = updateIndex >>> 0;
  k.writeUInt32BE((0xffffffff - hi) >>> 0, name.length + 1);
  k.writeUInt32BE((0xffffffff - lo) >>> 0, name.length + 5);
}

/** How a section's records are written: the key (a buffer whose first `keyLen` bytes are it), the value type bits, the value. */
export interface Encoder<T> {
  key(r: T): Buffer;
  keyLen(r: T): number;
  extra(r: T): number;
  valueLen(r: T): number;
  /** write the value at buf[at..at + valueLen) */
  value(r: T, buf: Buffer, at: number): void;
}

/**
 * Records of one block being filled, encoded straight into the block's
 * buffer (no buffer per record): each record's key prefix-compressed
 * against the last one's (kept in `last`), a restart point every
 * `interval` records.
 */
class BlockBuilder {
  private buf: Buffer;
  /** bytes of the block so far, counted from the block's start (the file header included for the first) */
  private bytes: number;
  private readonly restarts: number[] = [];
  private count = 0;
  private last = Buffer.allocUnsafe(256);
  private lastLen = 0;

  constructor(readonly type: BlockType, readonly headerOff: number, private readonly limit: number, private readonly interval: number) {
    this.bytes = headerOff + 4;
    this.buf = Buffer.allocUnsafe(Math.min(limit - headerOff, 64 * 1024));
  }

  get empty(): boolean { return this.count === 0; }

  /** the last key added, copied */
  lastKey(): Buffer {
    const k = Buffer.allocUnsafe(this.lastLen);
    this.last.copy(k, 0, 0, this.lastLen);
    return k;
  }

  private room(n: number): void {
    if (n <= this.buf.length) return;
    const b = Buffer.allocUnsafe(Math.max(n, Math.min(this.buf.length * 2, this.limit)));
    this.buf.copy(b, 0, 0, this.bytes - this.headerOff);
    this.buf = b;
  }

  /** Add a record; false (nothing added) when it does not fit (the block is full). */
  add<T>(r: T, enc: Encoder<T>): boolean {
    const key = enc.key(r), keyLen = enc.keyLen(r);
    const restart = this.count % this.interval === 0;
    let prefix = 0;
    if (!restart) {
      const last = this.last, n = Math.min(this.lastLen, keyLen);
      while (prefix < n && last[prefix] === key[prefix]) prefix++;
    }
    const suffix = keyLen - prefix;
    const sv = suffix * 8 + enc.extra(r);
    const vlen = enc.valueLen(r);
    const recLen = varintLen(prefix) + varintLen(sv) + suffix + vlen;
    const restartsAfter = this.restarts.length + (restart ? 1 : 0);
    if (this.bytes + recLen + 3 * restartsAfter + 2 > this.limit && this.count > 0) return false;
    if (restart) this.restarts.push(this.bytes);
    let p = this.bytes - this.headerOff;
    this.room(p + recLen);
    const buf = this.buf;
    p = putVarint(buf, p, prefix);
    p = putVarint(buf, p, sv);
    if (suffix > 32) key.copy(buf, p, prefix, keyLen);
    else for (let i = 0; i < suffix; i++) buf[p + i] = key[prefix + i]!;
    p += suffix;
    enc.value(r, buf, p);
    this.bytes += recLen;
    this.count++;
    if (keyLen > this.last.length) this.last = Buffer.allocUnsafe(keyLen * 2);
    const last = this.last;
    if (keyLen > 32) key.copy(last, 0, 0, keyLen);
    else for (let i = 0; i < keyLen; i++) last[i] = key[i]!;
    this.lastLen = keyLen;
    return true;
  }

  /** The block's bytes from its type byte (the file header, for the first block, is the caller's). */
  finish(): Buffer {
    const len = this.bytes + 3 * this.restarts.length + 2;
    if (len > MAX_BLOCK_SIZE) throw new Error('reftable block too large');
    let p = this.bytes - this.headerOff;
    this.room(len - this.headerOff);
    const buf = this.buf;
    for (const r of this.restarts) { putBe24(buf, p, r); p += 3; }
    buf.writeUInt16BE(this.restarts.length, p);
    buf[0] = this.type;
    putBe24(buf, 1, len);
    const body = buf.subarray(0, len - this.headerOff);
    if (this.type !== BlockType.Log) return body;
    // a log block: the length stays the inflated one; everything after the header is deflated
    return Buffer.concat([body.subarray(0, 4), deflateSync(body.subarray(4))]);
  }
}

const refEncoder = (minUpdate: number, hashLen: number): Encoder<RefRecord> => ({
  key: (r) => r.name,
  keyLen: (r) => r.name.length,
  extra: (r) => r.type,
  valueLen: (r) => {
    let n = varintLen(r.updateIndex - minUpdate);
    if (r.type === RefValue.Val1) n += hashLen;
    else if (r.type === RefValue.Val2) n += 2 * hashLen;
    else if (r.type === RefValue.Symref) n += varintLen(r.target!.length) + r.target!.length;
    return n;
  },
  value: (r, buf, at) => {
    let p = putVarint(buf, at, r.updateIndex - minUpdate);
    if (r.type === RefValue.Val1 || r.type === RefValue.Val2) p += r.value!.copy(buf, p, 0, hashLen);
    if (r.type === RefValue.Val2) p += r.peeled!.copy(buf, p, 0, hashLen);
    if (r.type === RefValue.Symref) { p = putVarint(buf, p, r.target!.length); r.target!.copy(buf, p); }
  },
});

const EMPTY = Buffer.alloc(0);

function logEncoder(hashLen: number): Encoder<LogRecord> {
  let scratch = Buffer.allocUnsafe(256);
  const zero = Buffer.alloc(hashLen);
  return {
    key: (l) => {
      const n = l.name.length;
      if (n + 9 > scratch.length) scratch = Buffer.allocUnsafe((n + 9) * 2);
      writeLogKey(scratch, l.name, l.updateIndex);
      return scratch;
    },
    keyLen: (l) => l.name.length + 9,
    extra: (l) => l.type,
    valueLen: (l) => {
      if (l.type === LogValue.Deletion) return 0;
      if (l.raw) return l.raw.length;
      const who = l.who ?? EMPTY, email = l.email ?? EMPTY, msg = l.message ?? EMPTY;
      return 2 * hashLen + varintLen(who.length) + who.length + varintLen(email.length) + email.length + varintLen(l.time ?? 0) + 2 + varintLen(msg.length) + msg.length;
    },
    value: (l, buf, at) => {
      if (l.type === LogValue.Deletion) return;
      if (l.raw) { l.raw.copy(buf, at); return; }
      const who = l.who ?? EMPTY, email = l.email ?? EMPTY, msg = l.message ?? EMPTY;
      let p = at;
      p += (l.old ?? zero).copy(buf, p, 0, hashLen);
      p += (l.new ?? zero).copy(buf, p, 0, hashLen);
      p = putVarint(buf, p, who.length); p += who.copy(buf, p);
      p = putVarint(buf, p, email.length); p += email.copy(buf, p);
      p = putVarint(buf, p, l.time ?? 0);
      buf.writeInt16BE(l.tz ?? 0, p); p += 2;
      p = putVarint(buf, p, msg.length); msg.copy(buf, p);
    },
  };
}

interface IndexEntry { key: Buffer; pos: number }

const indexEncoder: Encoder<IndexEntry> = {
  key: (e) => e.key,
  keyLen: (e) => e.key.length,
  extra: () => 0,
  valueLen: (e) => varintLen(e.pos),
  value: (e, buf, at) => { putVarint(buf, at, e.pos); },
};

/**
 * The bytes of one table holding `refs` (sorted by name) and `logs`
 * (sorted by key), with update indexes in [minUpdate, maxUpdate].
 */
export function writeTable(refs: Iterable<RefRecord>, logs: Iterable<LogRecord>, minUpdate: number, maxUpdate: number, hashLen: number, layout: TableLayout): Buffer {
  const out: Buffer[] = [];
  writeTableTo((b) => out.push(b), refs, logs, minUpdate, maxUpdate, hashLen, layout);
  return Buffer.concat(out);
}

/**
 * The same, streamed: the bytes go to `sink` block by block as the
 * records come, so a compaction of a million refs holds one block (and
 * the index entries, one per block) at a time, never the whole table.
 */
export function writeTableTo(sink: (b: Buffer) => void, refs: Iterable<RefRecord>, logs: Iterable<LogRecord>, minUpdate: number, maxUpdate: number, hashLen: number, layout: TableLayout): void {
  writeTableWith(sink, refs, refEncoder(minUpdate, hashLen), logs, logEncoder(hashLen), minUpdate, maxUpdate, hashLen, layout);
}

/**
 * The same over records of any shape, each section's `Encoder` saying how
 * one is written (a compaction writes the records of the tables it merges
 * from where they lie, without a copy of each).
 */
export function writeTableWith<R, L>(sink: (b: Buffer) => void, refs: Iterable<R>, refEnc: Encoder<R>, logs: Iterable<L>, logEnc: Encoder<L>, minUpdate: number, maxUpdate: number, hashLen: number, layout: TableLayout): void {
  const v2 = hashLen === 32;
  const headerSize = v2 ? HEADER_V2 : HEADER_V1;
  const blockSize = layout.blockSize;
  const header = Buffer.alloc(headerSize);
  MAGIC.copy(header, 0);
  header[4] = v2 ? 2 : 1;
  putBe24(header, 5, blockSize);
  putBe64(header, 8, minUpdate);
  putBe64(header, 16, maxUpdate);
  if (v2) header.writeUInt32BE(HASH_SHA256, 24);

  sink(header);
  let pos = headerSize;
  /** the padding owed by the last block written, paid only if another block of its section follows */
  let pendingPad = 0;
  const emit = (b: Buffer, pad: number) => {
    if (pendingPad) { sink(Buffer.alloc(pendingPad)); pos += pendingPad; }
    sink(b);
    pos += b.length;
    pendingPad = pad;
  };

  /** Write a section's records; returns the index records (last key, block position) of its blocks. */
  const section = <T>(type: BlockType, records: Iterable<T>, enc: Encoder<T>, padded: boolean): IndexEntry[] => {
    const index: IndexEntry[] = [];
    // only the first ref block shares the file's first block with the header (its offsets count from 0)
    const first = type === BlockType.Ref && pos === headerSize;
    let b = new BlockBuilder(type, first ? headerSize : 0, blockSize, layout.restartInterval);
    let inHeaderBlock = first;
    const flush = () => {
      const bytes = b.finish();
      const start = inHeaderBlock ? 0 : pos + pendingPad;
      const realLen = (inHeaderBlock ? headerSize : 0) + bytes.length;
      const pad = padded && realLen < blockSize ? blockSize - realLen : 0;
      index.push({ key: b.lastKey(), pos: start });
      emit(bytes, pad);
      inHeaderBlock = false;
    };
    for (const r of records) {
      if (b.add(r, enc)) continue;
      flush();
      b = new BlockBuilder(type, 0, blockSize, layout.restartInterval);
      if (!b.add(r, enc)) throw new Error('reftable record larger than a block');
    }
    if (!b.empty) flush();
    pendingPad = 0; // no padding after a section's last block
    return index;
  };

  const writeIndex = (entries: IndexEntry[]): number => {
    if (entries.length <= 3) return 0;
    const at = pos;
    const b = new BlockBuilder(BlockType.Index, 0, MAX_BLOCK_SIZE, layout.restartInterval);
    for (const e of entries) b.add(e, indexEncoder);
    emit(b.finish(), 0);
    pendingPad = 0;
    return at;
  };

  let refIndexPos = 0, logPos = 0, logIndexPos = 0;
  const refIdx = section(BlockType.Ref, refs, refEnc, true);
  if (refIdx.length) refIndexPos = writeIndex(refIdx);
  const logStart = pos;
  const logIdx = section(BlockType.Log, logs, logEnc, false);
  if (logIdx.length) { logPos = logStart; logIndexPos = writeIndex(logIdx); }

  const footerSize = v2 ? FOOTER_V2 : FOOTER_V1;
  const footer = Buffer.alloc(footerSize);
  header.copy(footer, 0);
  let p = headerSize;
  putBe64(footer, p, refIndexPos); p += 8;
  putBe64(footer, p, 0); p += 8; // no obj blocks (optional: a reader then scans the refs)
  putBe64(footer, p, 0); p += 8;
  putBe64(footer, p, logPos); p += 8;
  putBe64(footer, p, logIndexPos); p += 8;
  footer.writeUInt32BE(crc32(footer.subarray(0, p)), p);
  sink(footer);
}
