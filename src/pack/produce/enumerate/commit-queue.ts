/**
 * git's prio_queue ordered by compare_commits_by_commit_date: newest
 * committer date first, equal dates in the order they were put in. The
 * order is total, so every walk over it pops commits as git's does.
 */
export class CommitQueue {
  private n = new Int32Array(64);
  private date = new Float64Array(64);
  private ctr = new Float64Array(64);
  private seq = 0;
  size = 0;

  private before(i: number, j: number): boolean {
    const a = this.date[i]!, b = this.date[j]!;
    return a > b || (a === b && this.ctr[i]! < this.ctr[j]!);
  }

  private swap(i: number, j: number): void {
    const n = this.n[i]!; this.n[i] = this.n[j]!; this.n[j] = n;
    const d = this.date[i]!; this.date[i] = this.date[j]!; this.date[j] = d;
    const c = this.ctr[i]!; this.ctr[i] = this.ctr[j]!; this.ctr[j] = c;
  }

  put(obj: number, date: number): void {
    if (this.size === this.n.length) {
      const cap = this.size * 2;
      const n = new Int32Array(cap); n.set(this.n); this.n = n;
      const d = new Float64Array(cap); d.set(this.date); this.date = d;
      const c = new Float64Array(cap); c.set(this.ctr); this.ctr = c;
    }
    let i = this.size++;
    this.n[i] = obj; this.date[i] = date; this.ctr[i] = this.seq++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(i, p)) break;
      this.swap(i, p); i = p;
    }
  }

  /** the first object, or -1 */
  peek(): number { return this.size ? this.n[0]! : -1; }
  peekDate(): number { return this.date[0]!; }

  get(): number {
    if (!this.size) return -1;
    const top = this.n[0]!;
    const last = --this.size;
    if (last > 0) {
      this.n[0] = this.n[last]!; this.date[0] = this.date[last]!; this.ctr[0] = this.ctr[last]!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < last && this.before(l, m)) m = l;
        if (r < last && this.before(r, m)) m = r;
        if (m === i) break;
        this.swap(i, m); i = m;
      }
    }
    return top;
  }

  /** objects queued, in no particular order */
  at(i: number): number { return this.n[i]!; }
}
