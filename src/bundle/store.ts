/**
 * Where a repository's bundles live: `<git dir>/gitwire/bundles/`, inside
 * the repository, so that a rename or delete (admin/) takes them along, a
 * fleet on shared storage sees one node's bundle from every node, and a
 * fork (a new repository) starts without its source's.
 *
 * A bundle is `<creationToken>-<view>.bundle`: its creation token (seconds
 * since the epoch when it was made, above every earlier one's) and the key
 * of the view it holds (./refs.ts). A file is there only once whole (it is
 * written beside under a temporary name and renamed). The current bundle
 * is the one with the highest token made for the current view; the others
 * are kept for a grace period after a newer one appeared (clients given the
 * older one's URL just before may still be downloading it), then removed.
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, statSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Repository } from '../repo/repository.js';
import { viewKey } from './refs.js';

/** the bundle directory under a repository's common git directory */
export const BUNDLE_SUBDIR = join('gitwire', 'bundles');
/** a bundle's file name: nothing else is listed, served or removed */
export const BUNDLE_NAME = /^([1-9][0-9]{0,15})-([0-9a-f]{12})\.bundle$/;
/** a temporary file being written (`.tmp-<host>-<pid>-<rest>`, ./make.ts tempName) */
export const TEMP_PREFIX = '.tmp-';
/** this host, as temporary files name it (a hash: host names have dashes and dots) */
const HOST = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
/** a dead maker's file is one not written to for this long */
const QUIET_TEMP_MS = 60_000;
const TEMP_NAME = /^\.tmp-([0-9a-f]{8})-([1-9][0-9]*)-/;

/** A temporary file's name for this process: a maker that dies is known by it (removeDeadTemps). */
export function tempName(rest: string): string {
  return `${TEMP_PREFIX}${HOST}-${process.pid}-${rest}`;
}

/**
 * Remove the temporary files in `dir` that makers of this host left when
 * they died (killed mid-make: a bundle-sized file each, for a day
 * otherwise). Another host's are left to the day's limit: its process ids
 * mean nothing here. Returns the names removed.
 */
export function removeDeadTemps(dir: string): string[] {
  const removed: string[] = [];
  let names: string[] = [];
  try { names = readdirSync(dir); } catch { return removed; }
  for (const name of names) {
    const m = TEMP_NAME.exec(name);
    if (!m || m[1] !== HOST || alive(Number(m[2]))) continue;
    const file = join(dir, name);
    // written to within the minute: a maker in another pid namespace with this host's name (containers), not a dead one
    try { if (Date.now() - statSync(file).mtimeMs < QUIET_TEMP_MS) continue; unlinkSync(file); removed.push(name); } catch { /* gone already */ }
  }
  return removed;
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
}
/** how long a bundle is kept after a newer one appeared (default 15 minutes) */
export const DEFAULT_GRACE_MS = 15 * 60_000;
/** a temporary file older than this was left by a maker that died */
const STALE_TEMP_MS = 24 * 3600_000;

export interface StoredBundle {
  name: string;
  file: string;
  token: number;
  view: string;
  bytes: number;
  mtimeMs: number;
  /** the file's inode: with size and time, its identity (a checked file is known by it) */
  ino: number;
}

export function bundleDir(repo: Pick<Repository, 'commonDir'>): string {
  return join(repo.commonDir, BUNDLE_SUBDIR);
}

/** The bundles in `dir`, newest (highest token) first; none when the directory is missing. */
export function listBundles(dir: string): StoredBundle[] {
  let names: string[];
  try { names = readdirSync(dir); } catch { return []; }
  const out: StoredBundle[] = [];
  for (const name of names) {
    const m = BUNDLE_NAME.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    let st;
    // a symbolic link is not followed (the download opens with O_NOFOLLOW): neither listed nor served
    try { st = lstatSync(file); } catch { continue; }
    if (!st.isFile()) continue;
    out.push({ name, file, token: Number(m[1]), view: m[2]!, bytes: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
  }
  return out.sort((a, b) => b.token - a.token);
}

/** The bundle to advertise: the newest made for the repository's current view. */
export function currentBundle(repo: Pick<Repository, 'config' | 'commonDir'>): StoredBundle | undefined {
  const view = viewKey(repo);
  return listBundles(bundleDir(repo)).find((b) => b.view === view);
}

/**
 * A bundle a client may download by name: one of the current view's (the
 * current one, or an older one still in its grace period). A bundle made
 * under other hideRefs rules is never served: it may hold what is hidden now.
 */
export function servableBundle(repo: Pick<Repository, 'config' | 'commonDir'>, name: string): StoredBundle | undefined {
  if (!BUNDLE_NAME.test(name)) return undefined;
  const view = viewKey(repo);
  return listBundles(bundleDir(repo)).find((b) => b.name === name && b.view === view);
}

/**
 * Remove what is no longer advertised: a bundle of another view, and any
 * but the current one (the newest of the view, or `current`: the newest
 * that is a readable bundle), once the current one has been there
 * `graceMs`; temporary files a dead maker of this host left, and any a
 * day old. Returns the names removed.
 */
export function pruneBundles(dir: string, currentView: string, graceMs = DEFAULT_GRACE_MS, now = Date.now(), current?: string): string[] {
  const removed: string[] = [];
  const all = listBundles(dir);
  const newest = current === undefined ? all.find((b) => b.view === currentView) : all.find((b) => b.name === current);
  for (const b of all) {
    if (b === newest) continue;
    // superseded at the moment the newest one appeared; without a current one, since it was last written
    const since = newest ? newest.mtimeMs : b.mtimeMs;
    if (now - since < graceMs) continue;
    try { unlinkSync(b.file); removed.push(b.name); } catch { /* gone already */ }
  }
  removed.push(...removeDeadTemps(dir));
  let names: string[] = [];
  try { names = readdirSync(dir); } catch { /* none */ }
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX) || removed.includes(name)) continue;
    const file = join(dir, name);
    try {
      if (now - statSync(file).mtimeMs > STALE_TEMP_MS) { unlinkSync(file); removed.push(name); }
    } catch { /* gone already */ }
  }
  return removed;
}
