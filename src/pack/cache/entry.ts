/**
 * One pack-objects run of the cache: its output spooled (or, for a first
 * sighting, kept in memory within the join window) for every reader of its
 * key, with backpressure on pack-objects, the trailer check, and the
 * decision to publish or drop the spool when the run ends.
 */
import type { PackSpool } from './store.js';
import { killChild, pushReader, type PushReader } from '../relay.js';
import type { Child } from '../../util/spawn.js';
import type { PackCache } from './pack-cache.js';
import type { Producer } from './options.js';
import type { PackClaim } from '../../cluster/coordinator.js';
import { EntryReader } from './entry-reader.js';
import { humanBytes } from './progress.js';
import { TrailerCheck } from './trailer.js';

/** spool writes pending before pack-objects is paused (the disk is slower than it) */
const WRITE_HIGH = 8 * 1024 * 1024;
const WRITE_LOW = 2 * 1024 * 1024;
/** after a spool write failed: bytes held for attached readers before the producer waits for the slowest */
const DEGRADED_MAX = 32 * 1024 * 1024;
/** chunks per spool write (writev) */
const WRITE_BATCH = 64;

export interface Chunk { off: number; buf: Buffer }

/** One pack-objects run whose output is spooled for every reader of its key. */
export class Entry {
  readonly readers = new Set<EntryReader>();
  produced = 0;
  /** bytes [0, written) are in the spool */
  written = 0;
  /** where the bytes go; none for a first sighting until someone joins it */
  spool?: PackSpool;
  /** a spool is being created for a joiner: keep every byte in memory until it is there */
  private spoolPending = false;
  /** an unspooled entry dropped its first bytes: it can no longer be joined */
  private dropped = false;
  /** bytes not in the spool: [written, produced), always kept */
  private mem: Chunk[] = [];
  private memBytes = 0;
  state: 'running' | 'ok' | 'failed' = 'running';
  /** the spool failed: no store, no new joins; bytes stay in memory for attached readers */
  degraded = false;
  tooLarge = false;
  private writing = false;
  private paused = false;
  /** the producer waits for its only reader (past the join window, nobody else needs the bytes) */
  private heldForReader = false;
  private push?: PushReader;
  private settled = false;
  /** published or dropped: the spool may close once no reader needs it */
  private finalized = false;
  private spoolOpen: boolean;
  private waiters: Array<() => void> = [];
  /**
   * the trailer check, for an entry that may be stored: from the first byte
   * when spooled from the start, else once a joiner spools it (its bytes are
   * all in memory then). A run that is never stored is judged by
   * pack-objects' exit status alone, as a direct fetch is.
   */
  private check?: TrailerCheck;
  private readonly child: Child;

  /**
   * `claim`: this node won the fleet's claim on the key, so other nodes may
   * be following the spool: the run is not killed when its own readers
   * leave, it is stored when followed, and its end is told to the followers.
   */
  constructor(readonly cache: PackCache, readonly key: string, spool: PackSpool | undefined, producer: Producer, readonly format: 'sha1' | 'sha256', private readonly claim?: PackClaim) {
    this.spool = spool;
    this.spoolOpen = !!spool;
    if (spool) this.check = new TrailerCheck(format);
    this.child = producer.child;
    const child = producer.child;
    let finished = false;
    const finish = (ok: boolean) => {
      if (finished) return;
      finished = true;
      producer.release?.();
      this.finish(ok);
    };
    // pack-objects' stdout through one reused read buffer (see relay.ts): each read is one chunk,
    // and after a small read pack-objects gets a moment to fill the pipe (fewer, larger chunks)
    const push = pushReader(child);
    if (push) {
      this.push = push;
      push.start((b) => {
        // past the join window with only its requester, at the tail: the bytes go straight through, uncopied
        const r = this.creator;
        if (this.dropped && !this.spool && !this.degraded && this.readers.size === 1 && r?.atTail(this.produced)) {
          this.produced += b.length;
          this.cache.stats.bytesGenerated += b.length;
          r.offer(b, this.produced - b.length);
        } else {
          this.onData(Buffer.from(b));
        }
      }, () => { /* the end and errors are reported by the exit status */ });
    } else {
      child.stdout!.on('data', (c: Buffer) => this.onData(c));
      child.stdout!.on('error', () => { /* reported by the exit status */ });
    }
    // pack-objects' own stderr (progress, errors) goes to the request that started it, as a direct fetch's would
    child.stderr!.on('data', (c: Buffer) => { this.creator?.progress.push(c); });
    child.stderr!.on('error', () => { /* ignore */ });
    child.once('error', () => finish(false));
    child.once('close', (code) => finish(code === 0));
  }

