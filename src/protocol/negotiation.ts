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
 * - GOOD: commits that reach a have (git's RESULT), kept for the request;
 * - VISITED: commits a walk has taken (finished ones that are not GOOD
 *   reach no have);
 * - the reverse edges walked, so a new have inside the walked region marks
 *   everything above it good at once;
 * - `pruned`: the parents left out for being older than the oldest have;
 *   when an older have arrives, only those now in range are walked.
 *
 * The answers equal git's (the tests compare byte for byte). What walking
 * remains yields the event loop every few milliseconds and has a
 * per-request budget (limits.ts); past the budget the answer is "not ready
 * yet", which is always a correct reply.
 *
 * The walk names commits by small integers (`WalkIds`): commit-graph
 * positions where the graph has the commit, whose parents and dates it
 * reads straight from the graph, and ids of its own after those. Its
 * state is typed arrays indexed by them, so a walk over a long history
 * allocates no objects or strings per commit.
 */
import { ObjType } from '../repo/object-type.js';
import { GraphCorrupt, type CommitGraph } from '../repo/commit-graph.js';
import type { Repository } from '../repo/repository.js';
import { Slicer, TimeBudget } from '../util/budget.js';
import { resolveLimits, type Limits } from './limits.js';
import { Flag, type UploadPackSession } from './session.js';

/**
 * Ids for the commits one request's walk meets. Graph positions come
 * first (0 … count-1); a commit the graph lacks (or whose graph entry is
 * corrupt) gets the next id after them and is read as an object, as
 * Repository.commit would. Every id names one commit: an id is looked up
 * in the graph before one of its own is made.
 */
class WalkIds {
  private readonly graph: CommitGraph | undefined;
  private readonly base: number;
  private readonly own = new Map<string, number>();
  private readonly ownOids: Buffer[] = [];
  /** parents and date of commits read as objects (and of corrupt graph entries), by id; null: not readable */
  private readonly read = new Map<number, { parents: number[]; time: number } | null>();

  constructor(private readonly repo: Repository) {
    this.graph = repo.odb.commitGraph;
    this.base = this.graph?.count ?? 0;
  }

  /** ids below this are graph positions */
  get graphCount(): number { return this.base; }
  /** one past the largest id handed out */
  get size(): number { return this.base + this.ownOids.length; }

  id(oid: Buffer): number {
    const g = this.graph;
    if (g) { const p = g.find(oid); if (p >= 0) return p; }
    const k = oid.toString('latin1');
    let id = this.own.get(k);
    if (id === undefined) { id = this.base + this.ownOids.length; this.own.set(k, id); this.ownOids.push(oid); }
    return id;
  }

  oid(id: number): Buffer { return id < this.base ? this.graph!.oidAt(id) : this.ownOids[id - this.base]!; }

  /** The commit as an object (also for a corrupt graph entry): parents as ids, or null when it cannot be read. */
  private object(id: number): { parents: number[]; time: number } | null {
    let r = this.read.get(id);
    if (r !== undefined) return r;
    const c = this.repo.commit(this.oid(id));
    r = c ? { parents: c.parents.map((p) => this.id(p)), time: c.time } : null;
    this.read.set(id, r);
    return r;
  }

  /** The committer date, or undefined when the commit cannot be read. */
  time(id: number): number | undefined {
    if (id < this.base && !this.read.has(id)) {
      try { return this.graph!.timeAt(id); } catch (e) { if (!(e instanceof GraphCorrupt)) throw e; }
    }
    return this.object(id)?.time;
  }

  /** Parent ids into out[0], out[1], …; returns how many (an unreadable commit has none). */
  parents(id: number, out: number[]): number {
    if (id < this.base && !this.read.has(id)) {
      try { return this.graph!.parentsAt(id, out); } catch (e) { if (!(e instanceof GraphCorrupt)) throw e; }
    }
    const r = this.object(id);
    if (!r) return 0;
    for (let i = 0; i < r.parents.length; i++) out[i] = r.parents[i]!;
    return r.parents.length;
  }
}

/** Per-id marks of the walk. */
const GOOD = 1, VISITED = 2, THEY_HAVE = 4;

/** Growable id-indexed storage: marks, and reverse edges as linked lists. */
class WalkMarks {
  marks: Uint8Array;
  /** first edge of each id's list of children, -1 for none */
  head: Int32Array;
  /** per edge: the child, and the next edge of the same parent */
  private child = new Int32Array(1024);
  private next = new Int32Array(1024);
  private edges = 0;

  constructor(n: number) {
    this.marks = new Uint8Array(n + 64);
    this.head = new Int32Array(n + 64).fill(-1);
  }

  /** make room for ids below n */
  fit(n: number): void {
    if (n <= this.marks.length) return;
    const len = Math.max(n, this.marks.length * 2);
    const m = new Uint8Array(len); m.set(this.marks); this.marks = m;
    const h = new Int32Array(len).fill(-1); h.set(this.head); this.head = h;
  }

  addChild(parent: number, child: number): void {
    if (this.edges === this.child.length) {
      const c = new Int32Array(this.edges * 2); c.set(this.child); this.child = c;
      const x = new Int32Array(this.edges * 2); x.set(this.next); this.next = x;
    }
    this.child[this.edges] = child;
    this.next[this.edges] = this.head[parent]!;
    this.head[parent] = this.edges++;
  }

  /** children of `parent`, through `each` */
  forChildren(parent: number, each: (c: number) => void): void {
    for (let e = this.head[parent]!; e >= 0; e = this.next[e]!) each(this.child[e]!);
  }
}

/** A max-heap of pruned parents (ids) by commit date. */
class PrunedHeap {
  private ids: number[] = [];
  private times: number[] = [];
  get size(): number { return this.ids.length; }
  peekTime(): number { return this.ids.length ? this.times[0]! : -Infinity; }
  push(id: number, time: number): void {
    const ids = this.ids, t = this.times;
    let i = ids.length;
    ids.push(id); t.push(time);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (t[p]! >= time) break;
      ids[i] = ids[p]!; t[i] = t[p]!;
      i = p;
    }
    ids[i] = id; t[i] = time;
  }
  pop(): number | undefined {
    const ids = this.ids, t = this.times;
    if (!ids.length) return undefined;
    const top = ids[0]!;
    const lastId = ids.pop()!, lastT = t.pop()!;
    const n = ids.length;
    if (n) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i, mt = lastT;
        if (l < n && t[l]! > mt) { m = l; mt = t[l]!; }
        if (r < n && t[r]! > mt) m = r;
        if (m === i) break;
        ids[i] = ids[m]!; t[i] = t[m]!;
        i = m;
      }
      ids[i] = lastId; t[i] = lastT;
    }
    return top;
  }
}

