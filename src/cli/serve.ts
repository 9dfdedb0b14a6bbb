/** `gitwire serve`: smart HTTP and git:// for a directory of repositories. */
import { parseArgs } from 'node:util';
import { basename, resolve } from 'node:path';
import { DRAIN_PROBE_WINDOW_MS, startServer } from '../transport/server.js';
import { NO_REQUEST } from '../transport/daemon.js';
import { ProxyTrust } from '../transport/proxy-protocol.js';
import { parsePublicUrl } from '../transport/forwarded.js';
import { locateRepository } from '../repo/discover.js';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import type { Deny, RequestInfo, RequestLog } from '../transport/http.js';
import type { Htpasswd } from '../transport/htpasswd.js';
import type { AuthRules } from '../transport/auth-rules.js';
import { SSH_FLAGS, SSH_HELP, sshDefault, sshSetup } from './serve-ssh.js';
import { renderUsage, type OptSpec, type Usage } from './parse-options.js';
import { DEFAULT_CREATES_PER_MINUTE } from '../admin/budget.js';

/**
 * `--htpasswd`: HTTP Basic for pushes (`--auth push`) or every request
 * (`--auth all`). No credentials or wrong ones: 401 with a challenge, so
 * git's credential helpers step in; the answer never says which part was
 * wrong, and it comes before anything about the path (`authenticate`), so
 * it is the same for a repository that exists and one that does not.
 * With rules (matched against the resolved repository, see auth-rules.ts):
 * under `--auth all` a user no rule lets fetch a repository gets the very
 * answer of a missing one (404); a user who may fetch but not push gets
 * 403. git:// cannot authenticate: there, what needs credentials is refused.
 */
export function basicAuthorize(users: Htpasswd, mode: 'push' | 'all', root: string, rules?: AuthRules) {
  const challenge: Deny = { status: 401, message: 'Authentication required', headers: { 'WWW-Authenticate': 'Basic realm="gitwire"' }, outcome: 'challenge' };
  const access = (info: RequestInfo) => (info.service === 'receive-pack' || info.service === 'lfs-upload' ? 'push' : 'fetch');
  return {
    async authenticate(info: RequestInfo): Promise<true | Deny> {
      const anonymousOk = access(info) === 'fetch' && mode !== 'all';
      if (info.transport !== 'http') return anonymousOk ? true : { status: 403, message: `${access(info)} needs credentials, which git:// cannot carry (use HTTP or SSH)` };
      const { parseBasicAuth } = await import('../transport/auth/basic.js');
      const header = info.req?.headers.authorization;
      const creds = parseBasicAuth(header);
      // credentials sent are credentials checked, even where none are needed: a mistyped
      // password gets its 401 (and the log its failed login), not the anonymous view
      if (!creds) return anonymousOk && !/^\s*basic\b/i.test(header ?? '') ? true : challenge;
      if (!(await users.verify(creds.user, creds.password))) return { ...challenge, outcome: 'login-failed', user: creds.user };
      info.user = creds.user;
      return true;
    },
    async authorize(info: RequestInfo, dir: string): Promise<true | Deny> {
      // under --auth push every repository is public to fetch, signed in or not
      if (!rules || info.user === undefined || (mode === 'push' && access(info) === 'fetch')) return true;
      const { repositoryName } = await import('../transport/paths.js');
      const name = repositoryName(root, dir) ?? info.path;
      if (mode === 'all' && !rules.allows(info.user, name, 'fetch')) return { status: 404, message: 'Not Found' };
      return rules.allows(info.user, name, access(info)) ? true : { status: 403, message: 'Forbidden' };
    },
  };
}

