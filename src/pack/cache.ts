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
import { createHash, type Hash } from 'node:crypto';
import type { Child } from '../util/spawn.js';
import { DirectoryStore, type PackCacheStore, type PackSpool, type StoredPack } from './cache-store.js';
import { killChild, pushReader, type PackSource, type PackSourceResult, type PushReader } from './relay.js';

export type CacheOutcome = 'hit' | 'miss' | 'join' | 'bypass';
export type FallbackReason = 'create' | 'write' | 'read' | 'corrupt' | 'retry' | 'too-large' | 'commit';

export interface PackCacheOptions {
  /** where entries live (a DirectoryStore over `dir` unless `store` is given) */
  dir?: string;
  store?: PackCacheStore;
  /** entries older than this are not served and get removed (default 5 minutes, as Gitaly) */
  maxAgeMs?: number;
  /** total bytes of stored entries; the least recently used go first (default 1 GiB) */
  maxBytes?: number;
  /** store an entry only when its key was seen this many times before (default 1, as Gitaly) */
  minOccurrences?: number;
  /**
   * a run that will not be stored (a first sighting) is not spooled; an
   * identical request can join it while it has produced at most this many
   * bytes, kept in memory (default JOIN_WINDOW, 4 MiB)
   */
  joinWindowBytes?: number;
  /** failures and decisions worth a log line */
  log?: (msg: string, fields: Record<string, unknown>) => void;
}

export interface PackCacheStats {
  hits: number;
  misses: number;
  joins: number;
  /** requests that went straight to pack-objects because the cache could not take them */
  bypasses: number;
  /** pack bytes handed to hit and join readers */
  bytesServed: number;
  /** pack bytes produced by pack-objects for cache entries */
  bytesGenerated: number;
  /** bytes written to spools (what the cache wrote to its directory, stored or not) */
  bytesSpooled: number;
  /** bytes of entries published to the store */
  bytesStored: number;
  stored: number;
  evictions: number;
  expirations: number;
  /** producers killed because nobody needed their output any more */
  abandoned: number;
  fallbacks: Record<FallbackReason, number>;
}

/** What a producer needs: pack-objects (or the hook) started, and a slot to give back when it exits. */
export interface Producer { child: Child; release?: () => void }

export interface AcquireOptions {
  /** start pack-objects for this key (called at most once, only on a miss) */
  produce: () => Promise<Producer>;
  objectFormat: 'sha1' | 'sha256';
  /** the client wants progress on band 2 */
  progress: boolean;
}

export interface Lease {
  outcome: Exclude<CacheOutcome, 'bypass'>;
  source: PackSource;
}

const READ_CHUNK = 1024 * 1024;
/** spool writes pending before pack-objects is paused (the disk is slower than it) */
const WRITE_HIGH = 8 * 1024 * 1024;
const WRITE_LOW = 2 * 1024 * 1024;
/** after a spool write failed: bytes held for attached readers before the producer waits for the slowest */
const DEGRADED_MAX = 32 * 1024 * 1024;
const OCCURRENCES_MAX = 100_000;
/** chunks per spool write (writev) */
const WRITE_BATCH = 64;
/**
 * A first sighting (a key that will not be stored) is not spooled: its bytes
 * stay in memory while there are at most this many, so that an identical
 * request arriving meanwhile can still join it (the run is then spooled from
 * its first byte). Past this, the entry can no longer be joined.
 */
export const JOIN_WINDOW = 4 * 1024 * 1024;

