/**
 * Mapping a requested path to a repository under a root, safely: no path
 * leads outside the root, whatever it says (`..`, absolute paths,
 * percent-encoding, NUL bytes, symlinks leading out). What the repository
 * found there points at (alternates, commondir, symlinked storage) is
 * checked only when asked (`storageOutside`, serve's --confine-storage).
 */
import { lstatSync, readdirSync, realpathSync, type Dirent } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { readAlternates } from '../repo/alternates.js';
import { commonDirOf, locateRepository } from '../repo/discover.js';
import type { ServeHooks } from './http.js';

/**
 * The directory name object pools live under (admin/pool.ts): never a
 * served repository or a part of one's name, so a pool, which holds the
 * objects of every fork, is not fetched past the forks' rules.
 */
export const RESERVED_SEGMENT = '@pools';

/**
 * realpath(3) in one call (the kernel and libc resolve each component):
 * node's own realpathSync makes an lstat and a Stats object per component
 * in JavaScript, and a request resolves the root and its repository, ~11
 * components here, on every request.
 */
const realpath = (p: string): string => realpathSync.native(p);

/** A repository directory under `root`, or undefined ("not found" and "not allowed" alike). */
export function resolveUnderRoot(root: string, requested: string): string | undefined {
  return locateUnderRoot(root, requested)?.dir;
}

/**
 * resolveUnderRoot(), with the `.git` file it went through when it did
 * (`gitFileAt`, the path as entered): enter_repo() checks the owner of
 * that file as well as of the directory it names.
 */
export function locateUnderRoot(root: string, requested: string): { dir: string; gitFileAt?: string } | undefined {
  if (requested.includes('\0') || requested.includes('\\')) return undefined;
  const segments = requested.split('/').filter((s) => s.length > 0 && s !== '.');
  if (segments.some((s) => s === '..' || s.startsWith('~') || s === RESERVED_SEGMENT)) return undefined;
  let realRoot: string;
  try { realRoot = realpath(root); } catch { return undefined; }
  // a root that is itself a repository is served as `/`, `/<name>` and `/<name>.git`
  const name = basename(realRoot).replace(/\.git$/, '');
  if (segments.length === 0 || (segments.length === 1 && (segments[0] === name || segments[0] === `${name}.git`))) {
    try {
      const gd = realpath(locateRepository(realRoot, true).gitDir);
      if (within(realRoot, gd)) return { dir: gd };
    } catch {
      try {
        const loc = locateRepository(`${realRoot}/.git`, true);
        const gd = realpath(loc.gitDir);
        if (within(realRoot, gd)) return loc.gitFile !== undefined ? { dir: gd, gitFileAt: loc.usedPath } : { dir: gd };
      } catch { /* not a repository itself */ }
    }
  }
  const candidate = resolve(realRoot, ...segments);
  if (!within(realRoot, candidate)) return undefined;
  let loc: ReturnType<typeof locateRepository>;
  try { loc = locateRepository(candidate); } catch { return undefined; }
  let real: string;
  try { real = realpath(loc.gitDir); } catch { return undefined; }
  if (!within(realRoot, real)) return undefined;
  return loc.gitFile !== undefined && loc.usedPath !== undefined ? { dir: real, gitFileAt: loc.usedPath } : { dir: real };
}

/**
 * A served repository's one name, however a request spelled it: its git
 * directory relative to the root, `/`-separated, without a trailing
 * `.git` or `/.git` (`group/p` for `group/p.git`, `wt` for the work tree
 * `wt` and its `wt/.git`). A root that is itself a repository is named
 * after its directory. undefined: not under the root.
 */
export function repositoryName(root: string, gitDir: string): string | undefined {
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return undefined; }
  if (!within(realRoot, gitDir)) return undefined;
  const rel = relative(realRoot, gitDir).split(sep).join('/');
  return canonicalName(rel === '' || rel === '.git' ? basename(realRoot) : rel);
}

/** `/name.git/`, `name/.git`, `name` → `name` (what names and rule patterns are compared as). */
export function canonicalName(path: string): string {
  return path.replace(/^\/+|\/+$/g, '').replace(/(?:\/\.git|\.git)$/, '');
}

function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r));
}

/**
 * Where a repository's storage leaves `root`, or undefined when all of it
 * lies inside: its git directory, `commondir`, `HEAD`, the `objects` and
 * `refs` directories and `packed-refs` (symlinked or not), every object
 * directory reachable through `objects/info/alternates` (and the server's
 * GIT_OBJECT_DIRECTORY / GIT_ALTERNATE_OBJECT_DIRECTORIES), and every
 * symlink inside `refs/`, the object directories' top level, `pack/`,
 * `info/` and loose-object fan-out directories. Paths are compared after
 * realpath, so a symlink is fine when it stays inside the root.
 *
 * Directory entries come from readdir's file types (no stat per file);
 * only symlinks are resolved. The answer holds for the moment it is
 * computed: someone who can write into the repository while it is served
 * can race it.
 */
