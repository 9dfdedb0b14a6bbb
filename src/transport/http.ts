/**
 * Smart HTTP (gitprotocol-http, git-http-backend) as a `(req, res)`
 * handler for node:http, Express and Fastify (`reply.raw`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientGone, GitwireError, type ErrorCode } from '../errors.js';
import { protocolVersion } from '../protocol/version.js';
import { StreamSink } from '../pktline/sink.js';
import { services, type ServiceResult } from '../protocol/service.js';
import { repositoryName, STORAGE_REFUSED } from './paths.js';
import { admitRequest, serviceEnv, type AdmitSteps } from './request.js';
import type { PackLimiter } from './admission.js';
import type { RepositoryPool } from '../repo/pool.js';
import type { Limits } from '../protocol/limits.js';
import { serveHttpPush, type PushHooks, type PushLog } from './http-push.js';
import { drainRequest, internalError, knownEncoding, NO_CACHE, notFound, plain, refuse, RequestBody } from './http-answer.js';
import { clientSessionId, connectionId, forwardedFor } from './request-id.js';
import { forwardedOrigin } from './forwarded.js';
import { ProxyTrust } from './proxy-protocol.js';
import { PROGRESS_TIMEOUT, stalled, stallReason } from './limits/progress.js';
import { concatSliced, Slicer } from '../util/budget.js';
import { parseLfsRoute, serveLfsHttp, type LfsRoute, type LfsService, type LfsServiceName } from '../lfs/index.js';
import { clientId, COST, COST_HEADER, refusalMessage, refusalOutcome, releaseOnClose, CostScan, type ClientLimits, type LimitRefusal } from './limits/index.js';

export type Deny = {
  status: number;
  message: string;
  headers?: Record<string, string>;
  /**
   * what the log and metrics call it (default `denied`): `challenge`, a 401
   * asking for credentials none were sent (git sends them only when asked);
   * `login-failed`, credentials that did not check out
   */
  outcome?: 'challenge' | 'login-failed';
  /** with `login-failed`: the user name that was tried (the log's `triedUser`) */
  user?: string;
};

export interface RequestInfo {
  transport: 'http' | 'git' | 'ssh';
  /** repository path as requested (decoded, without the service suffix) */
  path: string;
  req?: IncomingMessage;
  /** git:// host= value */
  host?: string;
  remoteAddress?: string;
  /** the service asked for: `authorize` admitting `receive-pack` enables push (http-backend's rule) */
  service?: 'upload-pack' | 'receive-pack' | LfsServiceName;
  /** the authenticated user, when `authenticate` or `authorize` sets it (push reflogs, callbacks, the log line); over SSH, the key's user */
  user?: string;
  /** SSH: the SHA-256 fingerprint of the key the client authenticated with */
  fingerprint?: string;
}

