/**
 * One reftable file (git's reftable/table.c): the header and footer read
 * and checked once (magic, version, hash id, the footer's CRC-32), the
 * file held open so that a compaction that unlinks it cannot change what
 * a reader in flight sees, and iterators over its ref and log sections
 * that seek by the section's index when there is one (multi-level), by
 * a walk over its blocks' first keys when not.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { Block, BlockIter, type BlockSource } from './block.js';
import { BlockType, FOOTER_V1, FOOTER_V2, HASH_SHA1, HASH_SHA256, HEADER_V1, HEADER_V2, MAGIC, be24, be64, corrupt, crc32, isBlockType } from './basics.js';

/** blocks a table keeps read (64 of 4 KiB: 256 KiB at most for the usual block size) */
const BLOCK_CACHE = 64;

export class Table implements BlockSource {
  private pins = 1;
  readonly version: number;
  readonly blockSize: number;
  readonly minUpdate: number;
  readonly maxUpdate: number;
  readonly headerSize: number;
  /** bytes before the footer */
  readonly size: number;
  readonly refIndexPos: number;
  readonly objPos: number;
  readonly objIdLen: number;
  readonly objIndexPos: number;
  readonly logPos: number;
  readonly logIndexPos: number;
  readonly hasRefs: boolean;

  private constructor(private fd: number, readonly name: string, readonly fileSize: number, readonly hashLen: number, readonly file: string = name) {
    const path = file;
    const head = Buffer.alloc(HEADER_V2 + 1);
    readSync(fd, head, 0, head.length, 0);
    if (fileSize < HEADER_V1 + FOOTER_V1 || !head.subarray(0, 4).equals(MAGIC)) throw corrupt(path, 'not a reftable (bad magic or too short)');
    const version = head[4]!;
    if (version !== 1 && version !== 2) throw corrupt(path, `unsupported version ${version}`);
    this.version = version;
    this.headerSize = version === 1 ? HEADER_V1 : HEADER_V2;
    const footerSize = version === 1 ? FOOTER_V1 : FOOTER_V2;
    if (fileSize < this.headerSize + footerSize) throw corrupt(path, 'too short');
    const f = Buffer.alloc(footerSize);
    if (readSync(fd, f, 0, footerSize, fileSize - footerSize) !== footerSize) throw corrupt(path, 'short read of the footer');
    if (!f.subarray(0, this.headerSize).equals(head.subarray(0, this.headerSize))) throw corrupt(path, 'the footer does not repeat the header');
    if (crc32(f.subarray(0, footerSize - 4)) !== f.readUInt32BE(footerSize - 4)) throw corrupt(path, 'bad footer checksum');
    const hashId = version === 1 ? HASH_SHA1 : f.readUInt32BE(24);
    const want = hashLen === 32 ? HASH_SHA256 : HASH_SHA1;
    if (hashId !== want) throw corrupt(path, `hash id 0x${hashId.toString(16)} does not match the repository's object format`);
    this.blockSize = be24(f, 5);
    this.minUpdate = be64(f, 8);
    this.maxUpdate = be64(f, 16);
    let p = this.headerSize;
    this.refIndexPos = be64(f, p); p += 8;
    const objWord = be64(f, p); p += 8;
    this.objPos = Math.floor(objWord / 32);
    this.objIdLen = objWord % 32;
    this.objIndexPos = be64(f, p); p += 8;
    this.logPos = be64(f, p); p += 8;
    this.logIndexPos = be64(f, p);
    this.size = fileSize - footerSize;
    for (const v of [this.minUpdate, this.maxUpdate, this.refIndexPos, this.objPos, this.objIndexPos, this.logPos, this.logIndexPos]) {
      if (!Number.isSafeInteger(v)) throw corrupt(path, 'a footer field is out of range');
    }
    for (const v of [this.refIndexPos, this.objPos, this.objIndexPos, this.logPos, this.logIndexPos]) {
      if (v !== 0 && (v < this.headerSize || v >= this.size)) throw corrupt(path, `a section position (${v}) lies outside the table`);
    }
    this.hasRefs = this.size > this.headerSize && head[this.headerSize] === BlockType.Ref;
    if (this.size > this.headerSize && !isBlockType(head[this.headerSize]!)) throw corrupt(path, `bad block type 0x${head[this.headerSize]!.toString(16)} at ${this.headerSize}`);
  }

