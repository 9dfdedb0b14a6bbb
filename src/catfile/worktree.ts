/** The work tree of a repository (undefined when bare), and cwd-relative paths in it. */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import type { Repository } from '../repo/repository.js';

export function worktreeOf(repo: Repository): string | undefined {
  const wt = repo.env.GIT_WORK_TREE ?? repo.config.getString('core.worktree');
  if (wt) return resolve(wt);
  if (repo.config.getBool('core.bare', false)) return undefined;
  if (basename(repo.gitDir) === '.git') return dirname(repo.gitDir);
  const gd = join(repo.gitDir, 'gitdir');
  if (existsSync(gd)) return dirname(readFileSync(gd, 'utf8').trim());
  return undefined;
}

/**
 * resolve_relative_path() for `<rev>:./<path>` and `<rev>:../<path>`: the
 * path from the work tree's root, or an error message as git dies with.
 */
export function resolveRelativePath(repo: Repository, rel: string, cwd = process.cwd()): { path: string } | { error: string } | undefined {
  if (!rel.startsWith('./') && !rel.startsWith('../')) return undefined;
  const wt = worktreeOf(repo);
  const real = (p: string) => { try { return realpathSync(p); } catch { return p; } };
  if (!wt) return { error: "relative path syntax can't be used outside working tree" };
  const root = real(wt);
  const here = real(cwd);
  const prefix = relative(root, here);
  if (prefix.startsWith('..')) return { error: "relative path syntax can't be used outside working tree" };
  const parts: string[] = prefix ? prefix.split(sep) : [];
  for (const p of rel.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') {
      if (!parts.length) return { error: `'${rel}' is outside repository at '${root}'` };
      parts.pop();
      continue;
    }
    parts.push(p);
  }
  return { path: parts.join('/') + (rel.endsWith('/') && parts.length ? '/' : '') };
}