export interface ServeHooks extends PushHooks {
  /** served root (used by the default resolveRepository) */
  root?: string;
  /** map a request to a repository directory; undefined → not found */
  resolveRepository?(info: RequestInfo): string | undefined | Promise<string | undefined>;
  /**
   * Who is asking: called for every request before its path is looked at,
   * so that a client who must give credentials is asked for them (401)
   * whether or not the repository exists. true (it may set `info.user`), or
   * the answer. A throw is a 500 for the client and the message in the log.
   */
  authenticate?(info: RequestInfo): true | Deny | Promise<true | Deny>;
  /**
   * May this request use this (resolved) repository? true, or the answer; a
   * 404 is answered exactly as a missing repository (use it where the user
   * may not see the repository at all). A throw is a 500 for the client and
   * the message in the log.
   */
  authorize?(info: RequestInfo, repository: string): true | Deny | Promise<true | Deny>;
  /** per-request ref filter: refs it rejects are hidden (as hideRefs; with strictVisibility, nothing reachable only from them is fetchable) */
  refFilter?(info: RequestInfo, repository: string): ((refname: string) => boolean) | undefined;
  /** admission control for pack-objects */
  limiter?: PackLimiter;
  /** one structured line per request */
  log?(entry: RequestLog): void;
  /** environment for upload-pack and pack-objects */
  env?: NodeJS.ProcessEnv;
  /** keep repositories open between requests (see RepositoryPool) */
  pool?: RepositoryPool;
  /** pack-objects cache shared by identical fetches */
  packCache?: import('../pack/cache.js').PackCache;
  /** who makes packs: `native` (gitwire, the default) or `git` (pack-objects) */
  packObjects?: import('../protocol/session.js').PackProducerName;
  /**
   * refuse a repository whose storage (commondir, objects, refs, alternates,
   * symlinks inside them) leaves `root` (or, without a root, the repository's
   * own git directory); see storageOutside in paths.ts
   */
  confineStorage?: boolean;
  /** only objects reachable from the refs a request can see may be fetched (hideRefs, refFilter); see protocol/visibility.ts */
  strictVisibility?: boolean;
  /**
   * HTTP behind a reverse proxy: on a request from one of these proxies
   * (addresses, CIDR blocks, or a ProxyTrust), the client's address is the
   * last `X-Forwarded-For` entry (the one the proxy appended), the proxy's
   * goes to the log as `proxyAddress`. From any other peer, and when off,
   * the header is ignored, so a client cannot name its own address. `true`
   * believes every peer: only where nothing but the proxy can connect.
   */
  trustProxy?: boolean | string[] | ProxyTrust;
  /** per-client rates, requests in progress and adaptive admission (limits/), checked by admitRequest on every transport */
  clientLimits?: ClientLimits;
  /**
   * Push-to-create (admin/push-to-create.ts): a receive-pack request that
   * found no repository asks this hook, with `may(dir)`, the transport's
   * `authorize` for a directory. The repository's directory once made (the
   * request then goes on as for one that was there), a refusal, or
   * undefined (not found).
   */
  createOnPush?(info: RequestInfo, may: (dir: string) => Promise<true | Deny>): Promise<string | Deny | undefined>;
  /** bundles gitwire made, offered through bundle-uri and downloaded from `<repository>/info/bundles/<file>` (bundle/) */
  bundles?: import('../bundle/service.js').BundleService;
}

export interface HttpOptions extends ServeHooks {
  /** cap on the (inflated) request body, like http.maxRequestBuffer (default 10 MiB) */
  maxRequestBuffer?: number;
  /** per-request limits (protocol/limits.ts) */
  limits?: Partial<Limits>;
  /** counts every request (createMetrics' result, or anything with `observe`), beside `log` */
  metrics?: { observe(entry: RequestLog): void };
  /** Git LFS under `<repository>/info/lfs/` (lfs/): off unless given */
  lfs?: LfsService;
}

export interface RequestLog {
  /** ties the lines of one operation: an HTTP connection's id (a clone's 2-3 requests), a git:// or SSH connection's */
  requestId?: string;
  /** the client's `session-id`, where it sent one (only when the repository sets transfer.advertiseSID) */
  sessionId?: string;
  repository?: string;
  transport: 'http' | 'git' | 'ssh';
  /** the service asked for */
  service?: 'upload-pack' | 'receive-pack' | LfsServiceName;
  /** the authenticated user (info.user; over SSH, the key's user) */
  user?: string;
  /** a failed login (`login-failed`): the user name that was tried */
  triedUser?: string;
  /** SSH: the key's fingerprint */
  fingerprint?: string;
  /** the client's address (behind a trusted proxy, from X-Forwarded-For) */
  remoteAddress?: string;
  /** with trustProxy: the proxy's own address */
  proxyAddress?: string;
  protocol?: number;
  command?: string;
  wants?: number;
  haves?: number;
  bytesOut: number;
  writes: number;
  durationMs: number;
  outcome: Outcome;
  status?: number;
  /** what failed inside the server (for the operator; the client gets a generic answer): the error's message */
  error?: string;
  /** the error's structured detail (its data: object ids, files, limits; its cause) */
  detail?: Record<string, unknown>;
  /** pack-objects cache: hit, miss, join, bypass or retry */
  packCache?: string;
  /** receive-pack: refs updated/rejected, bytes in, objects */
  push?: PushLog;
  /** why a repository was refused (for the operator; clients get a short answer) */
  reason?: string;
  /** a fetch while a bundle was offered: whether the client started from it (`taken`) or cloned without it (`not-taken`) */
  bundle?: 'taken' | 'not-taken';
}

