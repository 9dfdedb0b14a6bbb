/**
 * The LFS HTTP API under `<repository>/info/lfs/`: the batch API, the basic
 * transfer (PUT and GET of objects, with Range), the verify action and the
 * locking API, with git-lfs's media type, status codes and JSON error
 * bodies. Every oid is checked before any use; JSON bodies are capped;
 * uploads stream to the store with backpressure.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { LfsGate, LfsServiceName } from './exchange.js';
import { isOid, isSize, LFS_MEDIA_TYPE } from './oid.js';
import { LfsService, MAX_JSON_BYTES, type ObjectAnswer } from './service.js';
import { covers, isOurToken, TOKEN_SCHEME, type LfsOperation, type TokenClaims } from './token.js';
import { DEFAULT_LOCK_PAGE, isLockId, isLockPath, MAX_LOCK_PAGE, type Lock } from './locks.js';
import type { RepositoryStore } from './store/types.js';
import { noteBytesMoved } from '../util/reclaim.js';
import { jsonShapeError } from './json-shape.js';
import { GitwireError } from '../errors.js';

export type LfsRoute =
  | { repo: string; kind: 'batch' }
  | { repo: string; kind: 'object'; oid: string }
  | { repo: string; kind: 'verify' }
  | { repo: string; kind: 'locks' }
  | { repo: string; kind: 'locks-verify' }
  | { repo: string; kind: 'unlock'; id: string }
  /** under info/lfs but no route of the API */
  | { repo: string; kind: 'unknown' };

const MARK = '/info/lfs/';

/** `/<repo>/info/lfs/<what>` → the route (the repository part still percent-encoded), or undefined when the path is not LFS's. */
export function parseLfsRoute(pathname: string): LfsRoute | undefined {
  const at = pathname.lastIndexOf(MARK);
  if (at < 0) return undefined;
  const repo = pathname.slice(0, at);
  const rest = pathname.slice(at + MARK.length);
  if (rest === 'objects/batch') return { repo, kind: 'batch' };
  if (rest === 'objects/verify') return { repo, kind: 'verify' };
  if (rest === 'locks') return { repo, kind: 'locks' };
  if (rest === 'locks/verify') return { repo, kind: 'locks-verify' };
  let m = /^objects\/([^/]+)$/.exec(rest);
  if (m) return { repo, kind: 'object', oid: m[1]! };
  m = /^locks\/([^/]+)\/unlock$/.exec(rest);
  if (m) return { repo, kind: 'unlock', id: m[1]! };
  return { repo, kind: 'unknown' };
}

/** What the transport learns about the request for its log line. */
export interface LfsHttpLog { command: string; outcome: string; status: number; bytesIn?: number; bytesOut?: number; error?: string }

export interface LfsHttpExchange extends LfsGate {
  req: IncomingMessage;
  res: ServerResponse;
  route: LfsRoute;
  /** the repository path as the client wrote it, decoded (for hrefs) */
  repoPath: string;
  /**
   * where the client reached the server (`https://git.example.com[/prefix]`):
   * the public URL the operator gave, or a trusted proxy's forwarded scheme
   * and host; undefined: this request's own Host and TLS
   */
  origin?: string;
  /** end the request's log line */
  finish(log: LfsHttpLog): void;
  /** read and discard what the client still sends after an early answer (bounded) */
  drain(): void;
}

const JSON_TYPE = `${LFS_MEDIA_TYPE}; charset=utf-8`;

class Answered extends Error {
  constructor(readonly status: number, readonly outcome: string) { super('answered'); }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) { res.end(); return; }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Cache-Control': 'no-cache', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** git-lfs's error body: `{ "message": … }` (the client prints it). */
