/**
 * A small Redis client: RESP2 over one TCP (or TLS) connection, for the
 * few commands coordination sends (EVAL, GET, MULTI/EXEC, PUBLISH,
 * SUBSCRIBE).
 *
 * Why not a package: a general client (ioredis) loads a thousand generated
 * command methods and keeps them alive; in `serve` that alone made V8 run a
 * full mark-compact every second or so, which cost an incremental fetch
 * more CPU than all of its Redis round trips together (BENCHMARKS.md).
 *
 * What it does, and no more:
 * - `redis://[[user]:password@]host[:port][/db]` and `rediss://` (TLS);
 *   AUTH and SELECT before the connection counts as ready.
 * - Commands are pipelined and answered in order. While not ready a command
 *   fails at once (no offline queue: the caller then acts alone), and one
 *   that gets no answer within the command timeout fails then, and so does
 *   the connection (nothing came back on it for that long: a stopped or
 *   wedged Redis), which is made again.
 * - A lost connection fails every command in flight and is retried after
 *   `min(50 n, 1000)` ms, for ever, until `disconnect()`.
 * - Subscriber mode: `subscribe()` resolves when Redis has confirmed every
 *   channel; messages arrive as 'message' events. Subscriptions are not
 *   renewed after a reconnect (the owner subscribes again on 'ready').
 *
 * Events: 'ready', 'close' (after every connection that ends or fails),
 * 'error' (Error), 'message' (channel, message).
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, createSecureContext, rootCertificates, type SecureContext } from 'node:tls';

/** what an answer can be: a reply error inside an array (MULTI) stays an Error */
export type RespValue = string | number | null | Error | RespValue[];

export interface RespOptions {
  /** default 1000 ms */
  connectTimeoutMs?: number;
  /** default 1000 ms */
  commandTimeoutMs?: number;
  /** delay before the n-th reconnect (n from 1); default min(50 n, 1000) ms */
  retryDelay?: (n: number) => number;
}

/** an error reply from Redis (`-ERR ...`) */
export class RedisReplyError extends Error {
  constructor(message: string) { super(message); this.name = 'RedisReplyError'; }
}

interface Target { tls: boolean; host: string; port: number; user?: string; password?: string; db: number }

