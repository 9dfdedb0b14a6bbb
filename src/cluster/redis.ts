/**
 * Coordination through Redis (`--redis URL`), for nodes that share one
 * repository root and one pack-cache directory.
 *
 * - A lease is a member of a sorted set per scope, scored by its expiry
 *   (Redis' own clock, so nodes' clocks do not matter). A request takes
 *   the slots of all its scopes (repository, client) or none, in one
 *   script: it drops the expired members and adds ours only where fewer
 *   than the limit are left. Every held lease is renewed every third of its
 *   TTL; a node that dies stops renewing and its slots expire. A request
 *   that finds a scope full is noted in that scope's set of waiters. A
 *   release (one script too) is published only when some request waits on
 *   one of its scopes, so waiters on every node try again at once; they
 *   also poll, for the slots that free by expiring. A release with nobody
 *   waiting wakes no node.
 * - A cache claim is `SET NX PX` of a record naming the node and its spool,
 *   renewed while pack-objects runs; the end of the run replaces it with
 *   the pack's size and trailer (what a follower verifies against), kept a
 *   minute. A claim that expires without that record is a producer that died.
 * - Invalidation is a message naming the repository (relative to the root),
 *   delivered to every node; after an outage, when messages may have been
 *   missed, every node's listeners hear "anything may have changed".
 *
 * While Redis cannot be reached, every call answers as LocalCoordinator:
 * slots counted on this node, no claims (the cache acts alone), invalidation
 * only on this node. The client reconnects by itself; coordination resumes then.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { RespClient } from './resp.js';
import { LocalCoordinator } from './local.js';
import type { ClaimRecord, ClaimResult, CoordinationStatus, Coordinator, PackClaim, SlotLease } from './coordinator.js';

export interface RedisCoordinatorOptions {
  /** `redis://[user:password@]host:port[/db]` */
  url: string;
  /** the repository root every node serves (repositories are named relative to it) */
  root: string;
  /** lease and claim lifetime without renewal (default 5000 ms) */
  ttlMs?: number;
  /** prefix of every key and channel (default `gitwire:`) */
  prefix?: string;
  /** connection changes and failures worth a log line */
  log?: (msg: string, fields: Record<string, unknown>, level?: 'info' | 'warn') => void;
}

/**
 * The longest a lease or a waiter may be set to last. No node sets one longer (ttlMs is checked
 * against it), so a member that claims to expire later was written by something else (a hostile
 * or broken writer) and is dropped: it cannot hold a slot, or every release's message, for ever.
 */
const MAX_LEASE_MS = 60_000;

/**
 * take a slot of every scope or of none. KEYS: n lease sets, then the n scopes' waiter sets;
 * ARGV: ttl, member, waiter ttl, then limit i per scope. 0 when all were taken, else the
 * (1-based) index of a full scope, where this request is then noted as waiting (until the
 * waiter ttl passes: a waiting request tries again, and is noted again, well before that)
 */
const LEASE_TAKE_ALL = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS / 2
for i = 1, n do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[i], now + ${MAX_LEASE_MS} + 1, '+inf')
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i + 3]) then
    redis.call('ZADD', KEYS[n + i], now + tonumber(ARGV[3]), ARGV[2])
    redis.call('PEXPIRE', KEYS[n + i], tonumber(ARGV[3]))
    return i
  end
end
for i = 1, n do
  redis.call('ZADD', KEYS[i], now + tonumber(ARGV[1]), ARGV[2])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1]) * 2)
end
return 0`;

/**
 * give back ARGV[2] of the n lease sets KEYS[1..n]; when a request waits on one of the scopes
 * (their waiter sets KEYS[n+1..2n]), tell every node on channel ARGV[1]. Without waiters no
 * message goes out: a release does not wake every node of the fleet.
 */
const LEASE_RELEASE_ALL = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS / 2
local waiting = false
for i = 1, n do
  redis.call('ZREM', KEYS[i], ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[n + i], now + ${MAX_LEASE_MS} + 1, '+inf')
  if redis.call('ZCARD', KEYS[n + i]) > 0 then waiting = true end
end
if waiting then redis.call('PUBLISH', ARGV[1], '1') end
return waiting and 1 or 0`;

/** a waiting request counts as one for this long after its last try (it tries every FLEET_POLL_MS at least) */
const WAITER_TTL_MS = 2000;

/** renew leases: KEYS are sets, ARGV[1] the ttl, ARGV[i+1] the member in KEYS[i] */
const LEASE_RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', now + ttl, ARGV[i + 1])
  redis.call('PEXPIRE', k, ttl * 2)
