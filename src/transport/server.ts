/**
 * One server for a directory of repositories: smart HTTP and git://,
 * admission control, a log line per request, optional Prometheus metrics,
 * and graceful shutdown.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Server as NetServer, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createHttpHandler, errorText, type RequestLog } from './http.js';
import { createDaemonServer } from './daemon.js';
import { PackLimiter } from './admission.js';
import { RepositoryPool, type PoolOptions } from '../repo/pool.js';
import { useSpawnHelper } from '../util/spawn.js';
import { Health } from './health.js';
import { markStalled, watchSocket } from './limits/progress.js';
import type { PackCache, PackCacheOptions } from '../pack/cache.js';
import type { Limits } from '../protocol/limits.js';
import type { PushHooks } from './http-push.js';
import type { ServeHooks } from './http.js';
import type { SshOptions } from './ssh/index.js';
import { createCoordinator, type CoordinationStatus, type Coordinator } from '../cluster/index.js';
import { LfsService, type LfsOptions } from '../lfs/index.js';
import { ClientLimits, type ClientLimitOptions } from './limits/index.js';
import { Webhooks, type WebhookOptions } from '../admin/webhooks.js';
import { canonicalName, repositoryName } from './paths.js';

export interface ServeOptions extends Omit<PushHooks, 'ingestLimiter'> {
  /** who is asking, before the path is looked at (HTTP and git://); see ServeHooks.authenticate */
  authenticate?: ServeHooks['authenticate'];
  /** allow or deny each request (HTTP and git://); see ServeHooks.authorize */
  authorize?: ServeHooks['authorize'];
  /** map a request to a repository directory instead of looking under `root` (every transport); see ServeHooks.resolveRepository */
  resolveRepository?: ServeHooks['resolveRepository'];
  /** per-request ref filter (every transport); see ServeHooks.refFilter */
  refFilter?: ServeHooks['refFilter'];
  /** concurrent pack ingests (index-pack / unpack-objects) for pushes (0: unlimited) */
  maxIngests?: number;
  /** the served directory; optional with `resolveRepository` */
  root?: string;
  host?: string;
  /** HTTP port (0: any free port; undefined: no HTTP) */
  http?: number;
  /** git:// port */
  git?: number;
  /** SSH port (0: any free port; undefined: no SSH); needs `sshOptions` */
  ssh?: number;
  /** the built-in SSH server: host keys, who a key is, its limits; `authorize` there replaces the shared one for SSH */
  sshOptions?: Pick<SshOptions, 'hostKeys' | 'authenticate' | 'sshLimits' | 'kex' | 'ident' | 'authorize' | 'commands'>;
  /** push-to-create over HTTP and SSH (admin/push-to-create.ts); see ServeHooks.createOnPush */
  createOnPush?: ServeHooks['createOnPush'];
  exportAll?: boolean;
  maxConnections?: number;
  initTimeout?: number;
  timeout?: number;
  /** concurrent pack-objects (0: unlimited) */
  maxPacks?: number;
  maxRequestBuffer?: number;
  /**
   * seconds an HTTP connection may stay silent in both directions before it
   * is closed, and an answer may wait on a client that takes none of it
   * (the progress deadline, limits/progress.ts; default 120; 0: never).
   * There is no limit on a whole request: a push streams its pack for as
   * long as it keeps moving.
   */
  httpIdleTimeout?: number;
  /**
   * Prometheus metrics on a listener of their own (never on the HTTP
   * port): `GET /metrics` at `host` (default 127.0.0.1, whatever `host`
   * above says) and `port` (0: any free port).
   */
  metrics?: { port: number; host?: string };
  log?: (entry: RequestLog) => void;
  /** environment for upload-pack (GIT_NAMESPACE, …) */
  env?: NodeJS.ProcessEnv;
  /** open repositories kept between requests; false to open each request afresh */
  pool?: PoolOptions | false;
  /** pack-objects cache: a cache, or options for one (`dir` at least) */
  packCache?: PackCache | PackCacheOptions;
  /**
   * who makes packs for fetches: `native` (gitwire itself, the default; no
   * git process on the fetch path) or `git` (`git pack-objects`). A
   * repository's uploadpack.packObjectsHook always runs git's.
   */
  packObjects?: import('../protocol/session.js').PackProducerName;
  /** per-request limits (protocol/limits.ts) */
  limits?: Partial<Limits>;
  /**
   * fork children (pack-objects, index-pack, hooks) through a small helper
   * process, so that a fork never stalls this one (default true; see util/spawn.ts)
   */
  spawnHelper?: boolean;
  /** refuse repositories whose storage leaves the root (ServeHooks.confineStorage) */
  confineStorage?: boolean;
  /** only objects reachable from visible refs may be fetched (ServeHooks.strictVisibility) */
  strictVisibility?: boolean;
  /** with `metrics`: register gitwire's metrics in this prom-client registry instead of a new one */
  metricsRegistry?: import('prom-client').Registry;
  /** HTTP: the client's address from X-Forwarded-For (ServeHooks.trustProxy) */
  trustProxy?: boolean | string[] | import('./proxy-protocol.js').ProxyTrust;
  /** git:// and SSH: connections from these balancers open with a PROXY header naming the client (proxy-protocol.ts) */
  proxyProtocol?: import('./proxy-protocol.js').ProxyTrust;
  /** Git LFS on HTTP (`…/info/lfs/`) and SSH (git-lfs-authenticate, git-lfs-transfer): a service, or options for one; off unless given */
  lfs?: LfsService | LfsOptions | false;
  /** several nodes over one root (cluster/): Redis, fleet-wide limits */
  cluster?: ClusterOptions;
  /** per-client rates and requests in progress, anonymous and users apart, and adaptive admission (docs/limits.md) */
  clientLimits?: ClientLimits | ClientLimitOptions;
  /** a JSON POST after each push that moved refs, delivered off the request path (admin/webhooks.ts, docs/webhooks.md) */
  webhooks?: Webhooks | WebhookOptions;
  /**
   * Bundles gitwire makes and offers to clones through bundle-uri (bundle/,
   * docs/serving.md): a service, or options for one (`mode: 'serve'` offers
   * the bundles `gitwire bundle create` made; `'auto'` makes them too). Off unless given.
   */
  bundles?: import('../bundle/service.js').BundleService | import('../bundle/service.js').BundleServiceOptions;
}

