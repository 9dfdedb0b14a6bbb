/**
 * The pack's bytes, in order, as a synchronous generator of chunks (each
 * valid until the next is asked for): the header, every entry, never the
 * trailer (the reader hashes what it passes on and appends it).
 *
 * (A plan that is one whole pack goes out through verbatim.ts instead.)
 * - Groups are read in large pieces into one reused buffer; runs of
 *   entries that go out unchanged leave as views of it. Each reused
 *   entry's CRC-32 is checked against the .idx (v2) before it goes.
 * - A delta is reused when its base was written earlier in this pack
 *   (OFS_DELTA with the distance recomputed, or REF_DELTA without
 *   ofs-delta), or when its base is not in the pack and the client has it
 *   (REF_DELTA, thin). Otherwise the object goes whole: every delta points
 *   back, so no cycle can form.
 * - Whole objects (loose ones, and deltas that could not stay deltas) are
 *   deflated afresh through one reused deflate stream; big ones stream.
 */
import { readSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { GitwireError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import type { ObjectDatabase, OutputObject } from '../../../repo/odb.js';
import type { PackWriteCounts } from '../progress.js';
import { Deflater } from './deflater.js';
import type { SearchedDelta } from './delta-seam.js';
import { MAX_HEADER, putOfsDistance, putTypeSize, typeSizeEnd } from './entry-header.js';
import type { Group, Layout } from './layout.js';

/** bytes per read of a pack */
export const READ_SIZE = 1 << 20;
/** bytes of unwanted entries a read takes in rather than making another read */
const READ_GAP = 16 * 1024;
/** read buffers between requests (a few: what is idle stays small) */
const freeBuffers: Buffer[] = [];
const FREE_MAX = 4;
const OUT_SIZE = 256 * 1024;
const EMPTY = Buffer.alloc(0);

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);

export interface StreamOptions {
  ofsDelta: boolean;
  clientHas?: (oid: Buffer) => boolean;
  /** check each reused entry's CRC-32 against the .idx (default true) */
  verifyCrc: boolean;
  level: number;
  /** deltas found for whole objects, by entry */
  searched?: Map<number, SearchedDelta>;
  /** the entries offered to the search (each goes whole unless its searched delta is written) */
  candidates?: Set<number>;
  /** per entry, 1 when git's pack reuse sends it as it stands (candidates.ts): "pack-reused", not "reused" */
  packReused?: Uint8Array;
}

export class PackStream {
  readonly counts: PackWriteCounts = { written: 0, writtenDelta: 0, reused: 0, reusedDelta: 0, packReused: 0, packsReused: 0 };
  /** bytes handed out so far (the next entry's offset in the output) */
  private outPos = 0;
  private inBuf: Buffer = EMPTY;
  private inStart = 0;
  private inEnd = 0;
  private inPack: Group | undefined;
  private readonly head = Buffer.allocUnsafe(MAX_HEADER + 12);
  /** output of the deflate stream (made on first use: a clone by reuse never needs it) */
  private outBuf?: Buffer;
  private deflater: Deflater | undefined;

  constructor(private readonly odb: ObjectDatabase, private readonly layout: Layout, private readonly opts: StreamOptions) {
  }

  /** The pack's bytes but its trailer. */
  *bytes(): Generator<Buffer> {
    const L = this.layout;
    const h = this.head;
    h.write('PACK', 0, 'latin1');
    h.writeUInt32BE(2, 4);
    h.writeUInt32BE(L.count, 8);
    yield this.out(h.subarray(0, 12));
    for (const g of L.groups) yield* this.group(g);
    for (let i = 0; i < L.loose.length; i++) {
      const e = L.looseStart + i;
      L.outOff[e] = this.outPos;
      const sd = this.opts.searched?.get(e);
      if (sd && (yield* this.searchedDelta(e, sd))) continue;
      yield* this.whole(this.odb.readForOutput({ kind: 'loose', path: L.loose[i]!.path }, READ_SIZE, true, true));
    }
  }

  /** Account for bytes handed out. */
  private out(b: Buffer): Buffer {
    this.outPos += b.length;
    return b;
  }

  /** Read the pack from `pos` into the buffer (as much as fits before the trailer). */
  private fill(g: Group, pos: number, len = READ_SIZE): void {
    if (this.inBuf === EMPTY) this.inBuf = freeBuffers.pop() ?? Buffer.allocUnsafe(READ_SIZE);
    const n = Math.min(this.inBuf.length, len, g.limit - pos);
    let got = 0;
    // the descriptor is asked for on every read: a pack closed under us (repacked and
    // forgotten) fails here instead of reading a reused descriptor number
    const fd = g.pack.fd;
    while (got < n) {
      const k = readSync(fd, this.inBuf, got, n - got, pos + got);
      if (k <= 0) break;
      got += k;
    }
    if (got < n || n < 0) throw corrupt(`pack ${g.pack.packPath} is truncated at ${pos + got}`);
    this.inPack = g;
    this.inStart = pos;
    this.inEnd = pos + got;
  }

  /** The entries of one pack, entry by entry, unchanged ones in runs. */
  private *group(g: Group): Generator<Buffer> {
    const L = this.layout;
    const { offsets, positions, pack } = g;
    const idx = pack.index;
    const hashLen = pack.hashLen;
    const nRanks = offsets.length;
    const verify = this.opts.verifyCrc;
    const packReused = this.opts.packReused;
    const head = this.head;
    let runStart = -1, runEnd = -1;
    let packsCounted = false;
    for (let e = g.start; e < g.end; e++) {
      const r = L.ranks[e]!;
      const s = offsets[r]!;
      const end = r + 1 < nRanks ? offsets[r + 1]! : g.limit;
      if (end <= s) throw corrupt(`bad entry at offset ${s} of ${pack.packPath}`);
      L.outOff[e] = this.outPos + (runStart >= 0 ? runEnd - runStart : 0);
      if (this.inPack !== g || s < this.inStart || Math.min(end, s + READ_SIZE) > this.inEnd) {
        if (runStart >= 0) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
        this.fill(g, s, this.span(g, e, s));
      }
      const b = this.inBuf;
      const at = s - this.inStart;
      const big = end > this.inEnd;
      // the whole entry's CRC-32, before anything of it goes (a big one: piece by piece below)
      if (verify && !big) this.checkCrc(idx, positions[r]!, crc32(b.subarray(at, end - this.inStart)), s, pack.packPath);
      // a delta the search found instead of the entry (for an entry that would go whole)
      const sd = this.opts.searched?.get(e);
      if (sd) {
        if (runStart >= 0) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
        if (yield* this.searchedDelta(e, sd)) continue;
      }
      const type = (b[at]! >> 4) & 7;
      const tsEnd = typeSizeEnd(b, at);
      if (tsEnd - at > 10 || tsEnd > this.inEnd - this.inStart) throw corrupt(`bad object header at offset ${s} in ${pack.packPath}`);
      let dataAt = tsEnd;
      /** the header to write instead of the source's (its length), 0: the entry goes as it is */
      let newHead = 0;
      let whole = false;
      if (type === ObjType.OfsDelta || type === ObjType.RefDelta) {
        let baseEntry = -1;
        let baseOid: Buffer | undefined;
        let rel = 0;
        if (type === ObjType.OfsDelta) {
          let p = tsEnd;
          let c = b[p++]!;
          rel = c & 127;
          while (c & 128) {
            if (p - tsEnd > 9) throw corrupt(`bad delta base offset at ${s} in ${pack.packPath}`);
            c = b[p++]!;
            rel = (rel + 1) * 128 + (c & 127);
          }
          dataAt = p;
          const bo = s - rel;
          const br = r > 0 && offsets[r - 1] === bo ? r - 1 : pack.rankOfOffset(bo);
          if (rel === 0 || br < 0) throw corrupt(`delta base offset out of bound for ${pack.packPath} at ${s}`);
          baseEntry = L.entryOfRank(g, br);
          if (baseEntry < 0) baseOid = idx.oid(positions[br]!);
        } else {
          dataAt = tsEnd + hashLen;
          baseOid = b.subarray(tsEnd, dataAt);
          const bp = idx.find(baseOid);
          if (bp >= 0) {
            const be = L.entryOfRank(g, pack.rankOfOffset(idx.offset(bp)));
            if (be >= 0 && be < e) baseEntry = be;
          }
        }
        if (baseEntry < 0 && baseOid) {
          const be = L.entryOf(baseOid);
          // (entries are numbered in output order: a smaller number was written before)
          if (be >= 0 && be < e) baseEntry = be;
          else if (be > e && type === ObjType.RefDelta && packReused?.[e] === 1) {
            // git's pack reuse sends it as it stands: a REF_DELTA may name a base later in the pack (a
            // fetched thin pack's bases are appended at its end)
          } else if (be < 0 && this.opts.clientHas?.(baseOid)) {
            // thin: the client resolves it against its own object
            if (type === ObjType.RefDelta) newHead = 0;
            else newHead = this.refHead(b, at, tsEnd, baseOid);
          } else whole = true;
        }
        // a base git's pack reuse took is not one pack-objects keeps a delta against (candidates.ts)
        if (!whole && baseEntry >= 0 && packReused && packReused[e] !== 1 && packReused[baseEntry] === 1) whole = true;
        if (!whole && baseEntry >= 0) {
          const outHere = L.outOff[e]!;
          if (this.opts.ofsDelta) {
            const dist = outHere - L.outOff[baseEntry]!;
            if (type === ObjType.OfsDelta && dist === rel) newHead = 0;
            else {
              b.copy(head, 0, at, tsEnd);
              head[0] = (head[0]! & 0x8f) | (ObjType.OfsDelta << 4);
              newHead = putOfsDistance(head, tsEnd - at, dist);
            }
          } else if (type === ObjType.OfsDelta) {
            newHead = this.refHead(b, at, tsEnd, this.oidOfEntry(baseEntry));
          }
        }
        if (!whole) {
          if (packReused?.[e] === 1) {
            if (!packsCounted) { packsCounted = true; this.counts.packsReused++; }
            this.counts.packReused++;
          } else { this.counts.writtenDelta++; this.counts.reused++; this.counts.reusedDelta++; }
        }
      } else if (packReused?.[e] === 1) {
        if (!packsCounted) { packsCounted = true; this.counts.packsReused++; }
        this.counts.packReused++;
      } else this.counts.reused++;
      if (whole) {
        if (runStart >= 0) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
        L.outOff[e] = this.outPos;
        const o = this.odb.readForOutput({ kind: 'packed', pack, pos: positions[r]!, offset: s }, READ_SIZE, true, true);
        yield* this.whole(o);
        continue;
      }
      this.counts.written++;
      const from = newHead ? this.inStart + dataAt : s;
      if (newHead) {
        if (runStart >= 0) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
        yield this.out(head.subarray(0, newHead));
      }
      if (!big) {
        // a run holds entries that follow each other in the source
        if (runStart >= 0 && runEnd !== from) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
        if (runStart < 0) runStart = from;
        runEnd = end;
        continue;
      }
      // an entry larger than the buffer: its bytes stream through it, checked as they go
      if (runStart >= 0) { yield this.out(this.view(runStart, runEnd)); runStart = -1; }
      // (a rewritten header: the source's header bytes count in the CRC but do not go out)
      let crc = verify ? crc32(b.subarray(at, from - this.inStart)) : 0;
      let pos = from;
      while (pos < end) {
        if (pos >= this.inEnd) this.fill(g, pos);
        const stop = Math.min(end, this.inEnd);
        const v = this.view(pos, stop);
        if (verify) crc = crc32(v, crc);
        // the last piece waits for the check: a damaged entry never goes out whole
        if (stop === end && verify) this.checkCrc(idx, positions[r]!, crc, s, pack.packPath);
        pos = stop;
        yield this.out(v);
      }
    }
    if (runStart >= 0) yield this.out(this.view(runStart, runEnd));
  }

  /**
   * Bytes to read at `s` for entry `e` and those after it: up to the end of
   * the last one that fits in the buffer, across gaps of at most READ_GAP
   * (a sparse plan reads its entries, not the whole pack around them).
   */
  private span(g: Group, e: number, s: number): number {
    const { offsets } = g;
    const ranks = this.layout.ranks;
    const n = offsets.length;
    const endOf = (r: number) => (r + 1 < n ? offsets[r + 1]! : g.limit);
    let stop = Math.min(endOf(ranks[e]!), s + READ_SIZE);
    for (let k = e + 1; k < g.end; k++) {
      const en = endOf(ranks[k]!);
      // a gap wider than a read's cost is left out (the next entry starts a read of its own)
      if (en - s > READ_SIZE || offsets[ranks[k]!]! - stop > READ_GAP) break;
      stop = en;
    }
    return stop - s;
  }

  private view(a: number, b: number): Buffer {
    return this.inBuf.subarray(a - this.inStart, b - this.inStart);
  }

  private checkCrc(idx: { crc32?(i: number): number | undefined }, pos: number, got: number, offset: number, path: string): void {
    const want = idx.crc32?.(pos);
    if (want !== undefined && want !== got) throw corrupt(`bad packed object CRC for offset ${offset} in ${path}`);
  }

  /** A REF_DELTA header in `head` for the entry whose type and size are b[at, tsEnd). */
  private refHead(b: Buffer, at: number, tsEnd: number, oid: Buffer): number {
    const head = this.head;
    b.copy(head, 0, at, tsEnd);
    head[0] = (head[0]! & 0x8f) | (ObjType.RefDelta << 4);
    oid.copy(head, tsEnd - at);
    return tsEnd - at + oid.length;
  }

  /** The id of an entry of the layout. */
  oidOfEntry(e: number): Buffer {
    const L = this.layout;
    if (e >= L.looseStart) return L.loose[e - L.looseStart]!.oid;
    const g = this.groupOf(e);
    return g.pack.index.oid(g.positions[L.ranks[e]!]!);
  }

  groupOf(e: number): Group {
    const gs = this.layout.groups;
    let lo = 0, hi = gs.length - 1;
    while (lo < hi) {
      const m = (lo + hi + 1) >>> 1;
      if (gs[m]!.start <= e) lo = m; else hi = m - 1;
    }
    return gs[lo]!;
  }

  /** An object written whole: its header, then its content deflated (in pieces for a big one). */
  private *whole(o: OutputObject): Generator<Buffer> {
    this.counts.written++;
    const n = putTypeSize(this.head, 0, o.type, o.size);
    yield this.out(this.head.subarray(0, n));
    yield* this.deflate(o.data ? [o.data] : o.chunks!, o.size);
  }

  /**
   * Whether the base `be` of a searched delta for `e` resolves without `e`:
   * its searched chain ends in a candidate sent whole (or a client's
   * object). Every cycle has a link to a later entry, and each such link is
   * checked here; reused deltas only point back, and an entry that is not a
   * candidate ends the walk as a refusal, so no cycle can form whatever a
   * search answers.
   */
  private endsWhole(e: number, be: number): boolean {
    const searched = this.opts.searched;
    const candidates = this.opts.candidates;
    if (!searched || !candidates) return false;
    for (let x = be, hops = 0; hops <= searched.size; hops++) {
      if (x === e || !candidates.has(x)) return false;
      const next = searched.get(x);
      if (!next) return true;
      if (!('entry' in next.base)) return true;
      x = next.base.entry;
    }
    return false;
  }

  /** A searched delta (true), or false when its base is not one the rule allows (then the object goes whole). */
  private *searchedDelta(e: number, sd: SearchedDelta): Generator<Buffer, boolean> {
    const L = this.layout;
    const head = this.head;
    let n: number;
    if ('entry' in sd.base) {
      const be = sd.base.entry;
      if (be < 0 || be === e || be >= L.count) return false;
      // a base written later goes by id (index-pack resolves a REF_DELTA against any object of the pack),
      // when its chain ends in a whole object without coming back here
      if (be > e && !this.endsWhole(e, be)) return false;
      if (this.opts.ofsDelta && be < e) {
        n = putTypeSize(head, 0, ObjType.OfsDelta, sd.delta.length);
        n = putOfsDistance(head, n, L.outOff[e]! - L.outOff[be]!);
      } else {
        n = putTypeSize(head, 0, ObjType.RefDelta, sd.delta.length);
        n += this.oidOfEntry(be).copy(head, n);
      }
    } else {
      if (L.entryOf(sd.base.oid) >= 0 || !this.opts.clientHas?.(sd.base.oid)) return false;
      n = putTypeSize(head, 0, ObjType.RefDelta, sd.delta.length);
      n += sd.base.oid.copy(head, n);
    }
    this.counts.written++;
    this.counts.writtenDelta++;
    yield this.out(head.subarray(0, n));
    yield* this.deflate([sd.delta], sd.delta.length);
    return true;
  }

  private *deflate(chunks: Iterable<Buffer>, size: number): Generator<Buffer> {
    const d = (this.deflater ??= new Deflater(this.opts.level));
    d.reset();
    const out = (this.outBuf ??= Buffer.allocUnsafe(OUT_SIZE));
    let o = 0;
    let fed = 0;
    for (const c of chunks) {
      fed += c.length;
      let off = 0;
      while (off < c.length) {
        d.step(c, off, c.length, out, o, out.length, false);
        off += d.used;
        o += d.out;
        if (o === out.length) { yield this.out(out.subarray(0, o)); o = 0; } else if (d.used === 0 && d.out === 0) throw new Error('deflate made no progress');
      }
    }
    if (fed !== size) throw corrupt(`object content is ${fed} bytes, ${size} announced`);
    while (!d.ended) {
      d.step(EMPTY, 0, 0, out, o, out.length, true);
      o += d.out;
      if (o === out.length || d.ended) { if (o > 0) yield this.out(out.subarray(0, o)); o = 0; }
    }
  }

  close(): void {
    this.deflater?.close();
    this.deflater = undefined;
    if (this.inBuf !== EMPTY && freeBuffers.length < FREE_MAX) freeBuffers.push(this.inBuf);
    this.inBuf = EMPTY;
    this.inPack = undefined;
  }
}
