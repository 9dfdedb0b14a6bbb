/**
 * How many repositories one user may create: a token bucket per user,
 * `perMinute` a minute and as many at once after a quiet minute. It bounds
 * push-to-create and `ssh host repo create` together, so a user with the
 * right to create cannot fill the disk with empty repositories (10,000
 * pushes a minute to fresh names make `perMinute` repositories, the rest
 * are refused). Memory: one entry per user seen within the last minute or
 * so; a full bucket is dropped.
 */
export const DEFAULT_CREATES_PER_MINUTE = 30;

export class CreationBudget {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(readonly perMinute: number = DEFAULT_CREATES_PER_MINUTE, private readonly now: () => number = Date.now) {}

  private level(user: string, t: number): { tokens: number; at: number } {
    const b = this.buckets.get(user) ?? { tokens: this.perMinute, at: t };
    b.tokens = Math.min(this.perMinute, b.tokens + ((t - b.at) / 60_000) * this.perMinute);
    b.at = t;
    return b;
  }

  /** Take one creation for `user`: false when over the budget (0 a minute: no limit). */
  take(user: string): boolean {
    if (this.perMinute <= 0) return true;
    const t = this.now();
    if (this.buckets.size > 10_000) this.prune(t);
    const b = this.level(user, t);
    if (b.tokens < 1) { this.buckets.set(user, b); return false; }
    b.tokens -= 1;
    this.buckets.set(user, b);
    return true;
  }

  /** Give back what `take` took when nothing was created after all (another creator won the race). */
  refund(user: string): void {
    const b = this.buckets.get(user);
    if (b) b.tokens = Math.min(this.perMinute, b.tokens + 1);
  }

  /** Seconds until `user` may create again (for the refusal's words). */
  retryAfter(user: string): number {
    const b = this.level(user, this.now());
    return b.tokens >= 1 ? 0 : Math.ceil(((1 - b.tokens) * 60) / this.perMinute);
  }

  private prune(t: number): void {
    for (const [u, b] of this.buckets) if (b.tokens + ((t - b.at) / 60_000) * this.perMinute >= this.perMinute) this.buckets.delete(u);
  }
}
