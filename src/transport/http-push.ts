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
import { GitwireError } from '../errors.js';
import { StreamSink } from '../pktline/sink.js';
import { protocolVersion } from '../protocol/version.js';
import { services } from '../protocol/service.js';
import type { PushInfo, PushUpdate, PushDecision, PushRefResult, ReceivePackOptions, ReceivePackResult } from '../protocol/receive-pack.js';
import { Repository } from '../repo/repository.js';
import { parseBool } from '../repo/config.js';
import type { PackLimiter } from './admission.js';
import { admitHttp, gitProtocolHeader, type Deny, type HttpOptions, type RequestInfo, type RequestRecord } from './http.js';
import { serviceEnv } from './request.js';
import { drainRequest, knownEncoding, NO_CACHE, plain, RequestBody } from './http-answer.js';

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
  /**
   * Protected refs for this request (`protect` lines of --auth-rules): a
   * predicate on ref names, true where this pusher may not rewind or delete
   * (receive/protect.ts). Called once per push; undefined: none.
   */
  protectedRefs?(info: RequestInfo, repository: string): ((ref: string) => boolean) | undefined;
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
  /** the refs that moved (old and new ids; the first MOVED_LOGGED of them) */
  moved?: Array<{ ref: string; old: string; new: string }>;
  /** how many more moved than `moved` lists */
  movedNotListed?: number;
}

/** refs a push's log line names; a push of thousands counts the rest */
export const MOVED_LOGGED = 100;

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

/**
 * http-backend's gate for receive-pack: true, or the answer to give.
 * `authorize` first, so that a user who may not see the repository is
 * told nothing about its configuration; then `http.receivepack`, which
 * when false refuses even an admitted request. Unset, push is on when the
 * request was admitted by `authenticate` (before this) or `authorize`.
 */