/** `--metrics [ADDR:]PORT`: `9100`, `0.0.0.0:9100`, `[::1]:9100`; undefined when it is none of these. */
export function parseListen(s: string): { host?: string; port: number } | undefined {
  const m = /^(?:(\[[0-9A-Fa-f:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const host = m[1]?.replace(/^\[(.*)\]$/, '$1');
  return host === undefined ? { port } : { host, port };
}

/** `1024`, `512k`, `1g` (git's size suffixes) */
function parseSize(s: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([kmg]?)$/i.exec(s.trim());
  if (!m) return undefined;
  const mul = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Math.floor(Number(m[1]) * mul);
}

/** --drain-delay's default, in seconds: a balancer probing every second with `fall 2` or 3 has seen the 503 by then */
export const DEFAULT_DRAIN_DELAY = 5;

/** The parser's option table (node:util parseArgs). */
export const SERVE_FLAGS = {
  http: { type: 'string' }, git: { type: 'string' }, host: { type: 'string' },
  'export-all': { type: 'boolean' }, 'confine-storage': { type: 'boolean' }, 'strict-visibility': { type: 'boolean' }, 'max-connections': { type: 'string' }, 'init-timeout': { type: 'string' },
  timeout: { type: 'string' }, 'http-idle-timeout': { type: 'string' }, 'max-packs': { type: 'string' }, 'pack-objects': { type: 'string' }, 'max-request-buffer': { type: 'string' },
  'max-haves': { type: 'string' }, 'negotiation-budget': { type: 'string' },
  config: { type: 'string' }, metrics: { type: 'string' }, quiet: { type: 'boolean' }, 'log-level': { type: 'string' }, 'trust-proxy': { type: 'string' }, 'shutdown-grace': { type: 'string' }, 'drain-delay': { type: 'string' }, help: { type: 'boolean', short: 'h' },
  'pack-cache': { type: 'string' }, 'pack-cache-max-age': { type: 'string' }, 'pack-cache-max-bytes': { type: 'string' },
  'pack-cache-min-occurrences': { type: 'string' },
  enable: { type: 'string', multiple: true }, 'max-ingests': { type: 'string' }, 'max-push-size': { type: 'string' },
  htpasswd: { type: 'string' }, auth: { type: 'string' }, 'auth-rules': { type: 'string' },
  'push-to-create': { type: 'boolean' }, 'default-branch': { type: 'string' }, 'create-rate': { type: 'string' },
  webhook: { type: 'string', multiple: true }, 'webhook-secret': { type: 'string' },
  redis: { type: 'string' }, 'max-packs-per-repo': { type: 'string' }, 'max-packs-per-client': { type: 'string' }, 'proxy-protocol': { type: 'string' },
  'pool-revalidate': { type: 'string' },
  'anonymous-rate': { type: 'string' }, 'anonymous-burst': { type: 'string' }, 'anonymous-concurrency': { type: 'string' },
  'user-rate': { type: 'string' }, 'user-burst': { type: 'string' }, 'user-concurrency': { type: 'string' },
  'anonymous-max-work': { type: 'string' }, 'saturation-delay': { type: 'string' }, 'saturation-cpu-pressure': { type: 'string' },
  'no-lfs': { type: 'boolean' }, 'lfs-max-object-size': { type: 'string' }, 'lfs-max-batch': { type: 'string' }, 'lfs-store': { type: 'string' }, 'lfs-url': { type: 'string' }, 'lfs-token-key-file': { type: 'string' }, 'public-url': { type: 'string' },
  bundles: { type: 'string' }, 'bundle-store': { type: 'string' }, 'bundle-min-size': { type: 'string' }, 'bundle-budget': { type: 'string' },
  ...SSH_FLAGS,
} as const;

type Flag = keyof typeof SERVE_FLAGS;
/** `--help`: a group heading, or a flag with its value's name ('' for none) and what it does */
type HelpRow = string | [Flag, string, string];
const HELP_ROWS: HelpRow[] = [
  'Listeners (none given: HTTP on 8080 with --export-all)',
  ['http', 'port', 'serve smart HTTP on this port (0: any free port)'],
  ['git', 'port', 'serve git:// on this port'],
  ['host', 'addr', 'address the git listeners bind (default 127.0.0.1)'],
  ['metrics', '[<addr>:]<port>', 'Prometheus metrics on a listener of their own (default address 127.0.0.1)'],
  'Repositories',
  ['export-all', '', 'serve every repository over git://, without git-daemon-export-ok'],
  ['confine-storage', '', 'refuse repositories whose storage (alternates, symlinks) leaves the root'],
  ['strict-visibility', '', 'hide from a client what no advertised ref reaches'],
  'Limits',
  ['max-connections', 'n', 'git:// connections at once (default 32)'],
  ['init-timeout', 's', 'git:// seconds to send the request line (default 10)'],
  ['timeout', 's', 'git:// seconds a transfer may wait on its client (to send, or to take what is queued) before it is cut (default 120; 0: never)'],
  ['http-idle-timeout', 's', 'seconds an HTTP connection may stay idle, or an answer wait on a client that takes none of it (default 120; 0: none)'],
  ['max-packs', 'n', 'pack-objects at once; more are queued (0: no limit)'],
  ['max-request-buffer', 'bytes', 'bytes between two flush packets (default 10 MiB)'],
  ['max-haves', 'n', "'have' lines in one request or round (default 262144)"],
  ['negotiation-budget', 'ms', 'negotiation walk time per request (default 10000)'],
  'Per-client limits (docs/limits.md; a client is its user, else its address, IPv6 per /64)',
  ['anonymous-rate', 'n', 'requests a second per anonymous client; over it: HTTP 429 with Retry-After, git:// ERR (0: no limit)'],
  ['anonymous-burst', 'n', 'requests an anonymous client may make at once after a quiet spell (default: 2 x the rate)'],
  ['anonymous-concurrency', 'n', 'requests of one anonymous client in progress at once (0: no limit)'],
  ['user-rate', 'n', 'requests a second per authenticated user (0: no limit)'],
  ['user-burst', 'n', 'requests a user may make at once after a quiet spell (default: 2 x the rate)'],
  ['user-concurrency', 'n', 'requests of one user in progress at once (0: no limit)'],
  ['anonymous-max-work', 'n', 'anonymous requests in progress at once, all anonymous clients together, ref advertisements aside; more get 429 (0: no limit)'],
  ['saturation-delay', 'ms', 'saturated while the event-loop delay p99 is above this: new anonymous work is refused (429) but ref advertisements (0: off)'],
  ['saturation-cpu-pressure', 'pct', "saturated while CPU pressure (Linux PSI 'some avg10' of the cgroup, else the machine) is above this percentage (0: off)"],
  'Packs',
  ['pack-objects', 'native|git', 'who makes the packs fetches get: gitwire itself (native, the default: no git process) or git pack-objects'],
  ['bundles', 'off|serve|auto', 'clone offload (docs/serving.md): offer each repository\'s bundle through bundle-uri and serve it at <repo>/info/bundles/ (serve: the ones `gitwire bundle create` made; auto: made after 3 clones in 10 minutes of a repository with --bundle-min-size of packs, remade when behind and 6 hours old); SSH and git:// clients get --public-url\'s (default off)'],
  ['bundle-store', 's3://bucket/prefix', 'with --bundles auto: keep bundles in S3-compatible storage (the LFS store\'s AWS_* environment); clients download them by pre-signed URLs'],
  ['bundle-min-size', 'n', 'with --bundles auto: no bundle for a repository whose packs are smaller (k/m/g; default 16m; 0: every repository)'],
  ['bundle-budget', 'n', 'with --bundles auto: bytes of bundles made per hour by this process at most; more wait for a later check (k/m/g; default 4g; 0: no limit)'],
  'Pack cache',
  ['pack-cache', 'dir', 'keep the packs of repeated fetches in this directory'],
  ['pack-cache-max-age', 's', 'drop an entry older than this'],
  ['pack-cache-max-bytes', 'n', 'the cache size (k/m/g suffixes)'],
  ['pack-cache-min-occurrences', 'n', 'store a pack once its request has come this many times'],
  'Push',
  ['enable', 'receive-pack', 'allow push over git:// (repeatable; upload-pack is always on)'],
  ['max-ingests', 'n', 'pack ingests (index-pack / unpack-objects) at once (0: no limit)'],
  ['max-push-size', 'bytes', 'largest pack a push may send (k/m/g suffixes)'],
  ['htpasswd', 'file', 'HTTP Basic users (bcrypt hashes: htpasswd -B); push needs a user'],
  ['auth', 'push|all', 'what needs a user: push (default) or every request'],
  ['auth-rules', 'file', 'which user may fetch, push or administer which repository (with --htpasswd or --ssh-keys), and protected refs (`protect`: no force-push or delete but for the users named)'],
  ['webhook', 'url [<repo-glob>...]', 'POST a JSON event to this URL after each push that moved refs, off the request path (repeatable; with globs, for those repositories only; docs/webhooks.md)'],
  ['webhook-secret', 'file', 'sign webhook bodies with the key in this file (X-Gitwire-Signature: sha256=<HMAC-SHA256 hex>)'],
  'Creating repositories (docs/repositories.md)',
  ['push-to-create', '', 'a push (HTTP, SSH) to a missing repository creates it, when --auth-rules let that user push there'],
  ['default-branch', 'name', 'the branch HEAD of a created repository names (default main)'],
  ['create-rate', 'n', `repositories one user may create a minute, by push or ssh repo create (default ${DEFAULT_CREATES_PER_MINUTE}; 0: no limit)`],
  'Git LFS (on by default)',
  ['no-lfs', '', 'do not serve Git LFS (info/lfs over HTTP, git-lfs-authenticate and git-lfs-transfer over SSH)'],
  ['lfs-max-object-size', 'bytes', 'largest LFS object an upload may be (k/m/g suffixes)'],
  ['lfs-max-batch', 'n', 'objects one LFS batch request may name (default 10000)'],
  ['lfs-store', 's3://bucket/prefix', 'keep LFS objects in S3-compatible storage (AWS_* environment; clients use pre-signed URLs)'],
  ['public-url', 'url', "the URL clients reach the HTTP listener at (https://git.example.com[/prefix], behind a proxy): LFS links and git-lfs-authenticate use it (default: the request's Host, or a --trust-proxy peer's Forwarded / X-Forwarded-Proto and -Host)"],
  ['lfs-url', 'url', 'the older name of --public-url'],
  ['lfs-token-key-file', 'file', "the key LFS tokens are signed with, the same file on every node (default: one agreed through --redis, else a node's own)"],
  'SSH',
  ...(Object.entries(SSH_HELP) as Array<[Flag, [string, string]]>).map(([k, [argh, help]]): HelpRow => [k, argh, sshDefault(k) === undefined ? help : `${help} (default ${sshDefault(k)})`]),
  'Several servers (docs/cluster.md)',
  ['redis', 'url', 'coordinate with the other servers of this root through Redis (redis://host:port)'],
  ['max-packs-per-repo', 'n', 'pack-objects at once for one repository, on all servers (0: no limit)'],
  ['max-packs-per-client', 'n', 'pack-objects at once for one client (its user, else its address), on all servers (0: no limit)'],
  ['pool-revalidate', 'ms', 'trust an open repository and its refs this long before looking at the files again, as NFS actimeo does (default 0; --redis invalidation still applies at once)'],
  ['proxy-protocol', 'addrs', 'git:// and SSH: connections from these balancers (addresses, CIDR blocks) must open with a PROXY header (v1 or v2), whose client address counts'],
  'Running',
  ['config', 'file', 'settings from a YAML file (keys: these long names and root); GITWIRE_<NAME> variables too; flags win, then the environment'],
  ['quiet', '', 'no per-request log lines'],
  ['log-level', 'level', 'trace, debug, info (default), warn, error, fatal or silent'],
  ['trust-proxy', 'addrs', "HTTP: on requests from these reverse proxies (addresses, CIDR blocks), the client's address is the one X-Forwarded-For's last entry names (logs, per-client limits, hooks)"],
  ['shutdown-grace', 's', 'seconds transfers may finish after SIGTERM or SIGINT (default 10)'],
  ['drain-delay', 's', 'seconds /readyz answers 503 while the listeners still serve, before they close, when a balancer probes it (default 5; 0: none)'],
  ['help', '', 'print this help'],
];

const USAGE: Usage = {
  lines: ['gitwire serve [<root>] [<options>]', '', 'Serve the repositories under <root> (default: the current directory).'],
  options: HELP_ROWS.map((r): OptSpec => (typeof r === 'string' ? { kind: 'group', help: r }
    : { kind: 'flag', long: r[0], short: r[0] === 'help' ? 'h' : undefined, argh: r[1] || undefined, takesArg: r[1] !== '', help: r[2], noneg: true })),
};
/** `gitwire serve --help` (exported for the test that checks it names every flag) */
export const serveHelp = (): string => renderUsage(USAGE);
const SHORT_USAGE = "usage: gitwire serve [<root>] [<options>]   (gitwire serve --help lists them)\n";

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** outcomes that are the server's failure, not the client's */
const SERVER_FAILURES = new Set(['error', 'server-error', 'GW_OBJECT_CORRUPT', 'GW_OBJECT_MISSING', 'GW_PACK_FAILED', 'GW_REF_UPDATE', 'GW_UNSUPPORTED_REPO', 'GW_CONFIG', 'GW_NOT_A_REPO']);

/**
 * A request line's level: error for the server's failures, warn for a transfer cut at shutdown,
 * debug for a git:// connection that closed without a byte (a balancer's TCP health check), info otherwise.
 */
export function requestLevel(e: RequestLog): 'debug' | 'info' | 'warn' | 'error' {
  if (e.transport === 'git' && e.reason === NO_REQUEST) return 'debug';
  return SERVER_FAILURES.has(e.outcome) ? 'error' : e.outcome === 'shutdown' ? 'warn' : 'info';
}

/** a listener's port: 0 to 65535 */
function parsePort(flag: string, s: string | undefined, usage: (msg: string) => never): number | undefined {
  if (s === undefined) return undefined;
  return /^\d{1,5}$/.test(s) && Number(s) <= 65535 ? Number(s) : usage(`--${flag}: not a port number: '${s}'`);
}

/** An error of startServer's listen: `cannot listen on 127.0.0.1:8080 (http): address already in use`. */
function listenError(e: unknown): Error {
  const err = e as NodeJS.ErrnoException & { listener?: string; address?: string; port?: number };
  if (err?.syscall !== 'listen' || !err.listener) return e as Error;
  const addr = err.address?.includes(':') ? `[${err.address}]` : err.address;
  const why = err.message.replace(/^listen [A-Z]+: /, '').replace(` ${err.address}:${err.port}`, '');
  return new Error(`cannot listen on ${addr}:${err.port} (${err.listener}): ${why}`);
}

/**
 * What a flag parseArgs refused gets: git's `unknown option` line, with the
 * closest flags as a hint (the mistyped name's prefix or near spelling).
 */
async function parseErrorText(e: unknown): Promise<string> {
  const err = e as NodeJS.ErrnoException;
  const m = err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-{1,2})([^'=]*)/.exec(err.message) : null;
  if (!m) return `error: ${err.message}\n`;
  const { mostSimilar } = await import('./suggest.js');
  const similar = m[2]!.length > 1 ? mostSimilar(m[2]!, Object.keys(SERVE_FLAGS)) : [];
  const text = m[1] === '--' ? `error: unknown option \`${m[2]}'\n` : `error: unknown switch \`${m[2]}'\n`;
  return similar.length ? `${text}hint: did you mean ${similar.map((f) => `--${f}`).join(' or ')}?\n` : text;
}

export async function runServe(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: SERVE_FLAGS });
  } catch (e) {
    process.stderr.write(`${await parseErrorText(e)}${SHORT_USAGE}`);
    process.exit(129);
  }
  if (parsed.values.help) { process.stdout.write(serveHelp()); return; }
  if (parsed.positionals.length > 1) { process.stderr.write(`error: one root only, not ${parsed.positionals.map((p) => `'${p}'`).join(' ')}\n${SHORT_USAGE}`); process.exit(129); }
  // flags > GITWIRE_* > --config file
  const { configFromEnv, envName, loadConfigFile, mergeSettings } = await import('./serve-config.js');
  const configFile = parsed.values.config ?? process.env.GITWIRE_CONFIG;
  const flags = SERVE_FLAGS as unknown as Record<string, import('./serve-config.js').FlagSpec>;
  const fromFile = configFile ? await loadConfigFile(resolve(configFile), flags) : {};
  const given = { ...parsed.values, ...(parsed.positionals[0] !== undefined ? { root: resolve(parsed.positionals[0]) } : {}) };
  const fromEnv = configFromEnv(process.env, flags);
  const v = mergeSettings(fromFile, fromEnv, given) as typeof parsed.values & { root?: string };
  /**
   * A bad value: a flag's is a usage error (129); one from the file or the
   * environment is fatal (128), naming the file and the key, or the variable.
   */
  const usage: (msg: string) => never = (msg) => {
    // `--<key>: <what is wrong>`: about one setting's value
    const key = /^--([a-z0-9-]+): /.exec(msg)?.[1];
    const rest = key === undefined ? msg : msg.slice(key.length + 4);
    if (key !== undefined && (given as Record<string, unknown>)[key] === undefined) {
      if (fromEnv[key] !== undefined) { process.stderr.write(`fatal: ${envName(key)}: ${rest}\n`); process.exit(128); }
      if (fromFile[key] !== undefined) { process.stderr.write(`fatal: ${resolve(configFile!)}: ${key}: ${rest}\n`); process.exit(128); }
    }
    process.stderr.write(`error: ${msg}\n${SHORT_USAGE}`);
    process.exit(129);
  };
  const root = resolve(v.root ?? '.');
  const rootStat = statSync(root, { throwIfNoEntry: false });
  if (!rootStat) throw new Error(`root '${root}' does not exist`);
  if (!rootStat.isDirectory()) throw new Error(`root '${root}' is not a directory`);
  const ports = { http: parsePort('http', v.http, usage), git: parsePort('git', v.git, usage), ssh: parsePort('ssh', v.ssh, usage) };
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const noPorts = v.http === undefined && v.git === undefined && v.ssh === undefined;
  const level = v['log-level'] ?? 'info';
  if (!LOG_LEVELS.includes(level)) usage(`--log-level: expected one of ${LOG_LEVELS.join(', ')}, not '${level}'`);
  const { pino } = await import('pino');
  // level names and ISO times, which a person (and journald, grep, fail2ban) reads without a table
  const logger = pino({ level, formatters: { level: (label) => ({ level: label }) }, timestamp: pino.stdTimeFunctions.isoTime });
  const cacheNum = (name: string, s: string | undefined, scale = 1): number | undefined => {
    if (s === undefined) return undefined;
    const n = parseSize(s);
    if (n === undefined || n < 0) usage(`--${name}: not a number: '${s}'`);
    return n * scale;
  };
  let packCache;
  if (v['pack-cache'] !== undefined) {
    const dir = resolve(v['pack-cache']);
    try { mkdirSync(dir, { recursive: true }); } catch (e) { logger.warn({ dir, err: (e as Error).message }, 'pack cache directory cannot be created; fetches run pack-objects directly'); }
    packCache = {
      dir,
      maxAgeMs: cacheNum('pack-cache-max-age', v['pack-cache-max-age'], 1000),
      maxBytes: cacheNum('pack-cache-max-bytes', v['pack-cache-max-bytes']),
      minOccurrences: cacheNum('pack-cache-min-occurrences', v['pack-cache-min-occurrences']),
      // a pack too large to keep, or a shared run retried alone, is how the cache works; the rest is a failure
      log: (msg: string, fields: Record<string, unknown>) => (fields.reason === 'too-large' || fields.reason === 'retry' ? logger.info(fields, msg) : logger.warn(fields, msg)),
    };
  } else {
    for (const k of ['pack-cache-max-age', 'pack-cache-max-bytes', 'pack-cache-min-occurrences'] as const) {
      if (v[k] !== undefined) usage(`--${k} needs --pack-cache <dir>`);
    }
  }
  let enableReceivePack = false;
  for (const svc of v.enable ?? []) {
    if (svc === 'receive-pack') enableReceivePack = true;
    else if (svc !== 'upload-pack') usage(`--enable: unknown service '${svc}'`);
  }
  const metrics = v.metrics === undefined ? undefined : parseListen(v.metrics) ?? usage(`--metrics: expected [<addr>:]<port>, not '${v.metrics}'`);
  let auth;
  let rules: AuthRules | undefined;
  // the rules are shared by HTTP users (--htpasswd) and SSH users (--ssh-keys)
  if (v['auth-rules'] !== undefined && (v.htpasswd !== undefined || v['ssh-keys'] !== undefined || enableReceivePack)) {
    const { AuthRules } = await import('../transport/auth-rules.js');
    // a file that cannot be used is fatal (128), as a bad --htpasswd file is: not a usage error
    try { rules = new AuthRules(resolve(v['auth-rules']), (msg) => logger.warn(msg)); } catch (e) { throw new Error(`--auth-rules: ${(e as Error).message}`); }
  }
  if (v.htpasswd !== undefined) {
    const mode = v.auth ?? 'push';
    if (mode !== 'push' && mode !== 'all') usage(`--auth: expected 'push' or 'all', not '${mode}'`);
    const { Htpasswd } = await import('../transport/htpasswd.js');
    // at start-up a file that cannot be read, or holds no user, is fatal; later, the last good copy stays
    const problems: string[] = [];
    let started = false;
    const users = new Htpasswd(resolve(v.htpasswd), (msg) => (started ? logger.warn(msg) : problems.push(msg)));
    if (users.size === 0) throw new Error(problems.find((m) => /cannot read/.test(m)) ?? `htpasswd: no usable entry in ${users.path} (user:hash lines, bcrypt: htpasswd -B)${problems.length ? `\n${problems.join('\n')}` : ''}`);
    for (const m of problems) logger.warn(m);
    started = true;
    auth = { ...basicAuthorize(users, mode as 'push' | 'all', root, rules), users: users.size };
  } else if (v.auth !== undefined || (v['auth-rules'] !== undefined && v['ssh-keys'] === undefined && !enableReceivePack)) {
    usage('--auth and --auth-rules need --htpasswd <file> (or, for --auth-rules, --ssh-keys <dir> or --enable=receive-pack)');
  }
  if (v['push-to-create'] && !rules) usage('--push-to-create needs --auth-rules <file> (a user may create a repository where a rule lets them push)');
  const createRate = v['create-rate'] === undefined ? DEFAULT_CREATES_PER_MINUTE : /^\d+$/.test(v['create-rate']) ? Number(v['create-rate']) : usage(`--create-rate: not a number: '${v['create-rate']}'`);
  const defaultBranch = v['default-branch'];
  if (defaultBranch !== undefined) {
    const { checkRefnameFormat } = await import('../repo/refname.js');
    if (!checkRefnameFormat(`refs/heads/${defaultBranch}`) || defaultBranch.startsWith('-')) usage(`--default-branch: not a branch name: '${defaultBranch}'`);
  }
  const { CreationBudget } = await import('../admin/budget.js');
  // one budget for push-to-create and ssh repo create
  const creation = {
    budget: new CreationBudget(createRate),
    initialBranch: defaultBranch,
    log: (f: { action?: 'create' | 'delete'; repository: string; [k: string]: unknown }) => logger.info(f, `repository ${f.action ?? 'create'}d: ${f.repository}`),
  };
  const createOnPush = v['push-to-create'] ? (await import('../admin/push-to-create.js')).pushToCreate({ root, ...creation, log: (f) => creation.log({ action: 'create', via: 'push', ...f }) }) : undefined;
  const ssh = await sshSetup(v, root, rules, usage, (msg) => logger.warn(msg), creation);
  const count = (flag: string, s: string | undefined) => (s === undefined ? undefined : /^\d+$/.test(s) ? Number(s) : usage(`--${flag}: not a number: '${s}'`));
  if (v.redis !== undefined && !/^rediss?:\/\//.test(v.redis)) usage(`--redis: expected redis://host[:port], not '${v.redis}'`);
  const cluster = {
    redis: v.redis,
    maxPacksPerRepo: count('max-packs-per-repo', v['max-packs-per-repo']),
    maxPacksPerClient: count('max-packs-per-client', v['max-packs-per-client']),
    log: (msg: string, fields: Record<string, unknown>, level: 'info' | 'warn' = 'warn') => logger[level](fields, msg),
  };
  let proxyProtocol: ProxyTrust | undefined, trustProxy: ProxyTrust | undefined;
  try { trustProxy = v['trust-proxy'] === undefined ? undefined : ProxyTrust.parse(v['trust-proxy'], '--trust-proxy'); } catch (e) { usage((e as Error).message); }
  try { proxyProtocol = v['proxy-protocol'] === undefined ? undefined : ProxyTrust.parse(v['proxy-protocol']); } catch (e) { usage((e as Error).message); }
  const seconds = (flag: 'shutdown-grace' | 'drain-delay', dflt: number) => {
    const s = v[flag];
    if (s === undefined) return dflt * 1000;
    return /^\d+(\.\d+)?$/.test(s) ? Number(s) * 1000 : usage(`--${flag}: not a number of seconds: '${s}'`);
  };
  const grace = seconds('shutdown-grace', 10);
  const drain = seconds('drain-delay', DEFAULT_DRAIN_DELAY);
  const rateNum = (flag: string, s: string | undefined) => (s === undefined ? undefined : /^\d+(\.\d+)?$/.test(s) ? Number(s) : usage(`--${flag}: not a number: '${s}'`));
  const limitFlags = ['anonymous-rate', 'anonymous-burst', 'anonymous-concurrency', 'user-rate', 'user-burst', 'user-concurrency', 'anonymous-max-work', 'saturation-delay', 'saturation-cpu-pressure'] as const;
  const clientLimits = limitFlags.some((f) => v[f] !== undefined) ? {
    anonymous: { rate: rateNum('anonymous-rate', v['anonymous-rate']), burst: rateNum('anonymous-burst', v['anonymous-burst']), concurrency: count('anonymous-concurrency', v['anonymous-concurrency']) },
    user: { rate: rateNum('user-rate', v['user-rate']), burst: rateNum('user-burst', v['user-burst']), concurrency: count('user-concurrency', v['user-concurrency']) },
    anonymousWork: count('anonymous-max-work', v['anonymous-max-work']),
    saturation: { delayMs: rateNum('saturation-delay', v['saturation-delay']), cpuPressure: rateNum('saturation-cpu-pressure', v['saturation-cpu-pressure']) },
  } : undefined;
  for (const c of ['anonymous', 'user'] as const) {
    const b = clientLimits?.[c].burst;
    if (b !== undefined && b < 1) usage(`--${c}-burst: at least 1, not '${b}'`);
  }
  const webhooks = await webhookSetup(v, usage, (level, msg, fields) => logger[level](fields, msg));
  // protected refs (`protect` lines): judged on the repository's one name, for the request's user
  let protectedRefs: ((info: RequestInfo, dir: string) => ((ref: string) => boolean) | undefined) | undefined;
  if (rules) {
    const r = rules;
    const { repositoryName } = await import('../transport/paths.js');
    protectedRefs = (info, dir) => r.protectedRefs(info.user, repositoryName(root, dir) ?? info.path);
  }
  const packObjects = packProducer(v['pack-objects'], usage);
  const bundlesMode = v.bundles ?? 'off';
  if (bundlesMode !== 'off' && bundlesMode !== 'serve' && bundlesMode !== 'auto') usage(`--bundles: expected off, serve or auto, not '${bundlesMode}'`);
  let bundleS3: import('../lfs/store/s3.js').S3Location | undefined;
  if (v['bundle-store'] !== undefined) {
    if (bundlesMode !== 'auto') usage('--bundle-store: needs --bundles auto (the server makes and uploads the bundles)');
    const { parseS3Url } = await import('../lfs/store/s3.js');
    bundleS3 = parseS3Url(v['bundle-store']) ?? usage(`--bundle-store: expected s3://bucket[/prefix], not '${v['bundle-store']}'`);
  }
  for (const f of ['bundle-min-size', 'bundle-budget'] as const) if (v[f] !== undefined && bundlesMode !== 'auto') usage(`--${f}: needs --bundles auto`);
  const server = await startServer({
    enableReceivePack, clientLimits, authenticate: auth?.authenticate, authorize: auth?.authorize, createOnPush,
    protectedRefs, webhooks,
    maxIngests: num(v['max-ingests']) ?? 0,
    maxPushSize: cacheNum('max-push-size', v['max-push-size']),
    root,
    host: v.host ?? '127.0.0.1',
    http: noPorts ? 8080 : ports.http,
    git: ports.git,
    ssh: ports.ssh, sshOptions: ssh?.options,
    exportAll: v['export-all'] ?? noPorts,
    confineStorage: v['confine-storage'],
    strictVisibility: v['strict-visibility'],
    maxConnections: num(v['max-connections']),
    initTimeout: num(v['init-timeout']),
    timeout: num(v.timeout),
    httpIdleTimeout: v['http-idle-timeout'] === undefined ? undefined
      : /^\d+(\.\d+)?$/.test(v['http-idle-timeout']) ? Number(v['http-idle-timeout']) : usage(`--http-idle-timeout: not a number of seconds: '${v['http-idle-timeout']}'`),
    maxPacks: num(v['max-packs']) ?? 0,
    packObjects,
    maxRequestBuffer: num(v['max-request-buffer']),
    limits: {
      maxRequestBytes: num(v['max-request-buffer']),
      maxHaves: num(v['max-haves']),
      negotiationBudgetMs: num(v['negotiation-budget']),
    },
    metrics,
    packCache,
    ...(v['pool-revalidate'] === undefined ? {} : { pool: { revalidateMs: count('pool-revalidate', v['pool-revalidate']) } }),
    cluster,
    lfs: v['no-lfs'] ? false : await lfsSetup(v, usage, cacheNum, (msg) => logger.warn(msg)),
    trustProxy,
    proxyProtocol,
    ...(bundlesMode === 'off' ? {} : {
      bundles: {
        mode: bundlesMode as 'serve' | 'auto',
        baseUrl: (v['public-url'] ?? v['lfs-url']) as string | undefined,
        ...(bundleS3 ? { s3: bundleS3 } : {}),
        minBytes: cacheNum('bundle-min-size', v['bundle-min-size']),
        budgetBytes: cacheNum('bundle-budget', v['bundle-budget']),
        log: (l: import('../bundle/service.js').BundleLogLine) => logger[l.outcome === 'failed' ? 'warn' : 'info'](l, `bundle ${l.outcome}: ${l.directory}`),
      },
    }),
    log: v.quiet ? undefined : (e) => logger[requestLevel(e)](e, 'request'),
  }).catch((e: unknown) => { throw listenError(e); });
  // the handlers as soon as the listeners are up, before any line says so: a signal sent on reading one (a
  // supervisor, a test) must find them, not the default action that kills the process mid-transfer
  let stopping = false;
  const stop = (sig: string) => {
    // a second signal ends the drain: the listeners close now
    if (stopping) { server.endDrain(); return; }
    stopping = true;
    const probed = performance.now() - server.health.lastReadinessProbe < DRAIN_PROBE_WINDOW_MS;
    logger.info({ signal: sig, drainMs: probed ? drain : 0 }, probed && drain > 0
      ? 'shutting down: /readyz answers 503 while the listeners serve on for the drain delay, then no new connections, finishing transfers'
      : 'shutting down: no new connections, finishing transfers');
    server.shutdown(grace, drain)
      .catch((e: unknown) => logger.error({ err: e }, 'shutdown'))
      .finally(() => { logger.flush?.(); process.exit(0); });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  const host = v.host ?? '127.0.0.1';
  let example = '<repo>';
  try { locateRepository(root); example = basename(root); } catch { /* a directory of repositories */ }
  if (server.httpPort !== undefined) logger.info({ url: `http://${host}:${server.httpPort}/`, root }, `serving smart HTTP: git clone http://${host}:${server.httpPort}/${example}`);
  if (server.metricsPort !== undefined) {
    const mh = metrics?.host ?? '127.0.0.1';
    const url = `http://${mh.includes(':') ? `[${mh}]` : mh}:${server.metricsPort}/metrics`;
    logger.info({ metrics: url }, `serving metrics: ${url}`);
  }
  if (server.gitPort !== undefined) logger.info({ url: `git://${host}:${server.gitPort}/`, root }, `serving git://: git clone git://${host}:${server.gitPort}/${example}`);
  if (server.sshPort !== undefined) {
    for (const k of ssh?.hostKeys ?? []) logger.info({ hostKey: k.file, fingerprint: k.fingerprint, created: k.created }, `ssh host key: ${k.fingerprint}`);
    logger.info({ url: `ssh://${host}:${server.sshPort}/`, root }, `serving ssh: git clone ssh://git@${host}:${server.sshPort}/${example}`);
  }
  const sat = server.clientLimits?.saturation;
  if (sat && (sat.opts.cpuPressure ?? 0) > 0 && !sat.pressureReadable) logger.warn('--saturation-cpu-pressure: no CPU pressure file can be read here (Linux PSI: /sys/fs/cgroup/…/cpu.pressure, /proc/pressure/cpu); only --saturation-delay applies');
  // what is on, in one line
  const on = {
    root,
    listeners: {
      ...(server.httpPort !== undefined ? { http: `${host}:${server.httpPort}` } : {}),
      ...(server.gitPort !== undefined ? { git: `${host}:${server.gitPort}` } : {}),
      ...(server.sshPort !== undefined ? { ssh: `${host}:${server.sshPort}` } : {}),
      ...(server.metricsPort !== undefined ? { metrics: `${metrics?.host ?? '127.0.0.1'}:${server.metricsPort}` } : {}),
    },
    auth: {
      http: auth ? `${v.auth ?? 'push'} (${auth.users} user${auth.users === 1 ? '' : 's'})` : 'none (push refused)',
      ...(ssh ? { ssh: `${ssh.users} key${ssh.users === 1 ? '' : 's'}` } : {}),
      rules: rules ? resolve(v['auth-rules']!) : 'none',
    },
    packObjects,
    push: { git: enableReceivePack, pushToCreate: !!createOnPush, maxPushSize: v['max-push-size'] ?? 'none', maxIngests: num(v['max-ingests']) ?? 0 },
    exportAll: v['export-all'] ?? noPorts,
    cache: packCache ? { dir: packCache.dir, maxAge: v['pack-cache-max-age'] ?? '300', maxBytes: v['pack-cache-max-bytes'] ?? '1g', minOccurrences: v['pack-cache-min-occurrences'] ?? '1' } : 'off',
    limits: {
      maxPacks: num(v['max-packs']) ?? 0, maxConnections: num(v['max-connections']) ?? 32, maxRequestBuffer: v['max-request-buffer'] ?? '10485760',
      maxHaves: v['max-haves'] ?? '262144', negotiationBudget: v['negotiation-budget'] ?? '10000', httpIdleTimeout: v['http-idle-timeout'] ?? '120',
    },
    trustProxy: trustProxy?.spec ?? false,
    ...(proxyProtocol ? { proxyProtocol: proxyProtocol.spec } : {}),
  };
  const summary = Object.entries(on.listeners).map(([k, a]) => `${k} ${a}`).join(', ');
  // the git it runs for pack-objects, index-pack and hooks, and whether that git reads reftable repositories
  const { installedGitText, installedGitAtLeast, REFTABLE_GIT } = await import('../util/git-version.js');
  const gitVersion = await installedGitText(process.env);
  const [rtMajor, rtMinor] = REFTABLE_GIT.split('.').map(Number) as [number, number];
  // with the native producer only a push runs git (index-pack); with --pack-objects git, fetches too
  const needs = packObjects === 'git' ? 'fetch and push need' : 'push needs';
  const gitNote = gitVersion === undefined ? `git: none found (${needs} it)`
    : await installedGitAtLeast(process.env, rtMajor, rtMinor) ? `git ${gitVersion}`
    : `git ${gitVersion} (reftable repositories: ${packObjects === 'git' ? 'ls-remote only' : 'no push'}; ${needs} git ${REFTABLE_GIT})`;
  logger.info({ ...on, git: gitVersion ?? null }, `gitwire serve: ${summary}; auth ${on.auth.http}${ssh ? `, ssh ${on.auth.ssh}` : ''}; cache ${packCache ? 'on' : 'off'}; max-packs ${on.limits.maxPacks || 'unlimited'}; ${gitNote}`);
}

/** --pack-objects: native (default) or git */
function packProducer(v: string | undefined, usage: (msg: string) => never): 'native' | 'git' {
  if (v === undefined || v === 'native') return 'native';
  if (v === 'git') return 'git';
  return usage(`--pack-objects: expected 'native' or 'git', not '${v}'`);
}

/**
 * --webhook URL [GLOB…] (repeatable) and --webhook-secret FILE: the
 * webhook queue's options, or undefined. A bad URL is a usage error; an
 * unreadable or empty secret file is fatal.
 */
async function webhookSetup(v: Partial<Record<string, string | boolean | string[] | undefined>>, usage: (msg: string) => never, log: (level: 'info' | 'warn' | 'debug', msg: string, fields: Record<string, unknown>) => void) {
  const specs = (v.webhook as string[] | undefined) ?? [];
  const secretFile = v['webhook-secret'] as string | undefined;
  if (!specs.length) {
    if (secretFile !== undefined) usage('--webhook-secret needs --webhook <url>');
    return undefined;
  }
  const { checkWebhookUrl } = await import('../admin/webhooks.js');
  const targets = specs.map((spec) => {
    const [url = '', ...repositories] = spec.trim().split(/\s+/);
    try { checkWebhookUrl(url); } catch (e) { usage(`--webhook: ${(e as Error).message}`); }
    return { url, repositories };
  });
  let secret: Buffer | undefined;
  if (secretFile !== undefined) {
    const file = resolve(secretFile);
    let b: Buffer;
    try { b = readFileSync(file); } catch (e) { throw new Error(`--webhook-secret: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
    let end = b.length;
    while (end > 0 && (b[end - 1] === 0x0a || b[end - 1] === 0x0d || b[end - 1] === 0x20 || b[end - 1] === 0x09)) end--;
    if (end === 0) throw new Error(`--webhook-secret: ${file} is empty`);
    if (statSync(file).mode & 0o077) log('warn', `--webhook-secret: ${file} can be read by others than its owner: whoever reads it can sign webhook bodies (chmod 600)`, {});
    secret = b.subarray(0, end);
  } else {
    log('warn', 'webhooks are sent unsigned: a receiver cannot tell them from anyone else\'s POST (--webhook-secret FILE)', {});
  }
  return { targets, secret, log };
}

/** The LFS service's options from the flags (--lfs-store s3://… loads the S3 client). */
/** --public-url (or its older name --lfs-url): checked, without a trailing slash */
function publicUrl(v: Partial<Record<string, string | boolean | string[] | undefined>>, usage: (msg: string) => never): string | undefined {
  const given = (['public-url', 'lfs-url'] as const).filter((k) => typeof v[k] === 'string').map((k) => [k, v[k] as string] as const);
  const urls = given.map(([k, s]) => parsePublicUrl(s) ?? usage(`--${k}: expected http(s)://host[:port][/path], not '${s}'`));
  if (urls.length === 2 && urls[0] !== urls[1]) usage(`--public-url and --lfs-url name different URLs ('${given[0]![1]}', '${given[1]![1]}'); --lfs-url is its older name: give one`);
  return urls[0];
}

/** the fewest bytes a --lfs-token-key-file may hold (`openssl rand -base64 48` writes 65) */
export const MIN_TOKEN_KEY_BYTES = 32;

/**
 * --lfs-token-key-file: the file's bytes, less trailing white space (one
 * file written with or without a newline is one key). Unreadable or short:
 * fatal at start.
 */
function readTokenKey(file: string, warn: (msg: string) => void): Buffer {
  let b: Buffer;
  try { b = readFileSync(file); } catch (e) { throw new Error(`--lfs-token-key-file: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`); }
  let end = b.length;
  while (end > 0 && (b[end - 1] === 0x0a || b[end - 1] === 0x0d || b[end - 1] === 0x20 || b[end - 1] === 0x09)) end--;
  if (end < MIN_TOKEN_KEY_BYTES) throw new Error(`--lfs-token-key-file: ${file} holds ${end} bytes; a key needs at least ${MIN_TOKEN_KEY_BYTES} (openssl rand -base64 48 > ${file})`);
  if (statSync(file).mode & 0o077) warn(`--lfs-token-key-file: ${file} can be read by others than its owner: whoever reads it can make LFS tokens (chmod 600)`);
  return b.subarray(0, end);
}

async function lfsSetup(v: Partial<Record<string, string | boolean | string[] | undefined>>, usage: (msg: string) => never, size: (name: string, s: string | undefined) => number | undefined, warn: (msg: string) => void) {
  const { LfsService } = await import('../lfs/index.js');
  const spec = v['lfs-store'] as string | undefined;
  let store;
  if (spec !== undefined) {
    const { parseS3Url, S3Store } = await import('../lfs/store/s3.js');
    const loc = parseS3Url(spec) ?? usage(`--lfs-store: expected s3://<bucket>[/<prefix>], not '${spec}'`);
    store = new S3Store(loc);
  }
  const batch = size('lfs-max-batch', v['lfs-max-batch'] as string | undefined);
  const keyFile = v['lfs-token-key-file'] as string | undefined;
  return new LfsService({
    store,
    tokenKey: keyFile === undefined ? undefined : readTokenKey(resolve(keyFile), warn),
    maxObjectSize: size('lfs-max-object-size', v['lfs-max-object-size'] as string | undefined),
    maxBatchObjects: batch === undefined ? undefined : Math.max(1, batch),
    publicUrl: publicUrl(v, usage),
  });
}