  creator?: EntryReader;

  get joinable(): boolean { return this.state !== 'failed' && !this.degraded && !this.dropped; }

  /** Will this entry be published when complete? */
  get storable(): boolean { return !!this.spool && !this.degraded && !this.tooLarge && this.cache.wantsToStore(this.key); }

  /** Not spooled yet (a first sighting): someone joins, so every byte from the first goes to a spool now. */
  get needsSpool(): boolean { return !this.spool && !this.degraded && !this.spoolPending; }

  async startSpool(): Promise<void> {
    if (!this.needsSpool) return;
    this.spoolPending = true;
    try {
      const spool = await this.cache.store.create(this.key);
      if (this.state !== 'running') {
        // the run ended meanwhile, unhashed: not stored; its readers go on from memory (all of it is there)
        await spool.discard().catch(() => undefined);
        await spool.close().catch(() => undefined);
        this.degraded = true;
      } else {
        this.spool = spool;
        this.spoolOpen = true;
        // every byte so far is still in memory (nothing is dropped while a spool is pending)
        this.check = new TrailerCheck(this.format);
        for (const c of this.mem) this.check.update(c.buf);
      }
    } catch (e) {
      // readers continue from memory, as after a failed spool write
      this.cache.fallback('create', this.key, `cannot write to the cache: ${(e as Error).message}; the joined run continues from memory`);
      this.degraded = true;
    } finally {
      this.spoolPending = false;
    }
    if (this.degraded) this.trim();
    else void this.pump();
    if (this.state !== 'running' && !this.writing) void this.settle();
  }

  attach(creator: boolean, progress: boolean): EntryReader {
    const r = new EntryReader(this, creator, progress);
    this.readers.add(r);
    if (creator) this.creator = r;
    return r;
  }

  detach(r: EntryReader): void {
    if (!this.readers.delete(r)) return;
    if (this.creator === r) this.creator = undefined;
    this.readerResumed();
    this.trim();
    this.maybeKill();
    this.closeIfIdle();
  }

  private onData(c: Buffer): void {
    this.mem.push({ off: this.produced, buf: c });
    this.produced += c.length;
    this.memBytes += c.length;
    this.cache.stats.bytesGenerated += c.length;
    this.check?.update(c);
    for (const r of this.readers) r.offer(c, this.produced - c.length);
    if (!this.tooLarge && this.produced > this.cache.maxBytes) {
      this.tooLarge = true;
      this.cache.fallback('too-large', this.key, `pack larger than the cache (${humanBytes(this.cache.maxBytes)}): not stored`);
      this.maybeKill();
    }
    if (!this.spool && !this.degraded && !this.spoolPending && !this.dropped && this.produced > this.cache.joinWindowBytes) {
      // nobody joined in time: from here on only the readers' positions are kept
      this.dropped = true;
      this.cache.forget(this);
    }
    if (this.spool && !this.degraded) void this.pump();
    else this.trim();
    const limit = this.spool && !this.degraded ? WRITE_HIGH : DEGRADED_MAX;
    if (this.memBytes > limit && !this.paused) {
      this.paused = true;
      if (this.push) this.push.pause(); else this.child.stdout!.pause();
    }
    this.wake();
  }

  private maybeResume(): void {
    const limit = this.spool && !this.degraded ? WRITE_LOW : DEGRADED_MAX;
    if (this.paused && this.memBytes <= limit) {
      this.paused = false;
      if (!this.push) this.child.stdout!.resume();
      else if (!this.heldForReader) this.push.resume();
    }
  }

  /**
   * The only reader of a run nobody else can join is paused (backpressure):
   * pack-objects waits with it, as for a direct fetch, instead of its output
   * piling up in memory.
   */
  readerPaused(r: EntryReader): void {
    if (!this.push || this.heldForReader || !this.dropped || this.spool || this.degraded || this.readers.size !== 1 || !this.readers.has(r)) return;
    this.heldForReader = true;
    this.push.pause();
  }

  readerResumed(): void {
    if (!this.heldForReader) return;
    this.heldForReader = false;
    if (!this.paused) this.push!.resume();
  }

