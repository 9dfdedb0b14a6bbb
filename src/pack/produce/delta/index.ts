/**
 * Delta compression for the native pack writer: git's delta encoder and
 * its window search, for objects a pack would otherwise send whole.
 */
export { basesFirst } from './bases-first.js';
export { createDelta, createDeltaFrom } from './create-delta.js';
export { createDeltaIndex, DeltaIndex } from './delta-index.js';
export { searchOrder, type SortKey } from './search-order.js';
export { DELTA_DEFAULTS, deltaCandidate, newDeltaStats, noPairTried, searchDeltas, type DeltaChoice, type DeltaObject, type DeltaSearchOptions, type DeltaSearchStats } from './search.js';
export { deltaThreads, searchDeltasThreaded, searchPlace, type ThreadedSearchOptions } from './search-thread.js';
