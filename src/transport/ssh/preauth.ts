/**
 * Before authentication: who gets a connection slot, and how fast one
 * address may start handshakes. A connection that has not authenticated
 * costs its holder nothing, so it never keeps out a newcomer: when the
 * server is full, an unauthenticated connection is closed to make room
 * (the oldest one of the address group holding the most), and an
 * authenticated one never is. A login in progress is thereby closed only
 * after every address holding more unauthenticated connections than its
 * own has been brought down to its count: 5 addresses holding 320 silent
 * connections lose theirs first. Addresses are grouped by addressGroup
 * (limits.ts).
 */

/** Unauthenticated connections by address group, each with the order it came in. */
export class UnauthenticatedPool<T> {
  private readonly groups = new Map<string, Map<T, number>>();
  private seq = 0;
  private n = 0;

  /** unauthenticated connections in all */
  get size(): number { return this.n; }
  /** address groups holding one or more */
  get groupCount(): number { return this.groups.size; }
  /** unauthenticated connections of one address group */
  count(group: string): number { return this.groups.get(group)?.size ?? 0; }

  add(group: string, c: T): void {
    let g = this.groups.get(group);
    if (!g) this.groups.set(group, (g = new Map<T, number>()));
    if (g.has(c)) return;
    g.set(c, this.seq++);
    this.n++;
  }

  /** false when it was not there (closed twice, or authenticated already) */
  remove(group: string, c: T): boolean {
    const g = this.groups.get(group);
    if (!g?.delete(c)) return false;
    this.n--;
    if (!g.size) this.groups.delete(group);
    return true;
  }

  /**
   * The connection to close so that a newcomer from `newcomer` gets a
   * slot: the oldest of the group that would hold the most with the
   * newcomer counted in its own; between groups holding as many, the one
   * whose oldest came first. Undefined when there is none.
   */
  victim(newcomer: string): T | undefined {
    let best: T | undefined, bestCount = 0, bestSeq = Infinity;
    for (const [group, g] of this.groups) {
      const count = g.size + (group === newcomer ? 1 : 0);
      const [oldest, seq] = g.entries().next().value as [T, number];
      if (count > bestCount || (count === bestCount && seq < bestSeq)) { best = oldest; bestCount = count; bestSeq = seq; }
    }
    return best;
  }
}

/** address groups whose handshake rate is remembered at once (each a Map entry and a number) */
export const HANDSHAKE_RATE_KEYS = 16_384;
/** the longest a connection over the rate waits for its turn before it is refused instead */
export const HANDSHAKE_MAX_WAIT_MS = 5_000;

/**
 * New connections per address group: `rate` a second, `burst` at once
 * (twice the rate, at least 1). A connection over the rate waits for its
 * turn, unread, while that is at most HANDSHAKE_MAX_WAIT_MS away (50
 * clones started at once behind one address are spread out, not
 * refused); past that it is refused. A generic cell rate algorithm: one
 * number per group, the time its bucket is full again; a group whose
 * bucket is full is forgotten. At most `maxKeys` groups are remembered,
 * least recently seen first out: one that is forgotten early only gets
 * its burst back, so memory stays bounded with any number of addresses.
 */
export class HandshakeRate {
  private readonly full = new Map<string, number>();
  private readonly interval: number;
  private readonly tolerance: number;
  readonly burst: number;

  constructor(readonly rate: number, private readonly maxWaitMs = HANDSHAKE_MAX_WAIT_MS, private readonly maxKeys = HANDSHAKE_RATE_KEYS, private readonly now: () => number = () => performance.now()) {
    if (!(rate > 0) || !Number.isFinite(rate)) throw new RangeError(`handshake rate: expected a number > 0, not ${rate}`);
    this.burst = Math.max(1, Math.floor(2 * rate));
    this.interval = 1000 / rate;
    this.tolerance = (this.burst - 1) * this.interval;
  }

  /** groups remembered now (never more than maxKeys) */
  get size(): number { return this.full.size; }

  /** The milliseconds a new connection from `group` waits before its handshake, or -1: refused. */
  admit(group: string): number {
    const t = this.now();
    this.forgetFull(t);
    const tat = Math.max(this.full.get(group) ?? t, t);
    const wait = Math.max(0, tat - this.tolerance - t);
    if (wait > this.maxWaitMs) return -1;
    this.full.delete(group); // set again below: the most recently seen is last
    this.full.set(group, tat + this.interval);
    while (this.full.size > this.maxKeys) this.full.delete(this.full.keys().next().value as string);
    return wait;
  }

  /** Give back the turn `admit` gave (the connection was refused for another reason). */
  refund(group: string): void {
    const tat = this.full.get(group);
    if (tat !== undefined) this.full.set(group, tat - this.interval);
  }

  /** the least recently seen groups whose bucket is full again are forgotten (two per call: amortized) */
  private forgetFull(t: number): void {
    for (let i = 0; i < 2; i++) {
      const first = this.full.entries().next().value as [string, number] | undefined;
      if (!first || first[1] > t) return;
      this.full.delete(first[0]);
    }
  }
}
