/**
 * Cooperative time slicing for work on the shared event loop: a long loop
 * calls `tick()` often and awaits what it returns; after `sliceMs` of
 * continuous work it gets a promise that resolves on a later turn of the
 * event loop (setImmediate), so other clients' I/O runs in between.
 *
 *   const p = slicer.tick(); if (p) await p;
 *
 * The slice is shared by every request that is slicing: the requests that
 * yielded together resume together on the next turn and split one slice
 * between them, so a turn of the loop holds at most about `sliceMs` of
 * sliced work however many heavy requests run at once (each still gets its
 * share, none starves). One heavy request alone gets the whole slice.
 *
 * Checking the clock costs more than a tick, so it is read every 64 ticks.
 */
import { performance } from 'node:perf_hooks';

/** below this a share is not worth the turn it costs */
const MIN_SHARE_MS = 0.25;

/** slicers waiting for the next turn, resumed together by one setImmediate */
let waiting: Array<(n: number) => void> = [];

function resumeAll(): void {
  const w = waiting;
  waiting = [];
  for (const resolve of w) resolve(w.length);
}

/** Resolves on the next turn of the loop with the number of slicers resuming on it. */
function nextTurn(): Promise<number> {
  return new Promise((resolve) => {
    if (waiting.push(resolve) === 1) setImmediate(resumeAll);
  });
}

export class Slicer {
  private last = performance.now();
  /** resumed from a yield: the share starts at the next tick (when this slicer's caller runs again) */
  private fresh = false;
  private n = 0;
  /** this slicer's share of the current turn */
  private limit: number;
  /** number of times this slicer gave the loop away */
  yields = 0;
  /** this slicer's share of the current turn, ms (sliceMs alone; less when others resumed on the same turn) */
  get share(): number { return this.limit; }
  constructor(readonly sliceMs = 2) { this.limit = sliceMs; }

  /** Start a fresh slice (after an await that already yielded). */
  reset(): void { this.last = performance.now(); this.fresh = false; this.limit = this.sliceMs; }

  tick(): Promise<void> | undefined {
    if (this.fresh) { this.fresh = false; this.last = performance.now(); }
    if ((++this.n & 63) !== 0) return undefined;
    if (performance.now() - this.last < this.limit) return undefined;
    return this.yieldNow();
  }

  /**
   * For loops that batch their work already (a ref scan asks once per 1024
   * refs): reads the clock on every call, and gives the loop away once the
   * slice is spent.
   */
  due(): Promise<void> | undefined {
    if (this.fresh) { this.fresh = false; this.last = performance.now(); return undefined; }
    if (performance.now() - this.last < this.limit) return undefined;
    return this.yieldNow();
  }

  yieldNow(): Promise<void> {
    this.yields++;
    return nextTurn().then((sharing) => {
      // the sharers resume one after another: each share starts when its caller runs again (next tick)
      this.limit = Math.max(MIN_SHARE_MS, this.sliceMs / sharing);
      this.fresh = true;
    });
  }
}

/**
 * A running total of time spent in some kind of work, against a budget.
 * Work is timed in spans, one at a time: `start()` opens one and returns
 * what closes it. `exhausted` counts the open span too, so one long walk
 * is stopped inside itself, not only once it is over.
 */
export class TimeBudget {
  spentMs = 0;
  /** when the open span started, -1 when none is open */
  private since = -1;
  constructor(readonly limitMs: number) {}
  get exhausted(): boolean {
    if (this.limitMs <= 0) return false;
    return this.spentMs + (this.since >= 0 ? performance.now() - this.since : 0) >= this.limitMs;
  }
  /** time a span of work (synchronous part and awaited parts alike: wall time while it runs) */
  start(): () => void {
    const t0 = performance.now();
    this.since = t0;
    return () => { this.spentMs += performance.now() - t0; this.since = -1; };
  }
}

/** `fn` on each item, giving the event loop away on `slicer` between items. */
export async function forEachSliced<T>(items: Iterable<T>, fn: (item: T) => void, slicer = new Slicer()): Promise<void> {
  for (const item of items) {
    const tick = slicer.tick();
    if (tick) await tick;
    fn(item);
  }
}

/**
 * Buffer.concat(chunks, total) with the copying in slices: one buffer of
 * many MiB, copied (and first touched) at once, holds the loop for tens of
 * ms (a 10 MiB request body: 15-20 ms on a loaded machine).
 */
export async function concatSliced(chunks: readonly Buffer[], total: number, slicer = new Slicer()): Promise<Buffer> {
  if (chunks.length === 1 && chunks[0]!.length === total) return chunks[0]!;
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  for (const c of chunks) {
    const p = slicer.due();
    if (p) await p;
    at += c.copy(out, at);
  }
  return out;
}
