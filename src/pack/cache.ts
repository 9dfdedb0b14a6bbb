/** The pack-objects cache (see cache/pack-cache.ts); this module is its public surface. */
export * from './cache/index.js';
