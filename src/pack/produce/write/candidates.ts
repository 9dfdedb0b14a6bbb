/**
 * The objects a pack would send whole, found before writing so that a
 * delta search can be offered them (delta-seam.ts). The decision per
 * entry is the stream's own (stream.ts): a packed delta stays a delta
 * when its base is written before it or, not sent at all, is held by the
 * client; otherwise it would go whole. Headers are read through the pack
 * windows; the pass yields on the shared slice.
 */
import { GitwireError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import type { ObjectDatabase } from '../../../repo/odb.js';
import type { Slicer } from '../../../util/budget.js';
import type { WholeCandidate } from './delta-seam.js';
import type { Layout } from './layout.js';

export async function wholeCandidates(odb: ObjectDatabase, L: Layout, clientHas: ((oid: Buffer) => boolean) | undefined, slicer: Slicer, aborted: () => boolean): Promise<WholeCandidate[]> {
  const out: WholeCandidate[] = [];
  const usable = (oid: Buffer, e: number) => {
    const be = L.entryOf(oid);
    return be >= 0 ? be < e : clientHas?.(oid) === true;
  };
  for (const g of L.groups) {
    const { pack, offsets, positions } = g;
    const idx = pack.index;
    for (let e = g.start; e < g.end; e++) {
      const p = slicer.tick();
      if (p) { await p; if (aborted()) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly'); }
      const r = L.ranks[e]!;
      const offset = offsets[r]!;
      const h = pack.header(offset);
      const name = L.names?.[e] ?? 0;
      if (h.type !== ObjType.OfsDelta && h.type !== ObjType.RefDelta) {
        out.push({ entry: e, oid: Buffer.from(idx.oid(positions[r]!)), type: h.type, size: h.size, name, reused: true });
        continue;
      }
      let keep: boolean;
      if (h.type === ObjType.OfsDelta) {
        const br = pack.rankOfOffset(h.baseOffset!);
        keep = br >= 0 && (L.entryOfRank(g, br) >= 0 || usable(idx.oid(positions[br]!), e));
      } else keep = usable(h.baseOid!, e);
      if (keep) continue;
      const info = odb.infoAt({ kind: 'packed', pack, pos: positions[r]!, offset });
      out.push({ entry: e, oid: Buffer.from(idx.oid(positions[r]!)), type: info.type, size: info.size, name, reused: false });
    }
  }
  for (let i = 0; i < L.loose.length; i++) {
    const l = L.loose[i]!;
    const info = odb.infoAt({ kind: 'loose', path: l.path });
    out.push({ entry: L.looseStart + i, oid: l.oid, type: info.type, size: info.size, name: l.name, reused: false });
  }
  return out;
}
