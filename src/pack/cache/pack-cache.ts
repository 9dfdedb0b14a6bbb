/**
 * The pack-objects cache (after Gitaly's): identical fetches share one
 * pack, concurrent ones share one pack-objects run.
 *
 * - A miss starts pack-objects and spools its stdout to the store. The
 *   requests that asked for it, and every identical request arriving while
 *   it runs, read the spool at their own pace (a reader at the tail takes
 *   the producer's chunks straight from memory). A slow reader never slows
 *   the producer or the other readers: it reads from the file later.
 * - When the pack is complete and its trailer checks out, the spool is
 *   published under the key if the key was seen often enough
 *   (`minOccurrences`), else dropped.
 * - A hit streams the stored file, and is verified by what it sends: the
 *   trailer hash over the bytes actually streamed (hashed as they go, no
 *   extra read), against the pack's own trailer and the one recorded when
 *   it was stored; the relay holds the last byte back until it did, so a
 *   damaged entry ends in band 3, never in a pack that looks complete. A
 *   hit whose client leaves early is checked to the end in the background.
 *   An entry that fails is removed, so the next request produces it again.
 *   An entry is served only for the key it was stored under (the store
 *   records it), so a file replaced by another repository's pack is not.
 * - Failures never fail a fetch that a direct pack-objects would serve: an
 *   unwritable store means a direct pack-objects; a spool write that fails
 *   keeps the bytes in memory for the readers already attached (bounded;
 *   the producer waits for the slowest beyond that); an entry that is not
 *   the request's is removed and produced again (one damaged inside fails
 *   the fetch that streams it, above). A producer that dies fails its readers as a
 *   direct fetch would fail (band 3), or sends them to a direct
 *   pack-objects when nothing was sent yet.
 * - pack-objects keeps running while a reader needs it, or while the entry
 *   will be stored; otherwise it is killed.
 */
import { DirectoryStore, type PackCacheStore, type PackSpool, type StoredPack } from './store.js';
import { Entry } from './entry.js';
import { StoredReader } from './stored-reader.js';
import { RemoteReader } from './remote-reader.js';
import type { ClaimRecord, Coordinator, PackClaim } from '../../cluster/coordinator.js';
import { JOIN_WINDOW, type AcquireOptions, type FallbackReason, type Lease, type PackCacheOptions, type PackCacheStats, type Producer } from './options.js';

const OCCURRENCES_MAX = 100_000;

export class PackCache {
  readonly store: PackCacheStore;
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly minOccurrences: number;
  readonly joinWindowBytes: number;
  readonly stats: PackCacheStats = {
    hits: 0, misses: 0, joins: 0, bypasses: 0, bytesServed: 0, bytesGenerated: 0, bytesSpooled: 0, bytesStored: 0, stored: 0,
    evictions: 0, expirations: 0, abandoned: 0,
    remoteJoins: 0,
    fallbacks: { create: 0, write: 0, read: 0, corrupt: 0, retry: 0, 'too-large': 0, commit: 0 },
  };
  private readonly inflight = new Map<string, Entry>();
  private readonly locks = new Map<string, Promise<void>>();
  /** key → times seen (and when last), within maxAge */
  private readonly seen = new Map<string, { n: number; last: number }>();
  /** hits whose client left early, being checked to the end: key → done */
  private readonly checks = new Map<string, Promise<void>>();
  private readonly timer: NodeJS.Timeout;
  private readonly logFn?: PackCacheOptions['log'];
  /** other nodes' runs are followed through it (cluster/) */
  coordinator?: Coordinator;
  private readonly deadAfterMs: number;

  constructor(o: PackCacheOptions) {
    if (!o.store && !o.dir) throw new TypeError('PackCache needs a dir or a store');
    this.store = o.store ?? new DirectoryStore(o.dir!);
    this.maxAgeMs = o.maxAgeMs ?? 5 * 60_000;
    this.maxBytes = o.maxBytes ?? 1024 ** 3;
    this.minOccurrences = o.minOccurrences ?? 1;
    this.joinWindowBytes = o.joinWindowBytes ?? JOIN_WINDOW;
    this.logFn = o.log;
    this.coordinator = o.coordinator;
    this.deadAfterMs = o.producerDeadAfterMs ?? 5000;
    this.timer = setInterval(() => { void this.prune(); }, Math.max(1000, Math.min(this.maxAgeMs / 2, 60_000)));
    this.timer.unref();
  }

  /** Stop the expiry timer (running producers finish on their own). */
  close(): void { clearInterval(this.timer); }

  log(msg: string, fields: Record<string, unknown>): void { this.logFn?.(msg, fields); }

  fallback(reason: FallbackReason, key: string, msg: string): void {
    this.stats.fallbacks[reason]++;
    this.log(`pack cache: ${msg}`, { key, reason });
  }

  countPrune(r: { expired: number; evicted: number }): void {
    this.stats.expirations += r.expired;
    this.stats.evictions += r.evicted;
  }

  /** Drop expired entries and occurrence counts; keep the size bound. */
  async prune(now = Date.now()): Promise<void> {
    for (const [k, v] of this.seen) if (now - v.last > this.maxAgeMs) this.seen.delete(k);
    try {
      this.countPrune(await this.store.prune({ maxAgeMs: this.maxAgeMs, maxBytes: this.maxBytes, now }));
    } catch (e) {
      this.log(`pack cache: prune failed: ${(e as Error).message}`, {});
    }
  }

  private bump(key: string): void {
    const now = Date.now();
    const v = this.seen.get(key);
    const n = v && now - v.last <= this.maxAgeMs ? v.n + 1 : 1;
    this.seen.delete(key);
    this.seen.set(key, { n, last: now });
    if (this.seen.size > OCCURRENCES_MAX) this.seen.delete(this.seen.keys().next().value!);
  }

