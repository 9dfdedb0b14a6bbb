/**
 * The one packet writer. Every byte gitwire sends goes through it.
 *
 * It buffers pkt-lines with git's upper-bound rule: if what is buffered
 * plus the next packet would pass the limit, the buffer goes out first;
 * a packet larger than the limit on its own leaves in one write.
 */
import { Band, DELIM, FLUSH, LARGE_PACKET_DATA_MAX, RESPONSE_END, SIDEBAND_64K_MAX, SIDEBAND_MAX, putHeader } from './codec.js';
import { GitwireError } from '../errors.js';
import type { Sink } from './sink.js';

export type SidebandMode = 'none' | 'side-band' | 'side-band-64k';

export const DEFAULT_LIMIT = 64 * 1024;
const EMPTY = Buffer.alloc(0);
/** the keepalive packet: an empty band-1 packet */
const KEEPALIVE = Buffer.from('0005\x01', 'latin1');

/** released buffers kept for reuse by a writer whose sink retains what it is given */
const SPARE_BUFFERS = 6; // a stream sink queues up to 128 KiB (sink.ts): a few buffers in flight

export class PacketWriter {
  private buf: Buffer;
  /** the memory `buf` and a scratch() region share, when there is one */
  private whole?: Buffer;
  private readonly spare: Buffer[] = [];
  private used = 0;
  sideband: SidebandMode = 'none';
  /** v2 `sideband-all`: every packet of the response is framed on band 1 */
  sidebandAll = false;

  constructor(private readonly sink: Sink, readonly limit = DEFAULT_LIMIT) {
    this.buf = Buffer.allocUnsafe(limit);
  }

  get stats() { return this.sink.stats; }

  get buffered(): number { return this.used; }

  /** Whether the sink keeps buffers it is given after write() returns (then they must not be reused). */
  get retains(): boolean { return this.sink.retains; }

  /**
   * `n` bytes of memory in one block with the writer's own buffer, for a
   * reader to read into (packed-refs): `dataScratch()` then copies a line
   * from it with copyWithin, several times cheaper than Buffer.copy for
   * short lines. Undefined for a sink that retains buffers (the writer's
   * buffer changes on every push). A later call reuses the block when it
   * is big enough, so offsets handed out stay valid.
   */
  scratch(n: number): Buffer | undefined {
    if (this.sink.retains) return undefined;
    if (!this.whole || this.whole.length < this.limit + n) {
      const whole = Buffer.allocUnsafe(this.limit + n);
      this.buf.copy(whole, 0, 0, this.used);
      this.buf = whole.subarray(0, this.limit);
      this.whole = whole;
    }
    return this.whole.subarray(this.limit, this.limit + n);
  }

  /** Buffer one data pkt-line of scratch()[start..end] followed by the byte `tail`. */
  dataScratch(start: number, end: number, tail: number): void {
    const whole = this.whole!;
    const n = end - start + 1;
    if (this.sidebandAll || n + 4 > this.limit) {
      return this.dataParts(whole.subarray(this.limit + start, this.limit + end), Buffer.of(tail));
    }
    if (this.used + n + 4 > this.limit) this.push();
    const at = this.used;
    putHeader(this.buf, at, n + 4);
    whole.copyWithin(at + 4, this.limit + start, this.limit + end);
    this.buf[at + 3 + n] = tail;
    this.used = at + n + 4;
  }

  private room(n: number): void {
    if (this.used + n > this.limit) this.push();
  }

  /** Append an already framed chunk (header included). */
  private append(bytes: Buffer): void {
    if (bytes.length > this.limit) {
      this.push();
      this.sink.write(bytes);
      return;
    }
    this.room(bytes.length);
    bytes.copy(this.buf, this.used);
    this.used += bytes.length;
  }

  /** Reserve `total` bytes in the buffer and return the offset. */
  private reserve(total: number): number {
    this.room(total);
    const at = this.used;
    this.used += total;
    return at;
  }

