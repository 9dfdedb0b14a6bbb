/**
 * receive-pack's shallow updates (update_shallow_info, update_shallow_ref):
 * which of the client's new shallow roots a pushed tip reaches through the
 * quarantined objects, and adding roots to `$GIT_DIR/shallow` under its lock.
 */
import { closeSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ObjectDatabase } from '../../repo/odb.js';
import { ObjType } from '../../repo/object-type.js';
import type { Repository } from '../../repo/repository.js';
import { shallowGrafts } from './advertise.js';

/** the roots in `theirs` (latin1 keys) that `tip` reaches through objects the push brought (in `q`) */
export function shallowRootsReached(q: ObjectDatabase, theirs: Set<string>, tip: Buffer): Buffer[] {
  const reached: Buffer[] = [];
  const seen = new Set<string>();
  const stack = [tip];
  while (stack.length) {
    const c = stack.pop()!;
    const k = c.toString('latin1');
    if (seen.has(k)) continue;
    seen.add(k);
    if (theirs.has(k)) { reached.push(c); continue; }
    const obj = q.read(c);
    if (!obj) continue; // existed before the push
    if (obj.type === ObjType.Tag) {
      const m = /^object ([0-9a-f]+)/.exec(obj.data.toString('latin1', 0, 200));
      if (m) stack.push(Buffer.from(m[1]!, 'hex'));
      continue;
    }
    if (obj.type !== ObjType.Commit) continue;
    const text = obj.data.toString('latin1', 0, Math.min(obj.data.length, 4096));
    for (const m of text.matchAll(/^parent ([0-9a-f]+)$/gm)) stack.push(Buffer.from(m[1]!, 'hex'));
  }
  return reached;
}

/** add new shallow roots to $GIT_DIR/shallow under shallow.lock */
export function commitShallow(repo: Repository, extra: Buffer[]): void {
  const path = join(repo.gitDir, 'shallow');
  const lock = `${path}.lock`;
  const fd = openSync(lock, 'wx');
  try {
    const lines = new Set(shallowGrafts(repo));
    for (const e of extra) lines.add(e.toString('hex'));
    writeSync(fd, [...lines].map((l) => `${l}\n`).join(''));
    closeSync(fd);
    renameSync(lock, path);
  } catch (e) { try { closeSync(fd); } catch { /* closed */ } try { unlinkSync(lock); } catch { /* gone */ } throw e; }
}
