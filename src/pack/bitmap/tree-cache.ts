/**
 * Trees read by bitmap walks, kept between requests: a fetch walks the
 * trees of the commits pushed since the bitmap was written, and the next
 * fetch of the same commits walks them again. Each tree read from a pack
 * costs a lookup, an inflate and often a delta; kept, it costs one probe.
 *
 * One process-wide budget (TREE_CACHE_BYTES in all, whatever the number of
 * repositories). Each object database that read trees has its own two
 * generations, each a table by id (no string per lookup): trees are added
 * to the young one, a tree found in the old one is carried into the young
 * one. Past the budget every database ages: its old generation goes, its
 * young one becomes old. What was used since the last ageing stays, what
 * was not goes after two: least recently used out, at a cost of nothing
 * per lookup.
 *
 * A tree's bytes never change for its id, and a database answers only for
 * the objects it holds: entries are per database (another repository's
 * copy is not looked at), and go when it closes (the repository pool
 * closes one when its pack set changes or when it evicts it). Each entry
 * is a copy of exactly its bytes (a tree read may be a view of a larger
 * buffer, which the cache would otherwise keep whole).
 */
import type { ObjectDatabase } from '../../repo/odb.js';
import { OidIndex } from './oid-index.js';

/** bytes of trees kept in all */
export const TREE_CACHE_BYTES = 8 * 1024 * 1024;
/** a tree larger than this is not kept (one would push out thousands) */
const MAX_TREE = 256 * 1024;
/** bytes counted per entry besides the tree (its id, slots, the buffer object) */
const OVERHEAD = 128;

interface Generation { ids: OidIndex; trees: Buffer[]; bytes: number }
interface DbTrees { hashLen: number; young: Generation; old: Generation | undefined }

let limit = TREE_CACHE_BYTES;
let total = 0;
/** (weakly: a database dropped without being closed does not stay for its trees) */
const byDb = new WeakMap<ObjectDatabase, DbTrees>();
/** every database's trees, for ageing */
const states = new Set<DbTrees>();
/** databases told to drop their trees when they close */
const hooked = new WeakSet<ObjectDatabase>();

export const treeCacheStats = { hits: 0, misses: 0, agings: 0 };

function generation(hashLen: number): Generation {
  return { ids: new OidIndex(hashLen), trees: [], bytes: 0 };
}

function stateOf(odb: ObjectDatabase): DbTrees {
  let s = byDb.get(odb);
  if (!s || !states.has(s)) {
    const mine: DbTrees = { hashLen: odb.hashLen, young: generation(odb.hashLen), old: undefined };
    s = mine;
    byDb.set(odb, mine);
    states.add(mine);
    if (!hooked.has(odb)) {
      hooked.add(odb);
      odb.onClose(() => { const last = byDb.get(odb); if (last) drop(last); });
    }
  }
  return s;
}

function drop(s: DbTrees): void {
  if (!states.delete(s)) return;
  total -= s.young.bytes + (s.old?.bytes ?? 0);
}

function add(s: DbTrees, oid: Buffer, tree: Buffer): void {
  const g = s.young;
  const n = g.ids.count;
  if (g.ids.add(oid, 0) < n) return;
  g.trees.push(tree);
  const b = tree.length + OVERHEAD;
  g.bytes += b;
  total += b;
  if (total > limit) age();
}

/** Every database's old generation goes, its young one becomes old. */
function age(): void {
  treeCacheStats.agings++;
  for (const s of states) {
    total -= s.old?.bytes ?? 0;
    s.old = s.young.bytes > 0 ? s.young : undefined;
    s.young = generation(s.hashLen);
    // (a database with nothing left is forgotten: its next tree starts it again)
    if (!s.old) states.delete(s);
  }
  // one generation held more than the budget: none kept
  if (total > limit) {
    states.clear();
    total = 0;
  }
}

/** The bytes of tree `oid` as `odb` read them before, if they are still kept. */
export function cachedTree(odb: ObjectDatabase, oid: Buffer): Buffer | undefined {
  const s = byDb.get(odb);
  if (s && states.has(s)) {
    const y = s.young.ids.find(oid, 0);
    if (y >= 0) { treeCacheStats.hits++; return s.young.trees[y]; }
    const o = s.old ? s.old.ids.find(oid, 0) : -1;
    if (o >= 0) {
      treeCacheStats.hits++;
      const tree = s.old!.trees[o]!;
      add(s, oid, tree);
      return tree;
    }
  }
  treeCacheStats.misses++;
  return undefined;
}

/** Keep the bytes of tree `oid` read by `odb` (a copy of them). */
export function keepTree(odb: ObjectDatabase, oid: Buffer, data: Buffer): void {
  if (data.length > MAX_TREE || 2 * (data.length + OVERHEAD) > limit) return;
  const copy = Buffer.allocUnsafeSlow(data.length);
  data.copy(copy);
  add(stateOf(odb), oid, copy);
}

/** Bytes the cache holds (trees and their per-entry overhead). */
export function treeCacheBytes(): number { return total; }

/** Set the byte budget (0: keep none); what is held past it goes. */
export function setTreeCacheBudget(bytes: number): void {
  if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError(`tree cache budget: expected a number of bytes >= 0, not ${bytes}`);
  limit = bytes;
  while (total > limit && states.size > 0) age();
}
