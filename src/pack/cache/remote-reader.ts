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
import { eachFilled, limitViews, readViews } from './views.js';

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
    if (holder.state === 'done') this.end = holder;
    this.failed = holder.state === 'failed';
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

  // where the follow stands, shared by the pulled and the in-place path
  private end?: Done;
  private failed = false;
  private readFailed = false;
  private lastPoll = 0;
  private lastGrowth = Date.now();
  private idle = 1;
  private finished = false;

  /**
   * The next bytes of the spool into `views`, waiting while it does not
   * grow; 0 once the run is over (whole or not), the verdict then given.
   */
  private async nextInto(views: Buffer[]): Promise<number> {
    while (!this.closed && !this.failed) {
      const end = this.end;
      if (end && this.pos >= end.size) break;
      const vs = end ? limitViews(views, end.size - this.pos) : views;
      let n = 0;
      try {
        const reading = readViews(this.spool, vs, this.pos);
        this.reading = reading;
        n = await reading;
      } catch (e) {
        if (!this.closed) this.cache.fallback('read', this.key, `reading another server's spool failed: ${(e as Error).message}`);
        this.readFailed = true;
        break;
      } finally {
        this.reading = undefined;
      }
      if (this.closed) break;
      if (n > 0) {
        eachFilled(vs, n, (b) => this.check.update(b));
        this.pos += n;
        this.cache.stats.bytesServed += n;
        this.lastGrowth = Date.now();
        this.idle = 1;
        return n;
      }
      const now = Date.now();
      if (!end && now - this.lastPoll >= POLL_MS) {
        this.lastPoll = now;
        const st = await this.state();
        if (st.end) { this.end = st.end; continue; }
        // failed, or the claim is gone (or cannot be seen) and the spool stopped growing: the producer is dead
        if (st.failed || (!st.running && now - this.lastGrowth >= this.deadAfterMs)) { this.failed = true; break; }
      }
      if (end && now - this.lastGrowth >= this.deadAfterMs * 6) { this.failed = true; break; } // the bytes never arrived
      await this.sleep(this.idle);
      this.idle = Math.min(this.idle * 2, IDLE_MAX_MS);
    }
    await this.verdict();
    return 0;
  }

  /** The run is over for this follower: whole and verified, or not (once). */
  private async verdict(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const end = this.end;
    const ok = !this.closed && !this.failed && !this.readFailed && !!end && this.pos === end.size && this.check.ok(Buffer.from(end.trailer, 'hex'));
    if (!ok && !this.closed && end && this.pos === end.size) {
      this.cache.fallback('corrupt', this.key, "another server's spool failed its trailer check");
    }
    if (this.failed && !this.closed) {
      this.cache.log('pack cache: the producing server went away; its followers fall back', { key: this.key, node: this.holder.node, bytes: this.pos });
      // the dead producer's spool is never an entry; nobody will finish it
      await this.spool.remove().catch(() => undefined);
    }
    if (ok && this.wantProgress) this.progress.push(Buffer.from(`Reusing shared pack: ${humanBytes(this.pos)}, done.\n`));
    this.resolveDone({ ok, retryable: !ok });
  }

  /** PackSource.readInto: the spool's next bytes straight into the relay's frame payloads. */
  async readInto(views: Buffer[]): Promise<number> {
    const n = await this.nextInto(views);
    if (n === 0) await this.close();
    return this.closed && n > 0 ? 0 : n;
  }

  private async *read(): AsyncGenerator<Buffer> {
    const scratch = Buffer.allocUnsafe(READ_CHUNK);
    try {
      for (;;) {
        const n = await this.nextInto([scratch]);
        if (n === 0) break;
        yield scratch.subarray(0, n);
      }
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