  /** The key was seen `minOccurrences` times before its latest request. */
  wantsToStore(key: string): boolean {
    return (this.seen.get(key)?.n ?? 0) - 1 >= this.minOccurrences;
  }

  /** A stored entry is being checked: requests for its key wait for the verdict. */
  checking(key: string, done: Promise<void>): void {
    const p = done.catch(() => undefined).finally(() => { if (this.checks.get(key) === p) this.checks.delete(key); });
    this.checks.set(key, p);
  }

  /** Called by an entry that is over or can no longer be joined. */
  forget(e: Entry): void {
    if (this.inflight.get(e.key) === e) this.inflight.delete(e.key);
  }

  /** Entries running now (for tests and metrics). */
  get running(): number { return this.inflight.size; }

  /**
   * A source of pack bytes for `key`: a stored entry (hit), a run in
   * progress (join) or a new run (miss). Undefined when the cache cannot
   * take the request: the caller runs pack-objects directly.
   */
  async acquire(key: string, o: AcquireOptions): Promise<Lease | undefined> {
    const prev = this.locks.get(key);
    let release!: () => void;
    const mine = new Promise<void>((r) => { release = r; });
    const chained = prev ? prev.then(() => mine) : mine;
    this.locks.set(key, chained);
    if (prev) await prev;
    try {
      return await this.lookup(key, o);
    } finally {
      release();
      if (this.locks.get(key) === chained) this.locks.delete(key);
    }
  }

  private async lookup(key: string, o: AcquireOptions): Promise<Lease | undefined> {
    this.bump(key);
    const running = this.inflight.get(key);
    if (running?.joinable) {
      this.stats.joins++;
      // attached first (its bytes are kept from here on), then the run is spooled from its first byte if it was not
      const source = running.attach(false, o.progress);
      await running.startSpool();
      return { outcome: 'join', source };
    }
    let stored: StoredPack | undefined;
    await this.checks.get(key);
    try {
      stored = await this.store.open(key, this.maxAgeMs);
    } catch (e) {
      this.fallback('read', key, `could not open the entry: ${(e as Error).message}`);
    }
    if (stored) {
      if (stored.key === key) {
        this.stats.hits++;
        return { outcome: 'hit', source: new StoredReader(this, key, stored, o.objectFormat, o.progress) };
      }
      // another key's entry (a file copied over it), another repository's pack, or a damaged header
      await stored.close().catch(() => undefined);
      this.fallback('corrupt', key, `stored entry is not this request's (${stored.key === undefined ? 'no valid header' : `stored under ${stored.key}`}); removed, producing it again`);
      await this.store.remove(key).catch(() => undefined);
    }
    // a key that will be stored is spooled from the start; a first sighting
    // is not (it is spooled only if an identical request joins it in time).
    // Among several nodes, every run is spooled from the start and claimed:
    // the node that wins runs pack-objects, the others follow its spool.
    const fleet = this.coordinator?.shared ? this.coordinator : undefined;
    let spool: PackSpool | undefined;
    let claim: PackClaim | undefined;
    if (fleet || this.wantsToStore(key)) {
      try {
        spool = await this.store.create(key);
      } catch (e) {
        this.stats.bypasses++;
        this.fallback('create', key, `cannot write to the cache: ${(e as Error).message}; running pack-objects directly`);
        return undefined;
      }
    }
    if (fleet && spool?.name !== undefined) {
      const r = await fleet.claimPack(key, spool.name);
      if (r?.won) claim = r.claim;
      else if (r) {
        const lease = await this.followRemote(fleet, key, r.holder, o);
        if (lease) {
          await spool.discard().catch(() => undefined);
          await spool.close().catch(() => undefined);
          return lease;
        }
        // nothing to follow (it failed, or is gone): this node runs its own, unclaimed
        if (!this.wantsToStore(key)) {
          await spool.discard().catch(() => undefined);
          await spool.close().catch(() => undefined);
          spool = undefined;
        }
      }
    }
    let producer: Producer;
    try {
      producer = await o.produce();
    } catch (e) {
      await claim?.finish({ ok: false }).catch(() => undefined);
      await spool?.discard().catch(() => undefined);
      await spool?.close().catch(() => undefined);
      throw e;
    }
    this.stats.misses++;
    const entry = new Entry(this, key, spool, producer, o.objectFormat, claim);
    if (entry.state === 'running') this.inflight.set(key, entry);
    return { outcome: 'miss', source: entry.attach(true, o.progress) };
  }

  /** Follow another node's run of `key` (or the entry it stored); undefined when there is nothing to follow. */
  private async followRemote(fleet: Coordinator, key: string, holder: ClaimRecord, o: AcquireOptions): Promise<Lease | undefined> {
    if (holder.state === 'failed') return undefined;
    const f = await this.store.follow?.(key, holder.spool).catch(() => undefined);
    if (!f) {
      // renamed into place meanwhile: a stored entry
      const stored = await this.store.open(key, this.maxAgeMs).catch(() => undefined);
      if (stored?.key === key) {
        this.stats.hits++;
        return { outcome: 'hit', source: new StoredReader(this, key, stored, o.objectFormat, o.progress) };
      }
      await stored?.close().catch(() => undefined);
      return undefined;
    }
    await fleet.followPack(key);
    this.stats.joins++;
    this.stats.remoteJoins++;
    return { outcome: 'join', source: new RemoteReader(this, fleet, key, f, holder, o.objectFormat, o.progress, this.deadAfterMs) };
  }
}
