/**
 * Renaming a repository: one rename(2) of its directory, so every reader
 * sees it at the old name or at the new one, never both or neither. A
 * request already under way keeps working on the directory it opened (its
 * open files and git children's working directories follow the inode);
 * one that opens files by the old path after the move fails as for a
 * missing repository. The caches of the process that renames (repository
 * pool, pack cache) and the fleet's (the coordinator's invalidation)
 * forget the old name at once.
 *
 * The repository renamed is found as a request finds it (transport/paths.ts);
 * the new name is held to the rules of a created repository's (names.ts:
 * letters, digits and `- . _ + @`, no repository above it), and never
 * leads out of the root through a symlink.
 */
import { existsSync, lstatSync, mkdirSync, realpathSync, renameSync, unlinkSync, openSync, closeSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { GitwireError } from '../errors.js';
import { locateUnderRoot } from '../transport/paths.js';
import { assertNothingAbove, newRepositoryName } from './names.js';
import type { Coordinator } from '../cluster/coordinator.js';
import type { RepositoryPool } from '../repo/pool.js';
import { isPool } from './pool.js';

function adminError(msg: string, cause?: unknown): GitwireError {
  return new GitwireError('GW_REPO_ADMIN', msg, cause === undefined ? {} : { cause });
}

function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r));
}

/**
 * Where a repository named `name` (as a client would name it) would live
 * under `root`; throws when the name is not one a repository may be
 * created under (names.ts: a rename or a fork makes a name, as a
 * push-to-create does, and is held to the same rules), when it leads out
 * of the root, when a directory above it is a repository, or when its
 * twin (`x` for `x.git`, and back) is a repository other than `self`.
 */
export function newRepositoryPath(root: string, name: string, self?: string): string {
  if (typeof name !== 'string' || name.length === 0) throw adminError('a repository name is required');
  const strict = newRepositoryName(name);
  // the last component as given: `x` stays `x` (a work tree moves as one), `x.git` stays `x.git`
  const segments = name.split('/').filter((s) => s.length > 0);
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch (e) { throw adminError(`cannot resolve the root '${root}': ${(e as Error).message}`, e); }
  const target = resolve(realRoot, ...segments);
  if (target === realRoot || !within(realRoot, target)) throw adminError(`'${name}' is not under the root`);
  // the deepest directory that exists must be the root or inside it (no symlink leads out)
  let p = dirname(target);
  while (!existsSync(p)) p = dirname(p);
  let real: string;
  try { real = realpathSync(p); } catch (e) { throw adminError(`cannot resolve '${p}': ${(e as Error).message}`, e); }
  if (!within(realRoot, real)) throw adminError(`'${name}' is not under the root`);
  assertNothingAbove(realRoot, strict);
  const out = join(real, relative(p, target));
  // `x` and `x.git` are one name to requests, rules and caches: never two repositories
  const twin = out.endsWith('.git') ? out.slice(0, -4) : `${out}.git`;
  if (twin !== realRoot && twin !== self && (existsSync(join(twin, 'HEAD')) || existsSync(join(twin, '.git')))) throw adminError(`destination '${name}' already exists as '${basename(twin)}'`);
  return out;
}

/**
 * The repository `name` names under `root`: the directory a rename moves
 * (a work tree moves with its .git) and its git directory; or a git-worded
 * error.
 */
export function existingRepository(root: string, name: string): { dir: string; gitDir: string } {
  const loc = locateUnderRoot(root, name);
  if (!loc) throw adminError(`'${name}' does not appear to be a git repository`);
  if (loc.gitFileAt !== undefined) throw adminError(`'${name}' is a work tree whose .git file points elsewhere; move it with git worktree move`);
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch (e) { throw adminError(`cannot resolve the root '${root}': ${(e as Error).message}`, e); }
  // a work tree moves with its .git
  const dir = basename(loc.dir) === '.git' ? dirname(loc.dir) : loc.dir;
  if (dir === realRoot) throw adminError('the served root itself cannot be renamed or forked');
  if (isPool(loc.dir)) throw adminError(`'${name}' is an object pool`);
  return { dir, gitDir: loc.dir };
}

export interface RenameOptions {
  /** the directory names are taken under (default: the current directory) */
  root?: string;
  /** a running server's repository pool: the old name is dropped from it */
  pool?: Pick<RepositoryPool, 'invalidate'>;
  /** the fleet (or this node): every node drops its snapshot of the old name */
  coordinator?: Pick<Coordinator, 'publish'>;
}

export interface RenameResult { from: string; to: string }

/**
 * Rename the repository `from` to `to` (names under `root`). Refuses a
 * destination that exists, one on another file system, and names a
 * request could not use.
 */
export function renameRepository(from: string, to: string, o: RenameOptions = {}): RenameResult {
  const root = o.root ?? process.cwd();
  const { dir: oldDir, gitDir: gitDirOld } = existingRepository(root, from);
  const newDir = newRepositoryPath(root, to, oldDir);
  if (newDir === oldDir) throw adminError(`'${from}' and '${to}' are the same repository`);
  if (within(oldDir, newDir)) throw adminError(`cannot move '${from}' into itself`);
  if (existsSync(newDir) || isLink(newDir)) throw adminError(`destination '${to}' already exists`);
  try { mkdirSync(dirname(newDir), { recursive: true }); } catch (e) { throw adminError(`cannot make '${dirname(newDir)}': ${(e as Error).message}`, e); }
  // a fork of this repository under way holds its lock: wait for no one, refuse
  const lock = join(gitDirOld, 'gitwire-fork.lock');
  let fd: number;
  try { fd = openSync(lock, 'wx'); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw adminError(`'${from}' is being forked; try again`, e);
    throw adminError(`cannot lock '${from}': ${(e as Error).message}`, e);
  }
  closeSync(fd);
  try {
    renameSync(oldDir, newDir);
  } catch (e) {
    try { unlinkSync(lock); } catch { /* gone */ }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EXDEV') throw adminError(`cannot rename '${from}' to '${to}': they are on different file systems`, e);
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') throw adminError(`destination '${to}' already exists`, e);
    throw adminError(`cannot rename '${from}' to '${to}': ${(e as Error).message}`, e);
  }
  try { unlinkSync(join(newDir, relative(oldDir, gitDirOld), 'gitwire-fork.lock')); } catch { /* gone */ }
  o.pool?.invalidate(gitDirOld);
  // the fleet names repositories relative to the root as the servers spell it
  let realRoot = root;
  try { realRoot = realpathSync(root); } catch { /* as given */ }
  o.coordinator?.publish(join(resolve(root), relative(realRoot, gitDirOld)));
  return { from: oldDir, to: newDir };
}

function isLink(p: string): boolean {
  try { return lstatSync(p).isSymbolicLink(); } catch { return false; }
}