/** How a request can end besides an error code: a fixed set (metrics labels take only these and the codes). */
export const OUTCOMES = [
  'ok', 'no-route', 'bad-path', 'bad-method', 'forbidden', 'not-found', 'denied', 'challenge', 'login-failed', 'not-exported',
  'storage-outside-root', 'dubious-ownership', 'bad-content-type', 'bad-request', 'too-large', 'rejected', 'unpack-error',
  'protocol-error', 'too-many-connections', 'error', 'server-error',
  // SSH: refusals of the connection, of a channel request, and of a command
  'too-many-unauthenticated', 'login-grace-time', 'keepalive-timeout', 'idle-timeout', 'auth-error',
  'too-many-auth-failures', 'too-many-channels', 'shell', 'subsystem', 'unknown-command', 'bad-argument',
  'unsupported-service',
  // SSH before authentication: over the handshake rate of its address; closed to make room for a newcomer
  'handshake-rate', 'unauthenticated-evicted',
  // a transfer still running when the shutdown's grace period ended
  'shutdown',
  // per-client limits (limits/): over the rate, too many requests at once, anonymous work while saturated
  'rate-limited', 'concurrency-limited', 'saturated', 'busy',
  // a transfer that waited on its client with no progress for the timeout (transport/limits/progress.ts)
  'progress-timeout',
] as const;

/** What a request came to: how it was refused, or the code of the error that ended it (ERROR_CODES). */
export type Outcome = (typeof OUTCOMES)[number] | ErrorCode;

/** The outcome for an error that ended a conversation: its code, or `error` (the log's `error` has the message). */
export function failedOutcome(e: unknown): Outcome { return e instanceof GitwireError ? e.code : 'error'; }

/** An error's message for the log. */
export function errorText(e: unknown): string { return e instanceof Error ? e.message : String(e); }

/** An error line's fields: the message, and the detail behind the code (data, cause). */
export function describeError(entry: RequestLog, e: unknown): void {
  entry.error = errorText(e);
  const detail: Record<string, unknown> = {};
  if (e instanceof GitwireError) Object.assign(detail, e.data);
  const cause = (e as { cause?: unknown } | undefined)?.cause;
  if (cause !== undefined) detail.cause = errorText(cause);
  if (Object.keys(detail).length) entry.detail = detail;
}

/** Is this error a client that went away mid-body (not bad bytes)? */
function isAbort(req: IncomingMessage, e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code.startsWith('Z_') || code.startsWith('ERR_ZLIB')) return false;
  return !req.complete || code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/** what small chunks of a request body are gathered into */
const BODY_BLOCK = 64 * 1024;

/**
 * The request body, whole, and its cost score (limits/cost.ts), both taken
 * chunk by chunk as it arrives; the chunks are joined in slices. A 3 MB body
 * held the loop 100-240 ms here once (a scan of the joined body as strings,
 * then one copy).
 */
