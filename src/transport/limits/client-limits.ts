/**
 * The per-client check every transport makes at its one admission point
 * (transport/request.ts `admitRequest`): requests per second with a burst,
 * requests in progress, and, while the machine is saturated, no new
 * anonymous work. Anonymous clients (by address) and authenticated users
 * have separate settings. A refusal says how long to wait: HTTP answers
 * 429 with `Retry-After`, git:// `ERR`, SSH `fatal:` on stderr, each with
 * the same words (refusalMessage).
 */
import { clientId, type ClientId } from './client-key.js';
import { DEFAULT_MAX_CLIENTS, TokenBuckets } from './rate.js';
import { InFlight } from './concurrency.js';
import { Saturation, type SaturationOptions } from './pressure.js';

/** The limits of one class of client (0 or undefined: none). */
export interface ClassLimits {
  /** requests a second, per client */
  rate?: number;
  /** requests a client may make at once after a quiet spell (default: rate × 2, at least 1) */
  burst?: number;
  /** requests of one client in progress at once */
  concurrency?: number;
}

export interface ClientLimitOptions {
  /** clients without an authenticated user, one per address (IPv6 per /64) */
  anonymous?: ClassLimits;
  /** each authenticated user */
  user?: ClassLimits;
  /** while saturated, new anonymous work (everything but a ref advertisement over HTTP GET) is refused */
  saturation?: SaturationOptions | Saturation;
  /**
   * anonymous work (everything but a ref advertisement over HTTP GET) in
   * progress at once, all anonymous clients together (0: no limit). Per-client
   * limits grow with the number of addresses a flood comes from; this does not.
   */
  anonymousWork?: number;
  /** seconds a client refused because the server is saturated is told to wait (default 2) */
  saturatedRetryAfter?: number;
  /** per-client rate state kept for at most this many clients (default DEFAULT_MAX_CLIENTS) */
  maxClients?: number;
  /** the clock (ms), for tests */
  now?: () => number;
}

/** How much a request may cost: `small` (a ref advertisement) is let through while saturated. */
export type RequestWeight = 'small' | 'work';

export type RefusalReason = 'rate' | 'concurrency' | 'saturated' | 'busy';

export interface LimitRefusal {
  reason: RefusalReason;
  /** whole seconds the client should wait (>= 1): HTTP's Retry-After */
  retryAfter: number;
  client: ClientId;
}

export type LimitVerdict =
  | { ok: true; client: ClientId; release: () => void }
  | ({ ok: false } & LimitRefusal);

/** What a refused client is told (git prints it after `fatal: remote error: ` or as it is). */
export function refusalMessage(r: Pick<LimitRefusal, 'reason' | 'retryAfter'>): string {
  const after = `please try again after ${r.retryAfter} second${r.retryAfter === 1 ? '' : 's'}`;
  if (r.reason === 'rate') return `rate limited, ${after}`;
  if (r.reason === 'concurrency') return `too many requests at once from this client, ${after}`;
  if (r.reason === 'busy') return `too many anonymous requests at once, ${after}`;
  return `server busy, ${after}`;
}

type Counts = Record<'admitted' | RefusalReason, number>;
const zero = (): Counts => ({ admitted: 0, rate: 0, concurrency: 0, saturated: 0, busy: 0 });
/** the key under which anonymous work is counted in all */
const ANONYMOUS_WORK = '\0anonymous-work';

/** Per-class state: its bucket table and its limits. */
class ClassState {
  readonly buckets: TokenBuckets | undefined;
  readonly concurrency: number;
  readonly counts = zero();
  constructor(l: ClassLimits, maxClients: number, now?: () => number) {
    const rate = l.rate ?? 0;
    this.buckets = rate > 0 ? new TokenBuckets(rate, l.burst ?? Math.max(1, Math.ceil(rate * 2)), maxClients, now) : undefined;
    this.concurrency = l.concurrency ?? 0;
  }
}

