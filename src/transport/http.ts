/**
 * Smart HTTP (gitprotocol-http, git-http-backend) as a `(req, res)`
 * handler for node:http, Express and Fastify (`reply.raw`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createInflate } from 'node:zlib';
import { clientGone, GitwireError } from '../errors.js';
import { protocolVersion } from '../protocol/version.js';
import { StreamSink } from '../pktline/sink.js';
import { services, type ServiceResult } from '../protocol/service.js';
import { confinedStorage, resolveUnderRoot, STORAGE_REFUSED } from './paths.js';
import type { PackLimiter } from './admission.js';
import type { RepositoryPool } from '../repo/pool.js';
import type { Limits } from '../protocol/limits.js';
import { serveHttpPush, type PushHooks, type PushLog } from './http-push.js';

export type Deny = { status: number; message: string; headers?: Record<string, string> };

export interface RequestInfo {
  transport: 'http' | 'git' | 'ssh';
  /** repository path as requested (decoded, without the service suffix) */
  path: string;
  req?: IncomingMessage;
  /** git:// host= value */
  host?: string;
  remoteAddress?: string;
  /** the service asked for: `authorize` admitting `receive-pack` enables push (http-backend's rule) */
  service?: 'upload-pack' | 'receive-pack';
  /** the authenticated user, when `authorize` sets it (push reflogs, callbacks); over SSH, the key's user */
  user?: string;
  /** SSH: the SHA-256 fingerprint of the key the client authenticated with */
  fingerprint?: string;
}

export interface ServeHooks extends PushHooks {
  /** served root (used by the default resolveRepository) */
  root?: string;
  /** map a request to a repository directory; undefined → not found */
  resolveRepository?(info: RequestInfo): string | undefined | Promise<string | undefined>;
  /** allow (true) or deny with a status and message */
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
  /**
   * refuse a repository whose storage (commondir, objects, refs, alternates,
   * symlinks inside them) leaves `root` (or, without a root, the repository's
   * own git directory); see storageOutside in paths.ts
   */
  confineStorage?: boolean;
  /** only objects reachable from the refs a request can see may be fetched (hideRefs, refFilter); see protocol/visibility.ts */
  strictVisibility?: boolean;
}

export interface HttpOptions extends ServeHooks {
  /** cap on the (inflated) request body, like http.maxRequestBuffer (default 10 MiB) */
  maxRequestBuffer?: number;
  /** per-request limits (protocol/limits.ts) */
  limits?: Partial<Limits>;
}

export interface RequestLog {
  repository?: string;
  transport: 'http' | 'git' | 'ssh';
  /** SSH: the key's user, its fingerprint and the client's address */
  user?: string;
  fingerprint?: string;
  remoteAddress?: string;
  protocol?: number;
  command?: string;
  wants?: number;
  haves?: number;
  bytesOut: number;
  writes: number;
  durationMs: number;
  outcome: string;
  status?: number;
  /** pack-objects cache: hit, miss, join, bypass or retry */
  packCache?: string;
  /** receive-pack: refs updated/rejected, bytes in, objects */
  push?: PushLog;
  /** why a repository was refused (for the operator; clients get a short answer) */
  reason?: string;
}

const NO_CACHE: Record<string, string> = {
  Expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  Pragma: 'no-cache',
  'Cache-Control': 'no-cache, max-age=0, must-revalidate',
};

/**
 * Every "no such repository here" answer: unroutable, undecodable, outside
 * the root, or absent. One response, byte for byte, so a client cannot
 * tell them apart; the reason goes to the request log.
 */
function notFound(res: ServerResponse): void { plain(res, 404, 'Not Found'); }

function plain(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) { res.end(); return; }
  res.writeHead(status, { ...NO_CACHE, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(message.endsWith('\n') ? message : `${message}\n`);
}

/** Is this error a client that went away mid-body (not bad bytes)? */
function isAbort(req: IncomingMessage, e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code.startsWith('Z_') || code.startsWith('ERR_ZLIB')) return false;
  return !req.complete || code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE';
}

async function readBody(req: IncomingMessage, cap: number): Promise<Buffer> {
  const enc = (req.headers['content-encoding'] ?? '').toLowerCase();
  let src: AsyncIterable<Buffer> = req;
  let inflate: Transform | undefined;
  if (enc === 'gzip' || enc === 'x-gzip') inflate = createGunzip();
  else if (enc === 'deflate') inflate = createInflate();
  else if (enc && enc !== 'identity') throw new GitwireError('GW_PROTOCOL', `unsupported Content-Encoding: ${enc}`, { httpStatus: 415 });
  if (inflate) {
    // pipeline passes an aborted request on to the inflater (req.pipe does not)
    pipeline(req, inflate).catch(() => { /* seen by the loop below */ });
    src = inflate;
  }
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const c of src) {
      n += c.length;
      if (n > cap) {
        throw new GitwireError('GW_LIMIT', `request was larger than our maximum size (${cap}); try setting GIT_HTTP_MAX_REQUEST_BUFFER`, { httpStatus: 413 });
      }
      chunks.push(c);
    }
  } catch (e) {
    if (e instanceof GitwireError) {
      if (!req.destroyed) req.resume();
      throw e;
    }
    if (isAbort(req, e)) throw clientGone(e);
    throw new GitwireError('GW_PROTOCOL', `zlib error inflating request: ${(e as Error).message}`, { httpStatus: 400 });
  }
  // an aborted request can end the iteration quietly: a short body is not a request
  if (!req.complete) throw clientGone();
  return Buffer.concat(chunks);
}

