/**
 * Progress lines in git's words and rhythm (progress.c at v2.55), for the
 * native producer's band-2 output: "Enumerating objects: 12, done.",
 * "Counting objects: 100% (5/5), done.", "Compressing objects: …", and
 * pack-objects' closing "Total …" line.
 *
 * progress.c shows a meter again when its percentage changes or when its
 * one-second timer has fired (a count without a total shows only on the
 * timer); each update ends in "\r", the last in ", done.\n". A counter
 * that got shorter is padded with spaces over the old one. Lines longer
 * than the terminal are split in git; pack-objects' stderr is a pipe, so
 * its width is the default 80 columns, which no title here reaches.
 */

/** How often a meter may update without a change of percentage (progress.c's timer). */
export const PROGRESS_INTERVAL_MS = 1000;
/** term_columns() when stderr is not a terminal and COLUMNS is unset */
const COLUMNS = 80;

export class ProgressMeter {
  private lastPercent = -1;
  private lastValue = -1;
  private counters = '';
  private split = false;
  private nextUpdate: number;

  /**
   * @param title as git names it ("Counting objects")
   * @param total 0 for a count without a total
   * @param emit where the text goes (band 2)
   * @param now the clock (tests)
   */
  constructor(readonly title: string, readonly total: number, private readonly emit: (text: string) => void, private readonly now: () => number = Date.now) {
    this.nextUpdate = now() + PROGRESS_INTERVAL_MS;
  }

  /** display_progress(): the meter at `n`, shown when git would show it. */
  display(n: number): void {
    let update = false;
    const t = this.now();
    if (t >= this.nextUpdate) { update = true; this.nextUpdate = t + PROGRESS_INTERVAL_MS; }
    this.show(n, update, undefined);
  }

  /** stop_progress(): the last state with ", done." (nothing when the meter never showed a value). */
  stop(msg = 'done'): void {
    if (this.lastValue === -1) return;
    this.show(this.lastValue, true, `, ${msg}.\n`);
  }

  private show(n: number, update: boolean, done: string | undefined): void {
    const last = this.counters.length;
    this.lastValue = n;
    let changed = false;
    if (this.total) {
      const percent = Math.floor((n * 100) / this.total);
      if (percent !== this.lastPercent || update) {
        this.lastPercent = percent;
        this.counters = `${String(percent).padStart(3)}% (${n}/${this.total})`;
        changed = true;
      }
    } else if (update) {
      this.counters = String(n);
      changed = true;
    }
    if (!changed) return;
    const eol = done ?? '\r';
    const clear = this.counters.length < last ? last - this.counters.length + 1 : 0;
    const pad = (k: number) => ' '.repeat(k);
    const lineLen = this.title.length + this.counters.length + 2;
    if (this.split) {
      this.emit(`  ${this.counters}${pad(Math.max(0, clear - eol.length))}${eol}`);
    } else if (!done && COLUMNS < lineLen) {
      const c = this.title.length + 1 < COLUMNS ? COLUMNS - this.title.length - 1 : 0;
      this.emit(`${this.title}:${pad(c)}\n  ${this.counters}${eol}`);
      this.split = true;
    } else {
      this.emit(`${this.title}: ${this.counters}${pad(Math.max(0, clear - eol.length))}${eol}`);
    }
  }
}

/** What pack-objects counts while writing, for its closing line. */
export interface PackWriteCounts {
  /** objects written */
  written: number;
  /** of those, deltas */
  writtenDelta: number;
  /** objects whose compressed entry was reused one by one */
  reused: number;
  /** of those, deltas */
  reusedDelta: number;
  /** objects sent by pack reuse (runs of a pack sent as they are) */
  packReused: number;
  /** packs they came from */
  packsReused: number;
}

/** pack-objects' last line (v2.55): "Total N (delta D), reused R (delta RD), pack-reused P (from K)". */
export function totalLine(c: PackWriteCounts): string {
  return `Total ${c.written} (delta ${c.writtenDelta}), reused ${c.reused} (delta ${c.reusedDelta}), pack-reused ${c.packReused} (from ${c.packsReused})\n`;
}
