/**
 * Push over the network: smart HTTP's `info/refs?service=git-receive-pack`
 * and `POST …/git-receive-pack` (as git http-backend), and the options
 * every transport hands to receive-pack (authorizePush, onPush, hooks,
 * ingest admission, size caps), with one log entry per push.
 *
 * http-backend's rule: receive-pack is off unless the request is
 * authenticated. Here that is `http.receivepack` (the option, else the
 * repository's config) true, or the library's `authorize` admitting a
 * request whose `service` is `receive-pack`; `http.receivepack` false
 * refuses even then.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createInflate } from 'node:zlib';
import { GitwireError } from '../errors.js';
import { StreamSink } from '../pktline/sink.js';
import { protocolVersion } from '../protocol/version.js';
import { services } from '../protocol/service.js';
import type { PushInfo, PushUpdate, PushDecision, PushRefResult, ReceivePackOptions, ReceivePackResult } from '../protocol/receive-pack.js';
import { Repository } from '../repo/repository.js';
import { parseBool } from '../repo/config.js';
import { confinedStorage, resolveUnderRoot, STORAGE_REFUSED } from './paths.js';
import type { PackLimiter } from './admission.js';
import type { Deny, HttpOptions, RequestInfo, RequestLog } from './http.js';

/** What the library's push callbacks see: the push, and the request it came in on. */
export interface ServePushInfo extends PushInfo {
  request: RequestInfo;
  /** repository path as requested */
  repository: string;
}

/** Per-request hook options. */
export interface PushHookOptions {
  /** false: no repository hook runs (default true) */
  run?: boolean;
  /** extra environment for the hooks */
  env?: Record<string, string>;
}

/** Push options shared by the HTTP handler and the daemon (ServeHooks extends this). */
export interface PushHooks {
  /**
   * `http.receivepack` for every repository: true serves push without
   * `authorize` (trust the network), false never. Unset: the repository's
   * `http.receivepack`, else only requests `authorize` admits.
   */
  receivePack?: boolean;
  /** git://: serve git-receive-pack (git daemon's --enable=receive-pack) */
  enableReceivePack?: boolean;
  /** branch protection: called where pre-receive runs, after quarantine and connectivity */
  authorizePush?(info: ServePushInfo, updates: PushUpdate[]): PushDecision | void | Promise<PushDecision | void>;
  /** after refs moved (where post-receive runs); a failure is logged, it does not fail the push */
  onPush?(info: ServePushInfo, results: PushRefResult[]): void | Promise<void>;
  /** per request: whether repository hooks run, extra environment for them */
  pushHookOptions?(info: RequestInfo, repository: string): PushHookOptions | undefined;
  /** admission control for pack ingest (separate from pack-objects) */
  ingestLimiter?: PackLimiter;
  /** a cap on the pushed pack in bytes (on top of receive.maxInputSize) */
  maxPushSize?: number;
}

/** Push fields of a request's log entry. */
export interface PushLog {
  updated: number;
  rejected: number;
  /** request body bytes read (inflated) */
  bytesIn: number;
  objects?: number;
  unpackError?: string;
  onPushError?: string;
  /** reasons of rejected refs (for metrics) */
  reasons: string[];
}

const NO_CACHE: Record<string, string> = {
  Expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  Pragma: 'no-cache',
  'Cache-Control': 'no-cache, max-age=0, must-revalidate',
};

