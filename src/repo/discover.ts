/**
 * Find a repository's git directory the way `git upload-pack` does
 * (enter_repo): `<dir>/.git`, `<dir>`, `<dir>.git/.git`, `<dir>.git`,
 * following `.git` files (`gitdir: …`).
 */
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { GitwireError, notARepo } from '../errors.js';

/*
 * A path that is not there is the common answer here (a server locates a
 * repository per request, trying `<dir>/.git` first): stats are made with
 * throwIfNoEntry false, as an ENOENT thrown costs an Error with its stack.
 */
function isDir(p: string): boolean {
  try { return statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false; } catch { return false; }
}

function realpathOr(p: string): string {
  try { return realpathSync(p); } catch { return p; }
}

/** Read a `.git` file (`gitdir: <path>`); undefined if `p` is not one. */
export function readGitFile(p: string): string | undefined {
  let st;
  try { st = statSync(p, { throwIfNoEntry: false }); } catch { return undefined; }
  if (!st?.isFile()) return undefined;
  return gitFileTarget(p);
}

/** The `gitdir:` of the regular file `p`. */
function gitFileTarget(p: string): string | undefined {
  const text = readFileSync(p, 'utf8');
  const m = /^gitdir: (.*?)\s*$/m.exec(text);
  if (!m) return undefined;
  return isAbsolute(m[1]!) ? m[1]! : resolve(dirname(p), m[1]!);
}

/** Looks like a git dir: HEAD, objects/ and refs/ (or a commondir holding them). */
export function isGitDirectory(dir: string): boolean {
  return gitDirectoryCommon(dir) !== undefined;
}

/** isGitDirectory(), giving the common directory (commondirOf) when it is one. */
function gitDirectoryCommon(dir: string): string | undefined {
  if (!existsSync(join(dir, 'HEAD'))) return undefined;
  const common = commonDirOf(dir);
  return isDir(join(common, 'objects')) && isDir(join(common, 'refs')) ? common : undefined;
}

export interface Located {
  gitDir: string;
  commonDir: string;
  bare: boolean;
  /** the path entered, as given with the suffix that matched (enter_repo's `used_path`): a git directory or a `.git` file */
  usedPath?: string;
  /** the git directory named by a `.git` file at usedPath */
  gitFile?: string;
}

export function commonDirOf(gitDir: string): string {
  const cd = join(gitDir, 'commondir');
  if (!existsSync(cd)) return gitDir;
  const c = readFileSync(cd, 'utf8').trim();
  return isAbsolute(c) ? c : resolve(gitDir, c);
}

/**
 * enter_repo(): with `strict`, only the exact path is accepted.
 * Throws git's "'<dir>' does not appear to be a git repository".
 */
export function locateRepository(dir: string, strict = false): Located {
  const candidates = strict ? [''] : ['/.git', '', '.git/.git', '.git'];
  const base = dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
  for (const suffix of candidates) {
    const p = resolve(base + suffix);
    let gd: string | undefined;
    let gitFile: string | undefined;
    // one stat says which it is: a directory, a `.git` file, or nothing (most candidates are not there)
    let st;
    try { st = statSync(p, { throwIfNoEntry: false }); } catch { st = undefined; }
    if (st?.isDirectory()) gd = p;
    else if (st?.isFile()) gd = gitFile = gitFileTarget(p);
    const common = gd === undefined ? undefined : gitDirectoryCommon(gd);
    if (gd && common !== undefined) {
      const loc: Located = { gitDir: gd, commonDir: common, bare: !(suffix.endsWith('/.git')), usedPath: base + suffix };
      if (gitFile !== undefined) loc.gitFile = realpathOr(gitFile);
      return loc;
    }
  }
  throw notARepo(dir);
}

/**
 * setup_git_directory() for commands run inside a work tree (cat-file):
 * GIT_DIR if set, else the first of `.`, its parents, that holds a
 * repository (`.git` directory or file, or a bare repository).
 */
export function discoverRepository(start: string, env: NodeJS.ProcessEnv = process.env): Located & { workTree?: string } {
  if (env.GIT_DIR) return locateRepository(env.GIT_DIR, true);
  let dir = resolve(start);
  for (;;) {
    for (const cand of [join(dir, '.git'), dir]) {
      const isGitFile = !isDir(cand);
      const gd = isGitFile ? readGitFile(cand) : cand;
      if (gd && isGitDirectory(gd)) {
        const loc: Located & { workTree?: string } = { gitDir: gd, commonDir: commonDirOf(gd), bare: cand === dir, usedPath: cand };
        if (cand !== dir) loc.workTree = dir;
        if (isGitFile) loc.gitFile = cand;
        return loc;
      }
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new GitwireError('GW_NOT_A_REPO', 'not a git repository (or any of the parent directories): .git');
}
