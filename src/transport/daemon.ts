/**
 * git:// (git-daemon): `git-upload-pack <path>\0host=<host>\0[\0<extra>\0…]`,
 * base-path semantics, the export rule, a connection limit with eviction
 * of idle connections (as git daemon's kill_some_child) and an
 * initial-request timeout. No error of one connection reaches the process.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import { PktReader } from '../pktline/reader.js';
import { PacketWriter } from '../pktline/writer.js';
import { StreamSink } from '../pktline/sink.js';
import { GitwireError } from '../errors.js';
import { findService } from '../protocol/service.js';
import { STORAGE_REFUSED } from './paths.js';
import { describeError, errorText, failedOutcome, type Outcome, type RequestInfo, type RequestLog, type ServeHooks } from './http.js';
import { admitRequest, serviceEnv } from './request.js';
import { connectionId } from './request-id.js';
import type { Limits } from '../protocol/limits.js';
import { clientAddress, type ProxyTrust } from './proxy-protocol.js';
import { pushEnv, pushResult, pushServeOptions, type PushLog } from './http-push.js';
import { DEFAULT_PROGRESS_TIMEOUT, PROGRESS_TIMEOUT, stalled, stallReason, watchSocket, type ProgressDeadline } from './limits/progress.js';
import type { ReceivePackResult } from '../protocol/receive-pack.js';
import { clientId, refusalMessage, refusalOutcome, releaseOnClose } from './limits/index.js';

export interface DaemonOptions extends ServeHooks {
  /** serve every repository, not only those with git-daemon-export-ok */
  exportAll?: boolean;
  /** maximum simultaneous connections (git daemon's --max-connections, default 32) */
  maxConnections?: number;
  /** seconds to wait for the request line (--init-timeout) */
  initTimeout?: number;
  /**
   * seconds of client inactivity during a session (--timeout): a read that
   * waits longer fails, and a transfer held up by its client (not reading
   * the pack, not sending) is cut (limits/progress.ts). Without it the
   * progress deadline is DEFAULT_PROGRESS_TIMEOUT; 0: never.
   */
  timeout?: number;
  /** tell clients why (--informative-errors) */
  informativeErrors?: boolean;
  /** per-request limits (protocol/limits.ts) */
  limits?: Partial<Limits>;
  /** connections from these balancers open with a PROXY header naming the client (proxy-protocol.ts) */
  proxyProtocol?: ProxyTrust;
}

export interface ParsedRequest { service: string; path: string; host?: string; gitProtocol?: string }

/** Parse the daemon's request packet. */
export function parseDaemonRequest(data: Buffer): ParsedRequest | undefined {
  let line = data;
  const nul = line.indexOf(0);
  const head = (nul < 0 ? line : line.subarray(0, nul)).toString('utf8').replace(/\n$/, '');
  const m = /^git-([a-z-]+) (.*)$/.exec(head);
  if (!m) return undefined;
  const r: ParsedRequest = { service: m[1]!, path: m[2]! };
  if (nul >= 0) {
    line = line.subarray(nul + 1);
    const parts = line.toString('utf8').split('\0');
    let i = 0;
    if (parts[0]?.toLowerCase().startsWith('host=')) { r.host = parts[0].slice(5); i = 1; }
    const extra = parts.slice(i).filter((p) => p.length > 0);
    if (extra.length) r.gitProtocol = extra.join(':');
  }
  return r;
}

/** git daemon's default --max-connections */
export const DEFAULT_MAX_CONNECTIONS = 32;
/** seconds a new connection has to send its request line, unless --init-timeout says otherwise */
export const DEFAULT_INIT_TIMEOUT = 10;

/** One open git:// connection, for eviction when the server is full. */
interface Conn {
  socket: Socket;
  address: string;
  opened: number;
  /** waiting for the client (request line, or its next packet) since this time; 0 while we are working or sending */
  idleSince: number;
  /** the request line has come: a shutdown lets the connection finish (before it, there is nothing to finish) */
  requested?: boolean;
}

/**
 * Which connection makes room for a new one when all slots are taken:
 * the one that has waited longest on its client (an idle or slowloris
 * connection), else — as git daemon's kill_some_child — the newest
 * connection from an address that holds more than one. undefined: refuse.
 */
