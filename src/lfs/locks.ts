/**
 * File locks (git-lfs's locking API), kept per repository in
 * `lfs/locks/<h>.json`, where `<h>` is the first 32 hex digits of the
 * SHA-256 of the locked path. A lock is written whole under a temporary
 * name, then linked into place (link fails on an existing name): of any
 * number of concurrent requests for one path exactly one gets it (also
 * across processes), a lock file is never seen half-written (nor left so
 * by a crash), and it survives restarts. A lock's id is `<h>-<r>`
 * (`<r>` random), so it is found without a scan and a lock made again
 * after an unlock has a new id.
 *
 * Unlocking is a compare-and-delete on a shared filesystem, which has no
 * such call; it is built from names. The lock file has a second name,
 * `<id>.id` (a hard link, made before the lock is published). An unlock
 * first removes that name: of concurrent unlocks of one id, in any
 * processes, exactly one unlink succeeds (the claim). Only the claimant of
 * an id ever removes `<h>.json` while it holds that id, and while it does
 * nobody can replace it (a create needs the name free), so the claimant
 * reads it, and removes it only when it still holds the id: a lock taken
 * after another unlock is never removed by this one.
 *
 * A crash between the two unlinks leaves the lock in place with no `<id>.id`
 * (it is not lost, and no other lock is removed). An unlock that finds
 * the lock so for longer than `ORPHAN_GRACE_MS` (its ctime: the claim
 * changed its link count) gives it the name back and goes on; locks
 * written before `<id>.id` existed are taken the same way. A crash inside
 * a create leaves at most an `<id>.id` of a lock never published, which
 * nothing reads as a lock.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, lstat, mkdir, readFile, readdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Lock { id: string; path: string; locked_at: string; owner: { name: string } }

const ID_RE = /^[0-9a-f]{32}-[0-9a-f]{16}$/;
/** the longest path a lock may name (bytes) */
export const MAX_LOCK_PATH = 4096;
/** locks one listing page returns at most, and by default */
export const MAX_LOCK_PAGE = 1000;
export const DEFAULT_LOCK_PAGE = 100;

export function isLockId(s: unknown): s is string { return typeof s === 'string' && ID_RE.test(s); }

/** A path a lock may name: a non-empty string without control characters (NUL, LF: lines of the SSH protocol), at most MAX_LOCK_PATH bytes. */
export function isLockPath(s: unknown): s is string {
  return typeof s === 'string' && s.length > 0 && !/[\x00-\x1f\x7f]/.test(s) && Buffer.byteLength(s) <= MAX_LOCK_PATH;
}

const pathKey = (path: string) => createHash('sha256').update(path).digest('hex').slice(0, 32);

export type CreateResult = { ok: true; lock: Lock } | { ok: false; existing: Lock };
export type UnlockResult = { ok: true; lock: Lock } | { ok: false; reason: 'not-found' } | { ok: false; reason: 'not-owner'; lock: Lock };

/**
 * how long a lock may have lost its `<id>.id` name before an unlock takes it
 * as left by a crashed unlock (one in progress holds it for two unlinks)
 */
export const ORPHAN_GRACE_MS = 30_000;

const errno = (e: unknown) => (e as NodeJS.ErrnoException | undefined)?.code;

export class LockStore {
  readonly dir: string;
  /** `orphanGraceMs`: ORPHAN_GRACE_MS unless given (tests) */
  constructor(lfsDir: string, private readonly opts: { orphanGraceMs?: number } = {}) { this.dir = join(lfsDir, 'locks'); }

  private file(key: string): string { return join(this.dir, `${key}.json`); }
  /** the lock file's second name, whose removal claims the unlock of `id` */
  private idFile(id: string): string { return join(this.dir, `${id}.id`); }

  private async readKey(key: string): Promise<Lock | undefined> {
    let text: string;
    try { text = await readFile(this.file(key), 'utf8'); } catch { return undefined; }
    try {
      const l = JSON.parse(text) as Lock;
      return isLockId(l.id) && typeof l.path === 'string' && typeof l.owner?.name === 'string' ? l : undefined;
    } catch { return undefined; }
  }

