/**
 * Shallow clones: the client's shallow list, deepen by depth, by date and
 * by excluded refs, unshallowing, and the shallow lines sent back.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { protocolError } from '../errors.js';
import { isHex, parseHex, rawFromHexBytes, toHex } from '../repo/oid.js';
import { ObjType } from '../repo/object-type.js';
import { DateQueue } from '../repo/reach.js';
import { derefTag, slicerOf } from './negotiation.js';
import { Flag, INFINITE_DEPTH, type UploadPackSession } from './session.js';

/**
 * The repository's own shallow grafts (its `shallow` file). Most
 * repositories have none: a stat that cannot throw says so, where a read's
 * ENOENT made an error with its stack on every fetch.
 */
export function repoShallow(s: UploadPackSession): Set<string> {
  const out = new Set<string>();
  const path = join(s.repo.gitDir, 'shallow');
  let text = '';
  try {
    if (!statSync(path, { throwIfNoEntry: false })) return out;
    text = readFileSync(path, 'latin1');
  } catch { return out; }
  for (const l of text.split('\n')) if (isHex(l, s.repo.hexLen, true)) out.add(s.key(parseHex(l)));
  return out;
}

/** `shallow <oid>` from the client (process_shallow): commits we lack are ignored. */
export function addClientShallow(s: UploadPackSession, hex: string, line: string): void {
  if (!isHex(hex, s.repo.hexLen)) throw protocolError(`invalid shallow line: ${line}`);
  const oid = parseHex(hex);
  const info = s.repo.odb.info(oid);
  if (!info) return;
  if (info.type !== ObjType.Commit) throw protocolError(`invalid shallow object ${hex}`);
  if (!(s.get(oid) & Flag.ClientShallow)) {
    s.set(oid, Flag.ClientShallow);
    s.shallows.push(oid);
  }
}

/** Parents as the (possibly shallow) repository sees them. */
function parentsOf(s: UploadPackSession, oid: Buffer, grafts: Set<string>): Buffer[] | undefined {
  const c = s.repo.commit(oid);
  if (!c) return undefined;
  if (grafts.has(s.key(oid))) return [];
  return c.parents;
}

/**
 * git's get_shallows_or_depth(): a depth-first walk from `heads` that
 * revisits a commit whenever it is reached by a shorter path. Like every
 * walk here it yields on the request's slicer: a deep or date-bounded
 * shallow fetch of a long history does not hold the event loop.
 *
 * Without `shallows` it returns the boundary at `depth` in git's list
 * order, flagging commits Shallow / NotShallow. With `shallows` it flags
 * nothing, walks the whole history and returns the smallest depth (1 for
 * a head) at which one of those commits is reached, 0 when none is.
 */
async function walkDepths(s: UploadPackSession, heads: Buffer[], depth: number, grafts: Set<string>, shallows?: Set<string>): Promise<{ result: Buffer[]; shallowDepth: number }> {
  const slicer = slicerOf(s);
  const result: Buffer[] = [];
  const depths = new Map<string, number>();
  const stack: Buffer[] = [];
  let i = 0;
  let commit: Buffer | undefined;
  let cur = 0;
  let shallowDepth = 0;
  while (commit || i < heads.length || stack.length) {
    const tick = slicer.tick();
    if (tick) await tick;
    if (!commit) {
      if (i < heads.length) {
        const d = derefTag(s, heads[i++]!);
        if (!d || d.type !== ObjType.Commit) continue;
        commit = d.oid;
        depths.set(s.key(commit), 0);
        cur = 0;
      } else {
        commit = stack.pop()!;
        cur = depths.get(s.key(commit))!;
      }
    }
    const parents = parentsOf(s, commit, grafts);
    if (!parents) throw protocolError(`unable to parse commit ${toHex(commit)}`);
    cur++;
    const grafted = grafts.size > 0 && parents.length === 0 && grafts.has(s.key(commit));
    if (shallows) {
      if (shallows.has(s.key(commit)) && (!shallowDepth || cur < shallowDepth)) shallowDepth = cur;
      if (grafted) { commit = undefined; continue; }
    } else {
      if ((depth !== INFINITE_DEPTH && cur >= depth) || grafted) {
        result.push(commit); // git prepends (commit_list_insert): reversed once at the end
        s.set(commit, Flag.Shallow);
        commit = undefined;
        continue;
      }
      s.set(commit, Flag.NotShallow);
    }
    commit = undefined;
    for (let j = 0; j < parents.length; j++) {
      const p = parents[j]!;
      const k = s.key(p);
      const prev = depths.get(k);
      if (prev === undefined) depths.set(k, cur);
      else {
        if (cur >= prev) continue;
        depths.set(k, cur);
      }
      if (j < parents.length - 1) stack.push(p);
      else { commit = p; cur = depths.get(k)!; }
    }
  }
  return { result: result.reverse(), shallowDepth };
}

/**
 * get_shallow_commits() as of git 2.54: with deepen-relative the depth is
 * counted from the wants, plus the depth at which the client's nearest
 * shallow commit lies (nothing is sent when the wants reach none of
 * them). git up to 2.53 deepened from each reachable shallow commit
 * instead, which named commits beyond a merge without sending them.
 */
async function shallowCommits(s: UploadPackSession, heads: Buffer[], depth: number, grafts: Set<string>, relative = false): Promise<Buffer[]> {
  if (relative) {
    const cur = (await walkDepths(s, heads, 0, grafts, new Set(s.shallows.map((o) => s.key(o))))).shallowDepth;
    if (!cur) return [];
    depth = Math.min(depth + cur, INFINITE_DEPTH);
  }
  return (await walkDepths(s, heads, depth, grafts)).result;
}

