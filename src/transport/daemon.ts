/**
 * git:// (git-daemon): `git-upload-pack <path>\0host=<host>\0[\0<extra>\0…]`,
 * base-path semantics, the export rule, a connection limit and an
 * initial-request timeout.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import { PktReader } from '../pktline/reader.js';
import { encode } from '../pktline/codec.js';
import { StreamSink } from '../pktline/sink.js';
import { GitwireError } from '../errors.js';
import { findService } from '../protocol/service.js';
import { resolveUnderRoot } from './paths.js';
import type { RequestInfo, RequestLog, ServeHooks } from './http.js';

export interface DaemonOptions extends ServeHooks {
  /** serve every repository, not only those with git-daemon-export-ok */
  exportAll?: boolean;
  /** maximum simultaneous connections (git daemon's --max-connections, default 32) */
  maxConnections?: number;
  /** seconds to wait for the request line (--init-timeout) */
  initTimeout?: number;
  /** seconds of client inactivity during a session (--timeout) */
  timeout?: number;
  /** tell clients why (--informative-errors) */
  informativeErrors?: boolean;
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

export function createDaemonServer(opts: DaemonOptions): Server {
  const server = createServer({ allowHalfOpen: false }, (socket) => { void handle(socket); });
  server.maxConnections = opts.maxConnections ?? 32;

  async function handle(socket: Socket): Promise<void> {
    const t0 = process.hrtime.bigint();
    const entry: RequestLog = { transport: 'git', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
    const done = (outcome: string) => {
      entry.outcome = outcome;
      entry.durationMs = Number(process.hrtime.bigint() - t0) / 1e6;
      opts.log?.(entry);
    };
    socket.on('error', () => { /* reported through the session */ });
    const it = (socket as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    const shared = { [Symbol.asyncIterator]: () => it };
    const first = new PktReader(shared, { timeoutMs: (opts.initTimeout ?? opts.timeout ?? 0) * 1000 || undefined });
    let req: ParsedRequest | undefined;
    try {
      const p = await first.read();
      if (p.kind === 'data') req = parseDaemonRequest(p.data);
    } catch {
      socket.destroy();
      return done('bad-request');
    }
    const deny = (msg: string, dir: string) => {
      const text = opts.informativeErrors ? msg : 'access denied or repository not exported';
      socket.end(encode(`ERR ${text}: ${dir}`));
    };
    if (!req) { socket.destroy(); return done('protocol-error'); }
    entry.repository = req.path;
    const service = req.service === 'upload-pack' ? findService(`git-${req.service}`) : undefined;
    if (!service) { deny('service not enabled', req.path); return done('denied'); }
    const info: RequestInfo = { transport: 'git', path: req.path, host: req.host, remoteAddress: socket.remoteAddress };
    // base-path: only absolute paths, resolved under the root
    let dir: string | undefined;
    if (opts.resolveRepository) dir = await opts.resolveRepository(info);
    else if (opts.root && req.path.startsWith('/')) dir = resolveUnderRoot(opts.root, req.path);
    if (!dir) { deny('no such repository', req.path); return done('not-found'); }
    if (!opts.exportAll && !opts.resolveRepository && !existsSync(join(dir, 'git-daemon-export-ok'))) {
      deny('repository not exported', req.path);
      return done('not-exported');
    }
    if (opts.authorize) {
      const a = await opts.authorize(info, dir);
      if (a !== true) { deny(a.message, req.path); return done('denied'); }
    }
    const rest = first.remainder();
    async function* input(): AsyncGenerator<Buffer> {
      if (rest.length) yield rest;
      for (;;) {
        const r = await it.next();
        if (r.done) return;
        yield r.value as Buffer;
      }
    }
    const env: NodeJS.ProcessEnv = { ...(opts.env ?? process.env) };
    delete env.GIT_PROTOCOL;
    if (req.gitProtocol) env.GIT_PROTOCOL = req.gitProtocol;
    const sink = new StreamSink(socket);
    try {
      const r = await service.serve({
        directory: dir, strict: true, env, input: input(), output: sink,
        timeout: opts.timeout, refFilter: opts.refFilter?.(info, dir), acquirePackSlot: opts.limiter?.acquire, pool: opts.pool, packCache: opts.packCache,
      });
      Object.assign(entry, { protocol: r.protocol, command: r.command, wants: r.wants, haves: r.haves, bytesOut: r.bytes, writes: r.writes, packCache: r.packCache });
      socket.end();
      done('ok');
    } catch (e) {
      entry.bytesOut = sink.stats.bytes;
      entry.writes = sink.stats.writes;
      socket.destroy();
      done(e instanceof GitwireError ? e.code : 'error');
    }
  }
  return server;
}
