/**
 * Deleting a repository, atomically: it is first renamed to a hidden
 * trash name in its own directory (`.<name>.deleting-<random>`), which
 * takes it away from every new request in one step (a request resolves
 * its path afresh and finds nothing, as for a name never used), then
 * removed. A request already under way keeps the files it has open (a
 * clone either completes from them or fails: git's client checks the pack
 * and its connectivity, and gitwire never reports a pack it could not
 * finish as sent). The repository pool and, through the coordinator, every
 * node of the fleet drop what they hold of it at once. The pack cache
 * needs nothing: its keys are the repository's path with the exact wants
 * and haves, so an entry can only be served to a request for objects the
 * repository then at that path advertises; old entries age out.
 *
 * Empty directories left above it are removed up to `root`.
 */
import { realpathSync, renameSync, rmdirSync, lstatSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, relative, resolve, sep, isAbsolute } from 'node:path';
import { GitwireError, notARepo } from '../errors.js';
import { isGitDirectory } from '../repo/discover.js';

export interface DeleteOptions {
  /** the served root: empty directories above the repository are removed up to it */
  root?: string;
  /** forget the repository in these pools (RepositoryPool) */
  pool?: { invalidate(dir?: string): void };
  /** tell the fleet (Coordinator.publish) */
  coordinator?: { publish(repo: string): void };
}

/** Trash names in a directory: never served, never listed. */
export const TRASH = /^\.[^/]*\.(deleting|creating)-[0-9a-f]{12}$/;

/**
 * Delete the bare repository at `path` (see the file's comment). Throws
 * GW_NOT_A_REPO when there is none there (a work tree's repository is
 * refused: deleting would take the work tree too).
 */
export async function deleteRepository(path: string, opts: DeleteOptions = {}): Promise<{ path: string }> {
  let real: string;
  try { real = realpathSync(resolve(path)); } catch { throw notARepo(path); }
  if (!isGitDirectory(real)) throw notARepo(path);
  if (basename(real) === '.git') throw new GitwireError('GW_NOT_A_REPO', `'${path}' is a work tree's repository; only bare repositories are deleted`);
  const trash = join(dirname(real), `.${basename(real)}.deleting-${randomBytes(6).toString('hex')}`);
  try { renameSync(real, trash); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw notARepo(path); // deleted by another, just now
    throw e;
  }
  opts.pool?.invalidate(real);
  opts.coordinator?.publish(real);
  await rm(trash, { recursive: true, force: true, maxRetries: 3 });
  if (opts.root !== undefined) removeEmptyParents(dirname(real), opts.root);
  return { path: real };
}

function removeEmptyParents(dir: string, root: string): void {
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return; }
  for (let d = dir; ; d = dirname(d)) {
    const r = relative(realRoot, d);
    if (r === '' || r.startsWith(`..${sep}`) || r === '..' || isAbsolute(r)) return;
    try { if (!lstatSync(d).isDirectory()) return; rmdirSync(d); } catch { return; } // not empty (ENOTEMPTY): stop
  }
}