function error(res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void {
  sendJson(res, status, { message }, headers);
}

/** A refusal with the headers git-lfs's credential prompt looks for (LFS-Authenticate beside WWW-Authenticate on a 401). */
function deny(res: ServerResponse, d: { status: number; message: string; headers?: Record<string, string> }): void {
  const headers = { ...(d.headers ?? {}) };
  const www = headers['WWW-Authenticate'] ?? headers['www-authenticate'];
  if (d.status === 401) headers['LFS-Authenticate'] = www ?? 'Basic realm="gitwire"';
  if (d.status === 404) { error(res, 404, 'Repository not found'); return; }
  error(res, d.status, d.status === 401 ? 'Credentials needed' : d.message || 'Forbidden', headers);
}

async function readJson(req: IncomingMessage, maxValues: number): Promise<unknown> {
  const enc = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (enc !== 'identity') throw Object.assign(new Error(`unsupported Content-Encoding: ${enc}`), { status: 415 });
  const len = Number(req.headers['content-length']);
  if (Number.isFinite(len) && len > MAX_JSON_BYTES) throw Object.assign(new Error(`request body larger than ${MAX_JSON_BYTES} bytes`), { status: 413 });
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_JSON_BYTES) throw Object.assign(new Error(`request body larger than ${MAX_JSON_BYTES} bytes`), { status: 413 });
    chunks.push(c);
  }
  if (!req.complete) throw Object.assign(new Error('the client went away'), { status: 0 });
  if (n === 0) return {};
  const buf = Buffer.concat(chunks);
  const shape = jsonShapeError(buf, maxValues);
  if (shape) throw Object.assign(new Error(shape.message), { status: shape.status });
  try { return JSON.parse(buf.toString('utf8')); } catch { throw Object.assign(new Error('request body is not JSON'), { status: 400 }); }
}

/** Which service a route needs (batch: from its body). */
function serviceFor(route: LfsRoute, method: string, body: unknown): LfsServiceName {
  if (route.kind === 'batch') return (body as { operation?: unknown })?.operation === 'download' ? 'lfs-download' : 'lfs-upload';
  if (route.kind === 'object' && (method === 'GET' || method === 'HEAD')) return 'lfs-download';
  // listing locks is reading (git-lfs lists them over a download connection on SSH); taking, verifying, unlocking need push
  if (route.kind === 'locks' && method === 'GET') return 'lfs-download';
  return 'lfs-upload';
}

const opOf = (s: LfsServiceName): LfsOperation => (s === 'lfs-upload' ? 'upload' : 'download');

/** The base URL actions point at: where the client reached the server (x.origin), else this request's own host. */
function baseUrl(x: LfsHttpExchange): string {
  const path = x.repoPath.split('/').filter(Boolean).map(encodeURIComponent).join('/');
  let origin = x.origin;
  if (origin === undefined) {
    const host = typeof x.req.headers.host === 'string' && /^[A-Za-z0-9.:[\]-]+$/.test(x.req.headers.host) ? x.req.headers.host : 'localhost';
    origin = `${(x.req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}://${host}`;
  }
  return `${origin}/${path}${path ? '/' : ''}info/lfs`;
}

const COMMANDS: Record<LfsRoute['kind'], string> = {
  batch: 'lfs-batch', object: 'lfs-object', verify: 'lfs-verify', locks: 'lfs-locks', 'locks-verify': 'lfs-locks-verify', unlock: 'lfs-unlock', unknown: 'lfs',
};