interface WalkState {
  ids: WalkIds;
  /** GOOD: reaches a have (git's RESULT); VISITED: pushed on a walk's stack; THEY_HAVE: the flag, by id */
  marks: WalkMarks;
}

interface NegotiationState {
  /** the request this state belongs to (v2 resets `haves` per request) */
  haves: Buffer[];
  limits: Limits;
  slicer: Slicer;
  budget: TimeBudget;
  /** made when the request first has a have or a walk (opening the commit-graph): other commands share the slicer only */
  walk: WalkState | undefined;
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
      walk: undefined, pruned: new PrunedHeap(), minDate: 0, ready: false,
    };
    states.set(s, st);
  }
  return st;
}

/** The walk's ids and marks, made on first use. */
function walkState(s: UploadPackSession, st: NegotiationState): WalkState {
  if (st.walk) return st.walk;
  const ids = new WalkIds(s.repo);
  const w: WalkState = { ids, marks: new WalkMarks(ids.graphCount) };
  st.walk = w;
  // (a session's flags are its request's, so this finds nothing unless a state is remade mid-request)
  for (const [k, f] of s.flags) if (f & Flag.TheyHave) markTheyHave(w, Buffer.from(k, 'latin1'));
  return w;
}

/** The request's slicer: long loops over client input tick it (see util/budget.ts). */
export function slicerOf(s: UploadPackSession): Slicer { return negotiationState(s).slicer; }

