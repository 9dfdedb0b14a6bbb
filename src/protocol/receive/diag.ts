/**
 * Diagnostics for the pusher: child output (index-pack progress, rev-list,
 * hooks) and receive-pack's own `error:`/`warning:` lines. With sideband
 * they leave on band 2 through the one packet writer, coalesced to at most
 * one frame per line and pushed out at once (never held across a wait);
 * without sideband they go to the stderr callback. Keepalives (an empty
 * band-1 packet) go out while the client waits on us.
 */
import { encodeName } from '../../util/byte-name.js';
import { Band } from '../../pktline/codec.js';
import type { PacketWriter } from '../../pktline/writer.js';

export class Diag {
  private pending: Buffer = Buffer.alloc(0);
  private timer: NodeJS.Timeout | undefined;
  private lastOut = Date.now();
  /** KEEPALIVE_AFTER_NUL: a NUL in child output starts keepalives */
  private afterNul = false;
  /** set when the client went away: output is dropped */
  dead = false;

  constructor(readonly writer: PacketWriter, readonly sideband: boolean, readonly stderr: (b: Buffer) => void, readonly keepaliveSec: number) {}

  private frame(b: Buffer): void {
    if (b.length === 0 || this.dead) return;
    if (!this.sideband) { this.stderr(b); return; }
    try {
      this.writer.band(Band.Progress, b);
      this.writer.push();
      this.lastOut = Date.now();
    } catch { this.dead = true; }
  }

  /** Child output: everything up to the last line end leaves as one frame. */
  feed(chunk: Buffer): void {
    if (this.afterNul) {
      const z = chunk.indexOf(0);
      if (z >= 0) {
        this.afterNul = false;
        chunk = Buffer.concat([chunk.subarray(0, z), chunk.subarray(z + 1)]);
        this.startKeepalive();
      }
    }
    if (!this.sideband) { this.frame(chunk); return; }
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let cut = -1;
    for (let i = buf.length - 1; i >= 0; i--) { const c = buf[i]; if (c === 10 || c === 13) { cut = i; break; } }
    if (cut < 0 && buf.length < this.writer.bandMax) { this.hold(Buffer.from(buf)); return; }
    const end = cut < 0 ? buf.length : cut + 1;
    this.frame(buf.subarray(0, end));
    this.hold(Buffer.from(buf.subarray(end)));
  }

  /** Keep a partial line for its end, but never past a short quiet time (a prompt-like line must not wait). */
  private hold(b: Buffer): void {
    this.pending = b;
    if (this.partialTimer) { clearTimeout(this.partialTimer); this.partialTimer = undefined; }
    if (!b.length) return;
    this.partialTimer = setTimeout(() => { this.partialTimer = undefined; this.end(); }, Diag.PARTIAL_MS);
    this.partialTimer.unref();
  }

  private partialTimer: NodeJS.Timeout | undefined;
  /** how long a partial line may wait for its end (ms) */
  static PARTIAL_MS = 100;

  /** A child finished: send what is left of its last line. */
  end(): void {
    if (this.partialTimer) { clearTimeout(this.partialTimer); this.partialTimer = undefined; }
    const p = this.pending;
    this.pending = Buffer.alloc(0);
    this.frame(p);
  }

  /** rp_error / rp_warning */
  // messages name refs, whose bytes need not be UTF-8 (see util/byte-name)
  error(msg: string): void { this.end(); this.frame(encodeName(`error: ${msg}\n`)); }
  warning(msg: string): void { this.end(); this.frame(encodeName(`warning: ${msg}\n`)); }

  /** keepalives only after index-pack reports the end of its input */
  keepaliveAfterNul(): void { this.afterNul = this.sideband && this.keepaliveSec > 0; }

  startKeepalive(): void {
    if (!this.sideband || this.keepaliveSec <= 0 || this.timer) return;
    const ms = this.keepaliveSec * 1000;
    this.timer = setInterval(() => {
      if (this.dead || Date.now() - this.lastOut < ms) return;
      try {
        this.writer.keepalive();
        this.lastOut = Date.now();
      } catch { this.dead = true; }
    }, Math.min(ms, 1000));
    this.timer.unref();
  }

  stopKeepalive(): void {
    if (this.partialTimer) { clearTimeout(this.partialTimer); this.partialTimer = undefined; this.end(); }
    this.afterNul = false;
    if (this.timer) { clearInterval(this.timer); this.timer = undefined; }
  }
}
