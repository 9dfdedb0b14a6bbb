/**
 * Counting objects with reachability bitmaps: the objects `git
 * pack-objects --revs` packs for an upload-pack request, found as git's
 * prepare_bitmap_walk() finds them (wants minus haves, as bitmaps; then
 * the filter; then --include-tag), as a PackPlan.
 *
 * Undefined means "count by walking instead", in the cases git walks too:
 * no usable bitmap (none, damaged, pack.useBitmaps=false), a shallow
 * request or repository, a filter bitmaps cannot apply, no wants, haves
 * none of which is in the bitmapped pack(s) — and when an object the
 * bitmap walk needs is missing or damaged (the walk then reports it in
 * its own words). It is never a different set of objects.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GitwireError } from '../../errors.js';
import { ObjType } from '../../repo/object-type.js';
import { parseTag } from '../../repo/objects.js';
import type { Repository } from '../../repo/repository.js';
import { Slicer } from '../../util/budget.js';
import type { PackObjectsRequest } from '../pack-objects.js';
import type { IdsPart, PackPlan, PlanPart, RanksPart } from '../produce/plan.js';
import { applyFilter } from './apply-filter.js';
import { TypeIndex } from './bitmap-file.js';
import type { BoundBitmap } from './bitmap-index.js';
import type { Bitset } from './bitset.js';
import { bitmapFilter } from './filter.js';
import { includeTags } from './include-tag.js';
import { openBitmap } from './open.js';
import { Positions } from './positions.js';
import { residentBitmaps } from './resident.js';
import { identityRanks } from '../produce/identity-ranks.js';
import { packReuseMode } from '../produce/write/write-pack.js';
import { WalkMissing, findObjects, type Root, type WalkContext, type WalkStats } from './walk.js';

export interface BitmapPlanOptions {
  /** stops the work (the promise rejects with the signal's reason) */
  signal?: AbortSignal;
  /** the time slicer to yield on (default: a fresh one) */
  slicer?: Slicer;
  /** git's line for a bitmap file that is skipped because it is damaged (`error: …`, `warning: …`) */
  warn?: (line: string) => void;
  /** filled in with what the count did (tests, tracing) */
  stats?: BitmapPlanStats;
}

export interface BitmapPlanStats extends WalkStats {
  /** the bitmap used: its file */
  bitmap?: string;
  kind?: 'pack' | 'midx';
  /** objects outside the bitmapped pack(s) the walks met */
  extended: number;
  /** why no plan was made (when none was) */
  declined?: string;
}

/** The request's wants or haves as roots: each tag, then what it points to, down to a non-tag. */
async function expand(repo: Repository, bound: BoundBitmap, oids: Buffer[], slicer: Slicer, signal?: AbortSignal): Promise<Root[] | undefined> {
  const out: Root[] = [];
  const types = bound.index.file.types;
  // the type bitmaps know the type of every bitmapped object; others are looked up
  const typeOf = (oid: Buffer): ObjType | undefined => {
    const b = bound.bitOf(oid);
    if (b < 0) return repo.odb.typeOf(oid);
    return types[TypeIndex.Commit].get(b) ? ObjType.Commit : types[TypeIndex.Tag].get(b) ? ObjType.Tag : types[TypeIndex.Tree].get(b) ? ObjType.Tree : ObjType.Blob;
  };
  for (const first of oids) {
    const t = slicer.tick();
    if (t) { await t; signal?.throwIfAborted(); }
    let oid = first;
    let type = typeOf(oid);
    for (let depth = 0; type === ObjType.Tag; depth++) {
      if (depth > 100) return undefined;
      out.push({ oid, type });
      const o = repo.odb.read(oid);
      if (!o || o.type !== ObjType.Tag) return undefined;
      oid = parseTag(o.data, repo.hashLen).object;
      type = typeOf(oid);
    }
    if (type === undefined) return undefined;
    out.push({ oid, type });
  }
  return out;
}

function decline(stats: BitmapPlanStats | undefined, why: string): undefined {
  if (stats) stats.declined = why;
  return undefined;
}

/**
 * The plan for `req` from reachability bitmaps, or undefined when the
 * objects must be counted by walking (see the file comment).
 */
