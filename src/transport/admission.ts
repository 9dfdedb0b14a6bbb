/**
 * Admission control: a limit on concurrent pack-objects. A queued fetch
 * is told on band 2 that it is waiting, and gets keepalives, instead of a
 * timeout or an error.
 */
import type { PacketWriter } from '../pktline/writer.js';

const KEEPALIVE = Buffer.from('0005\x01', 'latin1');

export class PackLimiter {
  private running = 0;
  private readonly queue: Array<() => void> = [];
  constructor(readonly limit: number, readonly keepaliveMs = 5000) {}

  get active(): number { return this.running; }
  get waiting(): number { return this.queue.length; }

  /** Resolves with a release function once a slot is free. */
  acquire = async (writer: PacketWriter, sideband: boolean): Promise<() => void> => {
    if (this.limit <= 0 || this.running < this.limit) {
      this.running++;
      return this.releaser();
    }
    const ahead = this.queue.length + 1;
    const say = (msg: string) => { if (sideband) { try { writer.progress(msg); writer.push(); } catch { /* gone */ } } };
    say(`gitwire: waiting for a pack-objects slot (${ahead} ahead)\n`);
    const timer = setInterval(() => {
      if (!sideband) return;
      try { writer.push(); writer.raw(KEEPALIVE); writer.push(); } catch { /* gone */ }
    }, this.keepaliveMs);
    await new Promise<void>((resolve) => this.queue.push(resolve));
    clearInterval(timer);
    say('gitwire: pack-objects slot acquired\n');
    return this.releaser();
  };

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next(); // the slot passes straight on
      else this.running--;
    };
  }
}