export interface ClusterOptions {
  /** Redis URL: coordinate with the other nodes (without it, this process alone, the same code path) */
  redis?: string;
  /** or a coordinator made by the caller */
  coordinator?: Coordinator;
  /** pack-objects at once for one repository, across every node (0: no limit) */
  maxPacksPerRepo?: number;
  /** pack-objects at once for one client address, across every node (0: no limit) */
  maxPacksPerClient?: number;
  /** lease and claim lifetime without renewal, ms (default 5000) */
  ttlMs?: number;
  log?: (msg: string, fields: Record<string, unknown>, level?: 'info' | 'warn') => void;
}

/** a shutdown drains only when /readyz was asked this recently: nothing else learns of the 503 */
export const DRAIN_PROBE_WINDOW_MS = 60_000;

/** seconds of silence after which an HTTP connection is closed, unless httpIdleTimeout says otherwise */
export const DEFAULT_HTTP_IDLE_TIMEOUT = 120;

export interface RunningServer {
  http?: HttpServer;
  git?: NetServer;
  ssh?: NetServer;
  httpPort?: number;
  gitPort?: number;
  /** the metrics listener, when `metrics` was given */
  metrics?: HttpServer;
  metricsPort?: number;
  sshPort?: number;
  limiter: PackLimiter;
  ingestLimiter: PackLimiter;
  /** the per-client limits, when given */
  clientLimits?: ClientLimits;
  /** the webhook queue, when given */
  webhooks?: Webhooks;
  /** the bundle service, when `bundles` was given */
  bundles?: import('../bundle/service.js').BundleService;
  pool?: RepositoryPool;
  packCache?: PackCache;
  /** `/healthz` and `/readyz` on the HTTP and metrics listeners; `draining` once shutdown has started */
  health: Health;
  /** what coordinates this node with others (a LocalCoordinator without `cluster.redis`) */
  coordinator: Coordinator;
  /** for a readiness answer: whether coordination is up (a Redis node that lost Redis serves with local limits) */
  coordinationStatus(): CoordinationStatus;
  /**
   * Stop accepting, let transfers finish within `graceMs`, then cut them.
   * With `drainMs`, and when something asked `/readyz` in the last minute (a
   * balancer routes by it), /readyz answers 503 for `drainMs` while the
   * listeners still serve, so the balancer takes the node out before its
   * ports close; `endDrain()` ends that wait early.
   */
  shutdown(graceMs?: number, drainMs?: number): Promise<void>;
  endDrain(): void;
}

/** how often a node reads the fleet's LFS token key again (Redis may have been emptied: the first node then makes a new one) */
export const LFS_KEY_SYNC_MS = 10_000;
/** how long a starting node waits for Redis before it signs with a key of its own (until the fleet's is read) */
const LFS_KEY_WAIT_MS = 3000;

