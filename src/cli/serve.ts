/** `gitwire serve`: smart HTTP and git:// for a directory of repositories. */
import { parseArgs } from 'node:util';
import { basename, resolve } from 'node:path';
import { startServer } from '../transport/server.js';
import { locateRepository } from '../repo/discover.js';
import { mkdirSync } from 'node:fs';
import type { Deny, RequestInfo } from '../transport/http.js';
import type { Htpasswd } from '../transport/htpasswd.js';
import type { AuthRules } from '../transport/auth-rules.js';
import { SSH_FLAGS, SSH_USAGE, sshSetup } from './serve-ssh.js';

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
  const challenge: Deny = { status: 401, message: 'Authentication required', headers: { 'WWW-Authenticate': 'Basic realm="gitwire"' } };
  const access = (info: RequestInfo) => (info.service === 'receive-pack' ? 'push' : 'fetch');
  return {
    async authenticate(info: RequestInfo): Promise<true | Deny> {
      if (access(info) === 'fetch' && mode !== 'all') return true;
      if (info.transport !== 'http') return { status: 403, message: 'access denied' };
      const { parseBasic } = await import('../transport/htpasswd.js');
      const creds = parseBasic(info.req?.headers.authorization);
      if (!creds || !(await users.verify(creds.user, creds.password))) return challenge;
      info.user = creds.user;
      return true;
    },
    async authorize(info: RequestInfo, dir: string): Promise<true | Deny> {
      // anonymous fetch under --auth push: every repository is public
      if (!rules || info.user === undefined) return true;
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

const USAGE = `usage: gitwire serve [<root>] [--http <port>] [--git <port>] [--host <addr>]
                     [--export-all] [--confine-storage] [--strict-visibility] [--max-connections <n>] [--init-timeout <s>] [--timeout <s>]
                     [--http-idle-timeout <s> (default 120; 0: none)]
                     [--max-packs <n>] [--max-request-buffer <bytes>] [--max-haves <n>] [--negotiation-budget <ms>]
                     [--metrics [<addr>:]<port> (own listener; default address 127.0.0.1)] [--quiet (no per-request log lines)]
                     [--shutdown-grace <s>]
                     [--pack-cache <dir>] [--pack-cache-max-age <s>] [--pack-cache-max-bytes <n>]
                     [--pack-cache-min-occurrences <n>]
                     [--enable=receive-pack (push over git://)] [--max-ingests <n>] [--max-push-size <bytes>]
                     [--htpasswd <file> [--auth push|all] [--auth-rules <file>]]
${SSH_USAGE}`;

export async function runServe(args: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true, options: {
        http: { type: 'string' }, git: { type: 'string' }, host: { type: 'string' },
        'export-all': { type: 'boolean' }, 'confine-storage': { type: 'boolean' }, 'strict-visibility': { type: 'boolean' }, 'max-connections': { type: 'string' }, 'init-timeout': { type: 'string' },
        timeout: { type: 'string' }, 'http-idle-timeout': { type: 'string' }, 'max-packs': { type: 'string' }, 'max-request-buffer': { type: 'string' },
        'max-haves': { type: 'string' }, 'negotiation-budget': { type: 'string' },
        metrics: { type: 'string' }, quiet: { type: 'boolean' }, 'shutdown-grace': { type: 'string' }, help: { type: 'boolean' },
        'pack-cache': { type: 'string' }, 'pack-cache-max-age': { type: 'string' }, 'pack-cache-max-bytes': { type: 'string' },
        'pack-cache-min-occurrences': { type: 'string' },
        enable: { type: 'string', multiple: true }, 'max-ingests': { type: 'string' }, 'max-push-size': { type: 'string' },
        htpasswd: { type: 'string' }, auth: { type: 'string' }, 'auth-rules': { type: 'string' },
        ...SSH_FLAGS,
      },
    });
  } catch (e) {
    process.stderr.write(`error: ${(e as Error).message}\n${USAGE}`);
    process.exit(129);
  }
  const v = parsed.values;
  if (v.help) { process.stdout.write(USAGE); return; }
  const root = resolve(parsed.positionals[0] ?? '.');
  const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
  const noPorts = v.http === undefined && v.git === undefined && v.ssh === undefined;
  const { pino } = await import('pino');
  const logger = pino({ level: 'info' });
  const cacheNum = (name: string, s: string | undefined, scale = 1): number | undefined => {
    if (s === undefined) return undefined;
    const n = parseSize(s);
    if (n === undefined || n < 0) { process.stderr.write(`error: --${name}: not a number: '${s}'\n${USAGE}`); process.exit(129); }
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
      log: (msg: string, fields: Record<string, unknown>) => logger.warn(fields, msg),
    };
  } else {
    for (const k of ['pack-cache-max-age', 'pack-cache-max-bytes', 'pack-cache-min-occurrences'] as const) {
      if (v[k] !== undefined) { process.stderr.write(`error: --${k} needs --pack-cache <dir>\n${USAGE}`); process.exit(129); }
    }
  }
  const usage = (msg: string): never => { process.stderr.write(`error: ${msg}\n${USAGE}`); process.exit(129); };
  let enableReceivePack = false;
  for (const svc of v.enable ?? []) {
    if (svc === 'receive-pack') enableReceivePack = true;
    else if (svc !== 'upload-pack') usage(`--enable: unknown service '${svc}'`);
  }
  const metrics = v.metrics === undefined ? undefined : parseListen(v.metrics) ?? usage(`--metrics: expected [<addr>:]<port>, not '${v.metrics}'`);
  let auth;
  let rules: AuthRules | undefined;
  // the rules are shared by HTTP users (--htpasswd) and SSH users (--ssh-keys)
  if (v['auth-rules'] !== undefined && (v.htpasswd !== undefined || v['ssh-keys'] !== undefined)) {
    const { AuthRules } = await import('../transport/auth-rules.js');
    try { rules = new AuthRules(resolve(v['auth-rules']), (msg) => logger.warn(msg)); } catch (e) { usage(`--auth-rules: ${(e as Error).message}`); }
  }
  if (v.htpasswd !== undefined) {
    const mode = v.auth ?? 'push';
    if (mode !== 'push' && mode !== 'all') usage(`--auth: expected 'push' or 'all', not '${mode}'`);
    const { Htpasswd } = await import('../transport/htpasswd.js');
    const users = new Htpasswd(resolve(v.htpasswd), (msg) => logger.warn(msg));
    auth = basicAuthorize(users, mode as 'push' | 'all', root, rules);
  } else if (v.auth !== undefined || (v['auth-rules'] !== undefined && v['ssh-keys'] === undefined)) {
    usage('--auth and --auth-rules need --htpasswd <file> (or, for --auth-rules, --ssh-keys <dir>)');
  }
  const ssh = await sshSetup(v, root, rules, usage, (msg) => logger.warn(msg));
  const server = await startServer({
    enableReceivePack, authenticate: auth?.authenticate, authorize: auth?.authorize,
    maxIngests: num(v['max-ingests']) ?? 0,
    maxPushSize: cacheNum('max-push-size', v['max-push-size']),
    root,
    host: v.host ?? '127.0.0.1',
    http: noPorts ? 8080 : num(v.http),
    git: num(v.git),
    ssh: num(v.ssh), sshOptions: ssh?.options,
    exportAll: v['export-all'] ?? noPorts,
    confineStorage: v['confine-storage'],
    strictVisibility: v['strict-visibility'],
    maxConnections: num(v['max-connections']),
    initTimeout: num(v['init-timeout']),
    timeout: num(v.timeout),
    httpIdleTimeout: v['http-idle-timeout'] === undefined ? undefined
      : /^\d+(\.\d+)?$/.test(v['http-idle-timeout']) ? Number(v['http-idle-timeout']) : usage(`--http-idle-timeout: not a number of seconds: '${v['http-idle-timeout']}'`),
    maxPacks: num(v['max-packs']) ?? 0,
    maxRequestBuffer: num(v['max-request-buffer']),
    limits: {
      maxRequestBytes: num(v['max-request-buffer']),
      maxHaves: num(v['max-haves']),
      negotiationBudgetMs: num(v['negotiation-budget']),
    },
    metrics,
    packCache,
    log: v.quiet ? undefined : (e) => logger.info(e, 'request'),
  });
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
  const grace = (num(v['shutdown-grace']) ?? 10) * 1000;
  let stopping = false;
  const stop = (sig: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: sig }, 'shutting down: no new connections, finishing transfers');
    server.shutdown(grace)
      .catch((e: unknown) => logger.error({ err: e }, 'shutdown'))
      .finally(() => { logger.flush?.(); process.exit(0); });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
