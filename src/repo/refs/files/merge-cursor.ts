/** The files backend's merge of loose and packed refs. */
import { EMPTY, NO_REFS, cmpName, upperBound, type Ref, type RefCursor } from '../ref.js';
import type { LooseEntry } from './loose.js';
import type { PackedRefs } from './packed.js';

/** Loose and packed refs of each prefix merged in name order, a loose ref shadowing its packed namesake. */
export class MergeCursor implements RefCursor {
  private pi = -1;
  private loose: LooseEntry[] = [];
  private li = 0;
  private packedRefs: RefCursor = NO_REFS;
  /** the packed ref read and not yet handed over */
  private pr: Ref | undefined;
  private fresh = false;
  /** the current prefix and the name above its range (undefined: none) */
  private lo: Buffer = EMPTY;
  private hi: Buffer | undefined;
  /** refs read and prefixes sought so far (what a scan's pause is paced by) */
  work = 0;
  /** every ref handed over (next() also answers undefined when paced and the work is due a pause) */
  done = false;
  private pace = 0;
  private stopAt = Infinity;

  /** Make next() come back (with undefined, not done) after every `n` units of work, even with no ref found. */
  pacedBy(n: number): void { this.pace = n; this.stopAt = this.work + n; }

  constructor(
    private readonly prefixes: Buffer[],
    private readonly lists: LooseEntry[][],
    private readonly packed: PackedRefs | undefined,
    private readonly reuse: boolean,
    private readonly looseRef: (l: LooseEntry) => Ref | undefined,
    private readonly mem?: Buffer,
    /** one cursor over the span of every prefix, its refs outside them skipped */
    private readonly onePass = false,
  ) {}

  next(): Ref | undefined {
    for (;;) {
      if (this.work >= this.stopAt) { this.stopAt = this.work + this.pace; return undefined; }
      if (!this.fresh) { this.pr = this.packedRefs.next(); this.fresh = true; this.work++; }
      let pr = this.pr;
      if (pr && this.onePass) {
        // below the current prefix: skipped; at or above its end: kept for a later prefix
        if (cmpName(pr, this.lo) < 0) { this.fresh = false; continue; }
        if (this.hi && cmpName(pr, this.hi) >= 0) pr = undefined;
      }
      const l = this.loose[this.li];
      if (l === undefined) {
        if (pr) { this.fresh = false; return pr; }
        if (!this.advance()) { this.done = true; return undefined; }
        continue;
      }
      if (pr) {
        const c = pr.buf.compare(l.name, 0, l.name.length, pr.nameAt, pr.nameEnd);
        if (c < 0) { this.fresh = false; return pr; }
        if (c === 0) this.fresh = false; // shadowed by the loose ref
      }
      this.li++;
      const r = this.looseRef(l);
      if (r) return r;
    }
  }

  private advance(): boolean {
    if (++this.pi >= this.prefixes.length) return false;
    const p = this.prefixes[this.pi]!;
    this.loose = this.lists[this.pi]!;
    this.li = 0;
    this.lo = p;
    this.hi = upperBound(p);
    if (this.onePass) {
      if (this.pi === 0 && this.packed) {
        const end = upperBound(this.prefixes[this.prefixes.length - 1]!);
        this.packedRefs = this.packed.cursor(p.length ? p : undefined, end, this.reuse, this.mem);
        this.fresh = false;
      }
      this.work++;
      return true;
    }
    this.packedRefs = this.packed ? this.packed.cursor(p.length ? p : undefined, this.hi, this.reuse, this.mem) : NO_REFS;
    this.fresh = false;
    this.work += 32;
    return true;
  }
}
