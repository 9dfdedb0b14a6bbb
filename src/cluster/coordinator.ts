/**
 * What several gitwire nodes over one shared storage agree on, behind one
 * interface:
 *
 * - admission leases: a slot of a fleet-wide limit (`--max-packs-per-repo`,
 *   `--max-packs-per-client`), held with a TTL renewed while the work runs,
 *   so a node that dies frees its slots by itself;
 * - pack-cache claims: the one node that runs pack-objects for a cache key,
 *   and where its spool is, so identical requests on other nodes follow it;
 * - invalidation: a repository whose refs or objects changed, so every node
 *   drops its pooled snapshot of it.
 *
 * LocalCoordinator (one node, no `--redis`) and RedisCoordinator implement
 * it; the callers are the same either way. A Redis coordinator that cannot
 * reach Redis answers as the local one does: local limits, no cross-node
 * joins, until Redis is back.
 */

export type CoordinationMode = 'local' | 'redis';

/** For `/readyz` and the metric: where coordination stands now. */
export interface CoordinationStatus {
  mode: CoordinationMode;
  /** false while a Redis coordinator cannot reach Redis (the node serves with local limits) */
  up: boolean;
  /** when `up` last changed (ms since the epoch) */
  since: number;
  /** the last connection error while down */
  error?: string;
}

/** A slot held; give it back exactly once (more calls do nothing). */
export interface SlotLease { release(): void }

/** What the claim record of a cache key says. */
export type ClaimRecord =
  | { state: 'running'; node: string; spool: string }
  | { state: 'done'; node: string; spool: string; size: number; trailer: string; stored: boolean }
  | { state: 'failed'; node: string };

/** A claim this node won: it produces the entry. */
export interface PackClaim {
  /** did another node follow the run (then the entry is worth storing) */
  followed(): Promise<boolean>;
  /** the run is over: tell the followers how it ended, and stop renewing */
  finish(rec: { ok: true; size: number; trailer: Buffer; stored: boolean } | { ok: false }): Promise<void>;
}

export type ClaimResult =
  | { won: true; claim: PackClaim }
  | { won: false; holder: ClaimRecord };

export interface Coordinator {
  readonly mode: CoordinationMode;
  /** true when other nodes may share the work (cache claims are worth making) */
  readonly shared: boolean;
  status(): CoordinationStatus;
  /** one of `limit` slots of `scope` across the fleet, or undefined when all are taken */
  tryLease(scope: string, limit: number): Promise<SlotLease | undefined>;
  /**
   * A slot of every scope at once, or none: one lease releasing them all, or
   * the index of a scope whose slots are all taken. (A Redis coordinator
   * takes them in one round trip, and gives them back in one.)
   */
  tryLeases(wants: ReadonlyArray<readonly [scope: string, limit: number]>): Promise<{ lease: SlotLease } | { full: number }>;
  /** `fn` runs whenever a slot may have freed anywhere; returns the unsubscribe */
  onRelease(fn: () => void): () => void;
  /** claim cache key `key` for a run spooled at `spool`; undefined when claims cannot be made now (act alone) */
  claimPack(key: string, spool: string): Promise<ClaimResult | undefined>;
  /** the claim record of `key` now (undefined: none, or unknown) */
  packState(key: string): Promise<ClaimRecord | undefined>;
  /** a follower of `key`'s run announces itself (the producer then stores the entry) */
  followPack(key: string): Promise<void>;
  /** `repo` changed (refs moved, objects added): every node drops its snapshot */
  publish(repo: string): void;
  /** `fn(repo)` for every published repository; `fn(undefined)`: anything may have changed (after an outage) */
  onInvalidate(fn: (repo: string | undefined) => void): () => void;
  /**
   * A 32-byte secret every node sharing the coordinator agrees on (the first
   * to ask makes it); undefined when there is nobody to agree with, or the
   * fleet cannot be asked now.
   */
  sharedSecret(name: string): Promise<Buffer | undefined>;
  close(): Promise<void>;
}

/** Names of what a lease counts: one repository, one client. */
export const scopeOfRepo = (repo: string): string => `repo:${repo}`;
export const scopeOfClient = (client: string): string => `client:${client}`;
