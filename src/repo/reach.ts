/**
 * Commit reachability as git's in_merge_bases answers it: "is `ancestor`
 * reachable from `tip`?" by painting down from both commits in committer-date
 * order (git's paint_down_to_common). The walk stops once every commit still
 * queued is reachable from both sides, so a force push over a long history
 * costs the walk down to the merge base, not the whole history; it yields to
 * the event loop on a time slice.
 */
import { Slicer } from '../util/budget.js';
import type { Commit } from './objects.js';

/** What the walk needs of a repository. */
export interface CommitSource { commit(oid: Buffer): Commit | undefined }

const FROM_ANCESTOR = 1, FROM_TIP = 2, STALE = 4;

interface Entry { key: string; oid: Buffer; time: number; seq: number }

/** A max-heap on committer time; equal times come out in insertion order (git's prio_queue, commit_list_insert_by_date). */
export class DateQueue {
  private a: Entry[] = [];
  private seq = 0;
  get size(): number { return this.a.length; }
  private before(x: Entry, y: Entry): boolean { return x.time > y.time || (x.time === y.time && x.seq < y.seq); }
  push(key: string, oid: Buffer, time: number): void {
    const a = this.a;
    const e: Entry = { key, oid, time, seq: this.seq++ };
    let i = a.push(e) - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(e, a[p]!)) break;
      a[i] = a[p]!; i = p;
    }
    a[i] = e;
  }
  pop(): Entry | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (!top || !last || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      let best = last;
      if (l < a.length && this.before(a[l]!, best)) { m = l; best = a[l]!; }
      if (r < a.length && this.before(a[r]!, best)) { m = r; }
      if (m === i) break;
      a[i] = a[m]!; i = m;
    }
    a[i] = last;
    return top;
  }
}

/**
 * Is `ancestor` reachable from `tip` through parent links (or the same
 * commit)? A commit that cannot be read ends its line of the walk, as a
 * missing parent does in git.
 */
export async function isAncestor(repo: CommitSource, ancestor: Buffer, tip: Buffer, slicer = new Slicer()): Promise<boolean> {
  if (ancestor.equals(tip)) return true;
  const target = ancestor.toString('latin1');
  const color = new Map<string, number>();
  const queued = new Map<string, number>();
  const live = new Set<string>(); // queued and not yet stale
  const q = new DateQueue();
  const put = (key: string, oid: Buffer, flags: number): boolean => {
    const c = repo.commit(oid);
    if (!c) return false;
    color.set(key, flags);
    queued.set(key, (queued.get(key) ?? 0) + 1);
    if (flags & STALE) live.delete(key); else live.add(key);
    q.push(key, oid, c.time);
    return true;
  };
  if (!put(target, ancestor, FROM_ANCESTOR)) return false;
  if (!put(tip.toString('latin1'), tip, FROM_TIP)) return false;
  while (live.size > 0) {
    const p = slicer.tick();
    if (p) await p;
    const e = q.pop()!;
    const left = queued.get(e.key)! - 1;
    if (left) queued.set(e.key, left); else { queued.delete(e.key); live.delete(e.key); }
    let flags = color.get(e.key)! & (FROM_ANCESTOR | FROM_TIP | STALE);
    if ((flags & (FROM_ANCESTOR | FROM_TIP)) === (FROM_ANCESTOR | FROM_TIP)) flags |= STALE;
    const commit = repo.commit(e.oid)!;
    for (const parent of commit.parents) {
      const k = parent.toString('latin1');
      const had = color.get(k) ?? 0;
      if ((had & flags) === flags) continue;
      if ((flags & FROM_TIP) && k === target) return true;
      put(k, parent, had | flags);
    }
  }
  return ((color.get(target) ?? 0) & FROM_TIP) !== 0;
}
