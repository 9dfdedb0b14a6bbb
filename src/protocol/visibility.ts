/**
 * Strict visibility (SessionOptions.strictVisibility): a fetch gets only
 * objects reachable from the refs this request can see. git's hideRefs
 * (and, by default, the library's refFilter) hide refs from the
 * advertisement and refuse hidden tips, but an object reachable only from
 * hidden refs can still be named by id, and pack-objects' --include-tag
 * adds tags of every ref. With strictVisibility:
 *
 * - every want, of any type, must be reachable from a visible ref (tags
 *   peeled, commit parents, trees and blobs of visible commits), else the
 *   answer is git's `not our ref <id>`;
 * - `include-tag` is ignored when a tag ref is hidden (pack-objects would
 *   add hidden tags); the client fetches the visible tags it was shown in
 *   a second request, as it does from a server without include-tag.
 *
 * The walk is only as long as it must be: wants that are visible tips (a
 * plain clone or fetch) cost one pass over the refs; a commit that is not
 * a tip costs a commit walk until it is found; a tree or blob (a partial
 * clone's lazy fetch) costs a walk of visible history's trees until it is
 * found. The walk yields on the request's slicer and stops at the
 * negotiation budget; past it the want is refused (fail closed).
 */
import { ObjType } from '../repo/object-type.js';
import { parseTag, parseTree } from '../repo/objects.js';
import { TimeBudget } from '../util/budget.js';
import { negotiationState } from './negotiation.js';
import type { UploadPackSession } from './session.js';
import { visibleRefs } from './wants.js';
import { notOurRef } from '../errors.js';
import { rawFromHexBytes, toHex } from '../repo/oid.js';

export async function checkVisible(s: UploadPackSession): Promise<void> {
  if (!s.opts.strictVisibility || s.wants.length === 0) return;
  const { slicer, limits } = negotiationState(s);
  const budget = new TimeBudget(limits.negotiationBudgetMs);
  const stop = budget.start();
  const odb = s.repo.odb;
  const hashLen = s.repo.hashLen;
  /** wants not yet shown reachable, by key */
  const pending = new Map<string, Buffer>();
  for (const w of s.wants) pending.set(s.key(w), w);
  const found = (oid: Buffer) => { if (pending.size) pending.delete(s.key(oid)); };

  const commits: Buffer[] = [];
  const trees: Buffer[] = [];
  let hiddenTag = false;
  /** a visible ref's object: peel tags (each tag object is reachable), then queue what it names */
  const root = (oid: Buffer) => {
    let cur = oid;
    for (let i = 0; i < 100; i++) {
      found(cur);
      const info = odb.info(cur);
      if (!info) return;
      if (info.type === ObjType.Commit) { commits.push(cur); return; }
      if (info.type === ObjType.Tree) { trees.push(cur); return; }
      if (info.type !== ObjType.Tag) return;
      const o = odb.read(cur);
      if (!o) return;
      cur = parseTag(o.data, hashLen).object;
    }
  };
  for (const r of visibleRefs(s)) {
    if (r.hidden) {
      if (r.stripped.length > 10 && r.stripped.toString('latin1', 0, 10) === 'refs/tags/') hiddenTag = true;
      continue;
    }
    const tick = slicer.tick();
    if (tick) await tick;
    root(rawFromHexBytes(r.hex));
  }
  if (hiddenTag) s.req.includeTag = false;

  try {
    if (pending.size === 0) return;
    // commits first (cheap); their trees only if a tree or blob is still wanted
    let needTrees = false;
    for (const w of pending.values()) { const t = odb.info(w)?.type; if (t !== ObjType.Commit) { needTrees = true; break; } }
    const seen = new Set<string>();
    const commitTrees: Buffer[] = [];
    while (commits.length && pending.size) {
      const tick = slicer.tick();
      if (tick) { await tick; if (budget.exhausted) break; }
      const c = commits.pop()!;
      const k = s.key(c);
      if (seen.has(k)) continue;
      seen.add(k);
      found(c);
      const parsed = s.repo.commit(c);
      if (!parsed) continue;
      if (needTrees) commitTrees.push(parsed.tree);
      for (const p of parsed.parents) if (!seen.has(s.key(p))) commits.push(p);
    }
    if (needTrees && pending.size && !budget.exhausted) {
      trees.push(...commitTrees);
      const seenTrees = new Set<string>();
      while (trees.length && pending.size) {
        const tick = slicer.tick();
        if (tick) { await tick; if (budget.exhausted) break; }
        const t = trees.pop()!;
        const k = s.key(t);
        if (seenTrees.has(k)) continue;
        seenTrees.add(k);
        found(t);
        const o = odb.read(t);
        if (!o || o.type !== ObjType.Tree) continue;
        for (const e of parseTree(o.data, hashLen)) {
          if (e.mode === 0o160000) continue; // a gitlink names another repository's commit
          const oid = Buffer.from(e.oid);
          if ((e.mode & 0o170000) === 0o040000) { if (!seenTrees.has(s.key(oid))) trees.push(oid); } else found(oid);
        }
      }
    }
  } finally {
    stop();
  }
  for (const w of s.wants) if (pending.has(s.key(w))) throw notOurRef(toHex(w));
}
