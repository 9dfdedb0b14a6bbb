/** The pack-objects cache: the cache, its store, its key, and the trailer check its readers use. */
export { PackCache } from './pack-cache.js';
export {
  JOIN_WINDOW, type AcquireOptions, type CacheOutcome, type FallbackReason, type Lease, type PackCacheOptions, type PackCacheStats, type Producer,
} from './options.js';
export { TrailerCheck } from './trailer.js';
export { humanBytes } from './progress.js';
export { DirectoryStore, ENTRY_HEADER_BYTES, type PackCacheStore, type PackSpool, type PruneLimits, type PruneResult, type StoredPack } from './store.js';
export { keyForRequest, packCacheKey } from './key.js';
