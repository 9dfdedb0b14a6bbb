/**
 * A loaded reachability bitmap with the object order its bits follow:
 * one pack's (bit = rank in pack order) or a multi-pack index's
 * pseudo-pack order (packs one after another, each in pack order).
 *
 * What is kept depends only on the files (the pack or midx and the
 * .bitmap, all named by their checksums), so one BitmapIndex serves every
 * open copy of the repository; `bind()` ties it to the pack objects of the
 * database a request reads through.
 */
import { basename, dirname } from 'node:path';
import type { MultiPackIndex } from '../../repo/midx.js';
import type { Source } from '../../repo/odb.js';
import type { PackFile } from '../../repo/pack.js';
import { BitmapFile, verifyBitmapChecksum } from './bitmap-file.js';
import { BitmapCorrupt } from './corrupt.js';
import type { Ewah } from './ewah.js';
import { midxReverseIndex } from './midx-order.js';
import { OidTable } from './oid-table.js';

/** The bits of one pack: [start, end), in that pack's order. */
export interface Segment {
  /** the pack's .idx file name */
  idxName: string;
  start: number;
  end: number;
}

/** Where a long job may give the event loop away (Slicer.due). */
export type Pause = () => Promise<void> | undefined;

async function step(pause: Pause): Promise<void> {
  const p = pause();
  if (p) await p;
}

export class BitmapIndex {
  readonly objectCount: number;
  /** the index position (in .idx or midx id order) of each bit (built on first use when loaded light) */
  private posOfBitArr: Uint32Array | undefined;
  /** the bit of each index position (likewise) */
  private bitOfPosArr: Uint32Array | undefined;
  /** midx only: each bit's rank in its own pack */
  readonly rankOfBit: Uint32Array | undefined;
  readonly segments: Segment[];
  /** the name-hash cache in bit order (likewise) */
  private nameOfBitArr: Uint32Array | undefined;
  /** id → index position over the index held whole (when it is; never when loaded light) */
  private readonly table: OidTable | undefined;
  /** a single pack's bitmap loaded light: ranks are looked up through the pack's reverse index */
  private readonly pack: PackFile | undefined;

  private constructor(
    readonly kind: 'pack' | 'midx',
    readonly file: BitmapFile,
    readonly path: string,
    o: { posOfBit?: Uint32Array; bitOfPos?: Uint32Array; nameOfBit?: Uint32Array; rankOfBit?: Uint32Array; segments: Segment[]; table?: OidTable; pack?: PackFile },
  ) {
    this.objectCount = file.objectCount;
    this.posOfBitArr = o.posOfBit;
    this.bitOfPosArr = o.bitOfPos;
    this.nameOfBitArr = o.nameOfBit;
    this.rankOfBit = o.rankOfBit;
    this.segments = o.segments;
    this.table = o.table;
    this.pack = o.pack;
  }

  /** Whether it was loaded light (lookups go through the index and the reverse index, nothing per object was built). */
  get light(): boolean { return this.pack !== undefined; }

  /** The index position (in .idx or midx id order) of each bit. */
  get posOfBit(): Uint32Array {
    return (this.posOfBitArr ??= this.pack!.order().positions);
  }

  /** The bit of each index position. */
  get bitOfPos(): Uint32Array {
    if (!this.bitOfPosArr) {
      const pb = this.posOfBit, n = pb.length;
      const out = new Uint32Array(n);
      for (let b = 0; b < n; b++) out[pb[b]!] = b;
      this.bitOfPosArr = out;
    }
    return this.bitOfPosArr;
  }

  /** The name-hash cache in bit order (when the file has one). */
  get nameOfBit(): Uint32Array | undefined {
    if (!this.file.hasNameHashes) return undefined;
    return (this.nameOfBitArr ??= this.file.nameHashesInOrder(this.posOfBit));
  }

  /** The bit of the object at index position `pos`. */
  bitOfIndexPos(pos: number): number {
    if (this.bitOfPosArr) return this.bitOfPosArr[pos]!;
    return this.pack!.rankOfPosition(pos);
  }

  /** What every bitmap keeps besides the file: the bit of each position, names by bit, the id table. */
  private static async derive(file: BitmapFile, posOfBit: Uint32Array, ids: { bytes: Buffer | undefined; nameOffset: (p: number) => number; hashLen: number }, pause: Pause) {
    const n = file.objectCount;
    const bitOfPos = new Uint32Array(n);
    for (let b = 0; b < n; b++) {
      bitOfPos[posOfBit[b]!] = b;
      if ((b & 0xffff) === 0xffff) await step(pause);
    }
    await step(pause);
    const nameOfBit = file.hasNameHashes ? file.nameHashesInOrder(posOfBit) : undefined;
    await step(pause);
    const table = ids.bytes ? await OidTable.build(ids.bytes, n, ids.hashLen, ids.nameOffset, pause) : undefined;
    return { bitOfPos, nameOfBit, table };
  }

