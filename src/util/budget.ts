/**
 * Cooperative time slicing for work on the shared event loop: a long loop
 * calls `tick()` often and awaits what it returns; every `sliceMs` of
 * continuous work it gets a promise that resolves on the next turn of the
 * event loop (setImmediate), so other clients' I/O runs in between.
 *
 *   const p = slicer.tick(); if (p) await p;
 *
 * Checking the clock costs more than a tick, so it is read every 64 ticks.
 */
import { performance } from 'node:perf_hooks';

export class Slicer {
  private last = performance.now();
  private n = 0;
  /** number of times this slicer gave the loop away */
  yields = 0;
  constructor(readonly sliceMs = 10) {}

  /** Start a fresh slice (after an await that already yielded). */
  reset(): void { this.last = performance.now(); }

  tick(): Promise<void> | undefined {
    if ((++this.n & 63) !== 0) return undefined;
    if (performance.now() - this.last < this.sliceMs) return undefined;
    return this.yieldNow();
  }

  yieldNow(): Promise<void> {
    this.yields++;
    return new Promise((resolve) => setImmediate(() => { this.last = performance.now(); resolve(); }));
  }
}

/** A running total of time spent in some kind of work, against a budget. */
export class TimeBudget {
  spentMs = 0;
  constructor(readonly limitMs: number) {}
  get exhausted(): boolean { return this.limitMs > 0 && this.spentMs >= this.limitMs; }
  /** time `fn` (synchronous part and awaited parts alike, minus nothing: wall time while it runs) */
  start(): () => void {
    const t0 = performance.now();
    return () => { this.spentMs += performance.now() - t0; };
  }
}
