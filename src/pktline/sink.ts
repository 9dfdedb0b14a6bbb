/**
 * Byte sinks for the packet writer. Each counts its write calls and bytes.
 */
import { writeSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { clientGone, GitwireError } from '../errors.js';

export interface SinkStats { writes: number; bytes: number }

export interface Sink {
  readonly stats: SinkStats;
  /**
   * Hand bytes over. The sink may keep a reference: callers must not reuse
   * `buf` until `release` is called (a sink that never calls it keeps the
   * buffer for good).
   */
  write(buf: Buffer, release?: () => void): void;
  /** True when the consumer is backed up; `drained()` resolves when it is not. */
  readonly backedUp: boolean;
  drained(): Promise<void>;
  /** The consumer went away (EPIPE, socket closed). */
  readonly closed: boolean;
  /** Does the sink keep a reference to written buffers after write() returns? */
  readonly retains: boolean;
  /** Called once when the consumer goes away (stream sinks). */
  onClose?(cb: () => void): void;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** bytes a stream sink lets queue in its stream before it is backed up */
export const STREAM_QUEUE_LIMIT = 128 * 1024;

/**
 * Synchronous file-descriptor sink: every `write()` is exactly one
 * successful `write(2)` unless the kernel takes fewer bytes.
 */
export class FdSink implements Sink {
  readonly stats: SinkStats = { writes: 0, bytes: 0 };
  readonly retains = false;
  closed = false;
  readonly backedUp = false;
  /**
   * `stallMs`: on a non-blocking descriptor, a write that the reader takes
   * no byte of for this long fails with GW_TIMEOUT and the sink is closed
   * (upload-pack's --timeout, the progress deadline of the stdio transport)
   */
  constructor(readonly fd: number, readonly stallMs = 0) {}
  write(buf: Buffer): void {
    if (this.closed) throw clientGone();
    let off = 0;
    let waitingSince = 0;
    while (off < buf.length) {
      let n: number;
      try {
        n = writeSync(this.fd, buf, off, buf.length - off);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') {
          const now = Date.now();
          if (!waitingSince) waitingSince = now;
          else if (this.stallMs > 0 && now - waitingSince >= this.stallMs) {
            this.closed = true;
            throw new GitwireError('GW_TIMEOUT', `timeout writing to the client: it took nothing for ${this.stallMs / 1000} s`);
          }
          Atomics.wait(sleeper, 0, 0, 1);
          continue;
        }
        this.closed = true;
        throw clientGone(e);
      }
      waitingSince = 0;
      this.stats.writes++;
      this.stats.bytes += n;
      off += n;
    }
  }
  drained(): Promise<void> { return Promise.resolve(); }
}

/** Sink over a Writable (socket, HTTP response). Honours backpressure. */
export class StreamSink implements Sink {
  readonly stats: SinkStats = { writes: 0, bytes: 0 };
  readonly retains = true;
  backedUp = false;
  closed = false;
  private waiters: Array<() => void> = [];
  private closeCbs: Array<() => void> = [];
  /** bytes queued in the stream before the sink reports itself backed up */
  readonly queueLimit: number;
  constructor(readonly stream: Writable, queueLimit = STREAM_QUEUE_LIMIT) {
    this.queueLimit = Math.max(queueLimit, stream.writableHighWaterMark);
    const wake = () => { this.backedUp = false; const w = this.waiters; this.waiters = []; for (const f of w) f(); };
    stream.on('drain', wake);
    const gone = () => {
      if (this.closed) return;
      this.closed = true;
      wake();
      for (const cb of this.closeCbs) cb();
    };
    // a response that finished normally is not "gone"
    stream.on('close', () => { if (!(stream as Writable & { writableFinished?: boolean }).writableFinished) gone(); });
    stream.on('error', gone);
  }
  onClose(cb: () => void): void { if (this.closed) cb(); else this.closeCbs.push(cb); }
  write(buf: Buffer, release?: () => void): void {
    if (this.closed || this.stream.destroyed) { this.closed = true; throw clientGone(); }
    this.stats.writes++;
    this.stats.bytes += buf.length;
    // the stream's callback runs once the bytes left (or the stream failed): the buffer is free again.
    // A Writable says "full" after any write above its high-water mark (16 KiB for sockets and
    // responses, below one 64k band frame), which would stop the producer after every frame even
    // when the kernel took the bytes at once; we are backed up only once two frames are queued
    if (!this.stream.write(buf, release) && this.stream.writableLength >= this.queueLimit) this.backedUp = true;
  }
  drained(): Promise<void> {
    if (!this.backedUp || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** Collects everything in memory; for tests and for in-process use. */
export class MemorySink implements Sink {
  readonly stats: SinkStats = { writes: 0, bytes: 0 };
  readonly retains = false;
  readonly chunks: Buffer[] = [];
  readonly backedUp = false;
  readonly closed = false;
  write(buf: Buffer): void {
    this.stats.writes++;
    this.stats.bytes += buf.length;
    this.chunks.push(Buffer.from(buf));
  }
  drained(): Promise<void> { return Promise.resolve(); }
  get data(): Buffer { return Buffer.concat(this.chunks); }
}
