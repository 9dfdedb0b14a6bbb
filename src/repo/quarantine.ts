/**
 * The quarantine (git's tmp-objdir.c): a push is received into
 * `objects/tmp_objdir-incoming-XXXXXX`, which hooks and checks see through
 * GIT_QUARANTINE_PATH / GIT_OBJECT_DIRECTORY / GIT_ALTERNATE_OBJECT_DIRECTORIES.
 * Objects move into the repository only on `migrate()`; `destroy()` leaves
 * nothing behind.
 */
import { closeSync, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readlinkSync, renameSync, rmSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { quoteAlternate } from './alternates.js';

/** git's pack_copy_priority: .keep before .pack before .rev before .idx, so a reader never sees an .idx without its pack. */
function priority(name: string): number {
  if (!name.startsWith('pack')) return 0;
  if (name.endsWith('.keep')) return 1;
  if (name.endsWith('.pack')) return 2;
  if (name.endsWith('.rev')) return 3;
  if (name.endsWith('.idx')) return 4;
  return 5;
}

export class Quarantine {
  private destroyed = false;
  /** the quarantine directory held open: where it is now, should the repository be renamed during the push */
  private dirFd = -1;
  private constructor(readonly path: string, readonly objectsDir: string) {}

  /** mkdtemp `<objects>/tmp_objdir-<prefix>-XXXXXX` with its `pack/` directory. */
  static create(objectsDir: string, prefix = 'incoming'): Quarantine {
    const abs = resolve(objectsDir);
    const path = mkdtempSync(join(abs, `tmp_objdir-${prefix}-`));
    const q = new Quarantine(path, abs);
    try { q.dirFd = openSync(path, 'r'); } catch { /* found by its path only */ }
    try { mkdirSync(join(path, 'pack')); } catch (e) { q.destroy(); throw e; }
    return q;
  }

  /** The variables children (index-pack, rev-list, hooks) run with. */
  env(base: NodeJS.ProcessEnv): Record<string, string> {
    const old = base.GIT_ALTERNATE_OBJECT_DIRECTORIES;
    const mine = quoteAlternate(this.objectsDir);
    return {
      GIT_ALTERNATE_OBJECT_DIRECTORIES: old ? `${old}:${mine}` : mine,
      GIT_OBJECT_DIRECTORY: this.path,
      GIT_QUARANTINE_PATH: this.path,
    };
  }

  /**
   * Move every file into the repository's object directory (link, or
   * rename where links fail; an object that already exists stays), then
   * remove the quarantine.
   */
  migrate(): void {
    this.migrateDir(this.path, this.objectsDir);
    this.destroy();
  }

  private migrateDir(src: string, dst: string): void {
    const names = readdirSync(src).filter((n) => !n.startsWith('.'));
    names.sort((a, b) => priority(a) - priority(b) || (a < b ? -1 : a > b ? 1 : 0));
    for (const name of names) {
      const s = join(src, name), d = join(dst, name);
      if (statSync(s).isDirectory()) {
        try { mkdirSync(d); } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; }
        this.migrateDir(s, d);
        continue;
      }
      try {
        linkSync(s, d);
        unlinkSync(s);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') { unlinkSync(s); continue; }
        if (existsSync(d)) { unlinkSync(s); continue; }
        renameSync(s, d);
      }
    }
  }

  /** Remove the quarantine and everything in it (idempotent). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    rmSync(this.path, { recursive: true, force: true });
    // a repository renamed during the push took its quarantine along: remove it where it is now
    // (Linux names an open directory's current path in /proc; only a directory of the same name goes)
    if (this.dirFd >= 0) {
      try {
        const now = readlinkSync(`/proc/self/fd/${this.dirFd}`);
        if (now !== this.path && basename(now) === basename(this.path) && basename(dirname(now)) === 'objects') rmSync(now, { recursive: true, force: true });
      } catch { /* no /proc, or gone */ }
      try { closeSync(this.dirFd); } catch { /* closed */ }
      this.dirFd = -1;
    }
    // the repository deleted (renamed away) during the push: git's index-pack made the quarantine's
    // leading directories again, so `<name>/objects` would stay where the repository was, a name no
    // one could create or delete. Only empty directories go (rmdir), and only where no HEAD is.
    const gitDir = dirname(this.objectsDir);
    if (basename(this.objectsDir) === 'objects' && !existsSync(join(gitDir, 'HEAD'))) {
      for (const d of [this.objectsDir, gitDir]) try { rmdirSync(d); } catch { return; }
    }
  }
}
