/**
 * Fetch negotiation: recording the client's haves and deciding when we
 * have enough in common to give up (git's ok_to_give_up).
 *
 * ok_to_give_up is asked after every have the server lacks (v0
 * multi_ack) and once per v2 round. git walks again from the wants each
 * time. Here the walk is incremental over the whole request, so no commit
 * is walked twice: the answer ("every want reaches a have through commits
 * no older than the oldest have") only changes one way as haves arrive,
 * and the state keeps what the earlier walks learnt:
 *
 * - `good`: commits that reach a have (git's RESULT), kept for the request;
 * - `notGood`: commits walked completely without reaching one;
 * - `children`: the reverse edges walked, so a new have inside the walked
 *   region marks everything above it good at once;
 * - `pruned`: the parents left out for being older than the oldest have;
 *   when an older have arrives, only those now in range are walked.
 *
 * The answers equal git's (the tests compare byte for byte). What walking
 * remains yields the event loop every few milliseconds and has a
 * per-request budget (limits.ts); past the budget the answer is "not ready
 * yet", which is always a correct reply.
 */
import { ObjType } from '../repo/object-type.js';
import { Slicer, TimeBudget } from '../util/budget.js';
import { resolveLimits, type Limits } from './limits.js';
import { Flag, type UploadPackSession } from './session.js';

/** A max-heap of pruned parents by commit date. */
class PrunedHeap {
  private a: Array<{ oid: Buffer; k: string; time: number }> = [];
  get size(): number { return this.a.length; }
  peekTime(): number { return this.a.length ? this.a[0]!.time : -Infinity; }
  push(x: { oid: Buffer; k: string; time: number }): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]!.time >= a[i]!.time) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): { oid: Buffer; k: string; time: number } | undefined {
    const a = this.a;
    if (!a.length) return undefined;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && a[l]!.time > a[m]!.time) m = l;
        if (r < a.length && a[r]!.time > a[m]!.time) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

interface NegotiationState {
  /** the request this state belongs to (v2 resets `haves` per request) */
  haves: Buffer[];
  limits: Limits;
  slicer: Slicer;
  budget: TimeBudget;
  good: Set<string>;
  notGood: Set<string>;
  /** commits walked (pushed on a walk's stack) */
  visited: Set<string>;
  /** reverse edges of the walked region: parent → children that looked at it */
  children: Map<string, string[]>;
  pruned: PrunedHeap;
  /** the oldest have's date the walked region was computed for */
  minDate: number;
  /** every want reaches a have: stays true for the request */
  ready: boolean;
}

const states = new WeakMap<UploadPackSession, NegotiationState>();

export function negotiationState(s: UploadPackSession): NegotiationState {
  let st = states.get(s);
  if (!st || st.haves !== s.haves) {
    const limits = resolveLimits(s.opts.limits);
    st = {
      haves: s.haves, limits, slicer: st?.slicer ?? new Slicer(limits.sliceMs), budget: new TimeBudget(limits.negotiationBudgetMs),
      good: new Set(), notGood: new Set(), visited: new Set(), children: new Map(), pruned: new PrunedHeap(), minDate: 0, ready: false,
    };
    states.set(s, st);
  }
  return st;
}

/** The request's slicer: long loops over client input tick it (see util/budget.ts). */
export function slicerOf(s: UploadPackSession): Slicer { return negotiationState(s).slicer; }

/** `k` reaches a have: so does everything walked above it. */
function markGood(st: NegotiationState, k: string): void {
  if (st.good.has(k)) return;
  const stack = [k];
  st.good.add(k);
  while (stack.length) {
    const x = stack.pop()!;
    st.notGood.delete(x);
    for (const c of st.children.get(x) ?? []) {
      if (st.good.has(c)) continue;
      st.good.add(c);
      stack.push(c);
    }
  }
}

/** A commit was newly marked THEY_HAVE: everything walked above it now reaches a have. */
function theyHaveAdded(st: NegotiationState, k: string): void {
  if (st.children.has(k) || st.visited.has(k)) {
    for (const c of st.children.get(k) ?? []) markGood(st, c);
  }
}

/**
 * got_oid() (git 2.55's do_got_oid): -1 when we do not have the object,
 * 1 when it is a new have, 0 when we already knew they have it. Any object
 * may be a have: the second time it is named, it is known.
 */
