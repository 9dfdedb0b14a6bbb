/**
 * The objects a pack would send whole, found before writing so that a
 * delta search can be offered them (delta-seam.ts). The decision per
 * entry is the stream's own (stream.ts): a packed delta stays a delta
 * when its base is written before it or, not sent at all, is held by the
 * client; otherwise it would go whole.
 *
 * As git's prepare_pack() (should_attempt_deltas()), objects under 50
 * bytes are not offered: no delta is tried for them, and none is made
 * against them. Each candidate names the pack it is read from, for git's
 * rule that objects stored whole in one pack are not tried against each
 * other.
 *
 * With `reuse`, the entries git's pack reuse would send as they stand are
 * found in the same pass and left out (pack-bitmap.c's
 * try_partial_reuse() at v2.55, over a group of the pack it reuses from,
 * in pack order): the first whole 64-entry words of the pack that are all
 * in the plan, then every entry stored whole, and every delta whose base
 * comes before it in that pack and is itself reused. What git reuses so is
 * never counted or searched ("pack-reused" in its Total line).
 *
 * Headers are read through the pack windows; the pass yields on the
 * shared slice. An entry whose type and size take a read (a delta's
 * chain, a loose object's header) is followed by a look at the clock:
 * counting those as ticks let 64 of them, a few milliseconds each on a
 * deep chain, hold the loop between two looks.
 */
import { GitwireError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import type { ObjectDatabase } from '../../../repo/odb.js';
import type { Slicer } from '../../../util/budget.js';
import type { WholeCandidate } from './delta-seam.js';
import type { Group, Layout } from './layout.js';

/** git tries no delta for objects smaller than this (pack-objects' should_attempt_deltas()) */
export const MIN_DELTA_SIZE = 50;

/** A copy of an id read from an index (its view may be of a page read again later): Buffer.from()'s generic path cost more than the copy. */
function ownCopy(view: Buffer): Buffer {
  const b = Buffer.allocUnsafe(view.length);
  view.copy(b);
  return b;
}

/**
 * The candidates; `counts.whole`, when given, is set to how many entries go
 * whole, those too small to be offered included (what is not a delta).
 */
export async function wholeCandidates(odb: ObjectDatabase, L: Layout, clientHas: ((oid: Buffer) => boolean) | undefined, slicer: Slicer, aborted: () => boolean, counts?: { whole: number }, reuse?: Uint8Array): Promise<WholeCandidate[]> {
  const out: WholeCandidate[] = [];
  let whole = 0;
  const gone = () => new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
  // what git's pack reuse takes is not in its list: a delta against it is not kept (check_object() finds no
  // base to keep it against), the object goes to the search
  const taken = (be: number) => reuse !== undefined && reuse[be] === 1;
  const usable = (oid: Buffer, e: number) => {
    const be = L.entryOf(oid);
    return be >= 0 ? be < e && !taken(be) : clientHas?.(oid) === true;
  };
  for (const g of L.groups) {
    const { pack, offsets, positions } = g;
    const idx = pack.index;
    const reusing = reuse !== undefined && g.reuse !== undefined;
    // git's first pass over the pack at bit 0: whole words of its bits that are all wanted go without a look
    let fast = g.start;
    if (reusing && g.reuse === 'first') {
      while (fast < g.end && L.ranks[fast] === fast - g.start) fast++;
      fast = g.start + Math.floor((fast - g.start) / 64) * 64;
      reuse.fill(1, g.start, fast);
    }
    for (let e = g.start; e < g.end; e++) {
      const p = slicer.tick();
      if (p) { await p; if (aborted()) throw gone(); }
      if (e < fast) continue;
      const r = L.ranks[e]!;
      const offset = offsets[r]!;
      const h = pack.header(offset);
      if (reusing && reusedDelta(g, h, r)) { reuse[e] = 1; continue; }
      if (h.type !== ObjType.OfsDelta && h.type !== ObjType.RefDelta) {
        if (reusing) { reuse[e] = 1; continue; }
        whole++;
        if (h.size >= MIN_DELTA_SIZE) out.push({ entry: e, oid: ownCopy(idx.oid(positions[r]!)), type: h.type, size: h.size, name: L.names?.[e] ?? 0, reused: true, pack });
        continue;
      }
      let keep: boolean;
      if (h.type === ObjType.OfsDelta) {
        const br = pack.rankOfOffset(h.baseOffset!);
        const be = br >= 0 ? L.entryOfRank(g, br) : -1;
        keep = br >= 0 && (be >= 0 ? !taken(be) : usable(idx.oid(positions[br]!), e));
      } else keep = usable(h.baseOid!, e);
      if (keep) continue;
      whole++;
      const info = odb.infoAt({ kind: 'packed', pack, pos: positions[r]!, offset }, false, false);
      if (info.size >= MIN_DELTA_SIZE) out.push({ entry: e, oid: ownCopy(idx.oid(positions[r]!)), type: info.type, size: info.size, name: L.names?.[e] ?? 0, reused: false, pack });
      const d = slicer.due();
      if (d) { await d; if (aborted()) throw gone(); }
    }
  }
  for (let i = 0; i < L.loose.length; i++) {
    const l = L.loose[i]!;
    whole++;
    const info = odb.infoAt({ kind: 'loose', path: l.path });
    if (info.size >= MIN_DELTA_SIZE) out.push({ entry: L.looseStart + i, oid: l.oid, type: info.type, size: info.size, name: l.name, reused: false });
    const d = slicer.due();
    if (d) { await d; if (aborted()) throw gone(); }
  }
  if (counts) counts.whole = whole;
  return out;

  /** A delta of a reused group whose base is earlier in the pack and reused (git's try_partial_reuse()). */
  function reusedDelta(g: Group, h: { type: number; baseOffset?: number; baseOid?: Buffer }, r: number): boolean {
    if (h.type !== ObjType.OfsDelta && h.type !== ObjType.RefDelta) return false;
    let br: number;
    if (h.type === ObjType.OfsDelta) br = g.pack.rankOfOffset(h.baseOffset!);
    else {
      const bp = g.pack.index.find(h.baseOid!);
      br = bp < 0 ? -1 : g.pack.rankOfOffset(g.pack.index.offset(bp));
    }
    if (br < 0 || br >= r) return false;
    const be = L.entryOfRank(g, br);
    return be >= 0 && reuse![be] === 1;
  }
}
