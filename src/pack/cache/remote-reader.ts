/**
 * One request following another node's pack-objects run: its spool on the
 * shared cache directory, read as it grows, at this client's own pace (a
 * slow client reads later; the producer never waits for it).
 *
 * The end comes from the claim record (the pack's size and trailer) or,
 * when the coordinator cannot say, from the entry the producer stored.
 * What was sent is hashed as it goes and must match that trailer, so a
 * follower never ends a pack that looks complete and is not. A producer
 * that dies (its claim gone, its spool still for a while) fails the
 * follower retryably: with nothing sent yet, the request runs its own
 * pack-objects.
 */
import type { PackSource, PackSourceResult } from '../relay.js';
import type { FollowedSpool } from './store.js';
import type { PackCache } from './pack-cache.js';
import type { ClaimRecord, Coordinator } from '../../cluster/coordinator.js';
import { READ_CHUNK } from './options.js';
import { humanBytes, Queue } from './progress.js';
import { TrailerCheck } from './trailer.js';

/** how often the claim is looked at while the spool does not grow */
const POLL_MS = 50;
/** longest sleep between reads of a spool that does not grow */
const IDLE_MAX_MS = 25;

type Done = Extract<ClaimRecord, { state: 'done' }>;

export class RemoteReader implements PackSource {
  readonly stdout: AsyncIterable<Buffer>;
  readonly stderr: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  private resolveDone!: (r: PackSourceResult) => void;
  private readonly progress = new Queue();
  private readonly check: TrailerCheck;
  private pos = 0;
  private closed = false;
  private reading?: Promise<number>;
  private wakeSleep?: () => void;

  /**
   * `deadAfterMs`: with the claim gone and the spool not growing this long,
   * the producer is taken for dead.
   */
  constructor(
    private readonly cache: PackCache,
    private readonly coordinator: Coordinator,
    private readonly key: string,
    private readonly spool: FollowedSpool,
    private readonly holder: ClaimRecord & { spool: string },
    format: 'sha1' | 'sha256',
    private readonly wantProgress: boolean,
    private readonly deadAfterMs: number,
  ) {
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.check = new TrailerCheck(format);
    this.stdout = this.read();
    this.stderr = this.progress;
    if (wantProgress) this.progress.push(Buffer.from('Joining a pack-objects run on another server\n'));
  }

  /** How the run stands: ended (the claim record, else the stored entry's header), still running, or failed. */
  private async state(): Promise<{ end?: Done; running?: boolean; failed?: boolean }> {
    const rec = await this.coordinator.packState(this.key);
    const ours = rec !== undefined && rec.state !== 'failed' && rec.spool === this.holder.spool;
    if (ours && rec.state === 'done') return { end: rec };
    if (ours && rec.state === 'running') return { running: true };
    if (rec?.state === 'failed' && rec.node === this.holder.node) return { failed: true };
    // gone, another run's, or the coordinator cannot say: the stored entry may
    const stored = await this.cache.store.open(this.key, this.cache.maxAgeMs).catch(() => undefined);
    if (stored) {
      await stored.close().catch(() => undefined);
      if (stored.key === this.key && stored.trailer) {
        return { end: { state: 'done', node: this.holder.node, spool: this.holder.spool, size: stored.size, trailer: stored.trailer.toString('hex'), stored: true } };
      }
    }
    return {};
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      this.wakeSleep = () => { clearTimeout(t); r(); };
    }).finally(() => { this.wakeSleep = undefined; });
  }

  private async *read(): AsyncGenerator<Buffer> {
    let end: Done | undefined = this.holder.state === 'done' ? this.holder : undefined;
    let failed = this.holder.state === 'failed';
    let readFailed = false;
    let lastPoll = 0;
    let lastGrowth = Date.now();
    let idle = 1;
    const scratch = Buffer.allocUnsafe(READ_CHUNK);
    try {
      while (!this.closed && !failed) {
        if (end && this.pos >= end.size) break;
        const want = Math.min(READ_CHUNK, end ? end.size - this.pos : READ_CHUNK);
        let n = 0;
        try {
          this.reading = this.spool.read(scratch.subarray(0, want), this.pos);
          n = await this.reading;
        } catch (e) {
          if (!this.closed) this.cache.fallback('read', this.key, `reading another server's spool failed: ${(e as Error).message}`);
          readFailed = true;
          break;
        } finally {
          this.reading = undefined;
        }
        if (this.closed) break;
        if (n > 0) {
          const b = scratch.subarray(0, n);
          this.check.update(b);
          this.pos += n;
          this.cache.stats.bytesServed += n;
          lastGrowth = Date.now();
          idle = 1;
          yield b;
          continue;
        }
        const now = Date.now();
        if (!end && now - lastPoll >= POLL_MS) {
          lastPoll = now;
          const st = await this.state();
          if (st.end) { end = st.end; continue; }
          // failed, or the claim is gone (or cannot be seen) and the spool stopped growing: the producer is dead
          if (st.failed || (!st.running && now - lastGrowth >= this.deadAfterMs)) { failed = true; break; }
        }
        if (end && now - lastGrowth >= this.deadAfterMs * 6) { failed = true; break; } // the bytes never arrived
        await this.sleep(idle);
        idle = Math.min(idle * 2, IDLE_MAX_MS);
      }
      const ok = !this.closed && !failed && !readFailed && !!end && this.pos === end.size && this.check.ok(Buffer.from(end.trailer, 'hex'));
      if (!ok && !this.closed && end && this.pos === end.size) {
        this.cache.fallback('corrupt', this.key, "another server's spool failed its trailer check");
      }
      if (failed && !this.closed) {
        this.cache.log('pack cache: the producing server went away; its followers fall back', { key: this.key, node: this.holder.node, bytes: this.pos });
        // the dead producer's spool is never an entry; nobody will finish it
        await this.spool.remove().catch(() => undefined);
      }
      if (ok && this.wantProgress) this.progress.push(Buffer.from(`Reusing shared pack: ${humanBytes(this.pos)}, done.\n`));
      this.resolveDone({ ok, retryable: !ok });
    } finally {
      await this.close();
    }
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wakeSleep?.();
    this.resolveDone({ ok: false, retryable: true });
    this.progress.end();
    await this.reading?.catch(() => 0);
    await this.spool.close().catch(() => undefined);
  }

  async abort(): Promise<void> { await this.close(); }
}
