/**
 * Fetch negotiation: recording the client's haves and deciding when we
 * have enough in common to give up (git's ok_to_give_up).
 *
 * ok_to_give_up is asked after every have the server lacks (v0
 * multi_ack) and once per v2 round. git re-walks from the wants each time;
 * here the walk's findings are kept for the rest of the request, because
 * they only change one way: a commit that reaches a have keeps reaching one
 * as more haves arrive. "Reaches a have" marks are kept forever; "does not"
 * marks are kept until a new have lands inside the region they cover, or an
 * older have widens the walk. A run of haves we do not know, or of haves
 * outside the explored region, costs no walk at all. The walks that remain
 * yield the event loop every few milliseconds and share a per-request
 * budget (limits.ts); past it the answer is "not ready yet", which is always
 * correct.
 */
import { ObjType } from '../repo/object-type.js';
import { Slicer, TimeBudget } from '../util/budget.js';
import { resolveLimits, type Limits } from './limits.js';
import { Flag, type UploadPackSession } from './session.js';

interface NegotiationState {
  /** the request this state belongs to (v2 resets `haves` per request) */
  haves: Buffer[];
  limits: Limits;
  slicer: Slicer;
  budget: TimeBudget;
  /** commits known to reach a have (git's RESULT), kept for the request */
  good: Set<string>;
  /** commits known not to reach a have under the current haves and date */
  notGood: Set<string>;
  /** every commit the walks looked at since notGood was last cleared */
  explored: Set<string>;
  /** oldest_have when notGood was computed */
  minDate: number;
  /** last answer, and whether anything changed since */
  cached?: boolean;
  dirty: boolean;
}

const states = new WeakMap<UploadPackSession, NegotiationState>();

export function negotiationState(s: UploadPackSession): NegotiationState {
  let st = states.get(s);
  if (!st || st.haves !== s.haves) {
    const limits = resolveLimits((s.opts as { limits?: Partial<Limits> }).limits);
    st = {
      haves: s.haves, limits, slicer: st?.slicer ?? new Slicer(limits.sliceMs), budget: new TimeBudget(limits.negotiationBudgetMs),
      good: new Set(), notGood: new Set(), explored: new Set(), minDate: 0, dirty: true,
    };
    states.set(s, st);
  }
  return st;
}

/** The request's slicer: long loops over client input tick it (see util/budget.ts). */
export function slicerOf(s: UploadPackSession): Slicer { return negotiationState(s).slicer; }

/** A commit was newly marked THEY_HAVE: forget "does not reach" verdicts it could overturn. */
function theyHaveAdded(st: NegotiationState, k: string): void {
  st.dirty = true;
  if (st.explored.has(k)) { st.notGood.clear(); st.explored.clear(); }
}

/**
 * got_oid() (git 2.55's do_got_oid): -1 when we do not have the object,
 * 1 when it is a new have, 0 when we already knew they have it. Any object
 * may be a have: the second time it is named, it is known.
 */
export function gotHave(s: UploadPackSession, oid: Buffer): -1 | 0 | 1 {
  const info = s.repo.odb.info(oid);
  if (!info) return -1;
  const st = negotiationState(s);
  if (info.type === ObjType.Commit) {
    const c = s.repo.commit(oid);
    if (c) {
      if (!s.oldestHave || c.time < s.oldestHave) { s.oldestHave = c.time; st.dirty = true; }
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
 * COMMON_KNOWN, oldest_have). Same answers as git's walk; see the file
 * comment for what is remembered between calls.
 */
export async function okToGiveUp(s: UploadPackSession): Promise<boolean> {
  if (s.haves.length === 0) return false;
  const st = negotiationState(s);
  if (!st.dirty && st.cached !== undefined) return st.cached;
  if (st.cached === true) return true; // monotone: once every want reaches a have, it stays so
  if (st.budget.exhausted) return false;
  if (s.oldestHave < st.minDate || st.minDate === 0) { st.notGood.clear(); st.explored.clear(); }
  st.minDate = s.oldestHave;
  const stop = st.budget.start();
  try {
    const r = await walk(s, st);
    if (r !== undefined) { st.cached = r; st.dirty = false; }
    return r ?? false;
  } finally {
    stop();
  }
}

/** undefined: the budget ran out mid-walk (the answer is "not yet", and nothing is cached) */
async function walk(s: UploadPackSession, st: NegotiationState): Promise<boolean | undefined> {
  const minDate = s.oldestHave;
  const { good, notGood, explored, slicer } = st;
  const flags = s.flags;
  const isGood = (k: string) => good.has(k) || ((flags.get(k) ?? 0) & Flag.TheyHave) !== 0;
  const visited = new Set<string>();
  for (const w of s.wants) {
    if (s.get(w) & Flag.CommonKnown) continue;
    const d = derefTag(s, w);
    if (!d || d.type !== ObjType.Commit) { s.set(w, Flag.CommonKnown); continue; }
    if (!s.repo.commit(d.oid)) return false;
    const root = s.key(d.oid);
    if (isGood(root)) continue;
    if (notGood.has(root)) return false;
    visited.add(root);
    explored.add(root);
    // DFS; each frame resumes at its next parent
    const stack: Array<{ oid: Buffer; k: string; i: number }> = [{ oid: d.oid, k: root, i: 0 }];
    while (stack.length) {
      const p0 = slicer.tick();
      if (p0) {
        await p0;
        if (st.budget.exhausted) return undefined;
      }
      const top = stack[stack.length - 1]!;
      if (isGood(top.k)) {
        stack.pop();
        if (stack.length) good.add(stack[stack.length - 1]!.k);
        continue;
      }
      const parents = s.repo.commit(top.oid)?.parents ?? [];
      let pushed = false;
      while (top.i < parents.length) {
        const p = parents[top.i++]!;
        const pk = s.key(p);
        explored.add(pk);
        if (isGood(pk)) { good.add(top.k); break; }
        if (visited.has(pk) || notGood.has(pk)) continue;
        visited.add(pk);
        const pc = s.repo.commit(p);
        if (!pc || pc.time < minDate) continue;
        stack.push({ oid: p, k: pk, i: 0 });
        pushed = true;
        break;
      }
      if (pushed) continue;
      if (good.has(top.k)) continue; // popped as good on the next turn
      stack.pop();
      notGood.add(top.k);
    }
    if (!isGood(root)) return false;
  }
  return true;
}