  /** Write pending chunks to the spool, in order. */
  private async pump(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.spool && !this.degraded && this.state !== 'failed' && this.mem.length) {
        // everything pending in one call (up to WRITE_BATCH chunks)
        const batch = this.mem.slice(0, WRITE_BATCH);
        let n = 0;
        for (const c of batch) n += c.buf.length;
        try {
          await this.spool.write(batch.map((c) => c.buf), batch[0]!.off);
        } catch (e) {
          this.degrade(e);
          break;
        }
        this.written += n;
        this.cache.stats.bytesSpooled += n;
        this.mem.splice(0, batch.length);
        this.memBytes -= n;
        this.maybeResume();
      }
    } finally {
      this.writing = false;
    }
    if (this.state !== 'running') void this.settle();
  }

  private degrade(e: unknown): void {
    this.degraded = true;
    this.cache.fallback('write', this.key, `spool write failed: ${(e as Error).message}; readers continue from memory`);
    void this.spool?.discard().catch(() => undefined);
    this.cache.forget(this);
    this.trim();
    this.maybeKill();
  }

  /** Without a spool (degraded, or a first sighting past the join window) drop the chunks every attached reader is past. */
  trim(): void {
    if (!this.degraded && !this.dropped) return;
    let min = this.produced;
    for (const r of this.readers) min = Math.min(min, r.pos);
    while (this.mem.length && this.mem[0]!.off + this.mem[0]!.buf.length <= min) {
      this.memBytes -= this.mem.shift()!.buf.length;
    }
    this.maybeResume();
  }

  /** The chunk holding byte `pos` if it is in memory. */
  chunkAt(pos: number): Chunk | undefined {
    for (const c of this.mem) if (pos >= c.off && pos < c.off + c.buf.length) return c;
    return undefined;
  }

  /** wait for more bytes or the end; `wake` is the waiter, so a reader can wake itself */
  next(wake: (f: () => void) => void): Promise<void> {
    return new Promise((r) => { this.waiters.push(r); wake(r); });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private finish(ok: boolean): void {
    const complete = ok && (!this.check || this.check.ok());
    if (ok && !complete) this.cache.log('pack-objects output failed its trailer check', { key: this.key, bytes: this.produced });
    this.state = complete ? 'ok' : 'failed';
    this.wake();
    for (const r of [...this.readers]) r.entryEnded();
    if (!this.writing) void this.settle();
  }

  /** The run is over and the spool has everything it will get: publish or drop. */
  private async settle(): Promise<void> {
    if (this.settled || this.writing || this.spoolPending) return;
    if (this.state === 'ok' && this.spool && !this.degraded && this.written < this.produced) return; // pump finishes first
    this.settled = true;
    const intact = this.state === 'ok' && !!this.spool && !this.degraded;
    // a run another node followed was asked for twice: worth storing, as a local join would make it
    const followed = intact && !this.tooLarge && !!this.claim && await this.claim.followed();
    let stored = false;
    if (this.state === 'ok' && (this.storable || followed)) {
      try {
        const pr = await this.cache.store.prune({ maxAgeMs: this.cache.maxAgeMs, maxBytes: this.cache.maxBytes, reserve: this.produced });
        this.cache.countPrune(pr);
        await this.spool!.commit(this.produced, this.check!.trailer);
        stored = true;
        this.cache.stats.stored++;
        this.cache.stats.bytesStored += this.produced;
        this.cache.log('pack stored', { key: this.key, bytes: this.produced });
      } catch (e) {
        this.cache.fallback('commit', this.key, `could not store the pack: ${(e as Error).message}`);
        await this.spool!.discard().catch(() => undefined);
      }
    }
    // followers finish from the spool they hold open, or from the stored entry
    await this.claim?.finish(intact && this.check ? { ok: true, size: this.produced, trailer: this.check.trailer, stored } : { ok: false }).catch(() => undefined);
    if (!stored) await this.spool?.discard().catch(() => undefined);
    this.cache.forget(this);
    this.finalized = true;
    this.closeIfIdle();
  }

  private maybeKill(): void {
    if (this.state !== 'running' || this.readers.size > 0 || this.storable || this.claim) return;
    this.cache.stats.abandoned++;
    void killChild(this.child);
  }

  private closeIfIdle(): void {
    if (!this.finalized || this.readers.size > 0) return;
    this.mem = [];
    this.memBytes = 0;
    if (!this.spoolOpen) return;
    this.spoolOpen = false;
    void this.spool?.close().catch(() => undefined);
  }
}