  /**
   * The id table with the index bytes of the database now reading (the
   * same file: a copy another database read is as good, but this keeps
   * one copy in memory); undefined when the index is not held whole.
   */
  oidTable(ids: Buffer | undefined): OidTable | undefined {
    if (!ids || !this.table) return undefined;
    this.table.ids = ids;
    return this.table;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.file.bytes + (this.posOfBitArr?.byteLength ?? 0) + (this.bitOfPosArr?.byteLength ?? 0) + (this.rankOfBit?.byteLength ?? 0) +
      (this.nameOfBitArr?.byteLength ?? 0) + (this.table?.bytes ?? 0) + 256;
  }

  /**
   * The bitmap of one pack, `buf` being its .bitmap file. `light`: build
   * nothing per object (a one-shot process answers one request: the few
   * lookups it makes search the index and the reverse index, as git
   * does); otherwise the tables a resident bitmap keeps for every request.
   * @throws BitmapCorrupt when it cannot be used
   */
  static async forPack(pack: PackFile, buf: Buffer, path: string, pause: Pause, light = false): Promise<BitmapIndex> {
    const idx = pack.index;
    const n = idx.count;
    await verifyBitmapChecksum(buf, path, pack.hashLen, pause);
    const file = new BitmapFile(buf, path, {
      hashLen: pack.hashLen, objectCount: n, oidAt: (p) => (p < n ? Buffer.from(idx.oid(p)) : undefined),
      owner: { checksum: idx.packChecksum(), mismatch: "checksum doesn't match in pack and bitmap" }, checksumVerified: true,
    });
    const segments = [{ idxName: basename(pack.idxPath), start: 0, end: n }];
    if (light) {
      await step(pause);
      if (pack.order().count !== n) throw new BitmapCorrupt('corrupted bitmap index: object count');
      return new BitmapIndex('pack', file, path, { segments, pack });
    }
    await step(pause);
    idx.preload();
    await step(pause);
    const posOfBit = Uint32Array.from(pack.positionsInPackOrder());
    if (posOfBit.length !== n) throw new BitmapCorrupt('corrupted bitmap index: object count');
    await step(pause);
    const d = await BitmapIndex.derive(file, posOfBit, { bytes: idx.buf.wholeBytes(), nameOffset: (p) => idx.nameOffset(p), hashLen: pack.hashLen }, pause);
    return new BitmapIndex('pack', file, path, { posOfBit, ...d, segments });
  }

  /**
   * The bitmap of a multi-pack index. `packOf` gives the midx's packs by
   * .idx name (undefined: it cannot be opened).
   * @throws BitmapCorrupt when it cannot be used
   */
  static async forMidx(midx: MultiPackIndex, buf: Buffer, path: string, packOf: (idxName: string) => PackFile | undefined, pause: Pause): Promise<BitmapIndex> {
    const n = midx.count;
    await verifyBitmapChecksum(buf, path, midx.hashLen, pause);
    const file = new BitmapFile(buf, path, {
      hashLen: midx.hashLen, objectCount: n, oidAt: (p) => (p < n ? midx.oid(p) : undefined),
      owner: { checksum: midx.checksum(), mismatch: "checksum doesn't match in MIDX and bitmap" }, checksumVerified: true,
    });
    await step(pause);
    const ridx = midxReverseIndex(midx, dirname(path));
    const packs: PackFile[] = [];
    for (const name of midx.packNames) {
      const p = packOf(name);
      if (!p) throw new BitmapCorrupt(`could not open pack ${name}`, 'warning');
      packs.push(p);
    }
    // each pack's objects: one run of bits, offsets ascending; each bit's rank in its pack
    const rankOfBit = new Uint32Array(n);
    const segments: Segment[] = [];
    const done = new Uint8Array(packs.length);
    let b = 0;
    while (b < n) {
      const id = midx.packId(ridx[b]!);
      if (id >= packs.length || done[id]) throw new BitmapCorrupt('multi-pack bitmap is missing required reverse index', 'warning');
      done[id] = 1;
      const pack = packs[id]!;
      await step(pause);
      const offs = pack.offsetsInPackOrder();
      await step(pause);
      let r = 0;
      const start = b;
      let last = -1;
      for (; b < n; b++) {
        const m = ridx[b]!;
        if (midx.packId(m) !== id) break;
        const off = midx.offset(m);
        if (off <= last) throw new BitmapCorrupt('multi-pack bitmap is missing required reverse index', 'warning');
        last = off;
        while (r < offs.length && offs[r]! < off) r++;
        if (r >= offs.length || offs[r] !== off) throw new BitmapCorrupt(`could not open pack ${midx.packNames[id]!}`, 'warning');
        rankOfBit[b] = r;
        if ((b & 0x3fff) === 0x3fff) await step(pause);
      }
      segments.push({ idxName: midx.packNames[id]!, start, end: b });
    }
    midx.buf.loadWhole();
    await step(pause);
    const d = await BitmapIndex.derive(file, ridx, { bytes: midx.buf.wholeBytes(), nameOffset: (p) => midx.nameOffset(p), hashLen: midx.hashLen }, pause);
    return new BitmapIndex('midx', file, path, { posOfBit: ridx, rankOfBit, segments, ...d });
  }

