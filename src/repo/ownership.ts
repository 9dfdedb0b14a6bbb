/**
 * Repository ownership, as git checks it since 2.35.2 (CVE-2022-24765;
 * setup.c `ensure_valid_ownership`, `safe_directory_cb`): a repository
 * whose directories another user owns is refused unless `safe.directory`
 * in protected configuration (system, global, command line; never the
 * repository's own) allows it. Each check is a few lstats; the protected
 * configuration is read once and kept until one of its files changes
 * (a stat of each, as the repository pool revalidates config).
 */
import { existsSync, lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { GitwireError } from '../errors.js';
import { Config, parseBool } from './config.js';

/** What enter_repo() checks: the path it entered, and the git directory a `.git` file names. */
export interface OwnedPaths {
  /** the repository's path as entered (enter_repo's `used_path`: a git directory or a `.git` file) */
  path: string;
  /** the git directory a `.git` file at `path` names (read_gitfile), if it is one */
  gitFile?: string;
  /** a work tree's top, where a check also covers it (setup_git_directory's discovery) */
  workTree?: string;
  /** the path the message names, when not gitFile or path (discovery names the directory it stopped in) */
  shown?: string;
}

/** The user a path must belong to: the effective uid, and for root also SUDO_UID's (git-compat-util.h). */
function ownedByCurrentUser(path: string, env: NodeJS.ProcessEnv): boolean {
  const euid = process.geteuid?.();
  if (euid === undefined) return true; // no uids (Windows): git compares SIDs there; not checked here
  let uid: number;
  try { uid = lstatSync(path).uid; } catch { return false; }
  if (euid === 0) {
    if (uid === 0) return true;
    const sudo = env.SUDO_UID;
    if (sudo && /^\d+$/.test(sudo)) return uid === Number(sudo);
  }
  return uid === euid;
}

/** git's sq_quote_buf_pretty: bare when every byte is alphanumeric or `+,-./:=@_^`. */
export function sqQuotePretty(s: string): string {
  if (s === '') return "''";
  if (/^[A-Za-z0-9+,\-./:=@_^]+$/.test(s)) return s;
  return `'${s.replace(/'/g, "'\\''").replace(/!/g, "'\\!'")}'`;
}

/** strbuf_realpath() without die: the last component may be missing; undefined when more is. */
function realPath(p: string): string | undefined {
  try { return realpathSync(p); } catch { /* below */ }
  const parent = dirname(p);
  if (parent === p) return undefined;
  try { return join(realpathSync(parent), basename(p)); } catch { return undefined; }
}

/** `~user`'s home directory from the password file (getpwnam without a native call). */
function homeOf(user: string): string | undefined {
  let text: string;
  try { text = readFileSync('/etc/passwd', 'utf8'); } catch { return undefined; }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f[0] === user && f.length >= 7) return f[5];
  }
  return undefined;
}

let prefixCache: { path: string | undefined; value: string } | undefined;
/** git's runtime prefix for `%(prefix)/`: where the `git` on PATH is installed (`<prefix>/bin/git`), else /usr. */
function gitPrefix(env: NodeJS.ProcessEnv): string {
  if (prefixCache && prefixCache.path === env.PATH) return prefixCache.value;
  let value = '/usr';
  for (const d of (env.PATH ?? '').split(':')) {
    if (!d || !existsSync(join(d, 'git'))) continue;
    try { value = dirname(dirname(realpathSync(join(d, 'git')))); } catch { /* keep /usr */ }
    break;
  }
  prefixCache = { path: env.PATH, value };
  return value;
}

/** git_config_pathname()'s interpolate_path(): `:(optional)`, `%(prefix)/`, `~/`, `~user/`. */
function interpolate(value: string, env: NodeJS.ProcessEnv): string | undefined {
  let v = value.startsWith(':(optional)') ? value.slice(':(optional)'.length) : value;
  if (v.startsWith('%(prefix)/')) return join(gitPrefix(env), v.slice('%(prefix)/'.length));
  if (v.startsWith('~')) {
    const slash = v.indexOf('/');
    const user = slash < 0 ? v.slice(1) : v.slice(1, slash);
    const home = user === '' ? env.HOME : homeOf(user);
    if (home === undefined) return undefined;
    v = home + (slash < 0 ? '' : v.slice(slash));
  }
  return v;
}

/** One `safe.directory` entry of protected configuration, resolved as safe_directory_cb does. */
type SafeEntry =
  | { kind: 'reset' }
  | { kind: 'all' }
  /** resolved: `prefix` for `<dir>/*` (the directory with its `/`), else the exact path */
  | { kind: 'path'; value: string; resolved?: { exact?: string; prefix?: string }; invalid?: boolean };

interface SafeList {
  key: string;
  files: string[];
  stamp: string;
  entries: SafeEntry[];
}