/** Serve one request under `…/info/lfs/`. */
export async function serveLfsHttp(lfs: LfsService, x: LfsHttpExchange): Promise<void> {
  const { req, res, route } = x;
  const method = req.method ?? 'GET';
  let command = COMMANDS[route.kind];
  if (route.kind === 'object') command = method === 'PUT' ? 'lfs-upload' : 'lfs-download';
  const end = (status: number, outcome: string, extra: Partial<LfsHttpLog> = {}) => x.finish({ command, outcome, status, ...extra });
  const fail = (status: number, message: string, outcome: string, headers?: Record<string, string>) => {
    error(res, status, message, headers);
    x.drain();
    end(status, outcome);
  };
  if (route.kind === 'unknown') return fail(404, 'Not Found', 'no-route');
  const allowed: Record<string, string[]> = {
    batch: ['POST'], verify: ['POST'], 'locks-verify': ['POST'], unlock: ['POST'], locks: ['GET', 'POST'], object: ['GET', 'HEAD', 'PUT'],
  };
  if (!allowed[route.kind]!.includes(method)) return fail(405, 'Method Not Allowed', 'bad-method', { Allow: allowed[route.kind]!.join(', ') });
  if (route.kind === 'object' && !isOid(route.oid)) return fail(422, 'Invalid object ID: expected 64 lowercase hexadecimal digits (SHA-256)', 'bad-request');
  if (route.kind === 'unlock' && !isLockId(route.id)) return fail(404, 'unable to find lock', 'not-found');

  // a JSON body is read (capped) before credentials are checked: a batch says in it whether it downloads or uploads
  let body: unknown;
  if (method === 'POST') {
    // a batch object is {"oid":…,"size":…} (5 values with its comma); room besides for the rest of git-lfs's body
    try { body = await readJson(req, lfs.maxBatchObjects * 8 + 1024); } catch (e) {
      const status = (e as { status?: number }).status ?? 400;
      if (status === 0) { res.destroy(); return end(0, 'GW_CLIENT_GONE'); }
      return fail(status, (e as Error).message, status === 413 ? 'too-large' : 'bad-request');
    }
  }
  const service = serviceFor(route, method, body);
  const op = opOf(service);

  // who: a token of ours (batch actions, git-lfs-authenticate), else the server's own authentication
  let claims: TokenClaims | undefined;
  const authz = req.headers.authorization;
  // only our own tokens (`Bearer gwlfs1.…`): any other Authorization is the server's authenticate's to judge
  if (typeof authz === 'string' && isOurToken(authz)) {
    claims = lfs.signer.fromHeader(authz);
    if (!claims || !covers(claims.operation, op)) {
      deny(res, { status: 401, message: 'Credentials needed', headers: { 'WWW-Authenticate': 'Basic realm="gitwire"' } });
      x.drain();
      return end(401, 'denied');
    }
    x.setUser(claims.user);
  } else {
    const a = await x.authenticate(service);
    if (a !== true) { deny(res, a); x.drain(); return end(a.status, a.outcome ?? 'denied'); }
  }
  const adm = await x.admit(service);
  if (!adm.ok) { deny(res, adm.deny); x.drain(); return end(adm.deny.status, adm.deny.outcome ?? (adm.deny.status === 404 ? 'not-found' : 'denied')); }
  if (claims && claims.repository !== adm.dir) {
    // a token for another repository: as if it were none
    deny(res, { status: 401, message: 'Credentials needed', headers: { 'WWW-Authenticate': 'Basic realm="gitwire"' } });
    x.drain();
    return end(401, 'denied');
  }
  if (op === 'upload' && x.user() === undefined && !x.anonymousPush) {
    if (x.signIn) deny(res, { status: 401, message: 'Credentials needed', headers: { 'WWW-Authenticate': 'Basic realm="gitwire"' } });
    else deny(res, { status: 403, message: 'LFS uploads need a signed-in user, and this server has none (serve --htpasswd)' });
    x.drain();
    // asking for credentials that were not sent is no refusal yet
    return end(x.signIn ? 401 : 403, x.signIn ? 'challenge' : 'denied');
  }
  const store = lfs.repository(adm.dir, adm.name);
  try {
    switch (route.kind) {
      case 'batch': return await batch(lfs, x, store, adm.dir, body, end);
      case 'object': return method === 'PUT' ? await put(lfs, x, store, route.oid, end) : await get(x, store, route.oid, method === 'HEAD', end);
      case 'verify': return await verify(lfs, x, store, body, end);
      default: return await locks(lfs, x, adm.dir, route, method, body, end);
    }
  } catch (e) {
    if (e instanceof Answered) { error(res, e.status, 'Not Found'); x.drain(); return end(e.status, e.outcome); }
    if (!res.headersSent) error(res, 500, 'Internal Server Error'); else res.destroy();
    x.drain();
    return end(500, 'error', { error: e instanceof Error ? e.message : String(e) });
  }
}