function victim(conns: Set<Conn>): Conn | undefined {
  let idle: Conn | undefined;
  for (const c of conns) if (c.idleSince && (!idle || c.idleSince < idle.idleSince)) idle = c;
  if (idle) return idle;
  const count = new Map<string, number>();
  for (const c of conns) count.set(c.address, (count.get(c.address) ?? 0) + 1);
  let newest: Conn | undefined;
  for (const c of conns) if ((count.get(c.address) ?? 0) > 1 && (!newest || c.opened > newest.opened)) newest = c;
  return newest;
}

/** ms a refused client may go on sending (discarded) before its connection is cut */
export const LINGER_MS = 10_000;

/**
 * Close a connection whose request was refused part-way (a limit), with
 * the ERR line already written. Destroying it while the client is still
 * sending would answer its data with a reset, and a reset makes the
 * client's kernel drop what it had received but not yet read: a client
 * slow to read (a loaded machine) would never see the ERR. So our side
 * ends (the ERR, then FIN), and what the client still sends is read and
 * discarded until it closes, or for at most LINGER_MS, or until its slot
 * is needed (it is the first connection evicted).
 */
function lingeringClose(socket: Socket, raw: AsyncIterator<Buffer>, conn: Conn): void {
  socket.end();
  // it holds a connection slot only until someone needs it: first in line for eviction
  conn.idleSince = 1;
  const cut = setTimeout(() => socket.destroy(), LINGER_MS).unref();
  socket.once('close', () => clearTimeout(cut));
  // the iterator lets go of the socket (its 'readable' listener) without destroying it; then it flows into nothing
  Promise.resolve(raw.return?.()).catch(() => { /* the socket may be gone already */ }).finally(() => {
    socket.on('data', () => { /* discarded */ });
    socket.resume();
  });
}

/** The reason of a git:// connection that closed before it sent a byte (a TCP health check, a probe). */
export const NO_REQUEST = 'closed before sending a request';