export function gotHave(s: UploadPackSession, oid: Buffer): -1 | 0 | 1 {
  const info = s.repo.odb.info(oid, { quick: true }); // OBJECT_INFO_QUICK: an unknown have never rescans objects/pack
  if (!info) return -1;
  const st = negotiationState(s);
  if (info.type === ObjType.Commit) {
    const c = s.repo.commit(oid);
    if (c) {
      if (!s.oldestHave || c.time < s.oldestHave) s.oldestHave = c.time;
      for (const p of c.parents) {
        const pk = s.key(p);
        if (!((s.flags.get(pk) ?? 0) & Flag.TheyHave)) { s.set(p, Flag.TheyHave); theyHaveAdded(st, pk); }
      }
    }
  }
  if (s.get(oid) & Flag.TheyHave) return 0;
  s.set(oid, Flag.TheyHave);
  theyHaveAdded(st, s.key(oid));
  s.haves.push(oid);
  return 1;
}

/** Peel tags to the object they point at (deref_tag). */
export function derefTag(s: UploadPackSession, oid: Buffer): { oid: Buffer; type: ObjType } | undefined {
  let cur = oid;
  for (let i = 0; i < 100; i++) {
    const info = s.repo.odb.info(cur);
    if (!info) return undefined;
    if (info.type !== ObjType.Tag) return { oid: cur, type: info.type };
    const peeled = s.repo.peel(cur);
    if (!peeled) return undefined;
    cur = peeled;
  }
  return undefined;
}

/**
 * ok_to_give_up(): can_all_from_reach_with_flag(wants, THEY_HAVE,
 * COMMON_KNOWN, oldest_have), answered from the incremental walk.
 */
export async function okToGiveUp(s: UploadPackSession): Promise<boolean> {
  if (s.haves.length === 0) return false;
  const st = negotiationState(s);
  if (st.ready) return true;
  if (st.budget.exhausted) return false;
  const stop = st.budget.start();
  try {
    const r = await walk(s, st);
    if (r === true) st.ready = true;
    return r === true;
  } finally {
    stop();
  }
}

/** undefined: the budget ran out (nothing more is walked for this request) */
async function walk(s: UploadPackSession, st: NegotiationState): Promise<boolean | undefined> {
  const flags = s.flags;
  const isGood = (k: string) => st.good.has(k) || ((flags.get(k) ?? 0) & Flag.TheyHave) !== 0;
  const minDate = s.oldestHave;
  st.minDate = minDate;

  /** depth-first from `start`, registering reverse edges; false when the budget ran out */
  const dfs = async (start: Buffer, startKey: string): Promise<boolean> => {
    st.visited.add(startKey);
    const stack: Array<{ oid: Buffer; k: string; i: number }> = [{ oid: start, k: startKey, i: 0 }];
    while (stack.length) {
      const tick = st.slicer.tick();
      if (tick) {
        await tick;
        if (st.budget.exhausted) return false;
      }
      const top = stack[stack.length - 1]!;
      if (isGood(top.k)) { stack.pop(); continue; }
      const parents = s.repo.commit(top.oid)?.parents ?? [];
      let pushed = false;
      while (top.i < parents.length) {
        const p = parents[top.i++]!;
        const pk = s.key(p);
        const ch = st.children.get(pk);
        if (ch) ch.push(top.k); else st.children.set(pk, [top.k]);
        if (isGood(pk)) { markGood(st, top.k); break; }
        if (st.visited.has(pk)) continue; // finished without reaching a have
        const pc = s.repo.commit(p);
        if (!pc) continue;
        if (pc.time < minDate) { st.pruned.push({ oid: p, k: pk, time: pc.time }); continue; }
        st.visited.add(pk);
        stack.push({ oid: p, k: pk, i: 0 });
        pushed = true;
        break;
      }
      if (pushed) continue;
      if (isGood(top.k)) { stack.pop(); continue; }
      stack.pop();
      st.notGood.add(top.k);
    }
    return true;
  };

  // an older have brought pruned parents into range: walk just those
  while (st.pruned.size && st.pruned.peekTime() >= minDate) {
    const p = st.pruned.pop()!;
    if (st.visited.has(p.k) || isGood(p.k)) continue;
    if (!(await dfs(p.oid, p.k))) return undefined;
    if (isGood(p.k)) markGood(st, p.k);
  }

  for (const w of s.wants) {
    if (s.get(w) & Flag.CommonKnown) continue;
    const d = derefTag(s, w);
    if (!d || d.type !== ObjType.Commit) { s.set(w, Flag.CommonKnown); continue; }
    if (!s.repo.commit(d.oid)) return false;
    const root = s.key(d.oid);
    if (isGood(root)) continue;
    if (st.visited.has(root)) return false;
    if (!(await dfs(d.oid, root))) return undefined;
    if (!isGood(root)) return false;
  }
  return true;
}
