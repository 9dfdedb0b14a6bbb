/** Reachability bitmaps: reading git's .bitmap files, keeping them resident, counting objects with them. */
export { bitmapPlan, type BitmapPlanOptions, type BitmapPlanStats } from './enumerate.js';
export { residentBitmaps, setBitmapBudget, setLightBitmaps, DEFAULT_BITMAP_BUDGET, ResidentBitmaps, type ResidentEntry } from './resident.js';
export { setTreeCacheBudget, treeCacheBytes, TREE_CACHE_BYTES } from './tree-cache.js';
export { openBitmap } from './open.js';
export { BitmapIndex, BoundBitmap, type Segment } from './bitmap-index.js';
export { BitmapFile, TypeIndex, BITMAP_OPT_FULL_DAG, BITMAP_OPT_HASH_CACHE, BITMAP_OPT_LOOKUP_TABLE, BITMAP_OPT_PSEUDO_MERGES } from './bitmap-file.js';
export { Ewah } from './ewah.js';
export { Bitset, popcount32 } from './bitset.js';
export { BitmapCorrupt } from './corrupt.js';
export { bitmapFilter, type BitmapFilter } from './filter.js';
export { packNameHash } from '../name-hash.js';
