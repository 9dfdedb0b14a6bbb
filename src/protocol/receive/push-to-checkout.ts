/**
 * receive.denyCurrentBranch=updateInstead: a push to a branch checked out
 * in a worktree updates that worktree too (git's update_worktree()). The
 * `push-to-checkout` hook does it when there is one; otherwise
 * push_to_deploy's steps run: `update-index --refresh`, `diff-files`,
 * `diff-index --cached` (a clean tree and index, or the push is refused),
 * then `read-tree -u -m <new>`. Their output goes to receive-pack's own
 * stderr, as in git (not the sideband).
 *
 * The worktrees are git's get_worktrees(): the main one (the common
 * directory's real path without `/.git`; bare or not) and each
 * `worktrees/<id>` with its `gitdir` file and HEAD.
 */
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnChild } from '../../util/spawn.js';
import type { Hooks } from './hooks.js';
import { worktreeHeadSymref } from '../../repo/refs/index.js';

export interface Worktree {
  /** the worktree's top directory */
  path: string;
  /** its git directory (the common one for the main worktree) */
  gitDir: string;
  bare: boolean;
  /** what its HEAD points to (a ref name), if a symref */
  head?: string;
}

function real(p: string): string {
  try { return realpathSync(p); } catch { return resolve(p); }
}

function symrefOf(file: string): string | undefined {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch { return undefined; }
  const m = /^ref: (.*?)\s*$/.exec(text);
  return m ? m[1] : undefined;
}

/** get_worktrees(): the main worktree first, then the linked ones (a reftable repository's read from their own stacks). */
export function listWorktrees(commonDir: string, mainHead: string | undefined, mainBare: boolean, reftableHashLen?: number): Worktree[] {
  const out: Worktree[] = [{ path: real(commonDir).replace(/\/\.git$/, ''), gitDir: commonDir, bare: mainBare, head: mainHead }];
  const dir = join(commonDir, 'worktrees');
  let ids: string[] = [];
  try { ids = readdirSync(dir); } catch { return out; }
  for (const id of ids.sort()) {
    const gd = join(dir, id);
    let gitdirFile: string;
    try { gitdirFile = readFileSync(join(gd, 'gitdir'), 'utf8').replace(/\n$/, ''); } catch { continue; }
    const head = reftableHashLen ? worktreeHeadSymref(gd, reftableHashLen) : symrefOf(join(gd, 'HEAD'));
    out.push({ path: real(gitdirFile.replace(/\/\.git$/, '')), gitDir: gd, bare: false, head });
  }
  return out;
}

/** find_shared_symref(worktrees, "HEAD", name) */
export function worktreeOf(wts: Worktree[], name: string): Worktree | undefined {
  return wts.find((w) => w.head === name);
}

export interface UpdateWorktreeOptions {
  worktree: Worktree;
  newHex: string;
  /** the worktree's HEAD before the push points at a commit (else: diff against the empty tree) */
  headBorn: boolean;
  emptyTreeHex: string;
  /** receive-pack's environment; GIT_DIR is set here */
  env: NodeJS.ProcessEnv;
  /** receive-pack's cwd (the repository) */
  cwd: string;
  hooks: Hooks;
  /** receive-pack's stderr */
  stderr: (b: Buffer) => void;
}

function runGit(args: string[], cwd: string, env: NodeJS.ProcessEnv, stdout: 'stderr' | 'ignore', stderr: (b: Buffer) => void): Promise<number> {
  return new Promise((done) => {
    let child;
    try {
      child = spawnChild('git', args, { cwd, env, stdio: ['ignore', stdout === 'stderr' ? 'pipe' : 'ignore', 'pipe'] });
    } catch { done(-1); return; }
    child.stdout?.on('data', stderr);
    child.stderr!.on('data', stderr);
    child.on('error', () => done(-1));
    child.on('close', (code, signal) => done(signal ? -1 : code ?? -1));
  });
}

/** update_worktree(): undefined when the worktree now matches the pushed commit, else the `ng` reason. */
export async function updateWorktree(o: UpdateWorktreeOptions): Promise<string | undefined> {
  const wt = o.worktree;
  if (wt.bare) return 'denyCurrentBranch = updateInstead needs a worktree';
  const env: NodeJS.ProcessEnv = { ...o.env, GIT_DIR: real(wt.gitDir) };
  if (o.hooks.find('push-to-checkout')) {
    const rc = await o.hooks.run('push-to-checkout', {
      args: [o.newHex], env: { ...env, GIT_WORK_TREE: resolve(wt.path) }, onOutput: o.stderr,
    });
    return rc === 0 ? undefined : 'push-to-checkout hook declined';
  }
  // push_to_deploy()
  if (await runGit(['update-index', '-q', '--ignore-submodules', '--refresh'], wt.path, env, 'stderr', o.stderr)) return 'Up-to-date check failed';
  if (await runGit(['diff-files', '--quiet', '--ignore-submodules', '--'], wt.path, env, 'stderr', o.stderr)) return 'Working directory has unstaged changes';
  if (await runGit(['diff-index', '--quiet', '--cached', '--ignore-submodules', o.headBorn ? 'HEAD' : o.emptyTreeHex, '--'], o.cwd, env, 'ignore', o.stderr)) return 'Working directory has staged changes';
  if (await runGit(['read-tree', '-u', '-m', o.newHex], wt.path, env, 'ignore', o.stderr)) return 'Could not update working tree to new HEAD';
  return undefined;
}