/** Expand a deepen-not argument like git's expand_ref (exactly one match). */
function expandRef(s: UploadPackSession, name: string): Buffer {
  const rules = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];
  const found: Buffer[] = [];
  for (const r of rules) {
    const full = r.replace('%s', name);
    if (full !== 'HEAD' && !full.startsWith('refs/')) continue;
    const res = s.repo.refs.resolve(full);
    if (res?.hex) found.push(rawFromHexBytes(res.hex));
  }
  if (found.length !== 1) throw protocolError(`git upload-pack: ambiguous deepen-not: deepen-not ${name}`);
  return found[0]!;
}

/** get_shallow_commits_by_rev_list(): `rev-list --max-age=<since> --not <refs> --not <wants>`. */
async function shallowByRevList(s: UploadPackSession, grafts: Set<string>): Promise<Buffer[]> {
  const slicer = slicerOf(s);
  const excluded = new Set<string>();
  const walkAll = async (starts: Buffer[]) => {
    const st = [...starts];
    while (st.length) {
      const tick = slicer.tick();
      if (tick) await tick;
      const o = st.pop()!;
      const k = s.key(o);
      if (excluded.has(k)) continue;
      excluded.add(k);
      for (const p of parentsOf(s, o, grafts) ?? []) st.push(p);
    }
  };
  await walkAll(s.req.deepenNot.map((n) => {
    const d = derefTag(s, expandRef(s, n));
    return d && d.type === ObjType.Commit ? d.oid : undefined;
  }).filter((x): x is Buffer => x !== undefined));
  // date-ordered walk from the wants, as rev-list shows commits (newest first, equal dates in the order queued)
  const queue = new DateQueue();
  const seen = new Set<string>();
  const push = (oid: Buffer) => {
    const k = s.key(oid);
    if (seen.has(k)) return;
    seen.add(k);
    const c = s.repo.commit(oid);
    if (!c) return;
    queue.push(k, oid, c.time);
  };
  for (const w of s.wants) {
    const d = derefTag(s, w);
    if (d && d.type === ObjType.Commit) push(d.oid);
  }
  const shown: Buffer[] = [];
  while (queue.size) {
    const tick = slicer.tick();
    if (tick) await tick;
    const { key, oid, time } = queue.pop()!;
    if (excluded.has(key)) continue;
    if (s.req.deepenSince && time < s.req.deepenSince) continue;
    shown.push(oid);
    for (const p of parentsOf(s, oid, grafts) ?? []) push(p);
  }
  if (shown.length === 0) throw protocolError('no commits selected for shallow requests');
  const notShallow = new Set<string>();
  for (const o of shown) {
    const tick = slicer.tick();
    if (tick) await tick;
    notShallow.add(s.key(o));
    s.set(o, Flag.NotShallow);
  }
  const result: Buffer[] = [];
  for (const o of shown) {
    const tick = slicer.tick();
    if (tick) await tick;
    for (const p of parentsOf(s, o, grafts) ?? []) {
      if (!notShallow.has(s.key(p))) { s.set(o, Flag.Shallow); result.push(o); break; }
    }
  }
  for (const o of result) s.clear(o, Flag.NotShallow);
  return result;
}

function sendShallow(s: UploadPackSession, result: Buffer[]): void {
  for (const o of result) {
    if (!(s.get(o) & (Flag.ClientShallow | Flag.NotShallow))) {
      s.writer.data(`shallow ${toHex(o)}`);
      s.registerShallow(o);
      s.shallowNr++;
    }
  }
}

function sendUnshallow(s: UploadPackSession, grafts: Set<string>): void {
  for (const o of s.shallows) {
    if (s.get(o) & Flag.NotShallow) {
      s.writer.data(`unshallow ${toHex(o)}`);
      s.clear(o, Flag.ClientShallow);
      s.unregisterShallow(o);
      for (const p of parentsOf(s, o, grafts) ?? []) s.addWantUnchecked(p);
      s.extraEdges.push(o);
    }
    s.registerShallow(o);
  }
}

/** deepen(): the boundary at `depth` from the wants (or the client's shallows). */
export async function deepen(s: UploadPackSession, depth: number, grafts: Set<string> = repoShallow(s)): Promise<void> {
  if (depth === INFINITE_DEPTH && grafts.size === 0) {
    for (const o of s.shallows) s.set(o, Flag.NotShallow);
  } else {
    sendShallow(s, await shallowCommits(s, s.wants, depth, grafts, s.req.deepenRelative));
  }
  sendUnshallow(s, grafts);
}

/**
 * send_shallow_list(): compute and write the shallow/unshallow lines.
 * Returns true when a list was sent (the caller ends it as the protocol says).
 */
export async function sendShallowList(s: UploadPackSession): Promise<boolean> {
  const grafts = repoShallow(s);
  for (const g of grafts) s.registeredShallow.set(g, Buffer.from(g, 'latin1'));
  let sent = false;
  if (s.req.depth > 0 && s.req.deepenRevList) throw protocolError('git upload-pack: deepen and deepen-since (or deepen-not) cannot be used together');
  if (s.req.depth > 0) {
    await deepen(s, s.req.depth, grafts);
    sent = true;
  } else if (s.req.deepenRevList) {
    sendShallow(s, await shallowByRevList(s, grafts));
    sendUnshallow(s, grafts);
    sent = true;
  } else {
    for (const o of s.shallows) s.registerShallow(o);
  }
  s.shallowNr += s.shallows.length;
  return sent;
}
