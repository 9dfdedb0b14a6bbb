/**
 * A stack of tables read as one (git's reftable/merged.c): the iterators
 * of every table walked together in key order; where several tables hold
 * a key, the newest wins, and a deletion (a tombstone) hides the key
 * from the tables below it. With a handful of tables (compaction keeps
 * the stack logarithmic) the smallest key is found by a look at each.
 */
import type { TableIter } from './table.js';

export class MergedIter {
  /** has iters[i] a current record not yet handed over? */
  private readonly live: boolean[];
  private readonly consumed: boolean[];
  private primed = false;

  /** `iters` oldest first (stack order); deletions are skipped unless `keepDeletions`. */
  constructor(private readonly iters: TableIter[], private readonly keepDeletions = false) {
    this.live = iters.map(() => false);
    this.consumed = iters.map(() => true);
  }

  /** The iterator holding the next key's winning record, or undefined at the end. */
  next(): TableIter | undefined {
    const its = this.iters, n = its.length;
    for (;;) {
      for (let i = 0; i < n; i++) {
        if (this.consumed[i]) { this.live[i] = its[i]!.next(); this.consumed[i] = false; }
      }
      this.primed = true;
      let win = -1;
      for (let i = n - 1; i >= 0; i--) {
        if (!this.live[i]) continue;
        if (win < 0) { win = i; continue; }
        const a = its[i]!.it!, w = its[win]!.it!;
        // strictly smaller only: on a tie the newer (higher) table already chosen stays
        if (a.cmpIter(w) < 0) win = i;
      }
      if (win < 0) return undefined;
      const w = its[win]!.it!;
      for (let i = 0; i < n; i++) {
        if (!this.live[i]) continue;
        const a = its[i]!.it!;
        if (i === win || (a.keyLen === w.keyLen && a.cmpIter(w) === 0)) this.consumed[i] = true;
      }
      if (!this.keepDeletions && w.vt === 0) continue;
      return its[win];
    }
  }

  get started(): boolean { return this.primed; }
}
