/**
 * Where each object of a plan comes from and in what order it goes out.
 *
 * Objects of a pack go out together, in that pack's order (one sequential
 * read per pack): 'ranks' parts are in pack order already; 'ids' parts are
 * located (index, multi-pack index, loose) and their packed objects join
 * the group of the pack that holds them. Groups follow the order in which
 * the plan first names their pack; loose objects come last. A pack written
 * by `git repack` is in git's recency order, which keeps index-pack's
 * delta resolution local and the client's pack compact.
 *
 * Per request this holds typed arrays sized by the object count: the
 * packed entries' ranks (their place in their pack, from which offset,
 * end and index position follow) and, while writing, each entry's offset
 * in the output.
 */
import { GitwireError } from '../../../errors.js';
import type { PackFile } from '../../../repo/pack.js';
import type { ObjectDatabase } from '../../../repo/odb.js';
import type { Slicer } from '../../../util/budget.js';
import type { PackPlan } from '../plan.js';

export interface Group {
  pack: PackFile;
  /** entries [start, end) of the layout */
  start: number;
  end: number;
  /** every entry of this group came from a 'ranks' part */
  fromRanks: boolean;
  /** git's pack reuse may take from it (RanksPart.reuse; only when every entry came from ranks) */
  reuse?: 'first' | 'more';
  /** the group is the whole pack, in its order */
  wholePack: boolean;
  /** pack order of the pack (offsets and index positions by rank) */
  offsets: Float64Array;
  positions: Uint32Array;
  /** where the last entry ends (the trailer's start) */
  limit: number;
}

export interface LooseEntry { oid: Buffer; path: string; name: number }

export class Layout {
  /** per packed entry: its rank in its group's pack */
  readonly ranks: Uint32Array;
  /** per entry (packed, then loose): its offset in the output, set as it is written */
  readonly outOff: Float64Array;
  readonly loose: LooseEntry[];
  /** loose entries by id (hex), for delta bases */
  private looseIndex?: Map<string, number>;

  /**
   * @param names per entry, git's name hash of its path (when the plan gave any)
   */
  constructor(readonly count: number, readonly groups: Group[], ranks: Uint32Array, loose: LooseEntry[], readonly names?: Uint32Array) {
    this.ranks = ranks;
    this.loose = loose;
    this.outOff = new Float64Array(count);
  }

  /** the first loose entry's number */
  get looseStart(): number { return this.count - this.loose.length; }

  /** The entry of group `g` holding rank `r`, or -1. */
  entryOfRank(g: Group, r: number): number {
    const a = this.ranks;
    let lo = g.start, hi = g.end;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (a[m]! < r) lo = m + 1; else hi = m;
    }
    return lo < g.end && a[lo] === r ? lo : -1;
  }

  /** The entry holding `oid` (in any group, or loose), or -1. */
  entryOf(oid: Buffer): number {
    for (const g of this.groups) {
      const idx = g.pack.index;
      const pos = idx.find(oid);
      if (pos < 0) continue;
      const r = g.pack.rankOfOffset(idx.offset(pos));
      const e = r < 0 ? -1 : this.entryOfRank(g, r);
      if (e >= 0) return e;
    }
    if (this.loose.length === 0) return -1;
    if (!this.looseIndex) {
      this.looseIndex = new Map();
      this.loose.forEach((l, i) => this.looseIndex!.set(l.oid.toString('hex'), this.looseStart + i));
    }
    return this.looseIndex.get(oid.toString('hex')) ?? -1;
  }
}

const planError = (msg: string) => new GitwireError('GW_PACK_FAILED', `pack plan: ${msg}`);

/**
 * Lay out `plan`: locate its ids, group packed objects by pack in offset
 * order. Yields to the event loop through `slicer` (one tick per object).
 */