end
return 1`;

/** claim KEYS[1] with ARGV[2] for ARGV[1] ms: nil when won, else the holder's record */
/**
 * KEYS[1] = the secret, ARGV[1] = a new one (base64): the first to ask sets it, every node reads what is
 * there. A value of another shape than this code writes (44 characters of base64: a restore, another
 * writer) is replaced, at once and for every node alike; kept, it made each node fall back to a key of
 * its own, and a fleet that signs with several keys refuses its own LFS tokens.
 */
const SECRET = `
local v = redis.call('GET', KEYS[1])
if v and string.len(v) == 44 and string.match(v, '^[A-Za-z0-9+/]+=$') then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`;

const CLAIM = `
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then return false end
return redis.call('GET', KEYS[1])`;

/** KEYS[1] still holds ARGV[1]: set it to ARGV[2] for ARGV[3] ms (ARGV[2] empty: only renew) */
const CLAIM_UPDATE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
return 1`;

/** a claim's end record is kept this long for late followers */
const DONE_TTL_MS = 60_000;
/** ...and this long when the entry was not stored (its spool is gone: nobody can follow it) */
const DONE_UNSTORED_TTL_MS = 5_000;
const MAX_NAME = 4096;

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** A claim record from Redis, only when it has the expected shape (anything else counts as none). */
export function parseClaim(s: string | null | undefined): ClaimRecord | undefined {
  if (!s || s.length > 1024) return undefined;
  let v: unknown;
  try { v = JSON.parse(s); } catch { return undefined; }
  if (typeof v !== 'object' || v === null) return undefined;
  const r = v as Record<string, unknown>;
  if (typeof r.node !== 'string') return undefined;
  if (r.state === 'failed') return { state: 'failed', node: r.node };
  if (typeof r.spool !== 'string') return undefined;
  if (r.state === 'running') return { state: 'running', node: r.node, spool: r.spool };
  if (r.state === 'done' && Number.isSafeInteger(r.size) && (r.size as number) >= 0 && typeof r.trailer === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(r.trailer)) {
    return { state: 'done', node: r.node, spool: r.spool, size: r.size as number, trailer: r.trailer, stored: r.stored === true };
  }
  return undefined;
}

interface Held { key: string; member: string }

export class RedisCoordinator implements Coordinator {
  readonly mode = 'redis' as const;
  readonly node = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly client: RespClient;
  private readonly sub: RespClient;
  private readonly local = new LocalCoordinator();
  private readonly ttlMs: number;
  private readonly prefix: string;
  private readonly root: string;
  private readonly held = new Set<Held>();
  private readonly renewTimer: NodeJS.Timeout;
  private up = false;
  private clientReady = false;
  private subscribed = false;
  /** counts the subscriber's connections: a subscription confirmed for an older one does not count */
  private subConn = 0;
  private since = Date.now();
  private lastError?: string;
  private everUp = false;
  private closed = false;
  private seq = 0;
  private readonly logFn?: RedisCoordinatorOptions['log'];