function plain(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) { res.end(); return; }
  res.writeHead(status, { ...NO_CACHE, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(message.endsWith('\n') ? message : `${message}\n`);
}

const notEnabled: Deny = { status: 403, message: "Service not enabled: 'receive-pack'" };

/** The repository's `http.receivepack` (undefined when unset or unreadable). */
function repoReceivePack(dir: string): boolean | undefined {
  let repo: Repository | undefined;
  try {
    repo = Repository.open(dir, { strict: true });
    const v = repo.config.get('http.receivepack');
    return v === undefined ? undefined : parseBool(v, 'http.receivepack');
  } catch {
    return undefined;
  } finally {
    repo?.close();
  }
}

/** http-backend's gate for receive-pack: true, or the answer to give. */
export async function admitHttpPush(opts: HttpOptions, info: RequestInfo, dir: string): Promise<true | Deny> {
  const enabled = opts.receivePack ?? repoReceivePack(dir);
  if (enabled === false) return notEnabled;
  if (opts.authorize) {
    const a = await opts.authorize(info, dir);
    return a;
  }
  return enabled === true ? true : notEnabled;
}

/**
 * The receive-pack options a transport adds for one request: the library
 * callbacks bound to the request, hooks, ingest admission and the size cap.
 * `push` collects what the log line reports.
 */
export function pushServeOptions(opts: PushHooks, info: RequestInfo, dir: string, push: PushLog): Partial<ReceivePackOptions> {
  const hk = opts.pushHookOptions?.(info, dir);
  const bind = (pi: PushInfo): ServePushInfo => ({ ...pi, request: info, repository: info.path });
  const o: Partial<ReceivePackOptions> = {
    acquireIngestSlot: opts.ingestLimiter?.acquire,
    maxInputSize: opts.maxPushSize,
    runHooks: hk?.run,
    hookEnv: hk?.env,
    onPush: async (pi, results) => {
      for (const r of results) if (!r.ok && r.reason) push.reasons.push(r.reason);
      if (!opts.onPush) return;
      try {
        await opts.onPush(bind(pi), results.filter((r) => r.ok));
      } catch (e) {
        push.onPushError = e instanceof Error ? e.message : String(e);
      }
    },
  };
  if (opts.authorizePush) {
    const f = opts.authorizePush;
    o.authorizePush = (pi, updates) => f(bind(pi), updates);
  }
  return o;
}

/** The log entry's push fields from a finished conversation. */
export function pushResult(push: PushLog, r: ReceivePackResult): void {
  push.updated = r.updated;
  push.rejected = r.rejected;
  push.objects = r.objects;
  push.unpackError = r.unpackError;
}

/** http-backend's environment for a push by an authenticated user (the reflog's committer; `<user>@<transport>.<address>`). */
export function pushEnv(base: NodeJS.ProcessEnv, info: RequestInfo): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  if (info.user) {
    if (!env.GIT_COMMITTER_NAME) env.GIT_COMMITTER_NAME = info.user;
    if (!env.GIT_COMMITTER_EMAIL) env.GIT_COMMITTER_EMAIL = `${info.user}@${info.transport}.${info.remoteAddress ?? '(none)'}`;
  }
  return env;
}

/** Margin over --max-push-size for the commands before the pack. */
const COMMAND_SLACK = 1 << 20;

/** The request body, inflated, counted and capped; never buffered whole. */
async function* body(req: IncomingMessage, counter: PushLog, cap: number | undefined): AsyncGenerator<Buffer> {
  const enc = (req.headers['content-encoding'] ?? '').toLowerCase();
  let src: AsyncIterable<Buffer> = req;
  let inflate: Transform | undefined;
  if (enc === 'gzip' || enc === 'x-gzip') inflate = createGunzip();
  else if (enc === 'deflate') inflate = createInflate();
  if (inflate) {
    pipeline(req, inflate).catch(() => { /* seen by the loop below */ });
    src = inflate;
  }
  for await (const c of src) {
    counter.bytesIn += c.length;
    if (cap !== undefined && counter.bytesIn > cap + COMMAND_SLACK) {
      req.destroy();
      throw new GitwireError('GW_LIMIT', `push is larger than the server's maximum (${cap} bytes)`);
    }
    yield c;
  }
  if (!req.complete) throw new GitwireError('GW_CLIENT_GONE', 'the client went away mid-request');
}

export interface HttpPushRequest {
  kind: 'info-refs' | 'rpc';
  method: string;
  /** repository path as requested */
  path: string;
  info: RequestInfo;
  t0: bigint;
}