export async function layOut(odb: ObjectDatabase, plan: PackPlan, slicer: Slicer, aborted: () => boolean): Promise<Layout> {
  const hashLen = odb.hashLen;
  interface Acc { pack: PackFile; n: number; fromRanks: boolean; reuse?: 'first' | 'more'; sorted: boolean; last: number; chunks: Uint32Array[]; chunkNames: Array<Uint32Array | undefined>; extra: number[]; extraNames: number[] }
  const byPack = new Map<PackFile, Acc>();
  const order: Acc[] = [];
  const accOf = (pack: PackFile): Acc => {
    let a = byPack.get(pack);
    if (!a) {
      a = { pack, n: 0, fromRanks: true, sorted: true, last: -1, chunks: [], chunkNames: [], extra: [], extraNames: [] };
      byPack.set(pack, a);
      order.push(a);
    }
    return a;
  };
  const loose: LooseEntry[] = [];
  let total = 0;
  let anyNames = false;
  for (const part of plan.parts) {
    if (part.kind === 'ranks') {
      const a = accOf(part.pack);
      if (part.reuse) a.reuse = part.reuse;
      // the pack's order in full (once per pack), built yielding: a big pack's held the loop 100-240 ms
      await part.pack.prepareOrder(slicer);
      if (aborted()) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
      const n = part.pack.offsetsInPackOrder().length;
      const rs = part.ranks;
      for (let i = 0; i < rs.length; i++) {
        if ((i & 16383) === 16383) await yieldDue(slicer, aborted);
        if (rs[i]! >= n || (i > 0 && rs[i]! <= rs[i - 1]!)) throw planError(`ranks of ${part.pack.packPath} are not ascending ranks of the pack`);
      }
      if (rs.length > 0) {
        if (rs[0]! <= a.last) a.sorted = false;
        a.last = rs[rs.length - 1]!;
      }
      a.chunks.push(rs);
      a.chunkNames.push(part.names);
      if (part.names) anyNames = true;
      a.n += rs.length;
      total += rs.length;
      continue;
    }
    if (part.ids.length < part.count * hashLen) throw planError('ids part shorter than its count');
    for (let i = 0; i < part.count; i++) {
      const p = slicer.tick();
      if (p) { await p; if (aborted()) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly'); }
      const oid = part.ids.subarray(i * hashLen, (i + 1) * hashLen);
      const loc = odb.locate(oid);
      if (!loc) throw new GitwireError('GW_OBJECT_MISSING', `unable to read ${oid.toString('hex')}`);
      total++;
      if (loc.kind === 'loose') { loose.push({ oid, path: loc.path, name: part.names?.[i] ?? 0 }); continue; }
      const a = accOf(loc.pack);
      const r = loc.pack.rankOfOffset(loc.offset);
      if (r < 0) throw planError(`no entry at offset ${loc.offset} of ${loc.pack.packPath}`);
      a.fromRanks = false;
      if (r <= a.last) a.sorted = false;
      a.last = r;
      a.extra.push(r);
      a.extraNames.push(part.names?.[i] ?? 0);
      if (part.names) anyNames = true;
      a.n++;
    }
  }
  if (total !== plan.count) throw planError(`${total} objects in the parts, ${plan.count} announced`);
  const packed = total - loose.length;
  const ranks = new Uint32Array(packed);
  const names = anyNames ? new Uint32Array(total) : undefined;
  const groups: Group[] = [];
  let at = 0;
  for (const a of order) {
    const start = at;
    a.chunks.forEach((c, k) => {
      ranks.set(c, at);
      const nm = a.chunkNames[k];
      if (names && nm) names.set(nm.subarray(0, c.length), at);
      at += c.length;
    });
    a.extra.forEach((r, k) => { if (names) names[at] = a.extraNames[k]!; ranks[at++] = r; });
    const seg = ranks.subarray(start, at);
    if (!a.sorted) {
      if (names) sortWithNames(seg, names.subarray(start, at));
      else seg.sort();
    }
    for (let i = 1; i < seg.length; i++) {
      if ((i & 16383) === 16383) await yieldDue(slicer, aborted);
      if (seg[i] === seg[i - 1]) throw planError(`an object of ${a.pack.packPath} is named twice`);
    }
    await a.pack.prepareOrder(slicer);
    if (aborted()) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
    const offsets = a.pack.offsetsInPackOrder();
    groups.push({
      pack: a.pack, start, end: at, fromRanks: a.fromRanks, ...(a.fromRanks && a.reuse ? { reuse: a.reuse } : {}), wholePack: seg.length === offsets.length,
      offsets, positions: a.pack.positionsInPackOrder(), limit: a.pack.size - hashLen,
    });
  }
  if (names) loose.forEach((l, k) => { names[packed + k] = l.name; });
  return new Layout(total, groups, ranks, loose, names);
}

/** entries up to which sortWithNames sorts one typed array of keys (rank and entry in one number) */
const KEYED_SORT_MAX = 1 << 21;

/**
 * Sort `ranks` ascending, `names` following their ranks. Up to 2^21
 * entries, each rank and its place go into one float (rank * 2^21 +
 * place: exact below 2^53 for any 32-bit rank) and one typed array is
 * sorted natively; a comparator sort of 1,600 fetched objects was ~1% of
 * serve's CPU per incremental fetch. Equal ranks keep their order either
 * way (the caller refuses them after).
 */
function sortWithNames(ranks: Uint32Array, names: Uint32Array): void {
  const n = ranks.length;
  const r0 = Uint32Array.from(ranks), n0 = Uint32Array.from(names);
  if (n <= KEYED_SORT_MAX) {
    const keys = new Float64Array(n);
    for (let k = 0; k < n; k++) keys[k] = r0[k]! * KEYED_SORT_MAX + k;
    keys.sort();
    for (let k = 0; k < n; k++) {
      const from = keys[k]! % KEYED_SORT_MAX;
      ranks[k] = r0[from]!;
      names[k] = n0[from]!;
    }
    return;
  }
  const perm = Array.from({ length: n }, (_, k) => k).sort((x, y) => r0[x]! - r0[y]! || x - y);
  perm.forEach((from, k) => { ranks[k] = r0[from]!; names[k] = n0[from]!; });
}

/** Give the loop away when the slice is spent (for loops that check every few thousand steps). */
async function yieldDue(slicer: Slicer, aborted: () => boolean): Promise<void> {
  const p = slicer.due();
  if (!p) return;
  await p;
  if (aborted()) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
}
