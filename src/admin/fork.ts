/**
 * Forking a repository: the fork gets the source's branches, tags and HEAD
 * and borrows every object from the source's object pool (admin/pool.ts),
 * made at the first fork. Its own disk use is its refs and an alternates
 * line; pushes to the source or the fork stay in that repository.
 *
 * The fork is laid out in a temporary directory beside the destination
 * and moved into place with one rename(2): no reader ever sees half a
 * repository, and of two forks racing for one destination one wins and
 * the other is refused. Forks of one source are serialized by a lock in
 * the source (`gitwire-fork.lock`), so they share one pool.
 */
import { existsSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { GitwireError } from '../errors.js';
import { Repository } from '../repo/repository.js';
import { absorbIntoPool, bareConfig, createPool, dropSharedBitmaps, layBareRepository, linkMember, poolOfObjects, POOLS_DIRNAME } from './pool.js';
import { existingRepository, newRepositoryPath } from './rename.js';
import { withLock } from './pool-lock.js';

export interface ForkOptions {
  /** the directory names are taken under, as a request's are (default: the current directory) */
  root?: string;
  /**
   * where a new pool is made (default: `@pools` beside the source, which
   * serve never answers for); a source already in a pool keeps its pool
   */
  poolsDir?: string;
  env?: NodeJS.ProcessEnv;
}

export interface ForkResult {
  /** the fork's directory */
  path: string;
  /** the pool's git directory */
  pool: string;
  /** whether this fork made the pool */
  newPool: boolean;
  /** refs the fork got */
  refs: number;
}

function adminError(msg: string, cause?: unknown): GitwireError {
  return new GitwireError('GW_REPO_ADMIN', msg, cause === undefined ? {} : { cause });
}

/** A ref the fork gets: branches and tags, as `git clone --bare` copies them. */
const FORKED = /^refs\/(heads|tags)\//;

interface Snapshot { head: string; lines: string[]; tips: Set<string>; count: number }

/** The source's branches, tags and HEAD, as packed-refs lines (peeled lines for tags). */
function snapshotRefs(repo: Repository): Snapshot {
  const lines: string[] = [];
  const tips = new Set<string>();
  let count = 0;
  for (const r of repo.refs.iterate('refs/')) {
    if (r.symref !== undefined) continue;
    const name = r.name.toString('latin1');
    if (!FORKED.test(name)) continue;
    const hex = r.hex.toString('latin1');
    lines.push(`${hex} ${name}\n`);
    tips.add(hex);
    count++;
    const peeled = repo.peel(r.oid());
    if (peeled) lines.push(`^${peeled.toString('hex')}\n`);
  }
  const h = repo.refs.head();
  let head: string;
  if (h.symref !== undefined) head = `ref: ${h.symref}\n`;
  else if (h.hex) { head = `${h.hex.toString('latin1')}\n`; tips.add(h.hex.toString('latin1')); }
  else head = 'ref: refs/heads/main\n';
  return { head, lines, tips, count };
}

/**
 * Where a new pool goes: `poolsDir`, or `@pools` beside the source. Under
 * the served root, only inside an `@pools` directory: anywhere else serve
 * would answer for the pool, which holds every member's objects.
 */
function poolsDirFor(root: string, poolsDir: string | undefined, srcDir: string): string {
  if (poolsDir === undefined) return join(dirname(srcDir), POOLS_DIRNAME);
  const dir = resolve(poolsDir);
  let realRoot = resolve(root);
  try { realRoot = realpathSync(root); } catch { /* as given */ }
  let real = dir;
  try { real = realpathSync(dir); } catch { /* not made yet */ }
  for (const d of [dir, real]) {
    const rel = relative(realRoot, d);
    const inside = rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
    if (inside && !rel.split(sep).includes(POOLS_DIRNAME)) throw adminError(`pools under the served root must be inside an '${POOLS_DIRNAME}' directory (serve would answer for '${poolsDir}')`);
  }
  return dir;
}

/**
 * Fork `src` to `dst` (names under `root`). The destination must not
 * exist (an empty directory is taken over, as `git clone` does).
 */
export async function forkRepository(src: string, dst: string, o: ForkOptions = {}): Promise<ForkResult> {
  const root = o.root ?? process.cwd();
  const env = o.env ?? process.env;
  const { gitDir: srcGit } = existingRepository(root, src);
  const dstDir = newRepositoryPath(root, dst);
  if (existsSync(dstDir)) {
    let empty = false;
    try { empty = readdirSync(dstDir).length === 0; } catch { /* a file */ }
    if (!empty) throw adminError(`destination path '${dst}' already exists and is not an empty directory`);
  }
  let repo: Repository;
  try { repo = Repository.open(srcGit, { strict: true, env: {} }); } catch (e) { throw adminError(`'${src}' does not appear to be a git repository`, e); }
  try {
    const objectsDir = join(repo.commonDir, 'objects');
    const srcDir = basename(repo.commonDir) === '.git' ? dirname(repo.commonDir) : repo.commonDir;
    if (resolve(dstDir).startsWith(`${srcDir}/`)) throw adminError(`cannot fork '${src}' into itself`);
    return await withLock(join(repo.commonDir, 'gitwire-fork.lock'), { what: `fork of '${src}'` }, async () => {
      let pool = poolOfObjects(objectsDir, `'${src}'`);
      const newPool = pool === undefined;
      pool ??= createPool(poolsDirFor(root, o.poolsDir, srcDir), repo.format);
      // the refs first: every object they reach is in the source now, and the pool takes all of them
      const snap = snapshotRefs(repo);
      let shared: string[];
      try {
        shared = await absorbIntoPool(pool, { gitDir: repo.commonDir, objectsDir, hexLen: repo.hexLen, tips: snap.tips, env });
        if (newPool) linkMember(objectsDir, pool);
      } catch (e) {
        // a pool no repository names yet is no one's: it goes with the failure
        if (newPool) rmSync(pool, { recursive: true, force: true });
        throw e;
      }
      dropSharedBitmaps(objectsDir, pool, shared);

      try { mkdirSync(dirname(dstDir), { recursive: true }); } catch (e) { throw adminError(`cannot make '${dirname(dstDir)}': ${(e as Error).message}`, e); }
      const tmp = join(dirname(dstDir), `.tmp-gitwire-fork-${randomBytes(8).toString('hex')}`);
      try {
        layBareRepository(tmp, bareConfig(repo.format), snap.head);
        linkMember(join(tmp, 'objects'), pool);
        if (snap.lines.length) writeFileSync(join(tmp, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${snap.lines.join('')}`);
        try {
          renameSync(tmp, dstDir);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') throw adminError(`destination path '${dst}' already exists and is not an empty directory`, e);
          throw adminError(`cannot make '${dst}': ${(e as Error).message}`, e);
        }
      } catch (e) {
        rmSync(tmp, { recursive: true, force: true });
        throw e;
      }
      return { path: dstDir, pool, newPool, refs: snap.count };
    });
  } finally {
    repo.close();
  }
}