type End = (status: number, outcome: string, extra?: Partial<LfsHttpLog>) => void;

async function batch(lfs: LfsService, x: LfsHttpExchange, store: RepositoryStore, dir: string, body: unknown, end: End): Promise<void> {
  const { res } = x;
  const b = (body ?? {}) as { operation?: unknown; objects?: unknown; hash_algo?: unknown; transfers?: unknown };
  if (b.operation !== 'download' && b.operation !== 'upload') { error(res, 422, 'operation must be "download" or "upload"'); return end(422, 'bad-request'); }
  if (b.hash_algo !== undefined && b.hash_algo !== 'sha256') { error(res, 409, `Unsupported hash algorithm: ${JSON.stringify(b.hash_algo).slice(0, 64)}`); return end(409, 'bad-request'); }
  if (!Array.isArray(b.objects)) { error(res, 422, 'objects must be a list'); return end(422, 'bad-request'); }
  if (b.objects.length > lfs.maxBatchObjects) { error(res, 413, `too many objects in one batch (at most ${lfs.maxBatchObjects})`); return end(413, 'too-large'); }
  const op = b.operation;
  const answers = await lfs.batch(store, op, b.objects as Array<{ oid: unknown; size: unknown }>);
  const base = baseUrl(x);
  const { token, expiresAt } = lfs.signer.sign({ repository: dir, operation: op, user: x.user() }, lfs.tokenTtl);
  const header = { Authorization: `${TOKEN_SCHEME} ${token}` };
  const at = new Date(expiresAt * 1000).toISOString();
  const action = (href: string) => ({ href, header, expires_in: lfs.tokenTtl, expires_at: at });
  const objects = answers.map((a: ObjectAnswer) => {
    const o: Record<string, unknown> = { oid: a.oid, size: a.size };
    if (a.kind === 'error') o.error = { code: a.code, message: a.message };
    else if (a.kind === 'transfer') {
      o.authenticated = true;
      o.actions = op === 'download'
        ? { download: action(`${base}/objects/${a.oid}`) }
        : { upload: action(`${base}/objects/${a.oid}`), verify: action(`${base}/objects/verify`) };
    } else if (a.kind === 'presigned') {
      o.authenticated = true;
      const ext = { href: a.href, header: a.header ?? {}, expires_in: a.expiresIn, expires_at: new Date(Date.now() + a.expiresIn * 1000).toISOString() };
      o.actions = op === 'download' ? { download: ext } : { upload: ext, verify: action(`${base}/objects/verify`) };
    }
    return o;
  });
  sendJson(res, 200, { transfer: 'basic', objects, hash_algo: 'sha256' });
  end(200, 'ok');
}