export async function bitmapPlan(repo: Repository, req: PackObjectsRequest, opts: BitmapPlanOptions = {}): Promise<PackPlan | undefined> {
  const stats = opts.stats;
  if (stats) Object.assign(stats, { bitmapsUsed: 0, commitsWalked: 0, treesWalked: 0, extended: 0 });
  if (req.useShallow) return decline(stats, 'shallow request');
  const filter = bitmapFilter(req.filter);
  if (filter === undefined) return decline(stats, 'filter');
  if (req.wants.length === 0) return decline(stats, 'no wants');
  if (!repo.config.getBool('pack.usebitmaps', true)) return decline(stats, 'pack.useBitmaps');
  if (existsSync(join(repo.commonDir, 'shallow'))) return decline(stats, 'shallow repository');
  const slicer = opts.slicer ?? new Slicer();
  let opened: Awaited<ReturnType<typeof openBitmap>>;
  try {
    opened = await openBitmap(repo.odb, opts.warn, slicer);
  } catch (e) {
    // (a file that changed under the look: the walk answers, and says what is wrong if anything is)
    if (e instanceof GitwireError || (e as NodeJS.ErrnoException).code !== undefined) return decline(stats, `bitmap: ${(e as Error).message}`);
    throw e;
  }
  opts.signal?.throwIfAborted();
  if (!opened) return decline(stats, 'no bitmap');
  const { bound, entry } = opened;
  if (stats) { stats.bitmap = entry.index!.path; stats.kind = entry.index!.kind; }
  const pos = new Positions(bound);
  const ctx: WalkContext = { repo, pos, slicer, signal: opts.signal, stats: stats ?? { bitmapsUsed: 0, commitsWalked: 0, treesWalked: 0 } };
  let result: Bitset;
  let haves: Bitset | undefined;
  try {
    const wantRoots = await expand(repo, bound, req.wants, slicer, opts.signal);
    const haveRoots = await expand(repo, bound, [...req.haves, ...req.extraEdges], slicer, opts.signal);
    if (!wantRoots || !haveRoots) return decline(stats, 'missing object');
    // git's classic rule: haves, none of them in the bitmapped pack: nothing to gain
    if (haveRoots.length && !haveRoots.some((r) => bound.indexPos(r.oid) >= 0)) return decline(stats, 'haves outside the bitmap');
    if (haveRoots.length) haves = await findObjects(ctx, haveRoots, undefined, true);
    result = await findObjects(ctx, wantRoots, haves, false);
    if (haves) result.andNot(haves);
    if (filter) await applyFilter({ pos, odb: repo.odb, tips: wantRoots, slicer, signal: opts.signal }, result, filter);
    if (req.includeTag) await includeTags(repo, pos, result, slicer, opts.signal);
  } catch (e) {
    if (e instanceof WalkMissing) return decline(stats, e.message);
    if (e instanceof GitwireError && (e.code === 'GW_OBJECT_CORRUPT' || e.code === 'GW_OBJECT_MISSING')) return decline(stats, e.message);
    throw e;
  } finally {
    residentBitmaps.update(entry);
  }
  const damaged = bound.index.file.damaged;
  if (damaged) opts.warn?.(damaged.line);
  if (stats) stats.extended = pos.extCount;
  // (git's multi-pack reuse needs a midx that lists its bitmapped packs, the BTMP chunk)
  const multiReuse = packReuseMode(repo) === 'multi' && bound.midx?.chunks.has('BTMP') === true;
  return toPlan(pos, result, req.thin ? haves : undefined, req.thin, multiReuse);
}

/**
 * What extract() gives for a range whose every bit is set: the ranks (the
 * bits themselves for a pack's own bitmap, `map` over them for a midx's),
 * and the names by bit, copied or counted in one tight loop each.
 */
function wholeSegment(from: number, to: number, map: Uint32Array | undefined, side: Uint32Array | undefined): { values: Uint32Array; side?: Uint32Array } {
  // (a pack's own bitmap over all of it: ranks 0..n-1, shared; names a view, copied by the layout if laid out)
  if (!map && from === 0) return side ? { values: identityRanks(to), side: side.subarray(0, to) } : { values: identityRanks(to) };
  let values: Uint32Array;
  if (map) values = map.slice(from, to);
  else {
    values = new Uint32Array(to - from);
    for (let i = 0; i < values.length; i++) values[i] = from + i;
  }
  return side ? { values, side: side.slice(from, to) } : { values };
}

/** The result as plan parts: one per pack of the bitmap (ranks), one for the extended objects (ids). */
function toPlan(pos: Positions, result: Bitset, haves: Bitset | undefined, thin: boolean, multiReuse: boolean): PackPlan {
  const bound = pos.bound;
  const index = bound.index;
  const parts: PlanPart[] = [];
  let count = 0;
  const named = index.file.hasNameHashes;
  index.segments.forEach((seg, s) => {
    // (names by bit are made for the whole bitmap on first use: not for a segment the result has nothing of)
    const n = result.count(seg.start, seg.end);
    // all of a pack (a clone): its ranks and names copied in one piece, not bit by bit (a bit-by-bit
    // extract of a 329,000-object pack ran once per clone, unoptimized: ~12% of serve's loop per clone)
    const got = n === seg.end - seg.start && n > 0 ? wholeSegment(seg.start, seg.end, index.rankOfBit, named ? index.nameOfBit : undefined)
      : result.extract(seg.start, seg.end, index.rankOfBit, named && n > 0 ? index.nameOfBit : undefined);
    const ranks = got.values;
    if (ranks.length === 0) return;
    const part: RanksPart = { kind: 'ranks', pack: bound.packs[s]!, ranks };
    if (got.side) part.names = got.side;
    // git reuses from the pack at bit 0 (pack.allowPackReuse=single, its default), or from every pack of a
    // multi-pack bitmap whose midx lists its bitmapped packs (=multi)
    if (seg.start === 0) part.reuse = 'first';
    else if (multiReuse) part.reuse = 'more';
    parts.push(part);
    count += ranks.length;
  });
  const ext: number[] = [];
  for (let i = 0; i < pos.extCount; i++) if (result.get(pos.n + i)) ext.push(i);
  if (ext.length) {
    const hl = bound.packs[0]!.hashLen;
    const ids = Buffer.allocUnsafe(ext.length * hl);
    const types = new Uint8Array(ext.length);
    const names = new Uint32Array(ext.length);
    ext.forEach((i, k) => { pos.copyExtId(i, ids, k * hl); types[k] = pos.extTypes[i]!; names[k] = pos.extNames[i]!; });
    const part: IdsPart = { kind: 'ids', ids, count: ext.length, types, names };
    parts.push(part);
    count += ext.length;
  }
  const plan: PackPlan = {
    count,
    parts,
    source: 'bitmap',
    ...(thin ? { clientHas: (oid: Buffer) => { const p = pos.of(oid); return p >= 0 && haves !== undefined && haves.get(p); } } : {}),
  };
  return plan;
}

