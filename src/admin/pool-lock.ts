/**
 * An exclusive lock file for repository lifecycle work (a fork absorbing a
 * member into its object pool, a rename): created with O_EXCL, holding the
 * owner's pid, removed when the work ends. A lock whose owner is gone (a
 * crash) is taken over; a live one is waited for, with a bound.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { GitwireError } from '../errors.js';

export interface LockOptions {
  /** how long to wait for another holder (default 10 s) */
  waitMs?: number;
  /** what the error names when the wait ends */
  what: string;
}

function ownerAlive(path: string): boolean {
  let pid: number;
  try { pid = Number.parseInt(readFileSync(path, 'utf8'), 10); } catch { return true; }
  if (!Number.isInteger(pid) || pid <= 0) return true; // being written: treat as held
  if (pid === process.pid) return true;
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}

/** Run `fn` holding the lock file `path`. */
export async function withLock<T>(path: string, o: LockOptions, fn: () => Promise<T> | T): Promise<T> {
  const end = Date.now() + (o.waitMs ?? 10_000);
  let delay = 5;
  let fd: number | undefined;
  for (;;) {
    try {
      fd = openSync(path, 'wx', 0o644);
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new GitwireError('GW_REPO_ADMIN', `unable to create '${path}': ${(e as Error).message}`, { cause: e });
      }
      if (!ownerAlive(path)) { try { unlinkSync(path); } catch { /* another took it over */ } continue; }
      if (Date.now() > end) throw new GitwireError('GW_REPO_ADMIN', `${o.what}: '${path}' is held by another process`);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 200);
    }
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    return await fn();
  } finally {
    try { unlinkSync(path); } catch { /* gone already */ }
  }
}
