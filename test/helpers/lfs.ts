/**
 * Git LFS with the real git-lfs client: a user configuration with the LFS
 * filters (`git lfs install` into its own global config), credentials in a
 * store file, bcrypt htpasswd users, and files made with known bytes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream, mkdirSync, openSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { gitEnv } from './git.js';
import { finished, noteLine } from './child-wait.js';

export const haveGitLfs = spawnSync('git', ['lfs', 'version'], { env: gitEnv }).status === 0;

export interface LfsHome { dir: string; env: NodeJS.ProcessEnv; creds: string }

/** A client home: global config with `git lfs install`, no multiplexed ssh (no lingering master), credentials from `creds`. */
export function lfsHome(dir: string, extra: Record<string, string> = {}): LfsHome {
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'gitconfig');
  const creds = join(dir, 'credentials');
  writeFileSync(config, '');
  writeFileSync(creds, '');
  const env: NodeJS.ProcessEnv = { ...gitEnv, GIT_CONFIG_GLOBAL: config, HOME: dir, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', SSH_ASKPASS: '/bin/false' };
  const run = (args: string[]) => {
    const r = spawnSync('git', args, { env });
    if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  };
  run(['lfs', 'install', '--skip-repo']);
  run(['config', '--global', 'credential.helper', `store --file=${creds}`]);
  run(['config', '--global', 'lfs.ssh.automultiplex', 'false']);
  run(['config', '--global', 'init.defaultBranch', 'main']);
  for (const [k, v] of Object.entries(extra)) run(['config', '--global', k, v]);
  return { dir, env, creds };
}

/** Put `user:password` for `http://127.0.0.1:<port>` into the home's credential store. */
export function setCredentials(h: LfsHome, port: number, user: string, password: string): void {
  writeFileSync(h.creds, `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}\n`);
}

/** An htpasswd file of bcrypt users (cost 4: fast, still bcrypt). */
export function writeHtpasswd(file: string, users: Record<string, string>): void {
  writeFileSync(file, Object.entries(users).map(([u, p]) => `${u}:${bcrypt.hashSync(p, 4).replace(/^\$2b\$/, '$2y$')}\n`).join(''));
}

export interface Run { code: number; stdout: string; stderr: string }

/** Run git (or git lfs) asynchronously: the server may live in this process. */
export async function gitRun(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 300_000): Promise<Run> {
  const c = spawn('git', args, { cwd, env, detached: true });
  let stdout = '', stderr = '';
  c.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  // past the deadline git, git-lfs and whatever holds their pipes are killed; stderr's last line says what was left
  const f = await finished(c, `git ${args.join(' ')}`, { timeoutMs, group: true });
  return { code: f.code ?? -1, stdout, stderr: stderr + (f.error ? `\n[test helper] git did not start: ${f.error.message}\n` : '') + noteLine(f) };
}

/** A file of `size` random bytes, written in 1 MiB pieces. */
export function writeBlob(file: string, size: number): void {
  const fd = openSync(file, 'w');
  const piece = Buffer.alloc(1 << 20);
  try {
    for (let left = size; left > 0;) {
      randomFillSync(piece);
      const n = Math.min(left, piece.length);
      writeSync(fd, piece, 0, n);
      left -= n;
    }
  } finally { closeSync(fd); }
}

/** SHA-256 of a file, streamed. */
export function fileSha256(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file).on('data', (c) => h.update(c)).on('end', () => resolve(h.digest('hex'))).on('error', reject);
  });
}

export function sha256(b: Buffer | string): string { return createHash('sha256').update(b).digest('hex'); }

/** Where the local store keeps an object in a bare repository. */
export function objectFile(gitDir: string, oid: string): string {
  return join(gitDir, 'lfs', 'objects', oid.slice(0, 2), oid.slice(2, 4), oid);
}
