/**
 * File locks (git-lfs's locking API), kept per repository in
 * `lfs/locks/<h>.json`, where `<h>` is the first 32 hex digits of the
 * SHA-256 of the locked path. A lock is written whole under a temporary
 * name, then linked into place (link fails on an existing name): of any
 * number of concurrent requests for one path exactly one gets it (also
 * across processes), a lock file is never seen half-written (nor left so
 * by a crash), and it survives restarts. A lock's id is `<h>-<r>`
 * (`<r>` random), so it is found without a scan and a lock made again
 * after an unlock has a new id. Unlocks of one repository are serialized
 * in this process, so an unlock never removes a newer lock of the path.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, readFile, readdir, unlink, writeFile } from 'node:fs/promises';
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

/** unlocks in flight per locks directory (this process) */
const chains = new Map<string, Promise<unknown>>();

export class LockStore {
  readonly dir: string;
  constructor(lfsDir: string) { this.dir = join(lfsDir, 'locks'); }

  private file(key: string): string { return join(this.dir, `${key}.json`); }

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
      await link(tmpFile, this.file(key));
      return { ok: true, lock };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
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

  /** Unlock by id: only its owner, unless `force`. */
  unlock(id: string, user: string, force: boolean): Promise<UnlockResult> {
    const prev = chains.get(this.dir) ?? Promise.resolve();
    const run = prev.catch(() => undefined).then(async (): Promise<UnlockResult> => {
      const lock = await this.byId(id);
      if (!lock) return { ok: false, reason: 'not-found' };
      if (lock.owner.name !== user && !force) return { ok: false, reason: 'not-owner', lock };
      try { await unlink(this.file(id.slice(0, 32))); } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, reason: 'not-found' };
        throw e;
      }
      return { ok: true, lock };
    });
    chains.set(this.dir, run);
    void run.finally(() => { if (chains.get(this.dir) === run) chains.delete(this.dir); }).catch(() => undefined);
    return run;
  }
}