async function readBody(req: IncomingMessage, body: RequestBody, cap: number): Promise<{ body: Buffer; cost: number }> {
  const chunks: Buffer[] = [];
  const scan = new CostScan();
  // a body already buffered comes in chunks on one turn of the loop: the turn is given away between them
  const slicer = new Slicer();
  // small chunks are copied into blocks: a chunked body of 1-byte chunks is a Buffer each
  // (each a view of a socket read), and 1,000,000 of them held 490 MB
  let block: Buffer | undefined, used = 0;
  const endBlock = () => {
    if (!block || used === 0) return;
    // a block less than half full is kept at its size
    chunks.push(used < BODY_BLOCK / 2 ? Buffer.from(block.subarray(0, used)) : block.subarray(0, used));
    block = undefined;
  };
  let n = 0;
  try {
    for await (const c of body) {
      const p = slicer.due();
      if (p) await p;
      n += c.length;
      if (n > cap) {
        throw new GitwireError('GW_LIMIT', `request was larger than our maximum size (${cap}); try setting GIT_HTTP_MAX_REQUEST_BUFFER`, { httpStatus: 413 });
      }
      scan.feed(c);
      if (c.length >= BODY_BLOCK / 4) { endBlock(); chunks.push(c); continue; }
      if (block && used + c.length > BODY_BLOCK) endBlock();
      if (!block) { block = Buffer.allocUnsafe(BODY_BLOCK); used = 0; }
      used += c.copy(block, used);
    }
    endBlock();
  } catch (e) {
    if (e instanceof GitwireError) throw e;
    if (isAbort(req, e)) throw clientGone(e);
    throw new GitwireError('GW_PROTOCOL', `zlib error inflating request: ${(e as Error).message}`, { httpStatus: 400 });
  }
  return { body: await concatSliced(chunks, n, slicer), cost: scan.cost };
}

/** Split `/a/b.git/info/refs` into the repository path and the service route; `…/info/bundles/<file>` only when bundles are served. */
function route(pathname: string, bundles: boolean): { repo: string; kind: 'info-refs' | 'upload-pack' | 'receive-pack' | 'bundle'; file?: string } | undefined {
  const b = bundles ? /^(.*)\/info\/bundles\/([^/]*)$/.exec(pathname) : null;
  if (b) return { repo: b[1]!, kind: 'bundle', file: b[2]! };
  const m = /^(.*)\/(info\/refs|git-upload-pack|git-receive-pack)$/.exec(pathname);
  if (!m) return undefined;
  const kind = m[2] === 'info/refs' ? 'info-refs' : m[2] === 'git-upload-pack' ? 'upload-pack' : 'receive-pack';
  return { repo: m[1]!, kind };
}

function decodePath(raw: string): string | undefined {
  const segs: string[] = [];
  for (const s of raw.split('/')) {
    let d: string;
    try { d = decodeURIComponent(s); } catch { return undefined; }
    if (d.includes('/') || d.includes('\0') || d.includes('\\')) return undefined;
    segs.push(d);
  }
  return segs.join('/');
}

