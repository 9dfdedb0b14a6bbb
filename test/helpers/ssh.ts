/**
 * The built-in SSH server with the real OpenSSH client: user keys made by
 * ssh-keygen, a key directory, a host key file, a known_hosts made from
 * it, and GIT_SSH_COMMAND with StrictHostKeyChecking=yes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServe, type ServerProc } from './server-process.js';
import { gitEnv } from './git.js';
import { finished, noteLine } from './child-wait.js';

export interface SshUser { name: string; key: string; pub: string }

export interface SshKit {
  dir: string;
  keys: string;
  hostKey: string;
  knownHosts: string;
  /** a new ed25519 key pair, copied into the key directory as `<file>` unless `file` is false */
  user(name: string, file?: string | false): SshUser;
}

export function sshKit(dir: string): SshKit {
  const keys = join(dir, 'keys');
  mkdirSync(keys, { recursive: true });
  let n = 0;
  return {
    dir, keys, hostKey: join(dir, 'host_key'), knownHosts: join(dir, 'known_hosts'),
    user(name, file) {
      const key = join(dir, `id-${name}-${++n}`);
      const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', key], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
      if (file !== false) {
        const dest = join(keys, file ?? `${name}.pub`);
        mkdirSync(join(dest, '..'), { recursive: true });
        copyFileSync(`${key}.pub`, dest);
      }
      return { name, key, pub: `${key}.pub` };
    },
  };
}

/** `ssh` arguments for a user against a server on `port` (batch mode: no prompts, host key checked) */
export function sshArgs(kit: SshKit, u: SshUser, port: number): string[] {
  return ['-i', u.key, '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${kit.knownHosts}`,
    '-o', 'StrictHostKeyChecking=yes', '-o', process.env.SSH_TEST_LOGLEVEL ? `LogLevel=${process.env.SSH_TEST_LOGLEVEL}` : 'LogLevel=ERROR', '-p', String(port)];
}

export function gitSshEnv(kit: SshKit, u: SshUser, port: number): NodeJS.ProcessEnv {
  return { GIT_SSH_COMMAND: `ssh ${sshArgs(kit, u, port).map((a) => `'${a}'`).join(' ')}`, GIT_SSH_VARIANT: 'ssh' };
}

/** known_hosts for the server's host key (read with ssh-keygen -y, as an operator would) */
export function writeKnownHosts(kit: SshKit, port: number): void {
  const r = spawnSync('ssh-keygen', ['-y', '-f', kit.hostKey], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen -y: ${r.stderr}`);
  writeFileSync(kit.knownHosts, `[127.0.0.1]:${port} ${r.stdout.trim()}\n`);
}

/** `gitwire serve <root> --ssh 0` with the kit's keys and host key; known_hosts written. */
export async function startSsh(kit: SshKit, root: string, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServerProc & { sshPort: number }> {
  const s = await startServe(root, ['--ssh', '0', '--ssh-keys', kit.keys, '--ssh-host-key', kit.hostKey, ...args], env);
  writeKnownHosts(kit, s.sshPort!);
  return s as ServerProc & { sshPort: number };
}

/** Run ssh (the OpenSSH client) asynchronously. */
export async function sshRun(kit: SshKit, u: SshUser, port: number, extra: string[], input = '', timeoutMs = 300_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const c = spawn('ssh', [...sshArgs(kit, u, port), ...extra], { env: gitEnv, detached: true });
  let stdout = '', stderr = '';
  c.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  // a server that ends the session before reading all of the input: EPIPE on stdin, the answer is on stdout/stderr
  c.stdin.on('error', () => undefined);
  c.stdin.end(input);
  // past the deadline ssh is killed (code null), stderr's last line says what was left
  const f = await finished(c, `ssh ${extra.join(' ')}`, { timeoutMs, group: true });
  return { code: f.code, stdout, stderr: stderr + noteLine(f) };
}

