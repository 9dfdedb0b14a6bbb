/**
 * Requests in progress per client. An entry exists only while its client
 * has a request running, so the table is never larger than the number of
 * requests in progress (which the connection limits bound).
 */
export class InFlight {
  private readonly counts = new Map<string, number>();

  get size(): number { return this.counts.size; }
  count(key: string): number { return this.counts.get(key) ?? 0; }

  /** One more request for `key` unless it has `max` already (0: no limit): its release (idempotent), or undefined. */
  enter(key: string, max: number): (() => void) | undefined {
    const n = this.count(key);
    if (max > 0 && n >= max) return undefined;
    this.counts.set(key, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const m = this.count(key) - 1;
      if (m > 0) this.counts.set(key, m); else this.counts.delete(key);
    };
  }
}