export function parseRedisUrl(url: string): Target {
  let u: URL;
  try { u = new URL(url); } catch { throw new Error(`not a Redis URL: ${url}`); }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`not a Redis URL (redis:// or rediss://): ${url}`);
  const port = u.port ? Number(u.port) : 6379;
  const path = u.pathname.replace(/^\//, '');
  // decimal digits only (Number() also takes 1e3 and 0x10), and what Redis' SELECT takes (an int)
  const db = path === '' ? 0 : /^\d{1,10}$/.test(path) ? Number(path) : NaN;
  if (!Number.isInteger(db) || db < 0 || db > 2147483647) throw new Error(`bad database number in Redis URL: ${path}`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  return {
    tls: u.protocol === 'rediss:', host, port, db,
    user: u.username ? decodeURIComponent(u.username) : undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
  };
}

/**
 * The CAs a rediss:// server's certificate is checked against: the system's, and the file
 * NODE_EXTRA_CA_CERTS names. bin/gitwire keeps node from loading that file at start-up (it costs
 * every process ~30 ms), so it is read here (once per file name) by the only part of gitwire that opens TLS.
 */
let tlsContext: { file: string | undefined; ctx: SecureContext } | undefined;
/** one secure context per CA file name, made once: a context of the system's CAs takes ~20 ms to build, on the event loop */
function secureContext(): SecureContext {
  const file = process.env.NODE_EXTRA_CA_CERTS || undefined;
  if (tlsContext && tlsContext.file === file) return tlsContext.ctx;
  let ca: string[] | undefined;
  if (file) {
    try { ca = [...rootCertificates, readFileSync(file, 'utf8')]; } catch { /* as node does: a warning's worth, not an error */ }
  }
  tlsContext = { file, ctx: createSecureContext(ca ? { ca } : {}) };
  return tlsContext.ctx;
}

interface Pending {
  resolve: (v: RespValue) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
  /** settled already (timed out): its answer is read and dropped */
  done: boolean;
}

const CRLF = Buffer.from('\r\n');

/** One command as RESP: an array of bulk strings, built in one buffer. */
export function encodeCommand(args: ReadonlyArray<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`, 'latin1')];
  for (const a of args) {
    const b = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
    parts.push(Buffer.from(`$${b.length}\r\n`, 'latin1'), b, CRLF);
  }
  return Buffer.concat(parts);
}

/**
 * Bounds on what is taken from the wire. Coordination's values are small (a claim record is a few
 * hundred bytes), so a Redis that sends more is broken or hostile, and the connection is dropped
 * rather than buffered: one bulk string, one array's elements, nesting, and what waits unparsed.
 */
const MAX_BULK = 512 * 1024;
const MAX_ARRAY = 4096;
const MAX_DEPTH = 8;
/** a value still incomplete is parsed again as more comes: this bound also bounds that work */
const MAX_BUFFERED = 1024 * 1024;

/**
 * An incremental RESP2 reader: feed() chunks, next() gives each complete value
 * or undefined until more bytes come. A value that breaks the protocol throws.
 * Each byte is copied once (into a buffer that doubles) and each token parsed
 * once: an array's finished elements wait on a stack, so a reply that trickles
 * in a few bytes at a time costs what it would in one piece.
 */
export class RespReader {
  private buf: Buffer = Buffer.allocUnsafe(0);
  /** bytes in buf */
  private len = 0;
  /** where the next token starts */
  private pos = 0;
  /** where the search for the current token's CR resumes */
  private scan = 0;
  /** arrays being read: their length and the elements so far */
  private stack: Array<{ n: number; items: RespValue[] }> = [];
  /** bytes of the value being read: what is on the stack and what waits unparsed */
  private held = 0;

  feed(chunk: Buffer): void {
    if (this.pos === this.len) { this.pos = 0; this.len = 0; this.scan = 0; }
    if (this.held + this.len - this.pos + chunk.length > MAX_BUFFERED) throw new Error('Redis protocol error: reply too large');
    if (this.len + chunk.length > this.buf.length) {
      const keep = this.len - this.pos;
      const next = Buffer.allocUnsafe(Math.max(2 * this.buf.length, keep + chunk.length, 4096));
      this.buf.copy(next, 0, this.pos, this.len);
      this.scan -= this.pos;
      this.buf = next;
      this.len = keep;
      this.pos = 0;
    }
    chunk.copy(this.buf, this.len);
    this.len += chunk.length;
  }

  next(): RespValue | undefined {
    for (;;) {
      let v = this.token();
      if (v === undefined) return undefined;
      if (v === OPENED) continue;
      // a finished value: into its array, which may finish in turn
      for (;;) {
        const top = this.stack[this.stack.length - 1];
        if (!top) { this.held = 0; return v; }
        top.items.push(v);
        if (top.items.length < top.n) break;
        this.stack.pop();
        v = top.items;
      }
    }
  }

  /** the end of the line that starts at pos (the index of its CR), or -1 when it has not all come */
  private lineEnd(): number {
    const from = Math.max(this.scan, this.pos);
    const end = this.buf.subarray(0, this.len).indexOf(13, from);
    if (end < 0 || end + 1 >= this.len) {
      this.scan = end < 0 ? this.len : end;
      if (this.len - this.pos > 64 * 1024) throw new Error('Redis protocol error: line too long');
      return -1;
    }
    if (this.buf[end + 1] !== 10) throw new Error('Redis protocol error: CR without LF');
    return end;
  }

  private length(s: string, max: number): number {
    if (!/^-?\d{1,10}$/.test(s)) throw new Error(`Redis protocol error: bad length ${JSON.stringify(s.slice(0, 20))}`);
    const n = Number(s);
    if (n < -1 || n > max) throw new Error(`Redis protocol error: length ${n} out of range`);
    return n;
  }

  /** one token: a whole scalar, an array that is empty or null, or OPENED for an array pushed on the stack */
  private token(): RespValue | typeof OPENED | undefined {
    if (this.pos >= this.len) return undefined;
    const end = this.lineEnd();
    if (end < 0) return undefined;
    const type = this.buf[this.pos];
    const l = this.buf.toString('utf8', this.pos + 1, end);
    const after = end + 2;
    let v: RespValue | typeof OPENED;
    switch (type) {
      case 0x2b: v = l; break; // +
      case 0x2d: v = new RedisReplyError(l); break; // -
      case 0x3a: // :
        if (!/^-?\d+$/.test(l)) throw new Error('Redis protocol error: bad integer');
        v = Number(l);
        break;
      case 0x24: { // $
        const n = this.length(l, MAX_BULK);
        if (n < 0) { v = null; break; }
        if (this.len - after < n + 2) return undefined; // the line is read again when the rest has come
        if (this.buf[after + n] !== 13 || this.buf[after + n + 1] !== 10) throw new Error('Redis protocol error: bulk string not ended by CRLF');
        this.held += after + n + 2 - this.pos;
        this.pos = this.scan = after + n + 2;
        return this.buf.toString('utf8', after, after + n);
      }
      case 0x2a: { // *
        const n = this.length(l, MAX_ARRAY);
        if (n <= 0) { v = n < 0 ? null : []; break; }
        if (this.stack.length >= MAX_DEPTH) throw new Error('Redis protocol error: arrays nested too deep');
        this.stack.push({ n, items: [] });
        v = OPENED;
        break;
      }
      default:
        throw new Error(`Redis protocol error: unknown reply type ${JSON.stringify(String.fromCharCode(type!))}`);
    }
    this.held += after - this.pos;
    this.pos = this.scan = after;
    return v;
  }
}

const OPENED: unique symbol = Symbol('array opened');

export class RespClient extends EventEmitter {
  private readonly target: Target;
  private readonly connectTimeoutMs: number;
  private readonly commandTimeoutMs: number;
  private readonly retryDelay: (n: number) => number;
  private socket?: Socket;
  private reader = new RespReader();
  private queue: Pending[] = [];
  private ready = false;
  private closedByUser = false;
  private attempts = 0;
  private retryTimer?: NodeJS.Timeout;
  /** subscribe() calls waiting for their confirmations: channels left to confirm */
  private subscribing: Array<{ left: Set<string>; resolve: () => void; reject: (e: Error) => void }> = [];
  private subscriber = false;

  constructor(url: string, o: RespOptions = {}) {
    super();
    this.target = parseRedisUrl(url);
    this.connectTimeoutMs = o.connectTimeoutMs ?? 1000;
    this.commandTimeoutMs = o.commandTimeoutMs ?? 1000;
    this.retryDelay = o.retryDelay ?? ((n) => Math.min(50 * n, 1000));
    // an 'error' with no listener would throw; the owner listens, but a bare client must not crash either
    this.on('error', () => undefined);
    this.open();
  }

  get isReady(): boolean { return this.ready; }

  private open(): void {
    if (this.closedByUser) return;
    const t = this.target;
    const s = t.tls
      ? tlsConnect({ host: t.host, port: t.port, ...(isIP(t.host) ? {} : { servername: t.host }), secureContext: secureContext() })
      : netConnect({ host: t.host, port: t.port });
    this.socket = s;
    this.reader = new RespReader();
    this.subscriber = false;
    s.setNoDelay(true);
    s.setKeepAlive(true, 10_000);
    const timer = setTimeout(() => s.destroy(new Error(`connect ETIMEDOUT ${t.host}:${t.port}`)), this.connectTimeoutMs);
    timer.unref();
    s.once(t.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      void this.handshake(s);
    });
    s.on('data', (d: Buffer) => this.onData(s, d));
    s.on('error', (e) => { this.emit('error', e); });
    s.on('close', () => {
      clearTimeout(timer);
      if (this.socket !== s) return;
      this.socket = undefined;
      this.ready = false;
      this.failAll(new Error('Connection is closed.'));
      this.emit('close');
      if (!this.closedByUser) {
        const delay = this.retryDelay(++this.attempts);
        this.retryTimer = setTimeout(() => { this.retryTimer = undefined; this.open(); }, delay);
        this.retryTimer.unref();
      }
    });
  }

  /** AUTH and SELECT, sent before the client counts as ready */
  private async handshake(s: Socket): Promise<void> {
    const t = this.target;
    try {
      if (t.password !== undefined) await this.send(s, t.user ? ['AUTH', t.user, t.password] : ['AUTH', t.password]);
      if (t.db !== 0) await this.send(s, ['SELECT', String(t.db)]);
    } catch (e) {
      this.emit('error', e as Error);
      s.destroy();
      return;
    }
    if (this.socket !== s) return;
    this.attempts = 0;
    this.ready = true;
    this.emit('ready');
  }

  private onData(s: Socket, d: Buffer): void {
    if (this.socket !== s) return;
    try {
      this.reader.feed(d);
      for (let v = this.reader.next(); v !== undefined; v = this.reader.next()) this.onValue(v);
    } catch (e) {
      // the stream cannot be trusted past a protocol error: start again
      this.emit('error', e as Error);
      s.destroy();
    }
  }

  private onValue(v: RespValue): void {
    if (this.subscriber && Array.isArray(v) && typeof v[0] === 'string') {
      const kind = v[0];
      if (kind === 'message' && v.length === 3) {
        this.emit('message', String(v[1]), String(v[2]));
        return;
      }
      if (kind === 'subscribe' && v.length === 3) {
        const ch = String(v[1]);
        const w = this.subscribing.find((x) => x.left.has(ch));
        if (w) {
          w.left.delete(ch);
          if (w.left.size === 0) { this.subscribing.splice(this.subscribing.indexOf(w), 1); w.resolve(); }
        }
        return;
      }
    }
    const p = this.queue.shift();
    if (!p) return; // nothing asked for this: ignore (an answer to a command already failed by a reconnect cannot come here)
    if (p.timer) clearTimeout(p.timer);
    if (p.done) return;
    p.done = true;
    if (v instanceof Error) p.reject(v); else p.resolve(v);
  }

  private failAll(e: Error): void {
    const q = this.queue;
    this.queue = [];
    for (const p of q) {
      if (p.timer) clearTimeout(p.timer);
      if (!p.done) { p.done = true; p.reject(e); }
    }
    const subs = this.subscribing;
    this.subscribing = [];
    for (const w of subs) w.reject(e);
  }

  private send(s: Socket, args: ReadonlyArray<string | Buffer>): Promise<RespValue> {
    const answer = this.expect(s);
    s.write(encodeCommand(args));
    return answer;
  }

  /** the answer to the next command written on s, failed (and s given up) after the command timeout */
  private expect(s: Socket): Promise<RespValue> {
    return new Promise<RespValue>((resolve, reject) => {
      const p: Pending = { resolve, reject, done: false };
      p.timer = setTimeout(() => {
        if (p.done) return;
        p.done = true;
        reject(new Error('Command timed out'));
        this.stalled(s);
      }, this.commandTimeoutMs);
      p.timer.unref();
      this.queue.push(p);
    });
  }

  /**
   * A command went unanswered for the command timeout. Answers come in order, so nothing at all came
   * back on this connection meanwhile: Redis is stopped, wedged or unreachable without a reset. The
   * connection is given up (what is in flight fails, the owner hears 'close' and acts alone) and made
   * again; otherwise every later command would wait out its own timeout, and queue behind it, for ever.
   */
  private stalled(s: Socket): void {
    if (this.socket === s) s.destroy(new Error(`no answer from Redis within ${this.commandTimeoutMs} ms`));
  }

  /** One command; fails at once unless the connection is ready. */
  call(...args: Array<string | Buffer>): Promise<RespValue> {
    const s = this.socket;
    if (!this.ready || !s) return Promise.reject(new Error('the Redis connection is not ready'));
    if (this.subscriber) return Promise.reject(new Error('Connection in subscriber mode, only subscriber commands may be used'));
    return this.send(s, args);
  }

  /** MULTI, the commands, EXEC in one write; the answers of EXEC (errors stay Errors in the array) */
  async multi(cmds: ReadonlyArray<ReadonlyArray<string>>): Promise<RespValue[]> {
    const s = this.socket;
    if (!this.ready || !s) throw new Error('the Redis connection is not ready');
    const all = [['MULTI'], ...cmds, ['EXEC']];
    const answers = all.map(() => this.expect(s));
    s.write(Buffer.concat(all.map((a) => encodeCommand(a))));
    // each answer has the command timeout; the first to miss it gives the connection up, which fails the rest
    const settled = await Promise.allSettled(answers);
    const last = settled[settled.length - 1]!;
    if (last.status === 'rejected') throw last.reason as Error;
    const first = settled.find((x) => x.status === 'rejected');
    if (first && first.status === 'rejected') throw first.reason as Error;
    const v = last.value;
    if (!Array.isArray(v)) throw new Error('EXEC aborted');
    return v;
  }

  /** SUBSCRIBE to the channels; resolves once Redis has confirmed each. The connection is then a subscriber's. */
  subscribe(...channels: string[]): Promise<void> {
    const s = this.socket;
    if (!this.ready || !s) return Promise.reject(new Error('the Redis connection is not ready'));
    this.subscriber = true;
    return new Promise<void>((resolve, reject) => {
      this.subscribing.push({ left: new Set(channels), resolve, reject });
      s.write(encodeCommand(['SUBSCRIBE', ...channels]));
    });
  }

  /** Closes the connection and stops reconnecting; what is in flight fails. */
  disconnect(): void {
    this.closedByUser = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.ready = false;
    const s = this.socket;
    this.socket = undefined;
    this.failAll(new Error('Connection is closed.'));
    if (s) { s.destroy(); this.emit('close'); }
  }
}