/** Human sizes as git's strbuf_humanise_bytes. */
export function humanBytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(2)} KiB`;
  return `${n} byte${n === 1 ? '' : 's'}`;
}

/** Hashes all but the last `len` bytes and compares them with those: a pack's trailer check. */
export class TrailerCheck {
  private readonly h: Hash;
  private tail = Buffer.alloc(0);
  private readonly len: number;
  constructor(format: 'sha1' | 'sha256') {
    this.h = createHash(format === 'sha256' ? 'sha256' : 'sha1');
    this.len = format === 'sha256' ? 32 : 20;
  }
  update(chunk: Buffer): void {
    const L = this.len;
    const all = this.tail.length + chunk.length;
    if (all <= L) { this.tail = Buffer.concat([this.tail, chunk]); return; }
    const feed = all - L;
    if (feed <= this.tail.length) {
      this.h.update(this.tail.subarray(0, feed));
      this.tail = Buffer.concat([this.tail.subarray(feed), chunk]);
    } else {
      if (this.tail.length) this.h.update(this.tail);
      this.h.update(chunk.subarray(0, feed - this.tail.length));
      this.tail = Buffer.from(chunk.subarray(feed - this.tail.length));
    }
  }
  /** the last bytes fed: the trailer, once the pack is complete */
  get trailer(): Buffer { return this.tail; }
  /** true when what was fed is a pack whose trailer matches, and matches `recorded` if given (consumes the hash) */
  ok(recorded?: Buffer): boolean {
    return this.tail.length === this.len && this.h.digest().equals(this.tail) && (!recorded || recorded.equals(this.tail));
  }
}

/** A small async queue (progress lines for one reader). */
class Queue implements AsyncIterable<Buffer> {
  private items: Buffer[] = [];
  private ended = false;
  private wake?: () => void;
  push(b: Buffer): void { if (this.ended) return; this.items.push(b); this.wake?.(); }
  end(): void { this.ended = true; this.wake?.(); }
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const b = this.items.shift();
      if (b) { yield b; continue; }
      if (this.ended) return;
      await new Promise<void>((r) => { this.wake = r; });
      this.wake = undefined;
    }
  }
}

interface Chunk { off: number; buf: Buffer }

/** One pack-objects run whose output is spooled for every reader of its key. */
class Entry {
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

  constructor(readonly cache: PackCache, readonly key: string, spool: PackSpool | undefined, producer: Producer, readonly format: 'sha1' | 'sha256') {
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
    if (this.state === 'ok' && this.storable) {
      try {
        const pr = await this.cache.store.prune({ maxAgeMs: this.cache.maxAgeMs, maxBytes: this.cache.maxBytes, reserve: this.produced });
        this.cache.countPrune(pr);
        await this.spool!.commit(this.produced, this.check!.trailer);
        this.cache.stats.stored++;
        this.cache.stats.bytesStored += this.produced;
        this.cache.log('pack stored', { key: this.key, bytes: this.produced });
      } catch (e) {
        this.cache.fallback('commit', this.key, `could not store the pack: ${(e as Error).message}`);
        await this.spool!.discard().catch(() => undefined);
      }
    } else {
      await this.spool?.discard().catch(() => undefined);
    }
    this.cache.forget(this);
    this.finalized = true;
    this.closeIfIdle();
  }

  private maybeKill(): void {
    if (this.state !== 'running' || this.readers.size > 0 || this.storable) return;
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

/** One request reading an entry that is (or was) being produced. */
class EntryReader implements PackSource {
  pos = 0;
  readonly progress = new Queue();
  readonly stdout: AsyncIterable<Buffer>;
  readonly stderr: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  private resolveDone!: (r: PackSourceResult) => void;
  private detached = false;
  private wake?: () => void;
  private reading?: Promise<number>;
  /**
   * The request that started the run reads it pushed (PushReader): while it
   * is at the tail, each chunk is handed over as pack-objects produces it,
   * with no promise per chunk; behind (paused, or a join made the run
   * spool), it catches up from memory or the spool first.
   */
  readonly push?: PushReader;
  private pushData?: (b: Buffer) => void;
  private pushEnd?: (err?: Error) => void;
  private pushPaused = false;
  private catching = false;
  private pushFinished = false;
  private readFailed = false;

  constructor(readonly entry: Entry, readonly creator: boolean, readonly wantProgress: boolean) {
    this.done = new Promise((r) => { this.resolveDone = r; });
    if (creator) {
      this.push = {
        start: (d, e) => { this.pushData = d; this.pushEnd = e; void this.catchUp(); },
        pause: () => { this.pushPaused = true; this.entry.readerPaused(this); },
        resume: () => { if (!this.pushPaused) return; this.pushPaused = false; this.entry.readerResumed(); void this.catchUp(); },
      };
    }
    this.stdout = this.read();
    this.stderr = this.progress;
    if (!creator && wantProgress) this.progress.push(Buffer.from('Joining a pack-objects run in progress\n'));
  }

  /** Would a chunk produced at `end` be taken at once (pushed, not paused, nothing pending)? */
  atTail(end: number): boolean {
    return !!this.pushData && !this.pushPaused && !this.catching && !this.detached && !this.pushFinished && this.pos === end;
  }

  /** A chunk was produced at `off`: a pushed reader at the tail takes it now. */
  offer(c: Buffer, off: number): void {
    if (!this.pushData || this.pushPaused || this.catching || this.detached || this.pushFinished || this.pos !== off) return;
    this.pos += c.length;
    if (!this.creator) this.entry.cache.stats.bytesServed += c.length;
    this.pushData(c);
  }

  /** The run ended: a pushed reader at the tail is done. */
  entryEnded(): void {
    if (this.pushData && !this.pushPaused && !this.catching) void this.catchUp();
  }

  /** The next spooled bytes at this reader's position, read into `scratch` (undefined when the read failed). */
  private async readSpool(scratch: Buffer): Promise<Buffer | undefined> {
    const e = this.entry;
    const buf = scratch.subarray(0, Math.min(e.written - this.pos, READ_CHUNK));
    let n = 0;
    try {
      this.reading = e.spool!.read(buf, this.pos);
      n = await this.reading;
    } catch (err) {
      if (!this.detached) e.cache.fallback('read', e.key, `spool read failed: ${(err as Error).message}`);
    } finally {
      this.reading = undefined;
    }
    if (n <= 0) return undefined;
    this.pos += n;
    if (!this.creator) e.cache.stats.bytesServed += n;
    e.trim();
    return buf.subarray(0, n);
  }

  /** The bytes kept in memory at this reader's position, if any. */
  private takeChunk(): Buffer | undefined {
    const e = this.entry;
    const c = e.chunkAt(this.pos);
    if (!c) return undefined;
    const b = c.buf.subarray(this.pos - c.off);
    this.pos = c.off + c.buf.length;
    if (!this.creator) e.cache.stats.bytesServed += b.length;
    e.trim();
    return b;
  }

  /** Deliver what the pushed reader is behind on, then finish it if the run is over. */
  private async catchUp(): Promise<void> {
    if (this.catching || this.pushFinished || !this.pushData) return;
    this.catching = true;
    const e = this.entry;
    let scratch: Buffer | undefined;
    try {
      while (!this.pushPaused && !this.detached && e.state !== 'failed' && this.pos < e.produced) {
        if (this.pos < e.written) {
          const b = await this.readSpool(scratch ??= Buffer.allocUnsafe(READ_CHUNK));
          if (!b) { this.readFailed = true; break; }
          this.pushData(b);
          continue;
        }
        const b = this.takeChunk();
        if (!b) break;
        this.pushData(b);
      }
    } finally {
      this.catching = false;
    }
    if (this.pushPaused && !this.detached && !this.readFailed) return;
    if (this.detached || this.readFailed || e.state !== 'running') this.finishPush();
  }

  private finishPush(): void {
    if (this.pushFinished) return;
    this.pushFinished = true;
    const e = this.entry;
    const ok = !this.readFailed && !this.detached && e.state === 'ok' && this.pos === e.produced;
    if (ok && !this.creator && this.wantProgress) this.progress.push(Buffer.from(`Reusing shared pack: ${humanBytes(this.pos)}, done.\n`));
    this.resolveDone({ ok, retryable: !ok && (!this.creator || this.readFailed) });
    this.detach();
    this.pushEnd?.();
  }

  private async *read(): AsyncGenerator<Buffer> {
    const e = this.entry;
    let readFailed = false;
    // one buffer for spool reads: a chunk is consumed before the next is pulled (PackSource)
    let scratch: Buffer | undefined;
    try {
      for (;;) {
        if (this.detached || e.state === 'failed') break;
        if (this.pos < e.written) {
          const b = await this.readSpool(scratch ??= Buffer.allocUnsafe(READ_CHUNK));
          if (!b) { readFailed = true; break; }
          yield b;
          continue;
        }
        const b = this.takeChunk();
        if (b) { yield b; continue; }
        if (e.state !== 'running') break;
        await e.next((f) => { this.wake = f; });
        this.wake = undefined;
      }
      const ok = !readFailed && !this.detached && e.state === 'ok' && this.pos === e.produced;
      if (ok && !this.creator && this.wantProgress) this.progress.push(Buffer.from(`Reusing shared pack: ${humanBytes(this.pos)}, done.\n`));
      // the creator's own pack-objects failing is the direct fetch failing; a joiner may retry directly
      this.resolveDone({ ok, retryable: !ok && (!this.creator || readFailed) });
    } finally {
      this.detach();
    }
  }

  private detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.wake?.();
    this.resolveDone({ ok: false });
    this.progress.end();
    // the spool may close when the last reader leaves: not under a read in flight
    if (this.reading) void this.reading.catch(() => 0).then(() => this.entry.detach(this));
    else this.entry.detach(this);
  }

  async abort(): Promise<void> {
    this.detach();
    if (this.pushData && !this.pushFinished) this.finishPush();
  }
}

/** One request reading a stored entry, hashing what it sends. */
class StoredReader implements PackSource {
  readonly stdout: AsyncIterable<Buffer>;
  readonly stderr: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  private resolveDone!: (r: PackSourceResult) => void;
  private readonly progress = new Queue();
  private closed = false;
  /** the next read and its hashing, in flight */
  private reading?: Promise<Buffer | undefined>;
  private readonly check: TrailerCheck;
  private pos = 0;
  private readFailed = false;
  private scratch?: Buffer;

  constructor(private readonly cache: PackCache, private readonly key: string, private readonly pack: StoredPack, format: 'sha1' | 'sha256', wantProgress: boolean) {
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.check = new TrailerCheck(format);
    this.stdout = this.read();
    this.stderr = this.progress;
    if (wantProgress) this.progress.push(Buffer.from(`Reusing cached pack: ${humanBytes(pack.size)}, done.\n`));
  }

  /** Read and hash the next bytes (undefined at the end or when the read failed). */
  private async next(): Promise<Buffer | undefined> {
    const p = this.pack;
    if (this.pos >= p.size) return undefined;
    this.scratch ??= Buffer.allocUnsafe(Math.min(p.size, READ_CHUNK));
    const buf = this.scratch.subarray(0, Math.min(p.size - this.pos, READ_CHUNK));
    let n = 0;
    try {
      n = await p.read(buf, this.pos);
    } catch (err) {
      this.cache.fallback('read', this.key, `entry read failed: ${(err as Error).message}`);
    }
    if (n <= 0) { this.readFailed = true; return undefined; }
    const b = buf.subarray(0, n);
    this.check.update(b);
    this.pos += n;
    return b;
  }

  /** Whole and its trailer checks out; a pack that does not is removed (once the reader has read to the end). */
  private async verdict(): Promise<boolean> {
    if (this.readFailed || this.pos !== this.pack.size) return false;
    if (this.check.ok(this.pack.trailer)) return true;
    this.cache.fallback('corrupt', this.key, 'stored pack failed its trailer check while streaming; removed, the next request produces it again');
    await this.cache.store.remove(this.key).catch(() => undefined);
    return false;
  }

  private async *read(): AsyncGenerator<Buffer> {
    try {
      while (!this.closed) {
        this.reading = this.next();
        const b = await this.reading;
        this.reading = undefined;
        if (!b || this.closed) break;
        this.cache.stats.bytesServed += b.length;
        yield b;
      }
      const ok = !this.closed && await this.verdict();
      this.resolveDone({ ok, retryable: !ok });
    } finally {
      await this.close();
    }
  }

  private close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.resolveDone({ ok: false });
    this.progress.end();
    // the client left before the end (index-pack may have died on a damaged entry)
    const early = !this.readFailed && this.pos < this.pack.size;
    const rest = (async () => {
      // a read in flight finishes before the descriptor goes (it could be reused at once)
      await this.reading?.catch(() => undefined);
      try {
        // what was not sent is read and hashed too: a damaged entry is removed all the same
        if (!this.readFailed && this.pos < this.pack.size) {
          while (await this.next());
          await this.verdict();
        }
      } finally {
        await this.pack.close().catch(() => undefined);
      }
    })();
    if (!early) return rest;
    // checked in the background; the next request for the key waits for the verdict
    this.cache.checking(this.key, rest);
    return Promise.resolve();
  }

  async abort(): Promise<void> { await this.close(); }
}

export class PackCache {
  readonly store: PackCacheStore;
  readonly maxAgeMs: number;
  readonly maxBytes: number;
  readonly minOccurrences: number;
  readonly joinWindowBytes: number;
  readonly stats: PackCacheStats = {
    hits: 0, misses: 0, joins: 0, bypasses: 0, bytesServed: 0, bytesGenerated: 0, bytesSpooled: 0, bytesStored: 0, stored: 0,
    evictions: 0, expirations: 0, abandoned: 0,
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

  constructor(o: PackCacheOptions) {
    if (!o.store && !o.dir) throw new TypeError('PackCache needs a dir or a store');
    this.store = o.store ?? new DirectoryStore(o.dir!);
    this.maxAgeMs = o.maxAgeMs ?? 5 * 60_000;
    this.maxBytes = o.maxBytes ?? 1024 ** 3;
    this.minOccurrences = o.minOccurrences ?? 1;
    this.joinWindowBytes = o.joinWindowBytes ?? JOIN_WINDOW;
    this.logFn = o.log;
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
    // is not (it is spooled only if an identical request joins it in time)
    let spool: PackSpool | undefined;
    if (this.wantsToStore(key)) {
      try {
        spool = await this.store.create(key);
      } catch (e) {
        this.stats.bypasses++;
        this.fallback('create', key, `cannot write to the cache: ${(e as Error).message}; running pack-objects directly`);
        return undefined;
      }
    }
    let producer: Producer;
    try {
      producer = await o.produce();
    } catch (e) {
      await spool?.discard().catch(() => undefined);
      await spool?.close().catch(() => undefined);
      throw e;
    }
    this.stats.misses++;
    const entry = new Entry(this, key, spool, producer, o.objectFormat);
    if (entry.state === 'running') this.inflight.set(key, entry);
    return { outcome: 'miss', source: entry.attach(true, o.progress) };
  }
}
