/**
 * Progress deadlines: a transfer that waits on its peer and makes no
 * progress for the timeout is cut, whichever way it waits — a client that
 * does not read what it asked for, one that does not send what the
 * conversation waits for, a half-open TCP connection. One mechanism for
 * HTTP, git://, SSH (each channel, and the connection) and stdio.
 *
 * Progress is bytes the peer took: output counts once it has left our
 * queue (a socket's `bytesWritten - writableLength`, an SSH channel's
 * writes its window let through), never when it is queued. A keepalive
 * written into a full socket moves nothing, so it cannot keep a stalled
 * transfer alive. Time the server spends working on its own (pack-objects
 * counting, a hook running) with nothing queued and nothing awaited from
 * the peer is not the peer's, and is never cut here.
 *
 * A cut destroys the stream: the service sees its client gone, stops its
 * children (pack-objects, index-pack, hooks) and lets go of its slots.
 */
import type { Socket } from 'node:net';

/** What a deadline watches: counters of a byte stream's two directions. */
export interface Flow {
  /** bytes the peer has taken so far (monotonic) */
  accepted(): number;
  /** bytes written and waiting for the peer to take them */
  queued(): number;
  /** bytes received from the peer so far (monotonic) */
  received(): number;
}

/** Which way the peer held the transfer up. */
export type StallDirection = 'not-reading' | 'not-sending';

export interface Stall {
  direction: StallDirection;
  /** ms since the last progress */
  idleMs: number;
  /** bytes that were waiting for the peer */
  queued: number;
}

/** The outcome a cut transfer is logged and counted with. */
export const PROGRESS_TIMEOUT = 'progress-timeout';

/**
 * git:// without `--timeout`: a transfer waiting on its peer is still cut
 * after this many seconds (git daemon would wait for ever; a client that
 * never reads would hold a pack slot for good). The same as HTTP's and
 * SSH's default idle time.
 */
export const DEFAULT_PROGRESS_TIMEOUT = 120;

/** The flow of a socket: what the kernel took from our queue, and what came in. */
export function socketFlow(s: Socket): Flow {
  return {
    // bytesWritten counts what is queued too; what is still queued is not taken
    accepted: () => (s.bytesWritten ?? 0) - s.writableLength,
    queued: () => s.writableLength,
    received: () => s.bytesRead,
  };
}

const sockets = new WeakMap<object, Stall>();

/** Was this stream (a socket, an SSH channel) cut by a progress deadline? Its stall when it was. */
export function stalled(stream: object | null | undefined): Stall | undefined {
  return stream ? sockets.get(stream) : undefined;
}

/** The log's `reason` for a cut. */
export function stallReason(s: Stall): string {
  const secs = (s.idleMs / 1000).toFixed(1);
  return s.direction === 'not-reading'
    ? `no progress for ${secs} s: the client took none of the ${s.queued} bytes waiting for it`
    : `no progress for ${secs} s: the client sent nothing while it was waited for`;
}

/** Mark `stream` as cut for a stall (for the one who logs its request). */
export function markStalled(stream: object, stall: Stall): void {
  if (!sockets.has(stream)) sockets.set(stream, stall);
}

/** ms between two looks at the counters: a tenth of the timeout, within 50 ms and 1 s. */
export function tickMs(timeoutMs: number): number {
  return Math.min(1000, Math.max(50, Math.floor(timeoutMs / 10)));
}

/**
 * Watches one flow. `onStall` runs once, when the peer has held the
 * transfer up for `timeoutMs` (0 or less: never); the deadline is stopped
 * then. The conversation says when it waits for input (`reading`); output
 * waiting for the peer is seen in the flow itself.
 */
export class ProgressDeadline {
  private last = Date.now();
  private acc: number;
  private rec: number;
  private waiting = 0;
  private timer: NodeJS.Timeout | undefined;
  /** called on every look that finds the transfer alive (not stalled): an outer idle timer may be refreshed from it */
  onAlive?: () => void;
  constructor(private readonly flow: Flow, readonly timeoutMs: number, private readonly onStall: (s: Stall) => void, private readonly now: () => number = Date.now) {
    this.last = now();
    this.acc = flow.accepted();
    this.rec = flow.received();
    if (timeoutMs > 0) {
      this.timer = setInterval(() => this.check(), tickMs(timeoutMs));
      this.timer.unref();
    }
  }

  /** The conversation waits for the peer's bytes (true) or no longer (false); nested waits count. */
  reading(on: boolean): void {
    // the time until now was the server's (or already counted): the wait starts its own count
    if (on) { if (this.waiting === 0) this.check(); this.waiting++; } else if (this.waiting > 0) this.waiting--;
  }

  /** Wait for `p` as input from the peer. */
  async read<T>(p: Promise<T>): Promise<T> {
    this.reading(true);
    try { return await p; } finally { this.reading(false); }
  }

  get stopped(): boolean { return this.timer === undefined; }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Look at the counters now (the timer does this every tick). */
  check(): void {
    if (!this.timer) return;
    const t = this.now();
    const a = this.flow.accepted(), r = this.flow.received(), q = this.flow.queued();
    if (a !== this.acc || r !== this.rec) {
      this.acc = a;
      this.rec = r;
      this.last = t;
      this.onAlive?.();
      return;
    }
    // nothing asked of the peer: the server is at work, and that is not the peer's time
    if (q <= 0 && this.waiting === 0) { this.last = t; this.onAlive?.(); return; }
    const idle = t - this.last;
    if (idle < this.timeoutMs) { this.onAlive?.(); return; }
    this.stop();
    this.onStall({ direction: q > 0 ? 'not-reading' : 'not-sending', idleMs: idle, queued: Math.max(0, q) });
  }
}

/**
 * A deadline on a socket that destroys it when it fires, marked as stalled
 * (see `stalled`) before it goes. `onStall` is told first (for a log line).
 */
export function watchSocket(s: Socket, timeoutSeconds: number, onStall?: (stall: Stall) => void): ProgressDeadline {
  const d = new ProgressDeadline(socketFlow(s), timeoutSeconds > 0 ? Math.min(timeoutSeconds * 1000, 2 ** 31 - 1) : 0, (stall) => {
    markStalled(s, stall);
    try { onStall?.(stall); } finally { s.destroy(); }
  });
  s.once('close', () => d.stop());
  return d;
}
