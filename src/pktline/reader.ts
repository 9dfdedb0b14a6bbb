/**
 * Streaming pkt-line reader over a byte source. It can peek, returns each
 * packet kind distinctly, and consumes only the bytes of the packets it is
 * asked for.
 */
import type { Readable } from 'node:stream';
import { decode, type Packet } from './codec.js';
import { GitwireError, pktEof } from '../errors.js';

export type ReadResult = Packet | { kind: 'eof' };

export interface ReaderOptions {
  /** strip one trailing LF from data packets */
  chomp?: boolean;
  /** turn `ERR <msg>` data packets into a thrown error */
  dieOnErr?: boolean;
  /**
   * Called before the reader blocks on its source: the place to push out
   * buffered output, so buffering can never deadlock a conversation.
   */
  beforeWait?: () => void;
  /** give up when the peer sends nothing for this long (ms) */
  timeoutMs?: number;
  /**
   * Most bytes the peer may send between two flush packets (one request,
   * or one negotiation round); past it reading fails with GW_LIMIT.
   */
  maxBytesPerFlush?: number;
}

export class PktReader {
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;
  private peeked: ReadResult | undefined;
  private iter: AsyncIterator<Buffer> | undefined;
  /** bytes consumed from the source as packets */
  consumed = 0;
  private sinceFlush = 0;
  /** the read timeout's timer (timeoutMs), and the waiting read it would fail */
  private timer: NodeJS.Timeout | undefined;
  private onTimeout: ((e: Error) => void) | undefined;

  constructor(source: Readable | AsyncIterable<Buffer> | Buffer, readonly options: ReaderOptions = {}) {
    if (Buffer.isBuffer(source)) {
      this.buf = source;
      this.ended = true;
    } else {
      this.iter = (source as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
    }
  }

  /** Bytes received from the source but not yet consumed as packets. */
  remainder(): Buffer { return this.buf; }

  private async fill(): Promise<boolean> {
    if (this.ended || !this.iter) return false;
    this.options.beforeWait?.();
    const r = this.options.timeoutMs ? await this.nextWithin(this.iter, this.options.timeoutMs) : await this.iter.next();
    if (r.done) {
      this.ended = true;
      if (this.timer) clearTimeout(this.timer);
      return false;
    }
    const chunk = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value as Uint8Array);
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    return true;
  }

  /**
   * The source's next chunk, or GW_TIMEOUT after `ms` of silence. One timer
   * serves every read: armed on the first wait, re-armed (refresh) on each
   * later one, and holding the process open only while a read waits; when
   * it fires between reads there is no one to fail.
   */
  private nextWithin(iter: AsyncIterator<Buffer>, ms: number): Promise<IteratorResult<Buffer>> {
    return new Promise((resolve, reject) => {
      this.onTimeout = reject;
      if (this.timer) this.timer.refresh().ref();
      else {
        this.timer = setTimeout(() => {
          const fail = this.onTimeout;
          this.onTimeout = undefined;
          fail?.(new GitwireError('GW_TIMEOUT', 'timeout reading from the client'));
        }, ms);
      }
      const settle = () => { this.onTimeout = undefined; this.timer?.unref(); };
      iter.next().then((r) => { settle(); resolve(r); }, (e: unknown) => { settle(); reject(e as Error); });
    });
  }

  async peek(): Promise<ReadResult> {
    if (this.peeked === undefined) this.peeked = await this.next();
    return this.peeked;
  }

  async read(): Promise<ReadResult> {
    if (this.peeked !== undefined) {
      const p = this.peeked;
      this.peeked = undefined;
      return p;
    }
    return this.next();
  }

  /** Read a packet; end of input is an error ("the remote end hung up unexpectedly"). */
  async readPacket(): Promise<Packet> {
    const p = await this.read();
    if (p.kind === 'eof') throw pktEof();
    return p;
  }

  private async next(): Promise<ReadResult> {
    for (;;) {
      const r = decode(this.buf);
      if (r.status === 'complete') {
        this.buf = this.buf.subarray(r.consumed);
        this.consumed += r.consumed;
        const p = r.packet;
        if (this.options.maxBytesPerFlush) {
          this.sinceFlush = p.kind === 'flush' ? 0 : this.sinceFlush + r.consumed;
          if (this.sinceFlush > this.options.maxBytesPerFlush) {
            throw new GitwireError('GW_LIMIT', `request was larger than our maximum size (${this.options.maxBytesPerFlush})`);
          }
        }
        if (p.kind === 'data') {
          let d = p.data;
          if (this.options.dieOnErr && d.length >= 4 && d.toString('latin1', 0, 4) === 'ERR ') {
            throw new GitwireError('GW_PKT_REMOTE_ERR', `remote error: ${d.subarray(4).toString()}`);
          }
          if (this.options.chomp && d.length > 0 && d[d.length - 1] === 10) d = d.subarray(0, d.length - 1);
          return { kind: 'data', data: d };
        }
        return p;
      }
      if (!(await this.fill())) {
        if (this.buf.length === 0) return { kind: 'eof' };
        throw pktEof();
      }
    }
  }
}

/** Is this data packet an `ERR <msg>` packet? */
export function isErrPacket(data: Buffer): boolean {
  return data.length >= 4 && data[0] === 0x45 && data[1] === 0x52 && data[2] === 0x52 && data[3] === 0x20;
}