export function storageOutside(root: string, gitDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return `the served root ${root} cannot be resolved`; }
  const outside = (what: string, p: string): string | undefined => {
    let real: string;
    try { real = realpathSync(p); } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // absent: nothing is read from it; a dangling or looping link is refused (it may point out later)
      if (code === 'ENOENT' && !isLink(p)) return undefined;
      return `${what} (${p}) cannot be resolved`;
    }
    return within(realRoot, real) ? undefined : `${what} leads to ${real}`;
  };
  const rel = (p: string) => relative(gitDir, p) || '.';
  const first = (...checks: Array<() => string | undefined>) => { for (const c of checks) { const r = c(); if (r) return r; } return undefined; };

  /** symlinks among a directory's entries (recursively for refs) */
  const links = (dir: string, recurse: boolean, depth = 0): string | undefined => {
    let ents: Dirent[];
    try { ents = readdirSync(dir, { withFileTypes: true }); } catch { return undefined; }
    for (const e of ents) {
      const p = join(dir, e.name);
      if (e.isSymbolicLink()) { const r = outside(rel(p), p); if (r) return r; }
      else if (recurse && e.isDirectory() && depth < 64) { const r = links(p, true, depth + 1); if (r) return r; }
    }
    return undefined;
  };
  const objectDir = (what: string, dir: string): string | undefined => first(
    () => outside(what, dir),
    () => links(dir, false),
    () => links(join(dir, 'pack'), false),
    () => links(join(dir, 'info'), true), // alternates, commit-graph chains (read by pack-objects)
    () => {
      let ents: Dirent[];
      try { ents = readdirSync(dir, { withFileTypes: true }); } catch { return undefined; }
      for (const e of ents) if (e.isDirectory() && /^[0-9a-f]{2}$/.test(e.name)) { const r = links(join(dir, e.name), false); if (r) return r; }
      return undefined;
    },
  );

  const common = commonDirOf(gitDir);
  const objects = env.GIT_OBJECT_DIRECTORY ?? join(common, 'objects');
  const found = first(
    () => outside('the git directory', gitDir),
    () => outside('commondir', common),
    () => outside('HEAD', join(gitDir, 'HEAD')),
    () => outside('refs', join(common, 'refs')),
    () => outside('packed-refs', join(common, 'packed-refs')),
    () => links(join(common, 'refs'), true),
    () => (common !== gitDir ? links(join(gitDir, 'refs'), true) : undefined),
    () => objectDir('objects', objects),
  );
  if (found) return found;
  // alternates, as the object database follows them (depth 5, relative to the naming directory)
  const seen = new Set<string>([resolve(objects)]);
  const queue: Array<{ dir: string; depth: number; what: string }> = [{ dir: resolve(objects), depth: 0, what: 'objects' }];
  for (const a of (env.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? '').split(':').filter(Boolean)) queue.push({ dir: resolve(a), depth: 1, what: 'GIT_ALTERNATE_OBJECT_DIRECTORIES' });
  while (queue.length) {
    const { dir, depth, what } = queue.shift()!;
    if (depth > 0) {
      if (seen.has(dir)) continue;
      seen.add(dir);
      const r = objectDir(`${what} names ${dir}, which`, dir);
      if (r) return r;
    }
    if (depth >= 5) continue;
    const alts = readAlternates(dir);
    if (alts.unreadable.length) return `objects/info/alternates in ${dir} has a line that cannot be read`;
    for (const alt of alts.dirs) {
      queue.push({ dir: alt, depth: depth + 1, what: `${relative(realRoot, join(dir, 'info', 'alternates')) || 'alternates'}` });
    }
  }
  return undefined;
}

function isLink(p: string): boolean {
  try { return lstatSync(p).isSymbolicLink(); } catch { return false; }
}

/** What a client is told about a repository refused by confineStorage (the log has the detail). */
export const STORAGE_REFUSED = 'repository not served: its storage leaves the served root';

/** With `confineStorage`: where the repository's storage leaves the root, else undefined. */
export function confinedStorage(opts: Pick<ServeHooks, 'confineStorage' | 'root' | 'env'>, dir: string): string | undefined {
  return opts.confineStorage ? storageOutside(opts.root ?? dir, dir, opts.env ?? process.env) : undefined;
}