async function put(lfs: LfsService, x: LfsHttpExchange, store: RepositoryStore, oid: string, end: End): Promise<void> {
  const { req, res } = x;
  if (!store.write) { error(res, 405, 'uploads go to the object store, not to this server'); x.drain(); return end(405, 'bad-method'); }
  const max = lfs.options.maxObjectSize;
  const len = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  if (len !== undefined && !isSize(len)) { error(res, 400, 'bad Content-Length'); x.drain(); return end(400, 'bad-request'); }
  if (max !== undefined && len !== undefined && len > max) {
    error(res, 413, `Object size ${len} exceeds the maximum of ${max} bytes`);
    x.drain();
    return end(413, 'too-large');
  }
  const enc = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (enc !== 'identity') { error(res, 415, `unsupported Content-Encoding: ${enc}`); x.drain(); return end(415, 'bad-request'); }
  let bytesIn = 0;
  async function* body(): AsyncGenerator<Buffer> {
    // a store that stops early must not reset the connection: the answer goes first, then the rest is drained
    for await (const c of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) { bytesIn += c.length; yield c; }
    if (!req.complete) throw new Error('the client went away');
  }
  let r;
  try {
    r = await store.write(oid, body(), { expectedSize: len, maxSize: max });
  } catch {
    // the client went away mid-body: the temporary file is gone, nothing is stored
    res.destroy();
    return end(0, 'GW_CLIENT_GONE', { bytesIn });
  }
  if (r.ok) { res.writeHead(200, { 'Content-Length': 0 }); res.end(); return end(200, 'ok', { bytesIn }); }
  // the answer first, then what the client still sends is read and dropped (bounded)
  if (r.kind === 'too-large') { error(res, 413, `Object size exceeds the maximum of ${r.limit} bytes`); x.drain(); return end(413, 'too-large', { bytesIn }); }
  if (r.kind === 'mismatch') { error(res, 422, `Object does not match its oid: ${r.message}`); x.drain(); return end(422, 'bad-request', { bytesIn }); }
  const full = /space|quota/.test(r.message);
  error(res, full ? 507 : 500, `The object could not be stored: ${r.message}`);
  x.drain();
  return end(full ? 507 : 500, 'error', { bytesIn, error: r.cause instanceof Error ? r.cause.message : r.message });
}

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` (one range) against `size`: [start, end], 'bad' (416), or undefined (whole object). */
export function parseRange(h: string | undefined, size: number): [number, number] | 'bad' | undefined {
  if (!h) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(h.trim());
  const [, first = '', last = ''] = m ?? [];
  if (!m || (first === '' && last === '')) return undefined;
  // a last position below the first is not a range (RFC 9110 14.1.1: invalid, so the header is ignored), not an unsatisfiable one
  if (first !== '' && last !== '' && BigInt(last) < BigInt(first)) return undefined;
  let start: number, end: number;
  if (m[1] === '') { const n = Number(m[2]); if (n === 0) return 'bad'; start = Math.max(0, size - n); end = size - 1; }
  else { start = Number(m[1]); end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1); }
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start >= size || start > end) return 'bad';
  return [start, end];
}

async function get(x: LfsHttpExchange, store: RepositoryStore, oid: string, head: boolean, end: End): Promise<void> {
  const { req, res } = x;
  const size = await store.size(oid);
  if (size === undefined || !store.read) { error(res, 404, 'Object does not exist'); return end(404, 'not-found'); }
  const range = parseRange(typeof req.headers.range === 'string' ? req.headers.range : undefined, size);
  if (range === 'bad') { res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Type': JSON_TYPE }); res.end(JSON.stringify({ message: 'Requested range not satisfiable' })); return end(416, 'bad-request'); }
  const [start, last] = range ?? [0, size - 1];
  const length = size === 0 ? 0 : last - start + 1;
  const headers: Record<string, string | number> = { 'Content-Type': 'application/octet-stream', 'Content-Length': length, 'Accept-Ranges': 'bytes' };
  if (range) headers['Content-Range'] = `bytes ${start}-${last}/${size}`;
  if (head || length === 0) { res.writeHead(range ? 206 : 200, headers); res.end(); return end(range ? 206 : 200, 'ok'); }
  const stream = await store.read(oid, start, last);
  if (!stream) { error(res, 404, 'Object does not exist'); return end(404, 'not-found'); }
  res.writeHead(range ? 206 : 200, headers);
  let bytesOut = 0;
  stream.on('data', (c: Buffer) => { bytesOut += c.length; noteBytesMoved(c.length); });
  try {
    await pipeline(stream, res);
  } catch (e) {
    // the client went away, or the object turned out damaged: its last bytes are withheld and the transfer cut
    res.destroy();
    const corrupt = e instanceof GitwireError && e.code === 'GW_OBJECT_CORRUPT';
    return end(range ? 206 : 200, corrupt ? e.code : 'GW_CLIENT_GONE', corrupt ? { bytesOut, error: e.message } : { bytesOut });
  }
  end(range ? 206 : 200, 'ok', { bytesOut });
}

async function verify(lfs: LfsService, x: LfsHttpExchange, store: RepositoryStore, body: unknown, end: End): Promise<void> {
  const { res } = x;
  const b = (body ?? {}) as { oid?: unknown; size?: unknown };
  if (!isOid(b.oid) || !isSize(b.size)) { error(res, 422, 'verify needs an oid (64 lowercase hex digits) and a size'); return end(422, 'bad-request'); }
  const have = await lfs.storedGood(store, b.oid);
  if (have === undefined) { error(res, 404, 'Object does not exist'); return end(404, 'not-found'); }
  if (have !== b.size) { error(res, 422, `Object size ${have} does not match the expected ${b.size}`); return end(422, 'bad-request'); }
  sendJson(res, 200, {});
  end(200, 'ok');
}

function limitOf(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return DEFAULT_LOCK_PAGE;
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) return undefined;
  return Math.min(n, MAX_LOCK_PAGE);
}

async function locks(lfs: LfsService, x: LfsHttpExchange, dir: string, route: LfsRoute, method: string, body: unknown, end: End): Promise<void> {
  const { res } = x;
  const store = lfs.locks(dir);
  const user = x.user() ?? 'anonymous';
  const b = (body ?? {}) as { path?: unknown; force?: unknown; cursor?: unknown; limit?: unknown };
  if (route.kind === 'locks' && method === 'POST') {
    if (!isLockPath(b.path)) { error(res, 422, 'a lock needs a path'); return end(422, 'bad-request'); }
    const r = await store.create(b.path, user);
    if (r.ok) { sendJson(res, 201, { lock: r.lock }); return end(201, 'ok'); }
    sendJson(res, 409, { lock: r.existing, message: 'already created lock' });
    return end(409, 'rejected');
  }
  if (route.kind === 'locks') {
    const q = new URL(x.req.url ?? '/', 'http://localhost').searchParams;
    const limit = limitOf(q.get('limit') ?? undefined);
    if (limit === undefined) { error(res, 422, 'limit must be a positive number'); return end(422, 'bad-request'); }
    const path = q.get('path');
    const id = q.get('id');
    let found: Lock[];
    let next: string | undefined;
    if (path !== null || id !== null) {
      const l = id !== null ? await store.byId(id) : await store.byPath(path!);
      found = l && (path === null || l.path === path) ? [l] : [];
    } else {
      const cursor = q.get('cursor') ?? undefined;
      ({ locks: found, next } = await store.list(cursor && /^[0-9a-f-]{1,64}$/.test(cursor) ? cursor : undefined, limit));
    }
    sendJson(res, 200, next ? { locks: found, next_cursor: next } : { locks: found });
    return end(200, 'ok');
  }
  if (route.kind === 'locks-verify') {
    const limit = limitOf(b.limit);
    if (limit === undefined) { error(res, 422, 'limit must be a positive number'); return end(422, 'bad-request'); }
    const cursor = typeof b.cursor === 'string' && /^[0-9a-f-]{1,64}$/.test(b.cursor) ? b.cursor : undefined;
    const page = await store.list(cursor, limit);
    const ours = page.locks.filter((l) => l.owner.name === user);
    const theirs = page.locks.filter((l) => l.owner.name !== user);
    sendJson(res, 200, page.next ? { ours, theirs, next_cursor: page.next } : { ours, theirs });
    return end(200, 'ok');
  }
  if (route.kind === 'unlock') {
    const r = await store.unlock(route.id, user, b.force === true);
    if (r.ok) { sendJson(res, 200, { lock: r.lock }); return end(200, 'ok'); }
    if (r.reason === 'not-found') { error(res, 404, 'unable to find lock'); return end(404, 'not-found'); }
    error(res, 403, `lock ${r.lock.id} on ${r.lock.path} is owned by ${r.lock.owner.name}: unlock --force to remove it`);
    return end(403, 'forbidden');
  }
  throw new Answered(404, 'no-route');
}