/** Environment variables that change where protected configuration comes from. */
const ENV_KEYS = ['GIT_CONFIG_NOSYSTEM', 'GIT_CONFIG_SYSTEM', 'GIT_CONFIG_GLOBAL', 'HOME', 'XDG_CONFIG_HOME', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT'] as const;

function envKey(env: NodeJS.ProcessEnv): string {
  const parts: string[] = ENV_KEYS.map((k) => env[k] ?? '\u0001');
  const n = Number(env.GIT_CONFIG_COUNT);
  if (Number.isInteger(n) && n > 0 && n < 1000) for (let i = 0; i < n; i++) parts.push(env[`GIT_CONFIG_KEY_${i}`] ?? '', env[`GIT_CONFIG_VALUE_${i}`] ?? '');
  return parts.join('\0');
}

function stampOf(paths: string[]): string {
  return paths.map((p) => {
    try {
      const st = statSync(p, { bigint: true, throwIfNoEntry: false });
      return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : '-';
    } catch { return '-'; }
  }).join('|');
}

/** The files protected configuration is read from (present or not), and those it included. */
function protectedFiles(env: NodeJS.ProcessEnv, cfg: Config): string[] {
  const out = new Set<string>();
  out.add(env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig');
  if (env.GIT_CONFIG_GLOBAL !== undefined) { if (env.GIT_CONFIG_GLOBAL) out.add(env.GIT_CONFIG_GLOBAL); }
  else {
    const home = env.HOME ?? homedir();
    out.add(env.XDG_CONFIG_HOME ? join(env.XDG_CONFIG_HOME, 'git', 'config') : join(home, '.config', 'git', 'config'));
    out.add(join(home, '.gitconfig'));
  }
  for (const e of cfg.entries) {
    if (e.origin !== 'command line') out.add(e.origin);
    // an included file is watched whether or not it held anything (or existed) when read:
    // one made or filled later (a `safe.directory =` that takes access back) is seen then
    if (e.key === 'include.path' && e.value && e.origin !== 'command line') {
      // (the path as config.ts resolves it when it follows the include)
      const p = e.value.startsWith('~/') ? join(homedir(), e.value.slice(2)) : e.value;
      out.add(isAbsolute(p) ? p : resolve(dirname(e.origin), p));
    }
  }
  return [...out];
}

/** A few environments at most (the server's, the CLI's); kept by their config-relevant variables. */
const lists = new Map<string, SafeList>();

function safeList(env: NodeJS.ProcessEnv): SafeList {
  const key = envKey(env);
  const known = lists.get(key);
  if (known && stampOf(known.files) === known.stamp) return known;
  // system, global and command line: Config.load without a git directory is git_protected_config()
  const cfg = Config.load(undefined, env);
  const files = protectedFiles(env, cfg);
  const stamp = stampOf(files);
  const entries: SafeEntry[] = [];
  for (const e of cfg.entries) {
    if (e.key !== 'safe.directory') continue;
    if (e.value === null || e.value === '') entries.push({ kind: 'reset' });
    else if (e.value === '*') entries.push({ kind: 'all' });
    else entries.push({ kind: 'path', value: e.value });
  }
  const list: SafeList = { key, files, stamp, entries };
  if (lists.size >= 16) lists.clear();
  lists.set(key, list);
  return list;
}

/** An entry's comparison form, resolved once it resolves (a directory made later is seen then). */
function resolveEntry(e: Extract<SafeEntry, { kind: 'path' }>, env: NodeJS.ProcessEnv, warn: (m: string) => void): { exact?: string; prefix?: string } | undefined {
  if (e.resolved || e.invalid) return e.resolved;
  const allowed = interpolate(e.value, env);
  if (allowed === undefined) return undefined;
  // git warns each time it reads the entry; a server warns once per reading of the file
  if (!isAbsolute(allowed) && allowed !== '.') { e.invalid = true; warn(`safe.directory '${allowed}' not absolute`); return undefined; }
  // "." is the current directory (git: "if we are at the top level of a repository"), not cached: it is the process's
  const normalized = realPath(allowed === '.' ? process.cwd() : allowed);
  if (normalized === undefined) return undefined;
  const r = normalized.endsWith('/*') ? { prefix: normalized.slice(0, -1) } : { exact: normalized };
  if (allowed !== '.') e.resolved = r;
  return r;
}

/** Is the repository at `safePath` (a real path) listed, by the last word of protected config? */
function listedSafe(safePath: string, env: NodeJS.ProcessEnv, warn: (m: string) => void): boolean {
  let safe = false;
  for (const e of safeList(env).entries) {
    if (e.kind === 'reset') { safe = false; continue; }
    if (e.kind === 'all') { safe = true; continue; }
    const r = resolveEntry(e, env, warn);
    if (!r) continue;
    if (r.prefix !== undefined ? safePath.startsWith(r.prefix) : safePath === r.exact) safe = true;
  }
  return safe;
}

/**
 * git's die_upon_dubious_ownership() text for a repository another user
 * owns and protected config does not list, else undefined. `warn` gets
 * git's warnings (an entry that is not absolute).
 */
export function dubiousOwnership(p: OwnedPaths, env: NodeJS.ProcessEnv = process.env, warn: (m: string) => void = () => undefined): string | undefined {
  const different = env.GIT_TEST_ASSUME_DIFFERENT_OWNER !== undefined && parseBoolSafe(env.GIT_TEST_ASSUME_DIFFERENT_OWNER);
  if (!different
    && (p.gitFile === undefined || ownedByCurrentUser(p.gitFile, env))
    && (p.workTree === undefined || ownedByCurrentUser(p.workTree, env))
    && ownedByCurrentUser(p.path, env)) return undefined;
  const safePath = realPath(p.workTree ?? p.path);
  if (safePath !== undefined && listedSafe(safePath, env, warn)) return undefined;
  const shown = p.shown ?? p.gitFile ?? p.path;
  return `detected dubious ownership in repository at '${shown}'\n`
    + 'To add an exception for this directory, call:\n\n'
    + `\tgit config --global --add safe.directory ${sqQuotePretty(shown)}`;
}

function parseBoolSafe(v: string): boolean {
  try { return parseBool(v); } catch { return false; }
}

/** enter_repo()'s die: GW_DUBIOUS_OWNERSHIP with git's text, nothing on the wire (git dies to stderr). */
export function assertOwnership(p: OwnedPaths, env: NodeJS.ProcessEnv = process.env, warn?: (m: string) => void): void {
  const msg = dubiousOwnership(p, env, warn);
  if (msg !== undefined) throw new GitwireError('GW_DUBIOUS_OWNERSHIP', msg, { data: { directory: p.shown ?? p.gitFile ?? p.path } });
}