  /** Open `path`; errors of the open itself (ENOENT: compacted away) are thrown as they are. */
  static open(path: string, name: string, hashLen: number): Table {
    const fd = openSync(path, 'r');
    try {
      return new Table(fd, name, fstatSync(fd).size, hashLen, path);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  pin(): this { this.pins++; return this; }
  unpin(): void { if (--this.pins === 0) { try { closeSync(this.fd); } catch { /* closed */ } this.fd = -1; this.cache.clear(); } }

  read(off: number, len: number): Buffer {
    const n = Math.max(0, Math.min(len, this.size - off));
    const b = Buffer.allocUnsafe(n);
    let got = 0;
    while (got < n) {
      const r = readSync(this.fd, b, got, n - got, off + got);
      if (r <= 0) break;
      got += r;
    }
    return got === n ? b : b.subarray(0, got);
  }

  /**
   * Blocks read lately, by offset (a table never changes): lookups of many
   * names (a push of thousands of refs) read the same index and ref blocks
   * again and again. Bounded by count, blocks being at most a few KiB but
   * for the index.
   */
  private readonly cache = new Map<number, Block>();

  /** The block at `off` of type `want`, or undefined at the end of that section. */
  block(off: number, want?: BlockType): Block | undefined {
    let b = this.cache.get(off);
    if (!b) {
      b = Block.read(this, off, off === 0 ? this.headerSize : 0, this.blockSize, this.hashLen);
      if (!b) return undefined;
      b.file = this.file;
      if (this.cache.size >= BLOCK_CACHE) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(off, b);
    }
    return want !== undefined && b.type !== want ? undefined : b;
  }

  /** The refs, from the first (or the first at or after `key`). */
  refs(key?: Buffer): TableIter {
    const it = new TableIter(this, BlockType.Ref);
    if (this.hasRefs) it.start(0, this.refIndexPos, key);
    return it;
  }

  /** the iterator point lookups reuse */
  private finder: TableIter | undefined;

  /**
   * The ref record of exactly `key` (a deletion included), on an iterator
   * the next lookup in this table reuses; undefined when the table has
   * no record of that name.
   */
  findRef(key: Buffer): BlockIter | undefined {
    if (!this.hasRefs) return undefined;
    const f = this.finder ??= new TableIter(this, BlockType.Ref);
    f.start(0, this.refIndexPos, key);
    if (!f.next()) return undefined;
    const it = f.it!;
    return it.keyLen === key.length && it.cmpKey(key) === 0 ? it : undefined;
  }

  /** The first ref record at or after `key`, on the iterator findRef() reuses; undefined past the last. */
  firstRefAt(key: Buffer): BlockIter | undefined {
    if (!this.hasRefs) return undefined;
    const f = this.finder ??= new TableIter(this, BlockType.Ref);
    f.start(0, this.refIndexPos, key);
    return f.next() ? f.it : undefined;
  }

  /** the iterator firstLogAt() reuses */
  private logFinder: TableIter | undefined;

  /** The first log record at or after `key`, on an iterator the next call reuses; undefined past the last. */
  firstLogAt(key: Buffer): BlockIter | undefined {
    if (!this.logPos) return undefined;
    const f = this.logFinder ??= new TableIter(this, BlockType.Log);
    f.start(this.logPos, this.logIndexPos, key);
    return f.next() ? f.it : undefined;
  }

  /** The log records, from the first (or the first at or after `key`). */
  logs(key?: Buffer): TableIter {
    const it = new TableIter(this, BlockType.Log);
    if (this.logPos) it.start(this.logPos, this.logIndexPos, key);
    return it;
  }
}

/** Records of one section of a table, across its blocks. */
export class TableIter {
  private off = 0;
  /** the current record's fields (one iterator, moved from block to block) */
  it: BlockIter | undefined;
  done = true;
  private own: BlockIter | undefined;
  /** reads the first key of the blocks a linear seek walks */
  private probe: BlockIter | undefined;
  /** walks the index blocks of an indexed seek */
  private idx: BlockIter | undefined;

  constructor(readonly table: Table, readonly type: BlockType) {}

  private on(b: Block): BlockIter {
    if (this.own) this.own.reset(b); else this.own = new BlockIter(b, this.table.hashLen);
    return this.own;
  }

  private idxOn(b: Block): BlockIter {
    if (this.idx) this.idx.reset(b); else this.idx = new BlockIter(b, this.table.hashLen);
    return this.idx;
  }

  /** Begin the section at `sectionOff`; seek `key` through the index at `indexPos` (0: none). */
  start(sectionOff: number, indexPos: number, key?: Buffer): void {
    this.done = false;
    if (!key) { this.enter(sectionOff); return; }
    if (indexPos) this.seekIndexed(indexPos, key);
    else this.seekLinear(sectionOff, this.type, key);
  }

  private enter(off: number): boolean {
    const b = this.table.block(off, this.type);
    if (!b) { this.done = true; this.it = undefined; return false; }
    this.off = off;
    this.it = this.on(b);
    return true;
  }

  /**
   * The block whose first key is the last at or below `key` (walking the
   * section's blocks by their first keys), positioned at `key`.
   */
  private seekLinear(sectionOff: number, type: BlockType, key: Buffer): BlockIter | undefined {
    let cur = this.table.block(sectionOff, type);
    if (!cur) { this.done = true; this.it = undefined; return undefined; }
    let curOff = sectionOff;
    for (;;) {
      const nextOff = curOff + cur.fullSize;
      const next = this.table.block(nextOff, type);
      if (!next) break;
      const probe = this.probe ??= new BlockIter(next, this.table.hashLen);
      probe.reset(next);
      probe.next();
      if (probe.cmpKey(key) > 0) break;
      cur = next;
      curOff = nextOff;
    }
    if (type === this.type) {
      this.off = curOff;
      const it = this.it = this.on(cur);
      if (!it.seek(key)) this.advance();
      return it;
    }
    const it = this.idxOn(cur);
    if (it.seek(key)) return it;
    // past this block's last key: the next block's first record covers it
    const after = this.table.block(curOff + cur.fullSize, type);
    return after ? this.idxOn(after) : undefined;
  }

  /** Down the index levels to the block that holds `key`. */
  private seekIndexed(indexPos: number, key: Buffer): void {
    let it = this.seekLinear(indexPos, BlockType.Index, key);
    for (let depth = 0; ; depth++) {
      if (!it || !it.next()) { this.done = true; this.it = undefined; return; }
      if (depth > 16) throw corrupt(this.table.file, 'index too deep');
      const pos = it.n;
      if (pos >= this.table.size) throw corrupt(this.table.file, `index points past the table (${pos})`);
      const b = this.table.block(pos);
      if (!b) { this.done = true; this.it = undefined; return; }
      if (b.type === BlockType.Index) {
        it = this.idxOn(b);
        if (!it.seek(key)) it = undefined;
        continue;
      }
      if (b.type !== this.type) throw corrupt(this.table.file, `index points at a block of type 0x${b.type.toString(16)}`);
      this.off = pos;
      this.it = this.on(b);
      if (!this.it.seek(key)) this.advance();
      return;
    }
  }

  /** The next block of the section, its keys checked to follow the last one's. */
  private advance(): boolean {
    const b = this.it!.block;
    const off = this.off + b.fullSize;
    const nb = this.table.block(off, this.type);
    if (!nb) { this.done = true; this.it = undefined; return false; }
    this.off = off;
    this.it!.reset(nb, true);
    return true;
  }

  /**
   * The caller stopped at a key past its prefix: read on to the next key
   * written whole (a restart point, the next block's first), which must
   * sort after it. A flipped byte can make a key sort past the prefix,
   * and the keys sharing its start with it: stopping there listed the
   * refs before it as all there are (git's reader does the same). Damage
   * in a table's last run of records cannot be told from refs so named.
   */
  checkPast(): void {
    for (let i = 0; i < 4096 && this.next(); i++) if (this.it!.shared === 0) return;
  }

  /** The next record (its fields on `this.it`); false at the end of the section. */
  next(): boolean {
    for (;;) {
      if (this.done || !this.it) return false;
      if (this.it.next()) {
        // a ref's update index lies in the table's range (its delta from min_update_index)
        if (this.type === BlockType.Ref && this.it.n > this.table.maxUpdate - this.table.minUpdate) {
          throw corrupt(this.table.file, `update index ${this.table.minUpdate + this.it.n} outside the table's ${this.table.minUpdate}..${this.table.maxUpdate}`);
        }
        return true;
      }
      if (!this.advance()) return false;
    }
  }
}