/** Serve one receive-pack HTTP request (both routes), logging it through `opts.log`. */
export async function serveHttpPush(req: IncomingMessage, res: ServerResponse, opts: HttpOptions, r: HttpPushRequest): Promise<void> {
  const service = services['git-receive-pack'];
  const push: PushLog = { updated: 0, rejected: 0, bytesIn: 0, reasons: [] };
  const entry: RequestLog = { transport: 'http', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok', repository: r.path, command: r.kind === 'rpc' ? 'receive-pack' : 'advertise' };
  let sink: StreamSink | undefined;
  const finish = (outcome: string, status?: number) => {
    entry.outcome = outcome;
    entry.status = status ?? (res.headersSent ? res.statusCode : undefined);
    if (sink) Object.assign(entry, { bytesOut: sink.stats.bytes, writes: sink.stats.writes });
    if (r.kind === 'rpc') entry.push = push;
    entry.durationMs = Number(process.hrtime.bigint() - r.t0) / 1e6;
    try { opts.log?.(entry); } catch { /* a throwing logger must not take the request down */ }
  };
  const drop = () => { if (!req.complete && !req.destroyed) req.resume(); };
  if (r.kind === 'info-refs' && r.method !== 'GET' && r.method !== 'HEAD') {
    plain(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' });
    return finish('bad-method', 405);
  }
  if (r.kind === 'rpc' && r.method !== 'POST') {
    drop();
    plain(res, 405, 'Method Not Allowed', { Allow: 'POST' });
    return finish('bad-method', 405);
  }
  r.info.service = 'receive-pack';
  const dir = opts.resolveRepository ? await opts.resolveRepository(r.info) : opts.root ? resolveUnderRoot(opts.root, r.path) : undefined;
  if (!dir) { drop(); plain(res, 404, 'Not Found'); return finish('not-found', 404); }
  const admit = await admitHttpPush(opts, r.info, dir);
  if (admit !== true) { drop(); plain(res, admit.status, admit.message, admit.headers); return finish('denied', admit.status); }
  const confined = confinedStorage(opts, dir);
  if (confined) { drop(); entry.reason = confined; plain(res, 403, STORAGE_REFUSED); return finish('storage-outside-root', 403); }

  const env = pushEnv(opts.env ?? process.env, r.info);
  delete env.GIT_PROTOCOL;
  const gp = req.headers['git-protocol'];
  if (typeof gp === 'string' && gp) env.GIT_PROTOCOL = gp;
  entry.protocol = protocolVersion(env.GIT_PROTOCOL);

  if (r.kind === 'info-refs') {
    res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.advertisement });
    if (r.method === 'HEAD') { res.end(); return finish('ok', 200); }
    sink = new StreamSink(res);
    // http-backend leaves the preamble out for a v2 request (receive-pack then answers v0)
    try {
      await service.serve({ directory: dir, strict: true, advertiseRefs: true, statelessRpc: true, env, input: Buffer.alloc(0), output: sink, announceService: entry.protocol !== 2 });
    } catch (e) {
      res.end();
      return finish(e instanceof GitwireError ? e.code : 'error', 200);
    }
    res.end();
    return finish('ok', 200);
  }

  const ctype = req.headers['content-type'] ?? '';
  if (ctype !== service.http.request) {
    drop();
    plain(res, 415, `Expected POST with Content-Type '${service.http.request}', but received '${ctype}' instead.`);
    return finish('bad-content-type', 415);
  }
  const enc = (req.headers['content-encoding'] ?? '').toLowerCase();
  if (enc && !['gzip', 'x-gzip', 'deflate', 'identity'].includes(enc)) {
    drop();
    plain(res, 415, `unsupported Content-Encoding: ${enc}`);
    return finish('bad-request', 415);
  }
  const cap = opts.maxPushSize;
  const len = Number(req.headers['content-length']);
  if (cap !== undefined && !enc && Number.isFinite(len) && len > cap + COMMAND_SLACK) {
    drop();
    plain(res, 413, `push is larger than the server's maximum (${cap} bytes)`);
    return finish('too-large', 413);
  }
  res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.result });
  sink = new StreamSink(res);
  try {
    const result = await service.serve({
      directory: dir, strict: true, statelessRpc: true, env, input: body(req, push, cap), output: sink, limits: opts.limits,
      stderr: () => { /* http-backend's stderr goes to the web server's log, not the client */ },
      ...pushServeOptions(opts, r.info, dir, push),
    });
    pushResult(push, result);
    res.end();
    return finish(push.unpackError ? 'unpack-error' : push.rejected ? 'rejected' : 'ok', 200);
  } catch (e) {
    // the status line is gone already: like http-backend, end the body
    if (!req.complete) res.destroy(); else res.end();
    return finish(e instanceof GitwireError ? e.code : 'error', 200);
  }
}
