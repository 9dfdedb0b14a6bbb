/** Coordination of several nodes (see coordinator.ts): the interface, its local and Redis implementations. */
export {
  scopeOfClient, scopeOfRepo,
  type ClaimRecord, type ClaimResult, type CoordinationMode, type CoordinationStatus, type Coordinator, type PackClaim, type SlotLease,
} from './coordinator.js';
export { LocalCoordinator } from './local.js';
export type { RedisCoordinator, RedisCoordinatorOptions } from './redis.js';

/**
 * The coordinator for `--redis URL` (a RedisCoordinator, which loads the
 * Redis client only then), else the in-process one.
 */
export async function createCoordinator(o: { redis?: string; root: string; ttlMs?: number; prefix?: string; log?: (msg: string, fields: Record<string, unknown>, level?: 'info' | 'warn') => void }): Promise<import('./coordinator.js').Coordinator> {
  if (o.redis === undefined) {
    const { LocalCoordinator } = await import('./local.js');
    return new LocalCoordinator();
  }
  const { RedisCoordinator } = await import('./redis.js');
  return new RedisCoordinator({ url: o.redis, root: o.root, ttlMs: o.ttlMs, prefix: o.prefix, log: o.log });
}
