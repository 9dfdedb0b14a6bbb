/**
 * Webhooks: after a push that moved refs, a JSON POST to each configured
 * URL whose repository globs match, signed with HMAC-SHA256
 * (`X-Gitwire-Signature: sha256=<hex>` of the body), delivered off the
 * request path.
 *
 * - `push()` only queues: it builds and signs the body and returns; the
 *   push answers whatever the receiver does.
 * - The queue is bounded in entries and bytes; when full, the oldest
 *   delivery is dropped with a warning (and counted).
 * - At most `concurrency` deliveries are in flight. An attempt is bounded
 *   in time (connect, answer and what is read of it, together) and in
 *   bytes read: a receiver that hangs or answers 10 MB slowly is cut.
 * - A failed attempt (network error, timeout, 5xx, 408, 429) is retried
 *   with exponential backoff and jitter, up to `maxAttempts` and never
 *   after `deadlineMs` from the push; other answers (3xx, 4xx) are final.
 * - Redirects are never followed: a 3xx is a failure. The only hosts
 *   contacted are the configured URLs' (no SSRF through a Location).
 *
 * The delivery id (`X-Gitwire-Delivery`, and `id` in the body) stays the
 * same across retries, so a receiver can drop a duplicate.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { version } from '../version.js';

export interface WebhookTarget {
  /** http:// or https:// */
  url: string;
  /** repository globs (`*` within a path segment, `**` across); none: every repository */
  repositories?: string[];
}

export interface WebhookOptions {
  targets: WebhookTarget[];
  /** the HMAC-SHA256 key; without one no signature header is sent */
  secret?: Buffer | string;
  /** attempts per delivery (default 5) */
  maxAttempts?: number;
  /** one attempt: connect, answer and body read together (default 10 s) */
  attemptTimeoutMs?: number;
  /** no attempt starts later than this after the push (default 5 min) */
  deadlineMs?: number;
  /** the first retry's delay; each next one doubles, up to 60 s, with ±25% jitter (default 1 s) */
  backoffMs?: number;
  /** deliveries queued, waiting or between retries (default 1000) */
  maxQueue?: number;
  /** bytes of bodies queued (default 32 MiB) */
  maxQueueBytes?: number;
  /** deliveries in flight at once (default 4) */
  concurrency?: number;
  /** bytes of an answer read (for the log) before it is cut (default 4 KiB) */
  maxResponseBytes?: number;
  /** refs listed in one event, and their bytes; the rest are counted in `refsNotListed` (default 1000 refs, 256 KiB) */
  maxRefs?: number;
  maxRefBytes?: number;
  log?: (level: 'info' | 'warn' | 'debug', msg: string, fields: Record<string, unknown>) => void;
}

/** What happened to a push, as a webhook tells it. */
export interface PushEvent {
  /** the repository's name under the root (`group/project`) */
  repository: string;
  /** the authenticated user; undefined: anonymous */
  user?: string;
  transport: string;
  refs: Array<{ ref: string; old: string; new: string }>;
}

/** An attempt's end, as counted in the metrics. */
export type AttemptResult = 'ok' | 'http-error' | 'redirect' | 'timeout' | 'network-error';

export interface WebhookStats {
  delivered: number;
  /** deliveries given up (attempts or deadline spent, or a final answer) */
  failed: number;
  /** deliveries dropped from a full queue, or at shutdown */
  dropped: number;
  attempts: Record<AttemptResult, number>;
}

interface Job {
  id: string;
  url: URL;
  body: Buffer;
  signature?: string;
  enqueuedAt: number;
  attempts: number;
  due: number;
}

const MAX_BACKOFF_MS = 60_000;