  constructor(o: RedisCoordinatorOptions) {
    this.ttlMs = o.ttlMs ?? 5000;
    if (!(this.ttlMs >= 100 && this.ttlMs <= MAX_LEASE_MS)) throw new Error(`lease TTL ${this.ttlMs} ms: it must be from 100 to ${MAX_LEASE_MS} ms`);
    this.prefix = o.prefix ?? 'gitwire:';
    this.root = resolve(o.root);
    this.logFn = o.log;
    // a node keeps trying: coordination resumes by itself when Redis is back; commands fail at once
    // while disconnected (the caller then acts alone) instead of queueing
    const base = { connectTimeoutMs: 1000, commandTimeoutMs: 1000, retryDelay: (n: number) => Math.min(50 * n, 1000) };
    this.client = new RespClient(o.url, base);
    this.sub = new RespClient(o.url, base);
    // up = the command client is ready and the subscriber is subscribed (Redis confirmed it): from
    // that moment no invalidation is missed. One state, set only by settle(): status(), `shared`,
    // /readyz and the metric all read it, and it does not flap on the way up
    // ready once Redis has answered on the connection: a stopped Redis whose kernel still accepts
    // connections would otherwise count as up again at each reconnect, and every request would wait
    // out a command timeout (a PING that fails is one that timed out or whose connection closed)
    this.client.on('ready', () => {
      this.client.call('PING').then(() => { this.clientReady = true; this.settle(); }, () => undefined);
    });
    this.client.on('close', () => { this.clientReady = false; this.settle(); });
    this.client.on('error', (e: Error) => { this.lastError = e.message; });
    // subscribed again on every connect, and counted only once Redis has confirmed it
    this.sub.on('ready', () => {
      const conn = ++this.subConn;
      this.sub.subscribe(this.chan('released'), this.chan('invalidate')).then(() => {
        if (conn === this.subConn) { this.subscribed = true; this.settle(); }
      }, () => undefined);
    });
    this.sub.on('close', () => { this.subConn++; this.subscribed = false; this.settle(); });
    this.sub.on('error', (e: Error) => { this.lastError ??= e.message; });
    this.sub.on('message', (ch: string, msg: string) => this.onMessage(ch, msg));
    this.renewTimer = setInterval(() => { void this.renew(); }, Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewTimer.unref();
  }

  get shared(): boolean { return this.up; }

  private chan(name: string): string { return `${this.prefix}${name}`; }

  /** warnings unless said otherwise: being connected (again) is news, not trouble */
  private log(msg: string, fields: Record<string, unknown> = {}, level: 'info' | 'warn' = 'warn'): void {
    try { this.logFn?.(msg, fields, level); } catch { /* logging never fails a request */ }
  }

  /** up when both connections are: the one place the state changes */
  private settle(): void { this.setUp(this.clientReady && this.subscribed); }

  private setUp(up: boolean): void {
    if (this.closed || up === this.up) return;
    this.up = up;
    this.since = Date.now();
    if (up) {
      this.lastError = undefined;
      this.log(this.everUp ? 'coordination: Redis is back; fleet limits and cross-node joins resume' : 'coordination: connected to Redis', {}, 'info');
      // invalidations may have been missed while away: every snapshot is suspect
      if (this.everUp) this.local.notifyInvalidate(undefined);
      this.everUp = true;
      this.local.notifyRelease();
    } else {
      this.log('coordination: Redis unreachable; serving with local limits and no cross-node joins', { error: this.lastError });
    }
  }

  status(): CoordinationStatus {
    return { mode: 'redis', up: this.up, since: this.since, ...(this.up || !this.lastError ? {} : { error: this.lastError }) };
  }

  /** A repository path as every node names it: relative to the root. */
  repoName(dir: string): string {
    const rel = relative(this.root, resolve(dir));
    return rel === '' ? '.' : rel.split(sep).join('/');
  }

  /** A name from another node back to a path under the root, or undefined when it is not one. */
  repoPath(name: string): string | undefined {
    if (!name || name.length > MAX_NAME || name.includes('\0') || isAbsolute(name)) return undefined;
    if (name.split('/').some((s) => s === '..')) return undefined;
    const p = resolve(join(this.root, name));
    return p === this.root || p.startsWith(this.root + sep) ? p : undefined;
  }

  private onMessage(ch: string, msg: string): void {
    if (ch === this.chan('released')) { this.local.notifyRelease(); return; }
    if (ch !== this.chan('invalidate')) return;
    const sp = msg.indexOf(' ');
    if (sp < 0 || msg.slice(0, sp) === this.node) return;
    const p = this.repoPath(msg.slice(sp + 1));
    if (p) this.local.notifyInvalidate(p);
  }

  private async renew(): Promise<void> {
    if (!this.up || this.held.size === 0) return;
    const hs = [...this.held];
    try {
      await this.client.call('EVAL', LEASE_RENEW, String(hs.length), ...hs.map((h) => h.key), String(this.ttlMs), ...hs.map((h) => h.member));
    } catch (e) {
      this.log('coordination: lease renewal failed', { error: (e as Error).message });
    }
  }

  async tryLease(scope: string, limit: number): Promise<SlotLease | undefined> {
    const r = await this.tryLeases([[scope, limit]]);
    return 'lease' in r ? r.lease : undefined;
  }

  async tryLeases(wants: ReadonlyArray<readonly [string, number]>): Promise<{ lease: SlotLease } | { full: number }> {
    if (!this.up) return this.local.takeAll(wants);
    if (wants.length === 0) return { lease: { release: () => undefined } };
    const member = `${this.node}:${++this.seq}`;
    const names = wants.map(([scope]) => this.scopeHash(scope));
    const keys = [...names.map((h) => `${this.prefix}lease:${h}`), ...names.map((h) => `${this.prefix}waiters:${h}`)];
    let got: unknown;
    try {
      got = await this.client.call('EVAL', LEASE_TAKE_ALL, String(keys.length), ...keys, String(this.ttlMs), member, String(WAITER_TTL_MS), ...wants.map(([, limit]) => String(limit)));
    } catch {
      return this.local.takeAll(wants);
    }
    if (got !== 0) return { full: typeof got === 'number' && got >= 1 && got <= wants.length ? got - 1 : 0 };
    const hs: Held[] = keys.slice(0, wants.length).map((key) => ({ key, member }));
    for (const h of hs) this.held.add(h);
    let done = false;
    return {
      lease: {
        release: () => {
          if (done) return;
          done = true;
          for (const h of hs) this.held.delete(h);
          if (!this.up) { this.local.notifyRelease(); return; }
          this.client.call('EVAL', LEASE_RELEASE_ALL, String(keys.length), ...keys, this.chan('released'), member)
            .catch(() => undefined).finally(() => this.local.notifyRelease());
        },
      },
    };
  }

  /** a scope's name in keys: a repository named as every node names it, whatever its mount point */
  private scopeHash(scope: string): string {
    return sha(scope.startsWith('repo:') ? `repo:${this.repoName(scope.slice(5))}` : scope);
  }

  onRelease(fn: () => void): () => void { return this.local.onRelease(fn); }

  private claimKey(key: string): string { return `${this.prefix}claim:${key}`; }

  async claimPack(key: string, spool: string): Promise<ClaimResult | undefined> {
    if (!this.up) return undefined;
    const k = this.claimKey(key);
    const mine = JSON.stringify({ state: 'running', node: this.node, spool });
    let got: unknown;
    try {
      got = await this.client.call('EVAL', CLAIM, '1', k, String(this.ttlMs), mine);
    } catch {
      return undefined;
    }
    if (got !== null) {
      const holder = parseClaim(typeof got === 'string' ? got : undefined);
      return holder ? { won: false, holder } : undefined;
    }
    const timer = setInterval(() => {
      if (this.up) this.client.call('EVAL', CLAIM_UPDATE, '1', k, mine, '', String(this.ttlMs)).catch(() => undefined);
    }, Math.max(100, Math.floor(this.ttlMs / 3)));
    timer.unref();
    const followers = `${this.prefix}followers:${key}`;
    const claim: PackClaim = {
      // unknown (Redis away): taken as followed, so a follower can still learn the end from the stored entry
      followed: async () => {
        if (!this.up) return true;
        try {
          // the claim no longer ours (Redis flushed or restarted empty): its followers' marks went with it
          const [n, rec] = await this.client.multi([['GET', followers], ['GET', k]]);
          return rec !== mine || Number(n) > 0;
        } catch { return true; }
      },
      finish: async (r) => {
        clearInterval(timer);
        if (!this.up) return;
        const rec = r.ok
          ? JSON.stringify({ state: 'done', node: this.node, spool, size: r.size, trailer: r.trailer.toString('hex'), stored: r.stored })
          : JSON.stringify({ state: 'failed', node: this.node });
        const ttl = r.ok && r.stored ? DONE_TTL_MS : DONE_UNSTORED_TTL_MS;
        await this.client.call('EVAL', CLAIM_UPDATE, '1', k, mine, rec, String(ttl)).catch(() => undefined);
      },
    };
    return { won: true, claim };
  }

  async packState(key: string): Promise<ClaimRecord | undefined> {
    if (!this.up) return undefined;
    try {
      const v = await this.client.call('GET', this.claimKey(key));
      return parseClaim(typeof v === 'string' ? v : undefined);
    } catch { return undefined; }
  }

  async followPack(key: string): Promise<void> {
    if (!this.up) return;
    const f = `${this.prefix}followers:${key}`;
    await this.client.multi([['INCR', f], ['PEXPIRE', f, String(DONE_TTL_MS)]]).catch(() => undefined);
  }

  publish(repo: string): void {
    this.local.notifyInvalidate(resolve(repo));
    if (!this.up) return;
    this.client.call('PUBLISH', this.chan('invalidate'), `${this.node} ${this.repoName(repo)}`).catch(() => undefined);
  }

  onInvalidate(fn: (repo: string | undefined) => void): () => void { return this.local.onInvalidate(fn); }

  async sharedSecret(name: string): Promise<Buffer | undefined> {
    if (!this.up || !/^[a-z0-9-]{1,64}$/.test(name)) return undefined;
    try {
      const v = await this.client.call('EVAL', SECRET, '1', `${this.prefix}secret:${name}`, randomBytes(32).toString('base64'));
      // only the shape this code writes: 32 bytes in base64
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/]{43}=$/.test(v)) return undefined;
      return Buffer.from(v, 'base64');
    } catch { return undefined; }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.renewTimer);
    // leases still held expire by themselves; released ones were removed
    this.closed = true;
    this.up = false;
    this.client.disconnect();
    this.sub.disconnect();
    await Promise.resolve();
  }
}
