/**
 * The order a delta search visits objects in (git's type_size_sort() in
 * builtin/pack-objects.c): by type, then name hash, then preferred bases
 * first, then size, all descending; ties keep the caller's order (git's
 * "newest first", the order enumeration found them in).
 *
 * Files of one path sit together, largest first: a window then holds the
 * bigger (usually newer) versions as bases for the smaller, older ones, and
 * the deepest deltas are the oldest objects.
 */
import type { ObjType } from '../../../repo/object-type.js';

export interface SortKey {
  type: ObjType;
  size: number;
  /** git's pack_name_hash() of the path the object was reached by (0: none) */
  nameHash: number;
  preferredBase?: boolean;
}

/** Indexes of `objs` in search order (only those `use` admits, when given). */
export function searchOrder(objs: readonly SortKey[], use?: (i: number) => boolean): Uint32Array {
  let n = 0;
  const picked = new Uint32Array(objs.length);
  for (let i = 0; i < objs.length; i++) if (!use || use(i)) picked[n++] = i;
  const order = picked.subarray(0, n);
  order.sort((a, b) => compare(objs[a]!, objs[b]!) || a - b);
  return order;
}

function compare(a: SortKey, b: SortKey): number {
  if (a.type !== b.type) return b.type - a.type;
  const ha = a.nameHash >>> 0, hb = b.nameHash >>> 0;
  if (ha !== hb) return hb - ha;
  const pa = a.preferredBase ? 1 : 0, pb = b.preferredBase ? 1 : 0;
  if (pa !== pb) return pb - pa;
  return b.size - a.size;
}