export function createDaemonServer(opts: DaemonOptions): Server {
  const max = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const conns = new Set<Conn>();
  let seq = 0;
  const server = createServer({ allowHalfOpen: false }, (socket) => {
    socket.on('error', () => { /* reported through the session */ });
    // behind a balancer in TCP mode: the client's address from its PROXY header
    if (opts.proxyProtocol) {
      const refused = (reason: string) => {
        try { opts.log?.({ transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'bad-request', remoteAddress: socket.remoteAddress, reason }); } catch { /* a throwing logger must not take the server down */ }
      };
      void clientAddress(socket, opts.proxyProtocol, refused)
        .then((address) => { if (address !== undefined) accept(socket, address); });
      return;
    }
    accept(socket, socket.remoteAddress ?? '');
  });

  function accept(socket: Socket, address: string): void {
    if (max > 0 && conns.size >= max) {
      const v = victim(conns);
      if (!v) { socket.destroy(); opts.log?.({ transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'too-many-connections' }); return; }
      conns.delete(v);
      v.socket.destroy();
    }
    const conn: Conn = { socket, address, opened: ++seq, idleSince: Date.now() };
    conns.add(conn);
    socket.once('close', () => conns.delete(conn));
    // every error of a connection stays with that connection
    handle(socket, conn).catch((e: unknown) => {
      socket.destroy();
      try {
        opts.log?.({ transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: failedOutcome(e), error: errorText(e) });
      } catch { /* a throwing logger must not take the server down */ }
    });
  }

  async function handle(socket: Socket, conn: Conn): Promise<void> {
    const t0 = process.hrtime.bigint();
    const entry: RequestLog = { requestId: connectionId(socket), transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
    const remoteAddress = conn.address || socket.remoteAddress;
    if (remoteAddress !== undefined) entry.remoteAddress = remoteAddress;
    if (remoteAddress !== socket.remoteAddress && socket.remoteAddress !== undefined) entry.proxyAddress = socket.remoteAddress;
    /** the request, once it is known (its user goes to the log line) */
    const seen: { info?: RequestInfo } = {};
    const done = (outcome: Outcome) => {
      entry.outcome = outcome;
      if (seen.info?.user !== undefined) entry.user = seen.info.user;
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      try { opts.log?.(entry); } catch { /* a throwing logger must not take the server down */ }
    };
    // not destroyed when abandoned: a refused request's connection drains before it closes (lingeringClose)
    const raw = socket.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
    // the connection counts as idle while it waits on the client
    let received = 0, ended = false;
    /** the transfer's progress deadline, once the request is admitted */
    const watch: { deadline?: ProgressDeadline } = {};
    const it: AsyncIterator<Buffer> = {
      next: async () => {
        conn.idleSince = Date.now();
        watch.deadline?.reading(true);
        try {
          const r = await raw.next();
          if (r.done) ended = true; else received += r.value.length;
          return r;
        } finally { conn.idleSince = 0; watch.deadline?.reading(false); }
      },
    };
    const shared = { [Symbol.asyncIterator]: () => it };
    const initTimeout = opts.initTimeout ?? opts.timeout ?? DEFAULT_INIT_TIMEOUT;
    const first = new PktReader(shared, { timeoutMs: initTimeout > 0 ? initTimeout * 1000 : undefined });
    let req: ParsedRequest | undefined;
    try {
      const p = await first.read();
      conn.requested = true;
      if (p.kind === 'data') req = parseDaemonRequest(p.data);
    } catch {
      socket.destroy();
      // closed by a shutdown before its request came: that, not the client's fault
      return done(closing ? 'shutdown' : 'bad-request');
    }
    /** `dir` undefined: `msg` names the repository itself */
    const deny = (msg: string, dir: string | undefined, plainly = false) => {
      const text = opts.informativeErrors || plainly ? msg : 'access denied or repository not exported';
      // git's packet_write_fmt_gently: a message too long for one packet is not sent; the connection just closes
      try { new PacketWriter(new StreamSink(socket)).error(dir === undefined ? text : `${text}: ${dir}`); } catch { socket.destroy(); return; }
      socket.end();
    };
    if (!req) {
      socket.destroy();
      // closed without a byte: a balancer's TCP health check or a port probe (logged at debug level)
      if (received === 0 && ended) entry.reason = NO_REQUEST;
      return done('protocol-error');
    }
    entry.repository = req.path;
    // receive-pack only with --enable=receive-pack, as git daemon
    const isPush = req.service === 'receive-pack' && !!opts.enableReceivePack;
    const service = req.service === 'upload-pack' || isPush ? findService(`git-${req.service}`) : undefined;
    if (!service) { deny('service not enabled', req.path); return done('denied'); }
    const info: RequestInfo = { transport: 'git', path: req.path, host: req.host, remoteAddress, service: isPush ? 'receive-pack' : 'upload-pack' };
    if (service) entry.service = info.service;
    seen.info = info;
    const push: PushLog | undefined = isPush ? { updated: 0, rejected: 0, bytesIn: 0, reasons: [] } : undefined;
    if (push) entry.push = push;
    // who is asking, before anything is said about the path
    if (opts.authenticate) {
      const a = await opts.authenticate(info);
      // said as it is: it comes before the path is looked at, so it tells nothing about what exists
      if (a !== true) { deny(a.message, req.path, true); return done('denied'); }
    }
    // base-path: only absolute paths, resolved under the root; then git-daemon-export-ok, then the gate
    const admitted = await admitRequest(opts, info, {
      resolvable: !!opts.resolveRepository || req.path.startsWith('/'),
      exported: opts.exportAll || opts.resolveRepository ? undefined : (d) => existsSync(join(d, 'git-daemon-export-ok')),
      until: (release) => releaseOnClose(release, socket),
    });
    if (!admitted.ok && admitted.outcome === 'rate-limited') {
      // `fatal: remote error: rate limited, please try again after 3 seconds`; what the client still sends is drained
      entry.reason = admitted.refusal.reason;
      try { new PacketWriter(new StreamSink(socket)).error(refusalMessage(admitted.refusal)); } catch { socket.destroy(); return done(refusalOutcome(admitted.refusal.reason)); }
      lingeringClose(socket, raw, conn);
      return done(refusalOutcome(admitted.refusal.reason));
    }
    if (!admitted.ok) {
      if (admitted.outcome === 'not-found') deny('no such repository', req.path);
      else if (admitted.outcome === 'not-exported') deny('repository not exported', req.path);
      else if (admitted.outcome === 'denied') deny(admitted.deny.message, req.path);
      else if (admitted.outcome === 'dubious-ownership') { entry.reason = admitted.reason; deny(admitted.message, undefined, true); }
      else { entry.reason = admitted.reason; deny(STORAGE_REFUSED, req.path); }
      return done(admitted.outcome);
    }
    const dir = admitted.dir;
    const rest = first.remainder();
    async function* input(): AsyncGenerator<Buffer> {
      if (rest.length) { if (push) push.bytesIn += rest.length; yield rest; }
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        if (push) push.bytesIn += (r.value as Buffer).length;
        yield r.value as Buffer;
      }
    }
    const env = serviceEnv(push ? pushEnv(opts.env ?? process.env, info) : opts.env, req.gitProtocol);
    const sink = new StreamSink(socket);
    /** what upload-pack did, reported whatever its outcome (an aborted fetch still logs its fields) */
    const report = (x: { protocol: number; command: string; wants: number; haves: number; packCache?: string; packWarnings?: string[] }) => {
      Object.assign(entry, { protocol: x.protocol, command: x.command, wants: x.wants, haves: x.haves, packCache: x.packCache, packWarnings: x.packWarnings });
    };
    // a client that stops reading (or sending) is cut, whatever is queued for it: its pack-objects goes, its slot frees
    const deadline = watch.deadline = watchSocket(socket, opts.timeout ?? DEFAULT_PROGRESS_TIMEOUT);
    const refFilter = opts.refFilter?.(info, dir);
    try {
      const r = await service.serve({
        directory: dir, repository: req.path, strict: true, env, input: input(), output: sink, report,
        bundleOffer: push ? undefined : opts.bundles?.offer({ transport: 'git', dir, filtered: refFilter !== undefined }),
        timeout: opts.timeout, refFilter, strictVisibility: opts.strictVisibility, acquirePackSlot: opts.limiter?.forClient(clientId(info)), pool: opts.pool, packCache: opts.packCache, packObjects: opts.packObjects,
        // git daemon's upload-pack sends no progress without a sideband; nothing goes to this server's stderr
        limits: opts.limits, ...(push ? pushServeOptions(opts, info, dir, push) : { stderr: () => { /* dropped */ } }),
      });
      if (push) pushResult(push, r as ReceivePackResult);
      Object.assign(entry, { protocol: r.protocol, command: r.command, wants: r.wants, haves: r.haves, bytesOut: r.bytes, writes: r.writes, packCache: r.packCache, packWarnings: r.packWarnings, ...(r.bundle ? { bundle: r.bundle } : {}) });
      // the deadline stays until the socket closes: what is still queued must be taken, or the connection goes
      socket.end();
      // a push whose client stopped sending ends "normally" (its pack cut short): the cut is what it came to
      const stall = stalled(socket);
      if (stall) { entry.reason = stallReason(stall); return done(PROGRESS_TIMEOUT); }
      done('ok');
    } catch (e) {
      deadline.stop();
      entry.bytesOut = sink.stats.bytes;
      entry.writes = sink.stats.writes;
      // what was written (an ERR line) leaves before the connection closes
      if (e instanceof GitwireError && e.code === 'GW_LIMIT') lingeringClose(socket, raw, conn); else socket.destroy();
      describeError(entry, e);
      const stall = stalled(socket);
      if (stall) {
        entry.reason = stallReason(stall);
        return done(PROGRESS_TIMEOUT);
      }
      done(failedOutcome(e));
    }
  }
  let closing = false;
  // closing the listener (a shutdown) closes the connections that have not sent their request: they
  // have nothing to finish, and one silent connection held the shutdown until --init-timeout
  const closeListener = server.close.bind(server);
  server.close = (cb?: (err?: Error) => void) => {
    closing = true;
    for (const c of [...conns]) if (!c.requested) c.socket.destroy();
    return closeListener(cb);
  };
  return server;
}