/** One request's log line: filled in as the request goes, written once. */
export class RequestRecord {
  readonly entry: RequestLog = { transport: 'http', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
  /** what the service did, reported whatever its outcome */
  served?: ServiceResult;
  sink?: StreamSink;
  info?: RequestInfo;
  private written = false;
  constructor(private readonly res: ServerResponse, private readonly t0: bigint, private readonly log?: (e: RequestLog) => void) {}

  /** The request ended with this error: its code as the outcome, its message and detail in the line. */
  fail(e: unknown, status?: number): void {
    describeError(this.entry, e);
    this.finish(failedOutcome(e), status);
  }

  finish(outcome: Outcome, status?: number): void {
    if (this.written) return;
    this.written = true;
    const { entry, served, sink } = this;
    // a transfer cut by its progress deadline: the client stopped taking the answer (limits/progress.ts)
    const stall = outcome !== 'ok' ? stalled(this.res.req?.socket) : undefined;
    if (stall) { outcome = PROGRESS_TIMEOUT; entry.reason = stallReason(stall); }
    entry.outcome = outcome;
    entry.status = status ?? (this.res.headersSent ? this.res.statusCode : undefined);
    if (this.info?.user !== undefined) entry.user = this.info.user;
    if (served) Object.assign(entry, { protocol: served.protocol, command: served.command, wants: served.wants, haves: served.haves, packCache: served.packCache, packWarnings: served.packWarnings, ...(served.bundle ? { bundle: served.bundle } : {}) });
    if (sink) Object.assign(entry, { bytesOut: sink.stats.bytes, writes: sink.stats.writes });
    entry.durationMs = Number(process.hrtime.bigint() - this.t0) / 1e6;
    try { this.log?.(entry); } catch { /* a throwing logger must not take the request down */ }
  }
}

/** What a framework's middleware chain passes on: called for URLs that are not git's. */
export type NextFunction = (err?: unknown) => void;

/**
 * A body a framework has read already (`express.raw()`, `express.json()`,
 * body-parser on every type): the stream is ended and nothing of it can be
 * read again. A request without a body is not one.
 */
function bodyConsumed(req: IncomingMessage): boolean {
  return req.readableEnded || (req as { body?: unknown }).body !== undefined;
}

export const BODY_CONSUMED = 'gitwire: the request body was already read by another handler (a body parser such as express.raw() or express.json() mounted before gitwire); mount gitwire before any body parser, or exclude its routes';

export function createHttpHandler(opts: HttpOptions): (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => Promise<void> {
  if (!opts.root && !opts.resolveRepository) throw new TypeError('createHttpHandler: `root` or `resolveRepository` is needed to find repositories');
  const cap = opts.maxRequestBuffer ?? 10 * 1024 * 1024;
  const { metrics, log: userLog } = opts;
  const log = metrics ? (e: RequestLog) => { try { metrics.observe(e); } finally { userLog?.(e); } } : userLog;
  // whose X-Forwarded-For is believed (throws on a bad address, at set-up)
  const forwardTrust = Array.isArray(opts.trustProxy) ? new ProxyTrust(opts.trustProxy, 'trustProxy') : opts.trustProxy || undefined;
  return async (req, res, next) => {
    // not git's URL: the next route of the framework's, untouched and unlogged
    if (next && !route(new URL(req.url ?? '/', 'http://localhost').pathname, opts.bundles !== undefined)) { next(); return; }
    const rec = new RequestRecord(res, process.hrtime.bigint(), log);
    const { entry } = rec;
    const refused = (status: number, message: string, outcome: Outcome, headers?: Record<string, string>) => {
      plain(res, status, message, headers);
      void drainRequest(req, res);
      rec.finish(outcome, status);
    };
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const lfsRoute = opts.lfs ? parseLfsRoute(url.pathname) : undefined;
      if (lfsRoute) return await serveLfs(opts, opts.lfs!, req, res, rec, lfsRoute, forwardTrust === true || forwardTrust?.trusts(req.socket.remoteAddress) === true);
      const r = route(url.pathname, opts.bundles !== undefined);
      const repoPath = r ? decodePath(r.repo) : undefined;
      const push = r?.kind === 'receive-pack' || (r?.kind === 'info-refs' && url.searchParams.get('service') === 'git-receive-pack');
      const info: RequestInfo = { transport: 'http', path: repoPath ?? url.pathname, req, remoteAddress: req.socket.remoteAddress, service: push ? 'receive-pack' : 'upload-pack' };
      rec.info = info;
      entry.requestId = connectionId(req.socket);
      if (r) entry.service = info.service;
      const forwarded = forwardTrust === true || forwardTrust?.trusts(req.socket.remoteAddress) ? forwardedFor(req.headers['x-forwarded-for']) : undefined;
      if (forwarded) { entry.proxyAddress = info.remoteAddress; info.remoteAddress = forwarded; }
      if (info.remoteAddress !== undefined) entry.remoteAddress = info.remoteAddress;
      if (r && repoPath !== undefined) entry.repository = repoPath;
      // credentials before anything is said about the path: a client that must log in cannot tell what exists
      if (opts.authenticate) {
        const a = await opts.authenticate(info);
        if (a !== true) { refuse(res, a); void drainRequest(req, res); if (a.user !== undefined) entry.triedUser = a.user; return rec.finish(a.outcome ?? 'denied', a.status); }
      }
      if (!r || repoPath === undefined) { notFound(res); void drainRequest(req, res); return rec.finish(r ? 'bad-path' : 'no-route', 404); }
      const method = req.method ?? 'GET';
      if (method === 'POST' && r.kind !== 'info-refs' && bodyConsumed(req)) {
        entry.error = BODY_CONSUMED;
        plain(res, 500, BODY_CONSUMED);
        return rec.finish('error', 500);
      }
      if (push) return await serveHttpPush(req, res, opts, { kind: r.kind === 'receive-pack' ? 'rpc' : 'info-refs', method, rec });
      if (r.kind === 'bundle') return await serveBundle(opts, req, res, rec, r.file!);
      if (r.kind === 'info-refs') {
        const service = url.searchParams.get('service');
        if (method !== 'GET' && method !== 'HEAD') return refused(405, 'Method Not Allowed', 'bad-method', { Allow: 'GET, HEAD' });
        if (service === null) return refused(403, 'Unsupported service: getanyfile', 'forbidden');
        if (service !== 'git-upload-pack') return refused(403, `Unsupported service: '${service}'`, 'forbidden');
      } else if (method !== 'POST') {
        return refused(405, 'Method Not Allowed', 'bad-method', { Allow: 'POST' });
      }
      const dir = await admitHttp(opts, req, res, rec);
      if (dir === undefined) return;
      const filter = opts.refFilter?.(info, dir);
      const service = services['git-upload-pack'];
      const env = serviceEnv(opts.env, gitProtocolHeader(req));
      entry.protocol = protocolVersion(env.GIT_PROTOCOL);
      const report = (x: ServiceResult) => { rec.served = x; };

      if (r.kind === 'info-refs') {
        res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.advertisement, [COST_HEADER]: String(COST.advertisement) });
        if (method === 'HEAD') { res.end(); return rec.finish('ok', 200); }
        rec.sink = new StreamSink(res);
        const v2 = entry.protocol === 2;
        try {
          await service.serve({
            directory: dir, repository: info.path, strict: true, advertiseRefs: true, statelessRpc: true, env,
            input: Buffer.alloc(0), output: rec.sink, refFilter: filter, announceService: !v2, report, pool: opts.pool,
            bundleOffer: opts.bundles?.offer({ transport: 'http', dir, filtered: filter !== undefined }),
          });
        } catch (e) {
          res.end();
          return rec.fail(e, 200);
        }
        res.end();
        return rec.finish('ok', 200);
      }
      const ctype = req.headers['content-type'] ?? '';
      if (ctype !== service.http.request) {
        return refused(415, `Expected POST with Content-Type '${service.http.request}', but received '${ctype}' instead.`, 'bad-content-type');
      }
      if (!knownEncoding(req)) return refused(415, `unsupported Content-Encoding: ${req.headers['content-encoding']}`, 'bad-request');
      const raw = new RequestBody(req);
      let body: Buffer, cost: number;
      try {
        ({ body, cost } = await readBody(req, raw, cap));
      } catch (e) {
        const ge = e as GitwireError;
        if (ge.code === 'GW_CLIENT_GONE') { res.destroy(); return rec.finish(ge.code); }
        const status = ge.httpStatus ?? 400;
        plain(res, status, ge.message);
        void drainRequest(req, res, raw);
        return rec.finish(status === 413 ? 'too-large' : 'bad-request', status);
      }
      const sid = clientSessionId(body);
      if (sid !== undefined) entry.sessionId = sid;
      res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.result, [COST_HEADER]: String(cost) });
      rec.sink = new StreamSink(res);
      try {
        await service.serve({
          directory: dir, repository: info.path, strict: true, statelessRpc: true, env, input: body, output: rec.sink,
          refFilter: filter, strictVisibility: opts.strictVisibility, acquirePackSlot: opts.limiter?.forClient(clientId(info)), pool: opts.pool, packCache: opts.packCache, packObjects: opts.packObjects, limits: opts.limits, report,
          bundleOffer: opts.bundles?.offer({ transport: 'http', dir, filtered: filter !== undefined }),
          // http-backend's stderr goes to the web server's log, never to the client or this server's stderr
          stderr: () => { /* dropped */ },
        });
        res.end();
        return rec.finish('ok', 200);
      } catch (e) {
        // the status line is gone already: like http-backend, end the body
        res.end();
        return rec.fail(e, 200);
      }
    } catch (e) {
      // a failing hook (authenticate, authorize, resolveRepository): its words are for the log, not the client
      entry.error = errorText(e);
      internalError(res);
      void drainRequest(req, res);
      return rec.finish('error', 500);
    }
  };
}