function globToRegExp(glob: string): RegExp {
  const clean = glob.replace(/^\/+|\/+$/g, '').replace(/(?:\/\.git|\.git)$/, '');
  let s = '';
  for (let i = 0; i < clean.length; i++) {
    const c = clean[i]!;
    if (c === '*') { if (clean[i + 1] === '*') { s += '.*'; i++; } else s += '[^/]*'; } else if (c === '?') s += '[^/]';
    else s += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${s}$`);
}

/** A URL a webhook may have: http or https, with a host, no credentials in it. Throws with the reason. */
export function checkWebhookUrl(url: string): URL {
  let u: URL;
  try { u = new URL(url); } catch { throw new Error(`not a URL: '${url}'`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`expected an http:// or https:// URL, not '${url}'`);
  if (u.username || u.password) throw new Error(`a webhook URL carries no credentials (the body is signed with --webhook-secret): '${u.host}'`);
  return u;
}

export class Webhooks {
  readonly stats: WebhookStats = { delivered: 0, failed: 0, dropped: 0, attempts: { ok: 0, 'http-error': 0, redirect: 0, timeout: 0, 'network-error': 0 } };
  private readonly targets: Array<{ url: URL; repos?: RegExp[] }>;
  private readonly o: Required<Omit<WebhookOptions, 'secret' | 'log' | 'targets'>>;
  private readonly secret?: Buffer;
  private queue: Job[] = [];
  private bytes = 0;
  private readonly inFlight = new Set<ClientRequest>();
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private closed = false;
  private idle: Array<() => void> = [];

  constructor(opts: WebhookOptions) {
    this.targets = opts.targets.map((t) => ({ url: checkWebhookUrl(t.url), repos: t.repositories?.length ? t.repositories.map(globToRegExp) : undefined }));
    this.secret = opts.secret === undefined ? undefined : Buffer.from(opts.secret);
    this.o = {
      maxAttempts: Math.max(1, opts.maxAttempts ?? 5), attemptTimeoutMs: opts.attemptTimeoutMs ?? 10_000, deadlineMs: opts.deadlineMs ?? 300_000,
      backoffMs: opts.backoffMs ?? 1000, maxQueue: Math.max(1, opts.maxQueue ?? 1000), maxQueueBytes: opts.maxQueueBytes ?? 32 << 20,
      concurrency: Math.max(1, opts.concurrency ?? 4), maxResponseBytes: opts.maxResponseBytes ?? 4096, maxRefs: opts.maxRefs ?? 1000, maxRefBytes: opts.maxRefBytes ?? 256 << 10,
    };
    this.log = opts.log ?? (() => undefined);
  }

  private readonly log: NonNullable<WebhookOptions['log']>;

  /** deliveries waiting (queued or between retries) */
  get queued(): number { return this.queue.length; }
  /** bytes of the bodies waiting */
  get queuedBytes(): number { return this.bytes; }
  /** deliveries in flight */
  get active(): number { return this.inFlight.size; }

  /** Whether some target wants events of this repository. */
  wants(repository: string): boolean {
    return this.targets.some((t) => !t.repos || t.repos.some((r) => r.test(repository)));
  }

  /** Queue the event for every target that wants it; never waits. */
  push(e: PushEvent): void {
    if (this.closed || !e.refs.length) return;
    const targets = this.targets.filter((t) => !t.repos || t.repos.some((r) => r.test(e.repository)));
    if (!targets.length) return;
    // the refs listed are bounded in count and bytes (a ref name may be 64 KiB): built once, for every target
    const refs: string[] = [];
    let bytes = 0;
    for (const r of e.refs) {
      if (refs.length >= this.o.maxRefs || bytes + r.ref.length + r.old.length + r.new.length > this.o.maxRefBytes) break;
      const j = JSON.stringify({ ref: r.ref, old: r.old, new: r.new });
      bytes += j.length;
      refs.push(j);
    }
    const refsJson = `[${refs.join(',')}]`;
    const notListed = e.refs.length - refs.length;
    const now = Date.now();
    for (const t of targets) {
      const id = randomUUID();
      const head = JSON.stringify({ id, event: 'push', repository: e.repository, user: e.user ?? null, transport: e.transport });
      const body = Buffer.from(`${head.slice(0, -1)},"refs":${refsJson}${notListed ? `,"refsNotListed":${notListed}` : ''},"pushedAt":${JSON.stringify(new Date(now).toISOString())}}`);
      const signature = this.secret ? `sha256=${createHmac('sha256', this.secret).update(body).digest('hex')}` : undefined;
      this.enqueue({ id, url: t.url, body, signature, enqueuedAt: now, attempts: 0, due: now });
    }
    this.pump();
  }

  private enqueue(j: Job): void {
    if (j.body.length > this.o.maxQueueBytes) { this.drop(j, 'larger than the queue'); return; }
    while (this.queue.length >= this.o.maxQueue || this.bytes + j.body.length > this.o.maxQueueBytes) {
      let oldest = 0;
      for (let i = 1; i < this.queue.length; i++) if (this.queue[i]!.enqueuedAt < this.queue[oldest]!.enqueuedAt) oldest = i;
      const [old] = this.queue.splice(oldest, 1);
      this.bytes -= old!.body.length;
      this.drop(old!, 'queue full');
    }
    this.queue.push(j);
    this.bytes += j.body.length;
  }

  private drop(j: Job, why: string): void {
    this.stats.dropped++;
    this.log('warn', `webhook delivery dropped (${why})`, { webhook: j.url.origin + j.url.pathname, delivery: j.id, attempts: j.attempts, queued: this.queue.length, queuedBytes: this.bytes });
  }

  /** Start what is due, up to the concurrency; wake up for the next one. */
  private pump(): void {
    if (this.closed) {
      if (!this.inFlight.size) for (const f of this.idle.splice(0)) f();
      return;
    }
    const now = Date.now();
    let next = Infinity;
    for (let i = 0; i < this.queue.length && this.inFlight.size < this.o.concurrency;) {
      const j = this.queue[i]!;
      if (j.due > now) { next = Math.min(next, j.due); i++; continue; }
      this.queue.splice(i, 1);
      this.bytes -= j.body.length;
      this.attempt(j);
    }
    if (this.inFlight.size < this.o.concurrency) for (const j of this.queue) next = Math.min(next, j.due);
    if (next < Infinity && next < this.timerDue) {
      if (this.timer) clearTimeout(this.timer);
      this.timerDue = next;
      this.timer = setTimeout(() => { this.timer = undefined; this.timerDue = Infinity; this.pump(); }, Math.max(0, next - now));
      this.timer.unref();
    }
  }

  private attempt(j: Job): void {
    j.attempts++;
    const started = Date.now();
    const headers: Record<string, string | number> = {
      'Content-Type': 'application/json', 'Content-Length': j.body.length, 'User-Agent': `gitwire/${version()}`,
      'X-Gitwire-Event': 'push', 'X-Gitwire-Delivery': j.id, Connection: 'close',
    };
    if (j.signature) headers['X-Gitwire-Signature'] = j.signature;
    const request = j.url.protocol === 'https:' ? httpsRequest : httpRequest;
    let req: ClientRequest;
    let settled = false;
    const finish = (result: AttemptResult, detail: string, status?: number, retryAfterMs?: number) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      this.inFlight.delete(req);
      req.destroy();
      this.stats.attempts[result]++;
      this.settle(j, result, detail, Date.now() - started, status, retryAfterMs);
    };
    try {
      req = request(j.url, { method: 'POST', headers, agent: false });
    } catch (e) {
      this.stats.attempts['network-error']++;
      this.settle(j, 'network-error', (e as Error).message, 0);
      return;
    }
    this.inFlight.add(req);
    // the whole attempt, whatever the receiver does: connect, answer, and what is read of it
    const timer = setTimeout(() => finish('timeout', `no complete answer in ${this.o.attemptTimeoutMs} ms`), this.o.attemptTimeoutMs);
    timer.unref();
    req.on('error', (e) => finish('network-error', (e as NodeJS.ErrnoException).code ?? e.message));
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let got = 0;
      const done = () => {
        const text = Buffer.concat(chunks).toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 200);
        if (status >= 200 && status < 300) return finish('ok', text, status);
        if (status >= 300 && status < 400) return finish('redirect', `answered ${status}, redirects are not followed${res.headers.location ? ` (Location: ${String(res.headers.location).slice(0, 200)})` : ''}`, status);
        const ra = Number(res.headers['retry-after']);
        return finish('http-error', `answered ${status}${text ? `: ${text}` : ''}`, status, Number.isFinite(ra) && ra >= 0 ? ra * 1000 : undefined);
      };
      res.on('data', (b: Buffer) => {
        const room = this.o.maxResponseBytes - got;
        if (room > 0) chunks.push(b.subarray(0, room));
        got += b.length;
        // enough read: the rest is not waited for
        if (got >= this.o.maxResponseBytes) done();
      });
      res.on('end', done);
      res.on('error', () => done());
      res.on('aborted', () => done());
    });
    req.end(j.body);
  }

  private settle(j: Job, result: AttemptResult, detail: string, ms: number, status?: number, retryAfterMs?: number): void {
    const where = j.url.origin + j.url.pathname;
    if (result === 'ok') {
      this.stats.delivered++;
      this.log('debug', 'webhook delivered', { webhook: where, delivery: j.id, attempts: j.attempts, status, durationMs: ms });
      return this.pump();
    }
    const retriable = result === 'timeout' || result === 'network-error' || (status !== undefined && (status >= 500 || status === 408 || status === 429));
    const backoff = Math.min(MAX_BACKOFF_MS, this.o.backoffMs * 2 ** (j.attempts - 1)) * (0.75 + Math.random() * 0.5);
    const due = Date.now() + Math.max(backoff, Math.min(retryAfterMs ?? 0, MAX_BACKOFF_MS));
    const more = retriable && !this.closed && j.attempts < this.o.maxAttempts && due - j.enqueuedAt <= this.o.deadlineMs;
    this.log('warn', more ? 'webhook attempt failed, will retry' : 'webhook delivery failed', {
      webhook: where, delivery: j.id, attempt: j.attempts, result, status, error: detail, durationMs: ms, ...(more ? { retryInMs: Math.round(due - Date.now()) } : {}),
    });
    if (!more) { this.stats.failed++; return this.pump(); }
    j.due = due;
    this.enqueue(j);
    this.pump();
  }

  /**
   * Stop: deliveries in flight get up to `graceMs` to finish (retries are
   * not started); what is left is cut, and what is queued is dropped and
   * counted.
   */
  async close(graceMs = 0): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.inFlight.size && graceMs > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, graceMs);
        t.unref();
        this.idle.push(() => { clearTimeout(t); resolve(); });
      });
    }
    for (const r of this.inFlight) r.destroy();
    for (const j of this.queue.splice(0)) this.drop(j, 'shutdown');
    this.bytes = 0;
  }
}