export async function admitHttpPush(opts: HttpOptions, info: RequestInfo, dir: string): Promise<true | Deny> {
  if (opts.authorize) {
    const a = await opts.authorize(info, dir);
    if (a !== true) return a;
  }
  const enabled = opts.receivePack ?? repoReceivePack(dir);
  if (enabled === false) return notEnabled;
  return enabled === true || opts.authorize || opts.authenticate ? true : notEnabled;
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
    protectedRef: opts.protectedRefs?.(info, dir),
    onResults: (results) => {
      let moved = 0;
      for (const r of results) {
        if (!r.ok) { if (r.reason) push.reasons.push(r.reason); continue; }
        if (!r.moved) continue;
        if (moved++ < MOVED_LOGGED) (push.moved ??= []).push({ ref: r.ref, old: r.oldHex, new: r.newHex });
      }
      if (moved > MOVED_LOGGED) push.movedNotListed = moved - MOVED_LOGGED;
    },
    // called only when some ref moved (not when every one was refused, or left as it was)
    onPush: async (pi, results) => {
      if (!opts.onPush) return;
      try {
        await opts.onPush(bind(pi), results.filter((r) => r.moved));
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

/** who pushed, for hooks: set from the request alone (the server's own environment never speaks for a pusher) */
const IDENTITY = ['GITWIRE_USER', 'REMOTE_USER', 'GITWIRE_PROTOCOL', 'GITWIRE_KEY_FINGERPRINT'] as const;

/**
 * A push's environment (every hook and child sees it): who pushed —
 * `GITWIRE_USER` and `REMOTE_USER` (the authenticated user; unset when
 * anonymous), `GITWIRE_PROTOCOL` (`http`, `ssh`, `git`) and, over SSH,
 * `GITWIRE_KEY_FINGERPRINT` (`SHA256:…`, as `ssh-keygen -l` prints it) —
 * and, as http-backend sets it, the reflog's committer for an
 * authenticated user (`<user>@<transport>.<address>`).
 */
export function pushEnv(base: NodeJS.ProcessEnv, info: RequestInfo): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const k of IDENTITY) delete env[k];
  env.GITWIRE_PROTOCOL = info.transport;
  if (info.user !== undefined) { env.GITWIRE_USER = info.user; env.REMOTE_USER = info.user; }
  if (info.transport === 'ssh' && info.fingerprint) env.GITWIRE_KEY_FINGERPRINT = info.fingerprint;
  if (info.user) {
    if (!env.GIT_COMMITTER_NAME) env.GIT_COMMITTER_NAME = info.user;
    if (!env.GIT_COMMITTER_EMAIL) env.GIT_COMMITTER_EMAIL = `${info.user}@${info.transport}.${info.remoteAddress ?? '(none)'}`;
  }
  return env;
}

/** Margin over --max-push-size for the commands before the pack. */
const COMMAND_SLACK = 1 << 20;

/** The request body, inflated, counted and capped; never buffered whole. */
async function* counted(src: RequestBody, counter: PushLog, cap: number | undefined): AsyncGenerator<Buffer> {
  for await (const c of src) {
    counter.bytesIn += c.length;
    if (cap !== undefined && counter.bytesIn > cap + COMMAND_SLACK) {
      src.req.destroy();
      throw new GitwireError('GW_LIMIT', `push is larger than the server's maximum (${cap} bytes)`);
    }
    yield c;
  }
}

export interface HttpPushRequest {
  kind: 'info-refs' | 'rpc';
  method: string;
  /** the request's log line (its `info` set) */
  rec: RequestRecord;
}

/** Serve one receive-pack HTTP request (both routes), logging it through `opts.log`. */
export async function serveHttpPush(req: IncomingMessage, res: ServerResponse, opts: HttpOptions, r: HttpPushRequest): Promise<void> {
  const service = services['git-receive-pack'];
  const push: PushLog = { updated: 0, rejected: 0, bytesIn: 0, reasons: [] };
  const { rec } = r;
  const info = rec.info!;
  rec.entry.command = r.kind === 'rpc' ? 'receive-pack' : 'advertise';
  if (r.kind === 'rpc') rec.entry.push = push;
  const refused = (status: number, message: string, outcome: Parameters<RequestRecord['finish']>[0], headers?: Record<string, string>) => {
    plain(res, status, message, headers);
    void drainRequest(req, res);
    rec.finish(outcome, status);
  };
  if (r.kind === 'info-refs' && r.method !== 'GET' && r.method !== 'HEAD') return refused(405, 'Method Not Allowed', 'bad-method', { Allow: 'GET, HEAD' });
  if (r.kind === 'rpc' && r.method !== 'POST') return refused(405, 'Method Not Allowed', 'bad-method', { Allow: 'POST' });
  const dir = await admitHttp(opts, req, res, rec, { gate: (i, d) => admitHttpPush(opts, i, d) });
  if (dir === undefined) return;

  const env = serviceEnv(pushEnv(opts.env ?? process.env, info), gitProtocolHeader(req));
  rec.entry.protocol = protocolVersion(env.GIT_PROTOCOL);

  if (r.kind === 'info-refs') {
    res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.advertisement });
    if (r.method === 'HEAD') { res.end(); return rec.finish('ok', 200); }
    rec.sink = new StreamSink(res);
    // http-backend leaves the preamble out for a v2 request (receive-pack then answers v0)
    try {
      await service.serve({ directory: dir, repository: info.path, strict: true, advertiseRefs: true, statelessRpc: true, env, input: Buffer.alloc(0), output: rec.sink, announceService: rec.entry.protocol !== 2 });
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
  const cap = opts.maxPushSize;
  const len = Number(req.headers['content-length']);
  if (cap !== undefined && !req.headers['content-encoding'] && Number.isFinite(len) && len > cap + COMMAND_SLACK) {
    return refused(413, `push is larger than the server's maximum (${cap} bytes)`, 'too-large');
  }
  res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.result });
  rec.sink = new StreamSink(res);
  const body = new RequestBody(req);
  try {
    const result = await service.serve({
      directory: dir, repository: info.path, strict: true, statelessRpc: true, env, input: counted(body, push, cap), output: rec.sink, limits: opts.limits,
      stderr: () => { /* http-backend's stderr goes to the web server's log, not the client */ },
      ...pushServeOptions(opts, info, dir, push),
    });
    pushResult(push, result);
    void drainRequest(req, res, body);
    return rec.finish(push.unpackError ? 'unpack-error' : push.rejected ? 'rejected' : 'ok', 200);
  } catch (e) {
    // the status line is sent with what was written (as http-backend: 200, the error in the body, if any);
    // what the client still sends is read and dropped (bounded), so it reads the answer and not a reset
    void drainRequest(req, res, body);
    return rec.fail(e, 200);
  }
}