export class ClientLimits {
  readonly anonymous: ClassState;
  readonly user: ClassState;
  readonly saturation: Saturation | undefined;
  private readonly ownSaturation: boolean;
  private readonly inFlight = new InFlight();
  private readonly saturatedRetryAfter: number;
  private readonly anonymousWork: number;

  constructor(o: ClientLimitOptions = {}) {
    const max = o.maxClients ?? DEFAULT_MAX_CLIENTS;
    for (const [name, l] of [['anonymous', o.anonymous], ['user', o.user]] as const) {
      for (const k of ['rate', 'burst', 'concurrency'] as const) {
        const v = l?.[k];
        if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) throw new RangeError(`${name} ${k}: expected a number >= 0, not ${String(v)}`);
      }
    }
    this.anonymous = new ClassState(o.anonymous ?? {}, max, o.now);
    this.user = new ClassState(o.user ?? {}, max, o.now);
    this.ownSaturation = !(o.saturation instanceof Saturation);
    this.saturation = o.saturation instanceof Saturation ? o.saturation : o.saturation && (o.saturation.delayMs || o.saturation.cpuPressure) ? new Saturation(o.saturation) : undefined;
    this.saturatedRetryAfter = Math.max(1, Math.ceil(o.saturatedRetryAfter ?? 2));
    if (o.anonymousWork !== undefined && !(o.anonymousWork >= 0)) throw new RangeError(`anonymousWork: expected a number >= 0, not ${o.anonymousWork}`);
    this.anonymousWork = o.anonymousWork ?? 0;
  }

  /** clients whose rate state is held (bounded by maxClients per class) */
  get trackedClients(): number { return (this.anonymous.buckets?.size ?? 0) + (this.user.buckets?.size ?? 0); }
  /** clients with a request in progress */
  get activeClients(): number { return this.inFlight.size - (this.inFlight.count(ANONYMOUS_WORK) ? 1 : 0); }
  /** anonymous work in progress (what `anonymousWork` bounds) */
  get anonymousWorkInProgress(): number { return this.inFlight.count(ANONYMOUS_WORK); }

  /** requests admitted and refused so far, by class and reason */
  counts(): { anonymous: Readonly<Counts>; user: Readonly<Counts> } { return { anonymous: this.anonymous.counts, user: this.user.counts }; }

  /** May this request start? Its release (call once it has ended) or why not. */
  check(info: { user?: string; remoteAddress?: string }, weight: RequestWeight = 'work'): LimitVerdict {
    const client = clientId(info);
    const cls = client.anonymous ? this.anonymous : this.user;
    const refuse = (reason: RefusalReason, retryAfter: number): LimitVerdict => {
      cls.counts[reason]++;
      return { ok: false, reason, retryAfter, client };
    };
    if (client.anonymous && weight === 'work' && this.saturation?.saturated) return refuse('saturated', this.saturatedRetryAfter);
    const waitMs = cls.buckets?.take(client.key) ?? 0;
    if (waitMs > 0) return refuse('rate', Math.max(1, Math.ceil(waitMs / 1000)));
    const own = this.inFlight.enter(client.key, cls.concurrency);
    if (!own) return refuse('concurrency', 1);
    let release = own;
    if (client.anonymous && weight === 'work' && this.anonymousWork > 0) {
      const shared = this.inFlight.enter(ANONYMOUS_WORK, this.anonymousWork);
      if (!shared) { own(); return refuse('busy', 1); }
      release = () => { own(); shared(); };
    }
    cls.counts.admitted++;
    return { ok: true, client, release };
  }

  close(): void { if (this.ownSaturation) this.saturation?.close(); }
}

/** The request log's outcome for a refusal. */
export function refusalOutcome(reason: RefusalReason): 'rate-limited' | 'concurrency-limited' | 'saturated' | 'busy' {
  return reason === 'rate' ? 'rate-limited' : reason === 'concurrency' ? 'concurrency-limited' : reason;
}