/** Split `/a/b.git/info/refs` into the repository path and the service route. */
function route(pathname: string): { repo: string; kind: 'info-refs' | 'upload-pack' | 'receive-pack' } | undefined {
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

export function createHttpHandler(opts: HttpOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const cap = opts.maxRequestBuffer ?? 10 * 1024 * 1024;
  return async (req, res) => {
    const t0 = process.hrtime.bigint();
    const entry: RequestLog = { transport: 'http', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
    /** what upload-pack did, reported whatever its outcome */
    let served: ServiceResult | undefined;
    let sink: StreamSink | undefined;
    const finish = (outcome: string, status?: number) => {
      entry.outcome = outcome;
      entry.status = status ?? (res.headersSent ? res.statusCode : undefined);
      if (served) Object.assign(entry, { protocol: served.protocol, command: served.command, wants: served.wants, haves: served.haves, packCache: served.packCache });
      if (sink) Object.assign(entry, { bytesOut: sink.stats.bytes, writes: sink.stats.writes });
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      opts.log?.(entry);
    };
    const failed = (e: unknown) => (e instanceof GitwireError ? e.code : 'error');
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const r = route(url.pathname);
      const repoPath = r ? decodePath(r.repo) : undefined;
      if (!r || repoPath === undefined) { req.resume(); notFound(res); return finish(r ? 'bad-path' : 'no-route', 404); }
      const info: RequestInfo = { transport: 'http', path: repoPath, req, remoteAddress: req.socket.remoteAddress, service: 'upload-pack' };
      const method = req.method ?? 'GET';
      if (r.kind === 'receive-pack' || (r.kind === 'info-refs' && url.searchParams.get('service') === 'git-receive-pack')) {
        return await serveHttpPush(req, res, opts, { kind: r.kind === 'receive-pack' ? 'rpc' : 'info-refs', method, path: repoPath, info, t0 });
      }
      if (r.kind === 'info-refs') {
        const service = url.searchParams.get('service');
        if (method !== 'GET' && method !== 'HEAD') { plain(res, 405, 'Method Not Allowed', { Allow: 'GET, HEAD' }); return finish('bad-method', 405); }
        if (service === null) { plain(res, 403, 'Unsupported service: getanyfile'); return finish('forbidden', 403); }
        if (service !== 'git-upload-pack') { plain(res, 403, `Unsupported service: '${service}'`); return finish('forbidden', 403); }
      } else if (method !== 'POST') {
        plain(res, 405, 'Method Not Allowed', { Allow: 'POST' });
        return finish('bad-method', 405);
      }
      const dir = opts.resolveRepository ? await opts.resolveRepository(info) : opts.root ? resolveUnderRoot(opts.root, repoPath) : undefined;
      entry.repository = repoPath;
      if (!dir) { req.resume(); notFound(res); return finish('not-found', 404); }
      if (opts.authorize) {
        const a = await opts.authorize(info, dir);
        if (a !== true) { req.resume(); plain(res, a.status, a.message, a.headers); return finish('denied', a.status); }
      }
      const confined = confinedStorage(opts, dir);
      if (confined) { req.resume(); entry.reason = confined; plain(res, 403, STORAGE_REFUSED); return finish('storage-outside-root', 403); }
      const filter = opts.refFilter?.(info, dir);
      const service = services['git-upload-pack'];
      const env: NodeJS.ProcessEnv = { ...(opts.env ?? process.env) };
      delete env.GIT_PROTOCOL;
      const gp = req.headers['git-protocol'];
      if (typeof gp === 'string' && gp) env.GIT_PROTOCOL = gp;
      entry.protocol = protocolVersion(env.GIT_PROTOCOL);
      const report = (x: ServiceResult) => { served = x; };

      if (r.kind === 'info-refs') {
        res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.advertisement });
        if (method === 'HEAD') { res.end(); return finish('ok', 200); }
        sink = new StreamSink(res);
        const v2 = entry.protocol === 2;
        try {
          await service.serve({
            directory: dir, strict: true, advertiseRefs: true, statelessRpc: true, env,
            input: Buffer.alloc(0), output: sink, refFilter: filter, announceService: !v2, report, pool: opts.pool,
          });
        } catch (e) {
          res.end();
          return finish(failed(e), 200);
        }
        res.end();
        return finish('ok', 200);
      }
      const ctype = req.headers['content-type'] ?? '';
      if (ctype !== service.http.request) {
        req.resume();
        plain(res, 415, `Expected POST with Content-Type '${service.http.request}', but received '${ctype}' instead.`);
        return finish('bad-content-type', 415);
      }
      let body: Buffer;
      try {
        body = await readBody(req, cap);
      } catch (e) {
        const ge = e as GitwireError;
        if (ge.code === 'GW_CLIENT_GONE') { res.destroy(); return finish(ge.code); }
        const status = ge.httpStatus ?? 400;
        plain(res, status, ge.message);
        return finish('bad-request', status);
      }
      res.writeHead(200, { ...NO_CACHE, 'Content-Type': service.http.result });
      sink = new StreamSink(res);
      try {
        await service.serve({
          directory: dir, strict: true, statelessRpc: true, env, input: body, output: sink,
          refFilter: filter, strictVisibility: opts.strictVisibility, acquirePackSlot: opts.limiter?.acquire, pool: opts.pool, packCache: opts.packCache, limits: opts.limits, report,
          // http-backend's stderr goes to the web server's log, never to the client or this server's stderr
          stderr: () => { /* dropped */ },
        });
        res.end();
        return finish('ok', 200);
      } catch (e) {
        // the status line is gone already: like http-backend, end the body
        res.end();
        return finish(failed(e), 200);
      }
    } catch (e) {
      plain(res, 500, (e as Error).message);
      return finish('error', 500);
    }
  };
}
