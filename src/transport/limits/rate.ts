/**
 * Requests per second per client, with a burst: a token bucket per client
 * key. A bucket holds up to `burst` tokens and gains `rate` a second; a
 * request takes one, or is told how long until one is there.
 *
 * The table is bounded: at most `maxClients` buckets, least recently used
 * first out. A bucket that is evicted is one that has not been used for the
 * longest time, so it has usually refilled (a full bucket and no bucket are
 * the same thing); 10,000 or a million distinct addresses hold at most
 * `maxClients` entries. An attacker with more addresses than `maxClients`
 * can push other buckets out early, which only ever gives them back their
 * burst: the bound on memory wins over exactness.
 */

/** buckets kept, unless told otherwise (each is a Map entry and two numbers: ~100 bytes) */
export const DEFAULT_MAX_CLIENTS = 16_384;

interface Bucket { tokens: number; at: number }

export class TokenBuckets {
  private readonly table = new Map<string, Bucket>();
  /** `rate` tokens a second (> 0), at most `burst` (>= 1) */
  constructor(readonly rate: number, readonly burst: number, readonly maxClients = DEFAULT_MAX_CLIENTS, private readonly now: () => number = () => performance.now()) {
    if (!(rate > 0) || !Number.isFinite(rate)) throw new RangeError(`rate: expected a number > 0, not ${rate}`);
    if (!(burst >= 1) || !Number.isFinite(burst)) throw new RangeError(`burst: expected a number >= 1, not ${burst}`);
    if (!(maxClients >= 1)) throw new RangeError(`maxClients: expected a number >= 1, not ${maxClients}`);
  }

  /** buckets held now (never more than maxClients) */
  get size(): number { return this.table.size; }

  /** Take a token for `key`: 0 when granted, else the milliseconds until one will be there. */
  take(key: string): number {
    const t = this.now();
    const b = this.table.get(key);
    let tokens = this.burst;
    if (b) {
      tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.rate);
      this.table.delete(key); // re-inserted below: the most recently used is last
    }
    if (tokens >= 1) {
      this.put(key, { tokens: tokens - 1, at: t });
      return 0;
    }
    this.put(key, { tokens, at: t });
    return Math.ceil(((1 - tokens) / this.rate) * 1000);
  }

  private put(key: string, b: Bucket): void {
    this.table.set(key, b);
    while (this.table.size > this.maxClients) {
      const oldest = this.table.keys().next().value as string;
      this.table.delete(oldest);
    }
  }
}