  /** Buffer one data pkt-line. */
  data(payload: Buffer | string): void {
    if (this.sidebandAll) return this.band(Band.Data, typeof payload === 'string' ? Buffer.from(payload) : payload);
    if (typeof payload === 'string') {
      const n = Buffer.byteLength(payload);
      if (n > LARGE_PACKET_DATA_MAX) throw new GitwireError('GW_PKT_TOO_LONG', 'protocol error: impossibly long line');
      const at = this.reserve(n + 4);
      putHeader(this.buf, at, n + 4);
      this.buf.write(payload, at + 4, 'utf8');
      return;
    }
    if (payload.length > LARGE_PACKET_DATA_MAX) throw new GitwireError('GW_PKT_TOO_LONG', 'protocol error: impossibly long line');
    const total = payload.length + 4;
    if (total > this.limit) {
      const out = Buffer.allocUnsafe(total);
      putHeader(out, 0, total);
      payload.copy(out, 4);
      return this.append(out);
    }
    const at = this.reserve(total);
    putHeader(this.buf, at, total);
    payload.copy(this.buf, at + 4);
  }

  /** Buffer a data pkt-line whose payload is buf[start..end] followed by `tail`. */
  dataRegion(buf: Buffer, start: number, end: number, tail?: Buffer): void {
    const n = end - start + (tail ? tail.length : 0);
    if (this.sidebandAll || n + 4 > this.limit || n > LARGE_PACKET_DATA_MAX) {
      return this.dataParts(buf.subarray(start, end), tail ?? EMPTY);
    }
    if (this.used + n + 4 > this.limit) this.push();
    const at = this.used;
    putHeader(this.buf, at, n + 4);
    buf.copy(this.buf, at + 4, start, end);
    if (tail) {
      if (tail.length === 1) this.buf[at + 4 + end - start] = tail[0]!;
      else tail.copy(this.buf, at + 4 + end - start);
    }
    this.used = at + n + 4;
  }

  /** Buffer a data pkt-line made of several parts (no intermediate concat). */
  dataParts(...parts: Array<Buffer | string>): void {
    let n = 0;
    for (const p of parts) n += typeof p === 'string' ? Buffer.byteLength(p) : p.length;
    if (n > LARGE_PACKET_DATA_MAX) throw new GitwireError('GW_PKT_TOO_LONG', 'protocol error: impossibly long line');
    if (this.sidebandAll || n + 4 > this.limit) {
      const one = Buffer.allocUnsafe(n);
      let o = 0;
      for (const p of parts) o += typeof p === 'string' ? one.write(p, o, 'utf8') : p.copy(one, o);
      return this.data(one);
    }
    const at = this.reserve(n + 4);
    putHeader(this.buf, at, n + 4);
    let o = at + 4;
    for (const p of parts) o += typeof p === 'string' ? this.buf.write(p, o, 'utf8') : p.copy(this.buf, o);
  }

  private control(pkt: Buffer): void { this.append(pkt); }

  /**
   * Smart HTTP's service announcement (`# service=<name>` and a flush-pkt),
   * buffered: it shares a write with what follows.
   */
  announce(service: string): void {
    this.data(`# service=${service}\n`);
    this.control(FLUSH);
  }

  /** Append a delim-pkt (buffered). */
  delim(): void { this.control(DELIM); }
  /** Append response-end (buffered). */
  responseEnd(): void { this.control(RESPONSE_END); }

  /** Append flush-pkt and write everything out in one call. */
  flush(): void {
    this.append(FLUSH);
    this.push();
  }

  /** Write out buffered bytes with no flush-pkt: used before waiting on the peer. */
  push(): void {
    if (this.used === 0) return;
    const out = this.buf.subarray(0, this.used);
    this.used = 0;
    if (!this.sink.retains) { this.sink.write(out); return; }
    // a sink that keeps a reference gets this buffer until it releases it;
    // released buffers are reused (a fresh 64 KiB buffer per write costs
    // page faults and GC on every frame of a pack)
    const whole = this.buf;
    this.buf = this.spare.pop() ?? Buffer.allocUnsafe(this.limit);
    this.sink.write(out, () => { if (this.spare.length < SPARE_BUFFERS) this.spare.push(whole); });
  }

  /** Raw bytes, not framed (pack data without sideband). */
  raw(bytes: Buffer): void { this.append(bytes); }

  get bandMax(): number {
    return this.sideband === 'side-band' ? SIDEBAND_MAX : SIDEBAND_64K_MAX;
  }

  /** Frame data on a sideband channel, splitting at the band's maximum. */
  band(band: Band, data: Buffer): void {
    const max = this.bandMax;
    for (let off = 0; off < data.length || (off === 0 && data.length === 0); off += max) {
      const chunk = data.subarray(off, Math.min(off + max, data.length));
      const total = chunk.length + 5;
      const at = this.reserve(total);
      putHeader(this.buf, at, total);
      this.buf[at + 4] = band;
      chunk.copy(this.buf, at + 5);
      if (data.length === 0) break;
    }
  }

