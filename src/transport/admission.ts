/**
 * Admission control: a limit on concurrent pack-objects. A queued fetch
 * is told on band 2 that it is waiting, and gets keepalives, instead of a
 * timeout or an error. A queued client that goes away leaves the queue at
 * once: it never takes a turn.
 */
import { clientGone } from '../errors.js';
import type { PacketWriter } from '../pktline/writer.js';

/**
 * Keepalive interval for a queued fetch when the repository does not set
 * `uploadpack.keepAlive` (git's own 5 s is too long for some clients:
 * isomorphic-git's Node transport gives up on a request silent for 5 s).
 */
export const QUEUE_KEEPALIVE_MS = 2500;

export interface AcquireOptions {
  /** `uploadpack.keepAlive` in seconds when the repository sets it (<= 0: none) */
  keepalive?: number;
}

interface Waiter { resolve: () => void }

export class PackLimiter {
  private running = 0;
  private readonly queue: Waiter[] = [];
  /** `what` names the slot in the waiting message (`pack-objects`, `ingest`) */
  constructor(readonly limit: number, readonly keepaliveMs = QUEUE_KEEPALIVE_MS, readonly what = 'pack-objects') {}

  /** told how long each granted slot was waited for, in seconds (0 when one was free): the metrics' histogram */
  onWait?: (seconds: number) => void;

  get active(): number { return this.running; }
  get waiting(): number { return this.queue.length; }

  /** Resolves with a release function once a slot is free; rejects if the client goes away first. */
  acquire = async (writer: PacketWriter, sideband: boolean, opts: AcquireOptions = {}): Promise<() => void> => {
    if (this.limit <= 0 || this.running < this.limit) {
      this.running++;
      this.onWait?.(0);
      return this.releaser();
    }
    const t0 = process.hrtime.bigint();
    if (writer.closed) throw clientGone();
    const ahead = this.queue.length + 1;
    const say = (msg: string) => { if (sideband) { try { writer.progress(msg); writer.push(); } catch { /* gone */ } } };
    say(`gitwire: waiting for ${this.what === 'ingest' ? 'an' : 'a'} ${this.what} slot (${ahead} ahead)\n`);
    const ms = opts.keepalive === undefined ? this.keepaliveMs : opts.keepalive > 0 ? opts.keepalive * 1000 : 0;
    let timer: NodeJS.Timeout | undefined;
    if (sideband && ms > 0) {
      timer = setInterval(() => {
        try { writer.keepalive(); } catch { /* gone: the close handler drops the waiter */ }
      }, ms);
    }
    try {
      await new Promise<void>((resolve, reject) => {
        const w: Waiter = { resolve };
        this.queue.push(w);
        writer.onGone(() => {
          const i = this.queue.indexOf(w);
          if (i < 0) return; // already given a slot
          this.queue.splice(i, 1);
          reject(clientGone());
        });
      });
    } finally {
      if (timer) clearInterval(timer);
    }
    this.onWait?.(Number(process.hrtime.bigint() - t0) / 1e9);
    say(`gitwire: ${this.what} slot acquired\n`);
    return this.releaser();
  };

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next.resolve(); // the slot passes straight on
      else this.running--;
    };
  }
}
