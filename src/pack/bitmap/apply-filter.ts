/**
 * A filter applied to a bitmap result, as pack-bitmap.c's filter_bitmap():
 * whole words at a time through the type bitmaps for the bitmapped
 * objects, one by one for the extended ones. Objects the client named
 * itself (the tips) are never filtered out, as the walk's filters keep
 * them too. `blob:limit` needs sizes: from the pack entries' headers.
 */
import { ObjType } from '../../repo/object-type.js';
import type { ObjectDatabase } from '../../repo/odb.js';
import type { Slicer } from '../../util/budget.js';
import { TypeIndex } from './bitmap-file.js';
import { Bitset } from './bitset.js';
import type { BitmapFilter } from './filter.js';
import type { Positions } from './positions.js';
import type { Root } from './walk.js';

const TYPE_INDEX: Record<number, TypeIndex> = {
  [ObjType.Commit]: TypeIndex.Commit, [ObjType.Tree]: TypeIndex.Tree, [ObjType.Blob]: TypeIndex.Blob, [ObjType.Tag]: TypeIndex.Tag,
};

export interface FilterContext {
  pos: Positions;
  odb: ObjectDatabase;
  tips: Root[];
  slicer: Slicer;
  signal?: AbortSignal;
}

/** The tips of one type, as positions. */
function tipBits(ctx: FilterContext, type: ObjType): Bitset {
  const b = new Bitset(ctx.pos.n);
  for (const t of ctx.tips) {
    if (t.type !== type) continue;
    const p = ctx.pos.of(t.oid);
    if (p >= 0) b.set(p);
  }
  return b;
}

function excludeType(ctx: FilterContext, result: Bitset, type: ObjType): void {
  const { pos } = ctx;
  const tips = tipBits(ctx, type);
  const mask = pos.bound.index.file.types[TYPE_INDEX[type]!];
  const r = result.words, m = mask.words, t = tips.words;
  const n = Math.min(m.length, r.length);
  for (let i = 0; i < n; i++) {
    const x = m[i]! & ~(i < t.length ? t[i]! : 0);
    if (x) r[i]! &= ~x;
  }
  for (let i = 0; i < pos.extCount; i++) {
    const p = pos.n + i;
    if (pos.extTypes[i] === type && result.get(p) && !tips.get(p)) result.clear(p);
  }
}

async function blobLimit(ctx: FilterContext, result: Bitset, limit: bigint): Promise<void> {
  const { pos, odb } = ctx;
  const tips = tipBits(ctx, ObjType.Blob);
  const blobs = pos.bound.index.file.types[TypeIndex.Blob];
  const over = (size: number) => BigInt(size) >= limit;
  const bound = pos.bound;
  const drop: number[] = [];
  // the bitmapped blobs in the result that are no tips
  const cand = new Bitset(0, result.words.slice(0, blobs.words.length));
  cand.andNot(tips);
  for (let i = 0; i < cand.words.length; i++) cand.words[i]! &= blobs.words[i]!;
  const rankOf = bound.index.rankOfBit;
  let k = 0;
  for (let s = 0; s < bound.index.segments.length; s++) {
    const seg = bound.index.segments[s]!;
    const pack = bound.packs[s]!;
    const offs = pack.offsetsInPackOrder();
    const bits = cand.collect(seg.start, seg.end);
    for (const b of bits) {
      if ((++k & 255) === 0) { const t = ctx.slicer.tick(); if (t) await t; ctx.signal?.throwIfAborted(); }
      const offset = offs[rankOf ? rankOf[b]! : b]!;
      const info = odb.infoAt({ kind: 'packed', pack, pos: -1, offset }, false, false);
      if (over(info.size)) drop.push(b);
    }
  }
  for (const b of drop) result.clear(b);
  for (let i = 0; i < pos.extCount; i++) {
    const p = pos.n + i;
    if (pos.extTypes[i] !== ObjType.Blob || !result.get(p) || tips.get(p)) continue;
    const info = odb.info(pos.extId(i));
    if (info && over(info.size)) result.clear(p);
  }
}

/** Apply `f` to `result` in place. */
export async function applyFilter(ctx: FilterContext, result: Bitset, f: BitmapFilter): Promise<void> {
  switch (f.kind) {
    case 'blob:none': excludeType(ctx, result, ObjType.Blob); return;
    case 'blob:limit': await blobLimit(ctx, result, f.limit); return;
    case 'tree:0': excludeType(ctx, result, ObjType.Tree); excludeType(ctx, result, ObjType.Blob); return;
    case 'object:type':
      for (const t of [ObjType.Tag, ObjType.Commit, ObjType.Tree, ObjType.Blob]) if (t !== f.type) excludeType(ctx, result, t);
      return;
    case 'combine':
      for (const s of f.subs) await applyFilter(ctx, result, s);
  }
}
