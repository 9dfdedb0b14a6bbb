/**
 * The coordinator of a node on its own (no `--redis`), and of a Redis
 * node while Redis is away: slots counted in this process, every cache
 * claim won (identical requests on this node join in the cache itself),
 * invalidation delivered to this node's own listeners.
 */
import type { ClaimRecord, ClaimResult, CoordinationStatus, Coordinator, SlotLease } from './coordinator.js';

export class LocalCoordinator implements Coordinator {
  readonly mode = 'local' as const;
  readonly shared = false;
  private readonly held = new Map<string, number>();
  private readonly released = new Set<() => void>();
  private readonly invalidated = new Set<(repo: string | undefined) => void>();
  private readonly since = Date.now();

  status(): CoordinationStatus { return { mode: 'local', up: true, since: this.since }; }

  /** slots of `scope` held in this process */
  count(scope: string): number { return this.held.get(scope) ?? 0; }

  tryLease(scope: string, limit: number): Promise<SlotLease | undefined> {
    return Promise.resolve(this.take(scope, limit));
  }

  tryLeases(wants: ReadonlyArray<readonly [string, number]>): Promise<{ lease: SlotLease } | { full: number }> {
    return Promise.resolve(this.takeAll(wants));
  }

  /** tryLeases without the promise: all of them or none */
  takeAll(wants: ReadonlyArray<readonly [string, number]>): { lease: SlotLease } | { full: number } {
    const held: SlotLease[] = [];
    for (let i = 0; i < wants.length; i++) {
      const l = this.take(wants[i]![0], wants[i]![1]);
      if (!l) { for (const h of held) h.release(); return { full: i }; }
      held.push(l);
    }
    let done = false;
    return { lease: { release: () => { if (done) return; done = true; for (const h of held) h.release(); } } };
  }

  /** tryLease without the promise */
  take(scope: string, limit: number): SlotLease | undefined {
    const n = this.count(scope);
    if (limit > 0 && n >= limit) return undefined;
    this.held.set(scope, n + 1);
    let done = false;
    return {
      release: () => {
        if (done) return;
        done = true;
        const m = (this.held.get(scope) ?? 1) - 1;
        if (m > 0) this.held.set(scope, m); else this.held.delete(scope);
        this.notifyRelease();
      },
    };
  }

  notifyRelease(): void { for (const f of [...this.released]) f(); }

  onRelease(fn: () => void): () => void {
    this.released.add(fn);
    return () => { this.released.delete(fn); };
  }

  claimPack(): Promise<ClaimResult | undefined> {
    return Promise.resolve({ won: true, claim: { followed: () => Promise.resolve(false), finish: () => Promise.resolve() } });
  }

  packState(): Promise<ClaimRecord | undefined> { return Promise.resolve(undefined); }

  followPack(): Promise<void> { return Promise.resolve(); }

  publish(repo: string): void { this.notifyInvalidate(repo); }

  notifyInvalidate(repo: string | undefined): void {
    for (const f of [...this.invalidated]) {
      try { f(repo); } catch { /* a listener's failure stays with it */ }
    }
  }

  onInvalidate(fn: (repo: string | undefined) => void): () => void {
    this.invalidated.add(fn);
    return () => { this.invalidated.delete(fn); };
  }

  /** one process: nothing to agree on */
  sharedSecret(): Promise<Buffer | undefined> { return Promise.resolve(undefined); }

  close(): Promise<void> { return Promise.resolve(); }
}