/**
 * `GET|HEAD <repository>/info/bundles/<file>`: a bundle gitwire made
 * (bundle/), admitted as a fetch of the repository is (authentication,
 * authorization, limits); a request whose view is filtered gets 404, as
 * it is never offered the bundle.
 */
async function serveBundle(opts: HttpOptions, req: IncomingMessage, res: ServerResponse, rec: RequestRecord, file: string): Promise<void> {
  const method = req.method ?? 'GET';
  rec.entry.command = 'bundle';
  if (method !== 'GET' && method !== 'HEAD') { plain(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' }); void drainRequest(req, res); return rec.finish('bad-method', 405); }
  const dir = await admitHttp(opts, req, res, rec);
  if (dir === undefined) return;
  let name: string;
  try { name = decodeURIComponent(file); } catch { name = ''; }
  if (opts.refFilter?.(rec.info!, dir) !== undefined) { notFound(res); void drainRequest(req, res); return rec.finish('not-found', 404); }
  const a = await opts.bundles!.download(req, res, dir, name, opts.env);
  rec.entry.bytesOut = a.bytesOut;
  if (a.outcome === 'not-found') { notFound(res); void drainRequest(req, res); return rec.finish('not-found', 404); }
  if (a.outcome === 'bad-range') return rec.finish('bad-request', 416);
  if (a.outcome === 'client-gone') return rec.finish('GW_CLIENT_GONE', a.status);
  if (a.outcome === 'truncated') { rec.entry.error = 'the bundle file ended before its size (replaced or truncated while it was sent)'; return rec.finish('GW_BUNDLE', a.status); }
  return rec.finish('ok', a.status);
}

/** The client's `Git-Protocol` header, when it sent one. */
export function gitProtocolHeader(req: IncomingMessage): string | undefined {
  const gp = req.headers['git-protocol'];
  return typeof gp === 'string' && gp ? gp : undefined;
}

/**
 * Admit the request through the shared steps (request.ts), or answer in
 * HTTP's words: a missing repository and one the user may not see alike.
 * The directory, or undefined when the request has been answered.
 */
export async function admitHttp(opts: HttpOptions, req: IncomingMessage, res: ServerResponse, rec: RequestRecord, steps?: AdmitSteps): Promise<string | undefined> {
  // a ref advertisement (GET) is small: let through while saturated; the client's share ends with the response
  const weight = steps?.weight ?? (req.method === 'GET' || req.method === 'HEAD' ? 'small' : 'work');
  const a = await admitRequest(opts, rec.info!, { ...steps, weight, until: (release) => releaseOnClose(release, res) });
  if (a.ok) return a.dir;
  if (a.outcome === 'rate-limited') { tooManyRequests(res, a.refusal); void drainRequest(req, res); rec.entry.reason = a.refusal.reason; rec.finish(refusalOutcome(a.refusal.reason), 429); return undefined; }
  if (a.outcome === 'denied') { refuse(res, a.deny); void drainRequest(req, res); rec.finish('denied', a.deny.status); return undefined; }
  if (a.outcome === 'storage-outside-root') { rec.entry.reason = a.reason; plain(res, 403, STORAGE_REFUSED); void drainRequest(req, res); rec.finish('storage-outside-root', 403); return undefined; }
  if (a.outcome === 'dubious-ownership') { rec.entry.reason = a.reason; plain(res, 403, a.message); void drainRequest(req, res); rec.finish('dubious-ownership', 403); return undefined; }
  notFound(res); void drainRequest(req, res); rec.finish('not-found', 404);
  return undefined;
}

/** 429 with `Retry-After` in seconds (the form git's http.c reads: delay-seconds or an HTTP-date). */
export function tooManyRequests(res: ServerResponse, r: LimitRefusal): void {
  plain(res, 429, refusalMessage(r), { 'Retry-After': String(r.retryAfter), [COST_HEADER]: String(COST.refused) });
}

/** `…/info/lfs/…`: the LFS API (lfs/http.ts), with this request's authentication, admission and log line. */
/** `viaProxy`: the peer is a proxy --trust-proxy names, whose forwarded headers (client address, scheme, host) are believed */
async function serveLfs(opts: HttpOptions, lfs: LfsService, req: IncomingMessage, res: ServerResponse, rec: RequestRecord, lr: LfsRoute, viaProxy: boolean): Promise<void> {
  const repoPath = decodePath(lr.repo);
  const info: RequestInfo = { transport: 'http', path: repoPath ?? lr.repo, req, remoteAddress: req.socket.remoteAddress, service: 'lfs-download' };
  rec.info = info;
  const forwarded = viaProxy ? forwardedFor(req.headers['x-forwarded-for']) : undefined;
  if (forwarded) { rec.entry.proxyAddress = info.remoteAddress; info.remoteAddress = forwarded; }
  if (info.remoteAddress !== undefined) rec.entry.remoteAddress = info.remoteAddress;
  // the links a batch hands out: the operator's public URL wins, then what a trusted proxy says, then this request's Host
  const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
  const origin = lfs.options.publicUrl?.replace(/\/+$/, '') ?? (viaProxy ? forwardedOrigin(req.headers, req.headers.host, encrypted) : undefined);
  if (repoPath !== undefined) rec.entry.repository = repoPath;
  await serveLfsHttp(lfs, {
    req, res, route: lr, repoPath: repoPath ?? '', origin,
    authenticate: async (service) => {
      info.service = service;
      const a = opts.authenticate ? await opts.authenticate(info) : true;
      if (a !== true && a.user !== undefined) rec.entry.triedUser = a.user;
      return a;
    },
    admit: async (service) => {
      info.service = service;
      if (repoPath === undefined) return { ok: false, deny: { status: 404, message: 'Not Found' } };
      const a = await admitRequest(opts, info, { until: (release) => releaseOnClose(release, res) });
      if (a.ok) return { ok: true, dir: a.dir, name: (opts.root && repositoryName(opts.root, a.dir)) || repoPath };
      if (a.outcome === 'rate-limited') { rec.entry.reason = a.refusal.reason; return { ok: false, deny: { status: 429, message: refusalMessage(a.refusal), headers: { 'Retry-After': String(a.refusal.retryAfter) } } }; }
      if (a.outcome === 'denied') return { ok: false, deny: a.deny };
      if (a.outcome === 'storage-outside-root') { rec.entry.reason = a.reason; return { ok: false, deny: { status: 403, message: STORAGE_REFUSED, outcome: 'storage-outside-root' } }; }
      if (a.outcome === 'dubious-ownership') { rec.entry.reason = a.reason; return { ok: false, deny: { status: 403, message: a.message, outcome: 'dubious-ownership' } }; }
      return { ok: false, deny: { status: 404, message: 'Not Found' } };
    },
    user: () => info.user,
    setUser: (u) => { info.user = u; },
    anonymousPush: opts.enableReceivePack === true,
    signIn: opts.authenticate !== undefined,
    drain: () => { void drainRequest(req, res); },
    finish: (l) => {
      rec.entry.command = l.command;
      if (l.bytesOut !== undefined) rec.entry.bytesOut = l.bytesOut;
      if (l.error !== undefined) rec.entry.error = l.error;
      rec.finish(l.outcome as Outcome, l.status || undefined);
    },
  });
}
