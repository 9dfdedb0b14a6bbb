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
  BlockType, FOOTER_V1, FOOTER_V2, HASH_SHA256, HEADER_V1, HEADER_V2, LogValue, MAGIC, MAX_BLOCK_SIZE, RefValue, crc32, putBe24, putBe64, putVarint,
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
  name.copy(k, 0);
  k[name.length] = 0;
  // 0xffffffffffffffff - i, in two 32-bit halves (i < 2^53)
  const hi = Math.floor(updateIndex / 0x100000000), lo = updateIndex >>> 0;
  k.writeUInt32BE((0xffffffff - hi) >>> 0, name.length + 1);
  k.writeUInt32BE((0xffffffff - lo) >>> 0, name.length + 5);
  return k;
}

function commonPrefix(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Records of one block being filled. */
class BlockBuilder {
  private readonly parts: Buffer[] = [];
  private bytes: number;
  private readonly restarts: number[] = [];
  private count = 0;
  private last: Buffer = Buffer.alloc(0);
  lastKey: Buffer = Buffer.alloc(0);

  constructor(readonly type: BlockType, readonly headerOff: number, private readonly limit: number, private readonly interval: number) {
    this.bytes = headerOff + 4;
  }

  get empty(): boolean { return this.count === 0; }

  /** Add a record; false (nothing added) when it does not fit (the block is full). */
  add(key: Buffer, extra: number, value: Buffer): boolean {
    const restart = this.count % this.interval === 0;
    const prefix = restart ? 0 : commonPrefix(this.last, key);
    const scratch = Buffer.allocUnsafe(20);
    let n = putVarint(scratch, 0, prefix);
    n = putVarint(scratch, n, (key.length - prefix) * 8 + extra);
    const recLen = n + key.length - prefix + value.length;
    const restartsAfter = this.restarts.length + (restart ? 1 : 0);
    if (this.bytes + recLen + 3 * restartsAfter + 2 > this.limit && this.count > 0) return false;
    if (restart) this.restarts.push(this.bytes);
    this.parts.push(scratch.subarray(0, n), key.subarray(prefix), value);
    this.bytes += recLen;
    this.count++;
    this.last = key;
    this.lastKey = key;
    return true;
  }

  /** The block's bytes from its type byte (the file header, for the first block, is the caller's). */
  finish(): Buffer {
    const tail = Buffer.allocUnsafe(3 * this.restarts.length + 2);
    this.restarts.forEach((r, i) => putBe24(tail, 3 * i, r));
    tail.writeUInt16BE(this.restarts.length, tail.length - 2);
    const len = this.bytes + tail.length;
    if (len > MAX_BLOCK_SIZE) throw new Error('reftable block too large');
    const head = Buffer.alloc(4);
    head[0] = this.type;
    putBe24(head, 1, len);
    const body = Buffer.concat([head, ...this.parts, tail]);
    if (this.type !== BlockType.Log) return body;
    // a log block: the length stays the inflated one; everything after the header is deflated
    return Buffer.concat([body.subarray(0, 4), deflateSync(body.subarray(4))]);
  }
}

function refValue(r: RefRecord, minUpdate: number): Buffer {
  const s = Buffer.allocUnsafe(10);
  const n = putVarint(s, 0, r.updateIndex - minUpdate);
  const parts: Buffer[] = [s.subarray(0, n)];
  if (r.type === RefValue.Val1 || r.type === RefValue.Val2) parts.push(r.value!);
  if (r.type === RefValue.Val2) parts.push(r.peeled!);
  if (r.type === RefValue.Symref) {
    const l = Buffer.allocUnsafe(10);
    parts.push(l.subarray(0, putVarint(l, 0, r.target!.length)), r.target!);
  }
  return Buffer.concat(parts);
}

function logValue(l: LogRecord, hashLen: number): Buffer {
  if (l.type === LogValue.Deletion) return Buffer.alloc(0);
  if (l.raw) return l.raw;
  const v = (x: number) => { const b = Buffer.allocUnsafe(10); return b.subarray(0, putVarint(b, 0, x)); };
  const tz = Buffer.allocUnsafe(2);
  tz.writeInt16BE(l.tz ?? 0);
  const who = l.who ?? Buffer.alloc(0), email = l.email ?? Buffer.alloc(0), msg = l.message ?? Buffer.alloc(0);
  return Buffer.concat([l.old ?? Buffer.alloc(hashLen), l.new ?? Buffer.alloc(hashLen), v(who.length), who, v(email.length), email, v(l.time ?? 0), tz, v(msg.length), msg]);
}

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
  const section = (type: BlockType, records: Iterable<{ key: Buffer; extra: number; value: Buffer }>, padded: boolean): Array<{ key: Buffer; pos: number }> => {
    const index: Array<{ key: Buffer; pos: number }> = [];
    // only the first ref block shares the file's first block with the header (its offsets count from 0)
    const first = type === BlockType.Ref && pos === headerSize;
    let b = new BlockBuilder(type, first ? headerSize : 0, blockSize, layout.restartInterval);
    let inHeaderBlock = first;
    const flush = () => {
      const bytes = b.finish();
      const start = inHeaderBlock ? 0 : pos + pendingPad;
      const realLen = (inHeaderBlock ? headerSize : 0) + bytes.length;
      const pad = padded && realLen < blockSize ? blockSize - realLen : 0;
      index.push({ key: b.lastKey, pos: start });
      emit(bytes, pad);
      inHeaderBlock = false;
    };
    for (const r of records) {
      if (b.add(r.key, r.extra, r.value)) continue;
      flush();
      b = new BlockBuilder(type, 0, blockSize, layout.restartInterval);
      if (!b.add(r.key, r.extra, r.value)) throw new Error('reftable record larger than a block');
    }
    if (!b.empty) flush();
    pendingPad = 0; // no padding after a section's last block
    return index;
  };

  const writeIndex = (entries: Array<{ key: Buffer; pos: number }>): number => {
    if (entries.length <= 3) return 0;
    const at = pos;
    const b = new BlockBuilder(BlockType.Index, 0, MAX_BLOCK_SIZE, layout.restartInterval);
    for (const e of entries) {
      const s = Buffer.allocUnsafe(10);
      b.add(e.key, 0, s.subarray(0, putVarint(s, 0, e.pos)));
    }
    emit(b.finish(), 0);
    pendingPad = 0;
    return at;
  };

  let refIndexPos = 0, logPos = 0, logIndexPos = 0;
  const refIdx = section(BlockType.Ref, map(refs, (r) => ({ key: r.name, extra: r.type, value: refValue(r, minUpdate) })), true);
  if (refIdx.length) refIndexPos = writeIndex(refIdx);
  const logStart = pos;
  const logIdx = section(BlockType.Log, map(logs, (l) => ({ key: logKey(l.name, l.updateIndex), extra: l.type, value: logValue(l, hashLen) })), false);
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

function* map<T, U>(it: Iterable<T>, f: (x: T) => U): Generator<U> {
  for (const x of it) yield f(x);
}
