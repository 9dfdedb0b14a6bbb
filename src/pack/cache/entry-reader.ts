import type { PackSource, PackSourceResult, PushReader } from '../relay.js';
import type { Entry } from './entry.js';
import { READ_CHUNK } from './options.js';
import { humanBytes, Queue } from './progress.js';
import { copyIntoViews, limitViews, readViews, viewsLength } from './views.js';

/** One request reading an entry that is (or was) being produced. */
export class EntryReader implements PackSource {
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

  /** The bytes kept in memory at this reader's position copied into `views`, as many as fit. */
  private fillFromMemory(views: Buffer[]): number {
    const e = this.entry;
    const cap = viewsLength(views);
    let n = 0;
    while (n < cap) {
      const c = e.chunkAt(this.pos);
      if (!c) break;
      const from = this.pos - c.off;
      const got = copyIntoViews(views, n, c.buf.subarray(from, Math.min(c.buf.length, from + cap - n)));
      this.pos += got;
      n += got;
    }
    if (n > 0) {
      if (!this.creator) e.cache.stats.bytesServed += n;
      e.trim();
    }
    return n;
  }

  /**
   * PackSource.readInto (a joiner): spooled bytes by one vectored read of
   * the spool, bytes not spooled yet copied from memory; waits at the tail.
   */
  async readInto(views: Buffer[]): Promise<number> {
    const e = this.entry;
    let readFailed = false;
    while (!this.detached && e.state !== 'failed') {
      if (this.pos < e.written) {
        const vs = limitViews(views, e.written - this.pos);
        let n = 0;
        try {
          const reading = readViews(e.spool!, vs, this.pos);
          this.reading = reading;
          n = await reading;
        } catch (err) {
          if (!this.detached) e.cache.fallback('read', e.key, `spool read failed: ${(err as Error).message}`);
        } finally {
          this.reading = undefined;
        }
        if (n <= 0) { readFailed = true; break; }
        this.pos += n;
        if (!this.creator) e.cache.stats.bytesServed += n;
        e.trim();
        if (this.detached) return 0;
        return n;
      }
      const n = this.fillFromMemory(views);
      if (n > 0) return n;
      if (e.state !== 'running') break;
      await e.next((f) => { this.wake = f; });
      this.wake = undefined;
    }
    this.endPull(readFailed);
    this.detach();
    return 0;
  }

  /** A pulled reader is past its last byte: the verdict, and the closing progress line. */
  private endPull(readFailed: boolean): void {
    const e = this.entry;
    const ok = !readFailed && !this.detached && e.state === 'ok' && this.pos === e.produced;
    if (ok && !this.creator && this.wantProgress) this.progress.push(Buffer.from(`Reusing shared pack: ${humanBytes(this.pos)}, done.\n`));
    // the creator's own pack-objects failing is the direct fetch failing; a joiner may retry directly
    this.resolveDone({ ok, retryable: !ok && (!this.creator || readFailed) });
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
      this.endPull(readFailed);
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
