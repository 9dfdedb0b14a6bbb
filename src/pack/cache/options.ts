/** The pack-objects cache's options, counters and the shapes it hands out. */
import type { Child } from '../../util/spawn.js';
import type { PackSource } from '../relay.js';
import type { PackCacheStore } from './store.js';
import type { Coordinator } from '../../cluster/coordinator.js';

export type CacheOutcome = 'hit' | 'miss' | 'join' | 'bypass';
export type FallbackReason = 'create' | 'write' | 'read' | 'corrupt' | 'retry' | 'too-large' | 'commit';

export interface PackCacheOptions {
  /** where entries live (a DirectoryStore over `dir` unless `store` is given) */
  dir?: string;
  store?: PackCacheStore;
  /** entries older than this are not served and get removed (default 5 minutes, as Gitaly) */
  maxAgeMs?: number;
  /** total bytes of stored entries; the least recently used go first (default 1 GiB) */
  maxBytes?: number;
  /** store an entry only when its key was seen this many times before (default 1, as Gitaly) */
  minOccurrences?: number;
  /**
   * a run that will not be stored (a first sighting) is not spooled; an
   * identical request can join it while it has produced at most this many
   * bytes, kept in memory (default JOIN_WINDOW, 4 MiB)
   */
  joinWindowBytes?: number;
  /** failures and decisions worth a log line */
  log?: (msg: string, fields: Record<string, unknown>) => void;
  /** several nodes over one cache directory: runs are claimed, and other nodes' runs followed (cluster/) */
  coordinator?: Coordinator;
  /** a followed run whose claim is gone and whose spool has not grown this long is taken for dead (default 5000 ms) */
  producerDeadAfterMs?: number;
}

export interface PackCacheStats {
  hits: number;
  misses: number;
  joins: number;
  /** of the joins, those that followed another node's run */
  remoteJoins: number;
  /** requests that went straight to pack-objects because the cache could not take them */
  bypasses: number;
  /** pack bytes handed to hit and join readers */
  bytesServed: number;
  /** pack bytes produced by pack-objects for cache entries */
  bytesGenerated: number;
  /** bytes written to spools (what the cache wrote to its directory, stored or not) */
  bytesSpooled: number;
  /** bytes of entries published to the store */
  bytesStored: number;
  stored: number;
  evictions: number;
  expirations: number;
  /** producers killed because nobody needed their output any more */
  abandoned: number;
  fallbacks: Record<FallbackReason, number>;
}

/** What a producer needs: pack-objects (or the hook) started, and a slot to give back when it exits. */
export interface Producer { child: Child; release?: () => void }

export interface AcquireOptions {
  /** start pack-objects for this key (called at most once, only on a miss) */
  produce: () => Promise<Producer>;
  objectFormat: 'sha1' | 'sha256';
  /** the client wants progress on band 2 */
  progress: boolean;
}

export interface Lease {
  outcome: Exclude<CacheOutcome, 'bypass'>;
  source: PackSource;
}

/** bytes per read of a spool or a stored entry */
export const READ_CHUNK = 1024 * 1024;

/**
 * A first sighting (a key that will not be stored) is not spooled: its bytes
 * stay in memory while there are at most this many, so that an identical
 * request arriving meanwhile can still join it (the run is then spooled from
 * its first byte). Past this, the entry can no longer be joined.
 */
export const JOIN_WINDOW = 4 * 1024 * 1024;
