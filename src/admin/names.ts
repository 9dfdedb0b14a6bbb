/**
 * The names a repository may be created under. A request may name any
 * path to fetch (paths.ts finds what is there); a path that is to be made
 * is held to more: each component begins with a letter or digit and holds
 * only letters, digits and `- . _ + @` (gitolite's REPONAME_PATT, without
 * its `/`-anywhere), no component holds `..` or ends in `.`, `.lock` or
 * (but the last) `.git`,
 * at most MAX_DEPTH components and MAX_NAME_BYTES bytes in all. The
 * repository is `<root>/<name>.git`; none of the directories above it may
 * be a repository (a repository inside another one's directory would be
 * served as the outer one's work tree).
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import { isGitDirectory } from '../repo/discover.js';

/** components a created repository's name may have (`group/sub/name`: 3) */
export const MAX_DEPTH = 8;
/** bytes a created repository's name may have, without `.git` */
export const MAX_NAME_BYTES = 200;

const COMPONENT = /^[A-Za-z0-9][A-Za-z0-9._+@-]*$/;

/** A client-supplied string shown in a message: printable, short. */
export function shown(s: string): string {
  const clean = s.replace(/[\x00-\x1f\x7f]/g, '?');
  return clean.length > 100 ? `${clean.slice(0, 100)}…` : clean;
}

const badName = (requested: string, why: string) =>
  new GitwireError('GW_REPO_NAME', `cannot create '${shown(requested)}': ${why}`, { data: { why } });

/**
 * `group/name` for a requested path (`/group/name.git`, `group/name/`, `group//name`
 * alike); throws GW_REPO_NAME when it may not be created.
 */
export function newRepositoryName(requested: string): string {
  if (Buffer.byteLength(requested) > 4 * MAX_NAME_BYTES) throw badName(requested, `the name is longer than ${MAX_NAME_BYTES} bytes`);
  const parts = requested.split('/').filter((s) => s.length > 0);
  if (parts.length === 0) throw badName(requested, 'the name is empty');
  const last = parts.length - 1;
  parts[last] = parts[last]!.replace(/\.git$/, '');
  if (parts.length > MAX_DEPTH) throw badName(requested, `the name has more than ${MAX_DEPTH} components`);
  for (const [i, p] of parts.entries()) {
    if (!COMPONENT.test(p)) throw badName(requested, `'${shown(p)}': a component begins with a letter or digit and holds only letters, digits and - . _ + @`);
    if (p.endsWith('.lock')) throw badName(requested, `'${shown(p)}': a component may not end in .lock`);
    // `x..git`, `a..b`, `x.`: what git refuses in a ref name, and what a path folds or a filesystem trims
    if (p.includes('..') || p.endsWith('.')) throw badName(requested, `'${shown(p)}': a component may not hold '..' or end in '.'`);
    if (i < last && p.endsWith('.git')) throw badName(requested, `'${shown(p)}': only the last component may end in .git`);
  }
  const name = parts.join('/');
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) throw badName(requested, `the name is longer than ${MAX_NAME_BYTES} bytes`);
  return name;
}

/**
 * Refuses (GW_REPO_NAME) a name (newRepositoryName's) one of whose
 * directories above the repository under `root` is a repository (`x.git`
 * beside `x`, or `x` itself), or is not a directory (a file, a symlink).
 * Directories that do not exist yet are made by whoever creates it.
 */
export function assertNothingAbove(root: string, name: string): void {
  const parts = name.split('/');
  let dir = root;
  for (const [i, p] of parts.slice(0, -1).entries()) {
    dir = join(dir, p);
    const above = parts.slice(0, i + 1).join('/');
    if (isGitDirectory(`${dir}.git`)) throw badName(name, `'${shown(above)}' is a repository`);
    const st = lstatSync(dir, { throwIfNoEntry: false });
    if (!st) return;
    if (!st.isDirectory()) throw badName(name, `'${shown(above)}' is not a directory`);
    if (isGitDirectory(dir) || isGitDirectory(join(dir, '.git'))) throw badName(name, `'${shown(above)}' is a repository`);
  }
}

/**
 * Where a repository named `name` (newRepositoryName's) lives under `root`:
 * `<root>/<name>.git`. Throws GW_REPO_NAME when a directory above it is a
 * repository, or is not a directory (a file, a symlink); GW_REPO_EXISTS
 * when `<root>/<name>` is a repository (bare, or a work tree).
 */
export function newRepositoryPath(root: string, name: string): string {
  assertNothingAbove(root, name);
  // `x` (bare, or a work tree) and `x.git` are one name to rules, caches, logs and webhooks: never two repositories
  const twin = join(root, name);
  if (isGitDirectory(twin) || isGitDirectory(join(twin, '.git'))) {
    throw new GitwireError('GW_REPO_EXISTS', `cannot create '${shown(name)}': it exists as '${shown(name)}' (without .git)`, { data: { why: 'twin', path: twin } });
  }
  return join(root, `${name}.git`);
}