  /**
   * Send one band packet whose payload sits at frame[5..]; frame[0..5] is
   * filled in here. Header and payload always leave in the same write;
   * buffered bytes go out first when both would not fit.
   */
  /** Would bandFrame() hand a frame of this size to a sink that keeps it (so the caller must not reuse it)? */
  bandFrameRetains(size: number): boolean {
    return size > this.limit && this.sink.retains;
  }

  /**
   * A buffer for bandFrameSwap(): as large as the writer's own buffer (and
   * at least one 64k band frame).
   */
  frameBuffer(): Buffer {
    if (this.limit < 5 + SIDEBAND_64K_MAX) return Buffer.allocUnsafe(5 + SIDEBAND_64K_MAX);
    return this.spare.pop() ?? Buffer.allocUnsafe(this.limit);
  }

  /**
   * Send frame[0..len) as one band packet, whose payload sits at frame[5..len)
   * (frame[0..5] is filled in here), without copying it: when nothing is
   * buffered, `frame` becomes the writer's buffer (so that what follows, the
   * pack's last bytes and the flush, can still share its write) and the
   * writer's free buffer is returned for the next frame. Otherwise it is
   * copied as bandFrame() does and `frame` itself is returned. The caller may
   * read `frame` after the call, never write it again.
   */
  bandFrameSwap(band: Band, frame: Buffer, len: number): Buffer {
    if (frame.length !== this.limit) {
      // not one of ours (a writer with a small limit): the plain path
      const retained = this.bandFrameRetains(len);
      this.bandFrame(band, frame.subarray(0, len));
      return retained ? Buffer.allocUnsafe(frame.length) : frame;
    }
    putHeader(frame, 0, len);
    frame[4] = band;
    if (this.used > 0) {
      if (this.used + len <= this.limit) {
        frame.copy(this.buf, this.used, 0, len);
        this.used += len;
        return frame;
      }
      this.push();
    }
    const free = this.buf;
    this.buf = frame;
    this.used = len;
    return free;
  }

  /**
   * Packets framed by the caller (a FrameBlock: band frames whose payloads
   * were read in place), written as they are in one write, after what is
   * buffered. `release` runs once the sink no longer needs `bytes`.
   */
  framed(bytes: Buffer, release: () => void): void {
    this.push();
    if (this.sink.retains) { this.sink.write(bytes, release); return; }
    try { this.sink.write(bytes); } finally { release(); }
  }

  bandFrame(band: Band, frame: Buffer): void {
    putHeader(frame, 0, frame.length);
    frame[4] = band;
    if (frame.length + this.used > this.limit) this.push();
    if (frame.length > this.limit) { this.sink.write(frame); return; }
    // buffered, so that what follows (the pack's last bytes, the flush) can share its write
    frame.copy(this.buf, this.used);
    this.used += frame.length;
  }

  /** Progress text on band 2 (dropped when there is no sideband). */
  progress(msg: string | Buffer): void {
    if (this.sideband === 'none') return;
    this.band(Band.Progress, typeof msg === 'string' ? Buffer.from(msg) : msg);
  }

  /**
   * git's packet_writer_error: band 3 when the writer frames every packet
   * (v2 sideband-all), `ERR msg` otherwise. Written at once.
   */
  error(msg: string): void {
    if (this.sidebandAll) this.band(Band.Error, Buffer.from(msg));
    else this.data(`ERR ${msg}`);
    this.push();
  }

  /**
   * A keepalive: an empty band-1 packet (git's "0005\\1"), written at once
   * after whatever is buffered. Only meaningful with a sideband.
   */
  keepalive(): void {
    this.append(KEEPALIVE);
    this.push();
  }

  /** The consumer is backed up (a stream sink over its high-water mark). */
  get backedUp(): boolean { return this.sink.backedUp; }
  /** The consumer went away. */
  get closed(): boolean { return this.sink.closed; }

  /** Call `cb` once when the consumer goes away (at once if it is gone already). */
  onGone(cb: () => void): void {
    if (this.sink.onClose) this.sink.onClose(cb);
    else if (this.sink.closed) cb();
  }

  /** Resolves once the consumer is no longer backed up (at once when it is not). */
  waitDrained(): Promise<void> {
    return this.sink.backedUp ? this.sink.drained() : Promise.resolve();
  }
}
