/** `gitwire serve --ssh`: the built-in SSH server's flags. */
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AuthRules } from '../transport/auth-rules.js';
import type { ServeOptions } from '../transport/server.js';
import type { SshLimits } from '../transport/ssh/index.js';
import { DEFAULT_SSH_LIMITS } from '../transport/ssh/limits.js';

/** parseArgs rows for the SSH flags */
export const SSH_FLAGS = {
  ssh: { type: 'string' },
  'ssh-host-key': { type: 'string', multiple: true },
  'ssh-keys': { type: 'string' },
  'ssh-max-connections': { type: 'string' },
  'ssh-max-unauthenticated': { type: 'string' },
  'ssh-handshake-rate': { type: 'string' },
  'ssh-kex': { type: 'string' },
  'ssh-login-grace-time': { type: 'string' },
  'ssh-max-auth-tries': { type: 'string' },
  'ssh-max-channels': { type: 'string' },
  'ssh-idle-timeout': { type: 'string' },
  'ssh-keepalive': { type: 'string' },
  'ssh-keepalive-count': { type: 'string' },
} as const;

/** `gitwire serve --help` for the SSH flags: every key of SSH_FLAGS, with its value and what it does */
export const SSH_HELP: Record<keyof typeof SSH_FLAGS, [argh: string, help: string]> = {
  ssh: ['port', 'serve SSH on this port (needs --ssh-keys)'],
  'ssh-host-key': ['file', 'host key (repeatable); default $XDG_STATE_HOME/gitwire/ssh_host_ed25519_key, made when missing'],
  'ssh-keys': ['dir', "users' public keys: <user>.pub, <user>@<where>.pub"],
  'ssh-max-connections': ['n', 'SSH connections at once'],
  'ssh-max-unauthenticated': ['n', 'connections from one address (IPv6: one /64) not yet authenticated'],
  'ssh-handshake-rate': ['n', 'new connections a second from one address, burst twice that; 0: unlimited'],
  'ssh-kex': ['list', 'key exchange methods offered (a,b; +a,b adds to the default; -a,b removes)'],
  'ssh-login-grace-time': ['s', 'seconds from accept to authenticated'],
  'ssh-max-auth-tries': ['n', 'authentication attempts per connection'],
  'ssh-max-channels': ['n', 'channels per connection'],
  'ssh-idle-timeout': ['s', 'seconds a connection may stay idle'],
  'ssh-keepalive': ['s', 'keepalive interval; 0: none'],
  'ssh-keepalive-count': ['n', 'unanswered keepalives before the connection is dropped'],
};

const LIMIT_FLAGS: Record<string, keyof SshLimits> = {
  'ssh-max-connections': 'maxConnections',
  'ssh-max-unauthenticated': 'maxUnauthenticatedPerAddress',
  'ssh-handshake-rate': 'handshakeRate',
  'ssh-login-grace-time': 'loginGraceTime',
  'ssh-max-auth-tries': 'maxAuthTries',
  'ssh-max-channels': 'maxChannels',
  'ssh-idle-timeout': 'idleTimeout',
  'ssh-keepalive': 'keepaliveInterval',
  'ssh-keepalive-count': 'keepaliveCountMax',
};

/** An SSH limit flag's default (DEFAULT_SSH_LIMITS, the one table), for --help; undefined for the other flags */
export function sshDefault(flag: string): number | undefined {
  const k = Object.hasOwn(LIMIT_FLAGS, flag) ? LIMIT_FLAGS[flag] : undefined;
  return k === undefined ? undefined : DEFAULT_SSH_LIMITS[k];
}

/** Where the host key lives when no --ssh-host-key is given. */
export function defaultHostKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(state, 'gitwire', 'ssh_host_ed25519_key');
}

type Values = Partial<Record<keyof typeof SSH_FLAGS, string | string[] | undefined>>;

export interface SshSetup {
  options: NonNullable<ServeOptions['sshOptions']>;
  /** `ssh-keygen -l` line of each host key, with its file */
  hostKeys: Array<{ file: string; fingerprint: string; created: boolean }>;
  /** keys found in --ssh-keys at start-up (for the start-up line) */
  users: number;
}

/**
 * The SSH server's options from the flags, or undefined without --ssh.
 * `usage` exits; `warn` goes to the log.
 */
export async function sshSetup(v: Values, root: string, rules: AuthRules | undefined, usage: (msg: string) => never, warn: (msg: string) => void,
  creation?: Omit<import('../transport/ssh/index.js').SshCommandOptions, 'root' | 'rules'>): Promise<SshSetup | undefined> {
  if (v.ssh === undefined) {
    for (const k of Object.keys(SSH_FLAGS)) if (k !== 'ssh' && v[k as keyof Values] !== undefined) usage(`--${k} needs --ssh <port>`);
    return undefined;
  }
  if (v['ssh-keys'] === undefined) usage('--ssh needs --ssh-keys <dir> (public keys: <user>.pub, <user>@<where>.pub)');
  const limits: Partial<SshLimits> = {};
  for (const [flag, key] of Object.entries(LIMIT_FLAGS)) {
    const s = v[flag as keyof Values] as string | undefined;
    if (s === undefined) continue;
    if (!/^\d+(\.\d+)?$/.test(s)) usage(`--${flag}: not a number: '${s}'`);
    limits[key] = Number(s);
  }
  const { loadHostKey, KeyDir, keyDirAuthenticate, rulesAuthorize, kexList, sshCommands } = await import('../transport/ssh/index.js');
  const kex = v['ssh-kex'] as string | undefined;
  if (kex !== undefined) { try { kexList(kex); } catch (e) { usage(`--ssh-kex: ${(e as Error).message}`); } }
  const files = (v['ssh-host-key'] as string[] | undefined) ?? [defaultHostKeyFile()];
  const hostKeys = [];
  for (const f of files) {
    try { hostKeys.push(loadHostKey(resolve(f), warn)); } catch (e) { usage(`--ssh-host-key: ${(e as Error).message}`); }
  }
  const keyDir = resolve(v['ssh-keys'] as string);
  // like a missing --htpasswd file: a key directory that is not there, or holds no key, is fatal at start
  let st;
  try { st = statSync(keyDir); } catch (e) { throw new Error(`--ssh-keys: cannot read ${keyDir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  if (!st.isDirectory()) throw new Error(`--ssh-keys: ${keyDir} is not a directory`);
  const keys = new KeyDir(keyDir, warn);
  await keys.refresh();
  if (keys.size === 0) throw new Error(`--ssh-keys: no usable public key in ${keyDir} (<user>.pub or <user>@<where>.pub, as ssh-keygen writes them)`);
  return {
    options: {
      hostKeys: hostKeys.map((h) => h.key),
      authenticate: keyDirAuthenticate(keys),
      // without rules, any known key may fetch and push
      authorize: rulesAuthorize(rules, root) ?? (() => true),
      // info, repo create, repo delete (admin rules), help
      commands: sshCommands({ root, rules, ...creation }),
      sshLimits: limits,
      ...(kex !== undefined ? { kex } : {}),
    },
    hostKeys: hostKeys.map((h) => ({ file: h.file, fingerprint: h.fingerprint, created: h.created })),
    users: keys.size,
  };
}
