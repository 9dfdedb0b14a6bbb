/**
 * Fetch negotiation: recording the client's haves and deciding when we
 * have enough in common to give up (git's ok_to_give_up).
 */
import { ObjType } from '../repo/object-type.js';
import { Flag, type UploadPackSession } from './session.js';

/**
 * got_oid(): -1 when we do not have the object, 1 when it is a new have,
 * 0 when we already knew they have it.
 */
export function gotHave(s: UploadPackSession, oid: Buffer): -1 | 0 | 1 {
  const info = s.repo.odb.info(oid);
  if (!info) return -1;
  let knew = false;
  if (info.type === ObjType.Commit) {
    const c = s.repo.commit(oid);
    if (c) {
      if (s.get(oid) & Flag.TheyHave) knew = true;
      else s.set(oid, Flag.TheyHave);
      if (!s.oldestHave || c.time < s.oldestHave) s.oldestHave = c.time;
      for (const p of c.parents) s.set(p, Flag.TheyHave);
    }
  }
  if (!knew) {
    s.haves.push(oid);
    return 1;
  }
  return 0;
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

/** can_all_from_reach_with_flag(wants, THEY_HAVE, COMMON_KNOWN, oldest_have). */
export function okToGiveUp(s: UploadPackSession): boolean {
  if (s.haves.length === 0) return false;
  const minDate = s.oldestHave;
  const visited = new Set<string>();
  const result = new Set<string>();
  const good = (k: string) => ((s.flags.get(k) ?? 0) & Flag.TheyHave) !== 0 || result.has(k);
  for (const w of s.wants) {
    if (s.get(w) & Flag.CommonKnown) continue;
    const d = derefTag(s, w);
    if (!d || d.type !== ObjType.Commit) { s.set(w, Flag.CommonKnown); continue; }
    if (!s.repo.commit(d.oid)) return false;
    const root = s.key(d.oid);
    visited.add(root);
    const stack: Buffer[] = [d.oid];
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const tk = s.key(top);
      if (good(tk)) {
        stack.pop();
        if (stack.length) result.add(s.key(stack[stack.length - 1]!));
        continue;
      }
      const c = s.repo.commit(top);
      let pushed = false;
      for (const p of c?.parents ?? []) {
        const pk = s.key(p);
        if (good(pk)) result.add(tk);
        if (!visited.has(pk)) {
          visited.add(pk);
          const pc = s.repo.commit(p);
          if (!pc || pc.time < minDate) continue;
          stack.push(p);
          pushed = true;
          break;
        }
      }
      if (!pushed) stack.pop();
    }
    if (!good(root)) return false;
  }
  return true;
}