/**
 * The nodes of a fleet sign LFS tokens with one key, agreed on through
 * Redis (a batch answered by one node, its upload and verify landing on
 * another), unless the options gave one (--lfs-token-key-file).
 */
async function agreeOnLfsKey(lfs: LfsService, coordinator: Coordinator): Promise<NodeJS.Timeout> {
  const agree = async () => {
    const k = await coordinator.sharedSecret('lfs-token-key');
    if (k) lfs.signer.useKey(k);
    return k !== undefined;
  };
  for (const end = Date.now() + LFS_KEY_WAIT_MS; !(await agree()) && Date.now() < end;) await new Promise((r) => setTimeout(r, 100));
  const t = setInterval(() => { void agree(); }, LFS_KEY_SYNC_MS);
  t.unref();
  return t;
}

/** listen(), its failure tagged with the listener's name (`err.listener`: http, git, metrics, ssh). */
function listen(server: { listen(port: number, host: string, cb: () => void): unknown; once(ev: 'error', cb: (e: Error) => void): unknown }, port: number, host: string, listener: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(Object.assign(e, { listener })));
    server.listen(port, host, resolve);
  });
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  if (!o.root && !o.resolveRepository) throw new TypeError('startServer: `root` or `resolveRepository` is needed to find repositories');
  if (o.spawnHelper !== false) useSpawnHelper();
  const cl = o.cluster ?? {};
  const coordinator = cl.coordinator ?? await createCoordinator({ redis: cl.redis, root: o.root ?? '/', ttlMs: cl.ttlMs, log: cl.log });
  const limiter = new PackLimiter(o.maxPacks ?? 0, undefined, undefined, { coordinator, perRepo: cl.maxPacksPerRepo, perClient: cl.maxPacksPerClient });
  const ingestLimiter = new PackLimiter(o.maxIngests ?? 0, undefined, 'ingest');
  const webhooks = o.webhooks === undefined ? undefined : o.webhooks instanceof Webhooks ? o.webhooks : new Webhooks(o.webhooks);
  const push: PushHooks = {
    receivePack: o.receivePack, enableReceivePack: o.enableReceivePack, authorizePush: o.authorizePush, pushHookOptions: o.pushHookOptions, maxPushSize: o.maxPushSize, ingestLimiter,
    protectedRefs: o.protectedRefs,
    // refs moved: every node drops its snapshot of the repository; the webhooks are queued (never awaited)
    onPush: (info, results) => {
      coordinator.publish(info.gitDir);
      bundles?.pushed(info.gitDir);
      if (webhooks) {
        const repository = (o.root !== undefined ? repositoryName(o.root, info.gitDir) : undefined) ?? canonicalName(info.repository);
        webhooks.push({ repository, user: info.request.user, transport: info.request.transport, refs: results.map((r) => ({ ref: r.ref, old: r.oldHex, new: r.newHex })) });
      }
      return o.onPush?.(info, results);
    },
  };
  let packCache: PackCache | undefined;
  if (o.packCache) {
    const { PackCache: Cache } = await import('../pack/cache.js');
    packCache = o.packCache instanceof Cache ? o.packCache : new Cache({ coordinator, ...o.packCache });
    packCache.coordinator ??= coordinator;
  }
  const clientLimits = o.clientLimits === undefined ? undefined : o.clientLimits instanceof ClientLimits ? o.clientLimits : new ClientLimits(o.clientLimits);
  let bundles: import('../bundle/service.js').BundleService | undefined;
  if (o.bundles) {
    const { BundleService } = await import('../bundle/service.js');
    bundles = o.bundles instanceof BundleService ? o.bundles : new BundleService({ root: o.root, coordinator, env: o.env, ...o.bundles });
    // bundles hold what upload-pack sees: the repositories opened with its environment
    bundles.opts.env ??= o.env;
  }
  const health = new Health();
  // ready either way: without Redis a node serves with its local limits, and says so
  if (coordinator.mode === 'redis') health.notes.push(() => (coordinator.status().up ? 'coordination: redis' : 'coordination: redis unreachable, serving with local limits and no cross-node joins'));
  let metrics: import('./metrics.js').Metrics | undefined;
  let metricsServer: HttpServer | undefined;
  if (o.metrics) {
    const { createMetrics, createMetricsServer } = await import('./metrics.js');
    metrics = createMetrics({ limiter, cache: packCache, ingest: ingestLimiter, registry: o.metricsRegistry, coordinator, clientLimits, webhooks, bundles });
    metricsServer = createMetricsServer(metrics, health, (e) => {
      try { o.log?.({ transport: 'http', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'error', command: 'metrics', error: errorText(e) }); } catch { /* logger failed */ }
    });
  }
  // set when the shutdown's grace period is over: what ends after that was cut, not failed
  let cutting = false;
  const log = (e: RequestLog) => {
    try {
      if (cutting && e.outcome !== 'ok') e.outcome = 'shutdown';
      e.requestId ??= randomUUID();
      // the SSH server names the repository once the command parsed; its service follows from the push fields
      if (e.transport === 'ssh' && e.service === undefined && e.repository !== undefined) e.service = e.push ? 'receive-pack' : 'upload-pack';
      metrics?.observe(e);
      o.log?.(e);
    } catch { /* logging never takes a request (or the server) down */ }
  };
  const sockets = new Set<Socket>();
  const active = new Set<Promise<void>>();
  // a handler's failure stays with its request: logged, never an unhandled rejection
  const track = (p: Promise<void>) => {
    const q = p.catch((e: unknown) => {
      try { log({ transport: 'http', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'error', error: errorText(e) }); } catch { /* logger failed too */ }
    }).finally(() => active.delete(q));
    active.add(q);
  };
  const pool = o.pool === false ? undefined : new RepositoryPool(o.pool);
  const lfs = o.lfs ? (o.lfs instanceof LfsService ? o.lfs : new LfsService(o.lfs)) : undefined;
  const lfsKeySync = lfs && lfs.options.tokenKey === undefined && coordinator.mode === 'redis' ? await agreeOnLfsKey(lfs, coordinator) : undefined;
  if (pool) coordinator.onInvalidate((dir) => pool.invalidate(dir));
  const out: RunningServer = { limiter, ingestLimiter, clientLimits, webhooks, bundles, pool, packCache, health, coordinator, coordinationStatus: () => coordinator.status(), shutdown: async () => undefined, endDrain: () => undefined };
  const host = o.host ?? '127.0.0.1';
  // a listener that cannot bind fails the start: the ones already open are closed
  const bind = (server: Parameters<typeof listen>[0], port: number, h: string, name: string) => listen(server, port, h, name).catch((e: unknown) => {
    for (const l of [out.http, out.git, out.metrics, out.ssh]) l?.close();
    throw e;
  });
  if (o.http !== undefined) {
    const handler = createHttpHandler({ ...push, createOnPush: o.createOnPush, authenticate: o.authenticate, authorize: o.authorize, resolveRepository: o.resolveRepository, refFilter: o.refFilter, root: o.root, limiter, maxRequestBuffer: o.maxRequestBuffer ?? o.limits?.maxRequestBytes, log, env: o.env, limits: o.limits, pool, packCache, packObjects: o.packObjects, confineStorage: o.confineStorage, strictVisibility: o.strictVisibility, trustProxy: o.trustProxy, lfs, clientLimits, bundles });
    /** each connection's answer under way: while the server works on it, the connection is not idle */
    const answering = new WeakMap<Socket, import('node:http').ServerResponse>();
    const server = createServer((req, res) => {
      answering.set(req.socket, res);
      // draining: every answer closes its connection, so a kept-alive client (or balancer) opens its next one elsewhere
      if (health.draining) res.setHeader('Connection', 'close');
      if (!health.handle(req, res)) track(handler(req, res));
    });
    // Node cuts a request still arriving after requestTimeout (300 s): a slow push of a
    // large pack would get 408. Idleness is what ends a connection here instead.
    server.requestTimeout = 0;
    const idle = o.httpIdleTimeout ?? DEFAULT_HTTP_IDLE_TIMEOUT;
    server.setTimeout(idle * 1000, (s) => {
      // the request is in and nothing waits for the client: the time is the server's (a queue for a
      // pack slot, pack-objects counting), not the client's silence. What it then writes is watched
      const res = answering.get(s);
      if (res && !res.writableEnded && res.req.complete && s.writableLength === 0) return;
      // silent both ways with an answer queued: the client stopped reading (logged as the progress deadline's cut)
      if (s.writableLength > 0) markStalled(s, { direction: 'not-reading', idleMs: idle * 1000, queued: s.writableLength });
      s.destroy();
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      // a client that takes nothing of an answer queued for it is cut after the idle time (limits/progress.ts)
      watchSocket(s, idle);
    });
    await bind(server, o.http, host, 'http');
    out.http = server;
    out.httpPort = (server.address() as AddressInfo).port;
    // git-lfs-authenticate sends SSH clients here unless told otherwise
    if (lfs && lfs.publicUrl === undefined) lfs.publicUrl = `http://${host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host}:${out.httpPort}`;
    // and bundle URLs for SSH and git:// clients point here too
    if (bundles && bundles.opts.baseUrl === undefined) bundles.opts.baseUrl = `http://${host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host}:${out.httpPort}`;
  }
  if (o.git !== undefined) {
    const server = createDaemonServer({
      ...push, authenticate: o.authenticate, authorize: o.authorize, resolveRepository: o.resolveRepository, refFilter: o.refFilter,
      root: o.root, exportAll: o.exportAll, maxConnections: o.maxConnections, initTimeout: o.initTimeout,
      timeout: o.timeout, limiter, log, env: o.env, limits: o.limits, pool, packCache, packObjects: o.packObjects, confineStorage: o.confineStorage, strictVisibility: o.strictVisibility, proxyProtocol: o.proxyProtocol, clientLimits, bundles,
    });
    server.on('connection', (s) => {
      sockets.add(s);
      track(new Promise<void>((resolve) => s.on('close', () => { sockets.delete(s); resolve(); })));
    });
    server.on('error', (e) => log({ transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'server-error', error: e.message }));
    await bind(server, o.git, host, 'git');
    out.git = server;
    out.gitPort = (server.address() as AddressInfo).port;
  }
  if (metricsServer && o.metrics) {
    const m = metricsServer;
    const { port, host: mhost = '127.0.0.1' } = o.metrics;
    await bind(m, port, mhost, 'metrics');
    m.on('error', () => { /* a failing connection stays with it */ });
    out.metrics = m;
    out.metricsPort = (m.address() as AddressInfo).port;
  }
  if (o.ssh !== undefined) {
    if (!o.sshOptions) throw new Error('ssh: sshOptions (host keys, authenticate) are needed');
    const { createSshServer } = await import('./ssh/index.js');
    const server = createSshServer({
      ...push, authorize: o.authorize, resolveRepository: o.resolveRepository, refFilter: o.refFilter, createOnPush: o.createOnPush, ...o.sshOptions,
      // a repository a command deletes is forgotten here and on every node
      commands: o.sshOptions?.commands && ((req) => o.sshOptions!.commands!({ ...req, forget: (dir) => { pool?.invalidate(dir); coordinator.publish(dir); } })),
      root: o.root, limiter, log, env: o.env, limits: o.limits, pool, packCache, packObjects: o.packObjects, confineStorage: o.confineStorage, strictVisibility: o.strictVisibility, lfs, proxyProtocol: o.proxyProtocol, clientLimits, bundles,
    });
    server.on('connection', (s) => {
      sockets.add(s);
      track(new Promise<void>((resolve) => s.on('close', () => { sockets.delete(s); resolve(); })));
    });
    server.on('error', (e) => log({ transport: 'ssh', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'error', error: `server error: ${e.message}` }));
    await bind(server, o.ssh, host, 'ssh');
    out.ssh = server;
    out.sshPort = (server.address() as AddressInfo).port;
  }
  out.shutdown = async (graceMs = 10_000, drainMs = 0) => {
    // not ready from this moment; the metrics listener stays up (503 on /readyz) while transfers finish
    health.draining = true;
    // a balancer that probes /readyz needs a few probes to see the 503: serve on until it has
    if (drainMs > 0 && performance.now() - health.lastReadinessProbe < DRAIN_PROBE_WINDOW_MS) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, drainMs);
        out.endDrain = () => { clearTimeout(t); resolve(); };
      });
    }
    out.http?.close();
    out.git?.close();
    out.ssh?.close();
    out.http?.closeIdleConnections?.();
    const all = Promise.allSettled([...active]);
    const timer = new Promise<void>((r) => setTimeout(r, graceMs).unref());
    await Promise.race([all, timer]);
    cutting = true;
    for (const s of sockets) s.destroy();
    await Promise.race([Promise.allSettled([...active]), new Promise((r) => setTimeout(r, 3000).unref())]);
    // deliveries in flight get a moment more; what is queued is dropped (and logged)
    if (webhooks && !(o.webhooks instanceof Webhooks)) await webhooks.close(Math.min(graceMs, 5000));
    out.metrics?.close();
    out.metrics?.closeAllConnections?.();
    pool?.close();
    packCache?.close();
    if (!(o.bundles && 'offer' in o.bundles)) await bundles?.close();
    if (lfsKeySync) clearInterval(lfsKeySync);
    if (!(o.clientLimits instanceof ClientLimits)) clientLimits?.close();
    if (!cl.coordinator) await coordinator.close();
  };
  return out;
}
