/** Run real git in tests, isolated from the user's configuration. */
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
export const BIN = join(ROOT, 'bin', 'gitwire');

export const gitEnv: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'A U Thor',
  GIT_AUTHOR_EMAIL: 'author@example.com',
  GIT_COMMITTER_NAME: 'C O Mitter',
  GIT_COMMITTER_EMAIL: 'committer@example.com',
  GIT_AUTHOR_DATE: '1700000000 +0000',
  GIT_COMMITTER_DATE: '1700000000 +0000',
  GIT_TERMINAL_PROMPT: '0',
  LC_ALL: 'C',
};
delete gitEnv.GIT_DIR;
delete gitEnv.GIT_NAMESPACE;
delete gitEnv.GIT_PROTOCOL;
delete gitEnv.GIT_CONFIG_PARAMETERS;

export interface GitOpts { cwd?: string; input?: string | Buffer; env?: NodeJS.ProcessEnv }

export function git(args: string[], opts: GitOpts = {}): string {
  return execFileSync('git', args, { cwd: opts.cwd, input: opts.input, env: { ...gitEnv, ...opts.env }, maxBuffer: 1 << 30 }).toString();
}

export function gitBuf(args: string[], opts: GitOpts = {}): Buffer {
  return execFileSync('git', args, { cwd: opts.cwd, input: opts.input, env: { ...gitEnv, ...opts.env }, maxBuffer: 1 << 30 });
}

export function run(cmd: string, args: string[], opts: GitOpts = {}): SpawnSyncReturns<Buffer> {
  return spawnSync(cmd, args, { cwd: opts.cwd, input: opts.input, env: { ...gitEnv, ...opts.env }, maxBuffer: 1 << 30 });
}

export function tmp(prefix = 'gitwire-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // rm -rf for trees too deep for rmSync's recursion (a ref 2,000 levels down)
  return { dir, cleanup: () => { try { rmSync(dir, { recursive: true, force: true }); } catch { spawnSync('rm', ['-rf', dir]); } } };
}