  /**
   * This bitmap over the packs of `src` (the database a request reads):
   * undefined when one of its packs (or its midx) is no longer there.
   */
  bind(src: Source): BoundBitmap | undefined {
    const packs: PackFile[] = [];
    for (const s of this.segments) {
      const p = src.byIdx.get(s.idxName);
      if (!p || !src.packs.includes(p)) return undefined;
      packs.push(p);
    }
    if (this.kind === 'midx') {
      const m = src.midx;
      if (!m || m.count !== this.objectCount || !m.checksum().equals(this.file.checksum)) return undefined;
      return new BoundBitmap(this, packs, m);
    }
    return new BoundBitmap(this, packs, undefined);
  }
}

/** slots of a light bitmap's lookup memo (BoundBitmap.memoBit): ids and answers, ~100 KiB for SHA-1 */
const MEMO_SLOTS = 4096;

/** A BitmapIndex with the pack objects of one database: position lookups and stored commit bitmaps. */
export class BoundBitmap {
  private readonly table: OidTable | undefined;
  private readonly hashLen: number;
  /**
   * Light only: the bits of ids looked up lately, direct-mapped by the
   * id's bytes 1-2 (a tree walk meets the same entries in tree after
   * tree: the bench's incremental fetch asks 13,000 times for 1,700 ids).
   * Each slot holds an id and its bit + 2 (0: empty; 1: not bitmapped).
   */
  private memoIds: Buffer | undefined;
  private memoBits: Int32Array | undefined;

  constructor(readonly index: BitmapIndex, readonly packs: PackFile[], readonly midx: MultiPackIndex | undefined) {
    this.hashLen = packs[0]!.hashLen;
    // (the table probes the index bytes of this database when it holds them whole, else lookups search the index)
    this.table = index.oidTable(midx ? midx.buf.wholeBytes() : packs[0]!.index.buf.wholeBytes());
  }

  get objectCount(): number { return this.index.objectCount; }

  /** The object's index position in the bitmapped pack or midx, or -1. */
  indexPos(oid: Buffer): number {
    if (this.table) return this.table.find(oid, 0);
    return this.midx ? this.midx.find(oid) : this.packs[0]!.index.find(oid);
  }

  /** indexPos() of the id at buf[at…]. */
  indexPosAt(buf: Buffer, at: number): number {
    if (this.table) return this.table.find(buf, at);
    if (!this.midx) return this.packs[0]!.index.findAt(buf, at);
    return this.indexPos(buf.subarray(at, at + this.hashLen));
  }

  /** The bit of the object at index position `pos`. */
  bitOfIndexPos(pos: number): number { return this.index.bitOfIndexPos(pos); }

  /** The object's bit, or -1 when it is not in the bitmapped pack(s). */
  bitOf(oid: Buffer): number {
    if (this.index.light) return this.memoBit(oid, 0);
    const p = this.indexPos(oid);
    return p < 0 ? -1 : this.index.bitOfIndexPos(p);
  }

  /** bitOf() of the id at buf[at…]. */
  bitAt(buf: Buffer, at: number): number {
    if (this.index.light) return this.memoBit(buf, at);
    const p = this.indexPosAt(buf, at);
    return p < 0 ? -1 : this.index.bitOfIndexPos(p);
  }

  /** bitAt() through the memo (light bitmaps: each lookup searches the .idx and the reverse index). */
  private memoBit(buf: Buffer, at: number): number {
    const hl = this.hashLen;
    let ids = this.memoIds, bits = this.memoBits;
    if (!ids || !bits) {
      ids = this.memoIds = Buffer.alloc(MEMO_SLOTS * hl);
      bits = this.memoBits = new Int32Array(MEMO_SLOTS);
    }
    // (ids are uniformly spread: two bytes pick the slot; byte 0 is the fan-out's, spread too)
    const slot = ((buf[at + 1]! << 4) ^ buf[at + 2]!) & (MEMO_SLOTS - 1);
    const base = slot * hl;
    const v = bits[slot]!;
    if (v !== 0) {
      let k = 0;
      while (k < hl && ids[base + k] === buf[at + k]) k++;
      if (k === hl) return v - 2;
    }
    const p = this.indexPosAt(buf, at);
    const b = p < 0 ? -1 : this.index.bitOfIndexPos(p);
    buf.copy(ids, base, at, at + hl);
    bits[slot] = b + 2;
    return b;
  }

  /** The stored bitmap of the commit at index position `pos`, when it has one. */
  commitBitmap(pos: number): Ewah | undefined {
    const f = this.index.file;
    const e = f.entryFor(pos);
    return e < 0 ? undefined : f.bitmap(e);
  }
}