/** `k` reaches a have: so does everything walked above it. */
function markGood(st: WalkState, k: number): void {
  const m = st.marks;
  if (m.marks[k]! & GOOD) return;
  const stack = [k];
  m.marks[k]! |= GOOD;
  const up = (c: number) => {
    if (m.marks[c]! & GOOD) return;
    m.marks[c]! |= GOOD;
    stack.push(c);
  };
  while (stack.length) m.forChildren(stack.pop()!, up);
}

/** An object was newly marked THEY_HAVE: everything walked above it now reaches a have. */
function markTheyHave(st: WalkState, oid: Buffer): void {
  const k = st.ids.id(oid);
  st.marks.fit(st.ids.size);
  st.marks.marks[k]! |= THEY_HAVE;
  st.marks.forChildren(k, (c) => markGood(st, c));
}

/**
 * got_oid() (git 2.55's do_got_oid): -1 when we do not have the object,
 * 1 when it is a new have, 0 when we already knew they have it. Any object
 * may be a have: the second time it is named, it is known.
 */
export function gotHave(s: UploadPackSession, oid: Buffer): -1 | 0 | 1 {
  const info = s.repo.odb.info(oid, { quick: true }); // OBJECT_INFO_QUICK: an unknown have never rescans objects/pack
  if (!info) return -1;
  const st = walkState(s, negotiationState(s));
  if (info.type === ObjType.Commit) {
    const c = s.repo.commit(oid);
    if (c) {
      if (!s.oldestHave || c.time < s.oldestHave) s.oldestHave = c.time;
      for (const p of c.parents) {
        if (!(s.get(p) & Flag.TheyHave)) { s.set(p, Flag.TheyHave); markTheyHave(st, p); }
      }
    }
  }
  if (s.get(oid) & Flag.TheyHave) return 0;
  s.set(oid, Flag.TheyHave);
  markTheyHave(st, oid);
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
  const ws = walkState(s, st);
  const { ids, marks: m } = ws;
  const isGood = (k: number) => (m.marks[k]! & (GOOD | THEY_HAVE)) !== 0;
  const minDate = s.oldestHave;
  st.minDate = minDate;
  const parents: number[] = [];

  /** depth-first from `start`, registering reverse edges; false when the budget ran out */
  const dfs = async (start: number): Promise<boolean> => {
    m.marks[start]! |= VISITED;
    // the stack as two arrays: a commit, and how many of its parents were looked at
    const stack = [start], next = [0];
    while (stack.length) {
      const tick = st.slicer.tick();
      if (tick) {
        await tick;
        if (st.budget.exhausted) return false;
      }
      const depth = stack.length - 1;
      const top = stack[depth]!;
      if (isGood(top)) { stack.pop(); next.pop(); continue; }
      const np = ids.parents(top, parents);
      m.fit(ids.size);
      let pushed = false;
      while (next[depth]! < np) {
        const p = parents[next[depth]!++]!;
        m.addChild(p, top);
        if (isGood(p)) { markGood(ws, top); break; }
        if (m.marks[p]! & VISITED) continue; // finished without reaching a have
        const time = ids.time(p);
        if (time === undefined) continue;
        if (time < minDate) { st.pruned.push(p, time); continue; }
        m.marks[p]! |= VISITED;
        stack.push(p); next.push(0);
        pushed = true;
        break;
      }
      if (pushed) continue;
      stack.pop(); next.pop();
    }
    return true;
  };

  // an older have brought pruned parents into range: walk just those
  while (st.pruned.size && st.pruned.peekTime() >= minDate) {
    const p = st.pruned.pop()!;
    if ((m.marks[p]! & VISITED) || isGood(p)) continue;
    if (!(await dfs(p))) return undefined;
    if (isGood(p)) markGood(ws, p);
  }

  for (const w of s.wants) {
    if (s.get(w) & Flag.CommonKnown) continue;
    const d = derefTag(s, w);
    if (!d || d.type !== ObjType.Commit) { s.set(w, Flag.CommonKnown); continue; }
    if (!s.repo.commit(d.oid)) return false;
    const root = ids.id(d.oid);
    m.fit(ids.size);
    if (isGood(root)) continue;
    if (m.marks[root]! & VISITED) return false;
    if (!(await dfs(root))) return undefined;
    if (!isGood(root)) return false;
  }
  return true;
}
