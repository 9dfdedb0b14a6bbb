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

/** Something that ends with a 'close' event: a response, a socket, an SSH channel. */
export interface Closable {
  once(ev: 'close', cb: () => void): unknown;
  off(ev: 'close', cb: () => void): unknown;
  destroyed?: boolean;
  closed?: boolean;
  /** an ssh2 channel: `closed` once the client closed it (its 'close' event may come later, or have come already) */
  incoming?: { state?: string };
}

const isClosed = (t: Closable) => t.destroyed === true || t.closed === true || t.incoming?.state === 'closed';

/**
 * Call `release` once the first of `targets` closes, at once if one has
 * already (a listener added after 'close' would never run, and the
 * client's count would stay up for ever). The other listeners are removed.
 */
export function releaseOnClose(release: () => void, ...targets: Closable[]): void {
  if (targets.some(isClosed)) { release(); return; }
  const once = () => {
    for (const t of targets) t.off('close', once);
    release();
  };
  for (const t of targets) t.once('close', once);
}