  /** Lock `path` for `owner`; the existing lock when someone holds it. */
  async create(path: string, owner: string, now = new Date()): Promise<CreateResult> {
    await mkdir(this.dir, { recursive: true });
    const key = pathKey(path);
    const lock: Lock = { id: `${key}-${randomBytes(8).toString('hex')}`, path, locked_at: now.toISOString().replace(/\.\d{3}Z$/, 'Z'), owner: { name: owner } };
    // written whole under a temporary name, then linked into place: link() fails when the name
    // exists, so exactly one of concurrent requests wins, and a lock file is never seen half-written
    const tmpFile = join(this.dir, `.tmp-${randomBytes(8).toString('hex')}`);
    await writeFile(tmpFile, JSON.stringify(lock), { flag: 'wx' });
    try {
      // the id's name first (a new random name), so a published lock always has it
      await link(tmpFile, this.idFile(lock.id));
      try {
        await link(tmpFile, this.file(key));
        return { ok: true, lock };
      } catch (e) {
        await unlink(this.idFile(lock.id)).catch(() => undefined);
        if (errno(e) !== 'EEXIST') throw e;
      }
      const existing = await this.readKey(key);
      if (existing) return { ok: false, existing };
      throw new Error(`lock file ${this.file(key)} cannot be read`);
    } finally {
      await unlink(tmpFile).catch(() => undefined);
    }
  }

  async byId(id: string): Promise<Lock | undefined> {
    if (!isLockId(id)) return undefined;
    const l = await this.readKey(id.slice(0, 32));
    return l?.id === id ? l : undefined;
  }

  async byPath(path: string): Promise<Lock | undefined> {
    return isLockPath(path) ? this.readKey(pathKey(path)) : undefined;
  }

  /**
   * Locks in a stable order (by key), `limit` from after `cursor` (a lock
   * id or key), and the cursor of the next page when there is one.
   */
  async list(cursor: string | undefined, limit: number): Promise<{ locks: Lock[]; next?: string }> {
    let names: string[];
    try { names = (await readdir(this.dir)).filter((n) => /^[0-9a-f]{32}\.json$/.test(n)); } catch { return { locks: [] }; }
    names.sort();
    const from = cursor ? cursor.slice(0, 32) : '';
    const locks: Lock[] = [];
    let i = from ? names.findIndex((n) => n.slice(0, 32) >= from) : 0;
    if (i < 0) i = names.length;
    for (; i < names.length && locks.length < limit; i++) {
      const l = await this.readKey(names[i]!.slice(0, 32));
      if (l) locks.push(l);
    }
    const next = i < names.length ? names[i]!.slice(0, 32) : undefined;
    return next ? { locks, next } : { locks };
  }

  /**
   * Unlock by id: only its owner, unless `force`. Of concurrent unlocks of
   * one id (in any processes sharing the directory) exactly one succeeds,
   * and an unlock removes that lock only, never a newer lock of its path.
   */
  async unlock(id: string, user: string, force: boolean): Promise<UnlockResult> {
    const lock = await this.byId(id);
    if (!lock) return { ok: false, reason: 'not-found' };
    if (lock.owner.name !== user && !force) return { ok: false, reason: 'not-owner', lock };
    if (!(await this.claim(id))) return { ok: false, reason: 'not-found' };
    // ours alone from here: `<h>.json` holds `id` until we remove it, or never held it again
    const key = id.slice(0, 32);
    if ((await this.readKey(key))?.id !== id) return { ok: false, reason: 'not-found' };
    try { await unlink(this.file(key)); } catch (e) {
      if (errno(e) === 'ENOENT') return { ok: false, reason: 'not-found' };
      throw e;
    }
    return { ok: true, lock };
  }

  /** Remove `<id>.id`: true for the one caller that did. */
  private async claim(id: string): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try { await unlink(this.idFile(id)); return true; } catch (e) {
        if (errno(e) !== 'ENOENT') throw e;
      }
      if (attempt === 0 && !(await this.adoptOrphan(id))) return false;
    }
    return false;
  }

  /**
   * A lock that holds `id` but has had no `<id>.id` for ORPHAN_GRACE_MS (an
   * unlock crashed between its two unlinks, or the lock predates the name)
   * gets the name back; false when there is nothing to adopt.
   */
  private async adoptOrphan(id: string): Promise<boolean> {
    const file = this.file(id.slice(0, 32));
    let st;
    try { st = await lstat(file); } catch { return false; }
    if (!st.isFile() || st.nlink !== 1 || Date.now() - st.ctimeMs < (this.opts.orphanGraceMs ?? ORPHAN_GRACE_MS)) return false;
    if ((await this.readKey(id.slice(0, 32)))?.id !== id) return false;
    // links whatever is at the name now: when that is another lock, the claimant finds it is not `id` and leaves it
    try { await link(file, this.idFile(id)); } catch (e) {
      if (errno(e) !== 'EEXIST' && errno(e) !== 'ENOENT') throw e;
    }
    return true;
  }
}
