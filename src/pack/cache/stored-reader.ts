import type { PackSource, PackSourceResult } from '../relay.js';
import type { StoredPack } from './store.js';
import type { PackCache } from './pack-cache.js';
import { READ_CHUNK } from './options.js';
import { humanBytes, Queue } from './progress.js';
import { TrailerCheck } from './trailer.js';
import { eachFilled, limitViews, readViews } from './views.js';

/** One request reading a stored entry, hashing what it sends. */
export class StoredReader implements PackSource {
  readonly stdout: AsyncIterable<Buffer>;
  readonly stderr: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  private resolveDone!: (r: PackSourceResult) => void;
  private readonly progress = new Queue();
  private closed = false;
  /** the next read and its hashing, in flight */
  private reading?: Promise<unknown>;
  private readonly check: TrailerCheck;
  private pos = 0;
  private readFailed = false;
  private scratch?: Buffer;

  constructor(private readonly cache: PackCache, private readonly key: string, private readonly pack: StoredPack, format: 'sha1' | 'sha256', wantProgress: boolean) {
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.check = new TrailerCheck(format);
    this.stdout = this.read();
    this.stderr = this.progress;
    if (wantProgress) this.progress.push(Buffer.from(`Reusing cached pack: ${humanBytes(pack.size)}, done.\n`));
  }

  /** Read and hash the next bytes into `views` (0 at the end or when the read failed). */
  private async nextInto(views: Buffer[]): Promise<number> {
    const p = this.pack;
    if (this.pos >= p.size) return 0;
    const vs = limitViews(views, p.size - this.pos);
    let n = 0;
    try {
      n = await readViews(p, vs, this.pos);
    } catch (err) {
      this.cache.fallback('read', this.key, `entry read failed: ${(err as Error).message}`);
    }
    if (n <= 0) { this.readFailed = true; return 0; }
    eachFilled(vs, n, (b) => this.check.update(b));
    this.pos += n;
    return n;
  }

  /** Read and hash the next bytes (undefined at the end or when the read failed). */
  private async next(): Promise<Buffer | undefined> {
    this.scratch ??= Buffer.allocUnsafe(Math.min(this.pack.size, READ_CHUNK));
    const n = await this.nextInto([this.scratch]);
    return n > 0 ? this.scratch.subarray(0, n) : undefined;
  }

  /** PackSource.readInto: the next bytes straight into the relay's frame payloads. */
  async readInto(views: Buffer[]): Promise<number> {
    if (this.closed) return 0;
    const reading = this.nextInto(views);
    this.reading = reading;
    const n = await reading;
    if (this.reading === reading) this.reading = undefined;
    if (this.closed) return 0;
    if (n > 0) { this.cache.stats.bytesServed += n; return n; }
    const ok = await this.verdict();
    this.resolveDone({ ok, retryable: !ok });
    await this.close();
    return 0;
  }

  /** Whole and its trailer checks out; a pack that does not is removed (once the reader has read to the end). */
  private async verdict(): Promise<boolean> {
    if (this.readFailed || this.pos !== this.pack.size) return false;
    if (this.check.ok(this.pack.trailer)) return true;
    this.cache.fallback('corrupt', this.key, 'stored pack failed its trailer check while streaming; removed, the next request produces it again');
    await this.cache.store.remove(this.key).catch(() => undefined);
    return false;
  }

  private async *read(): AsyncGenerator<Buffer> {
    try {
      while (!this.closed) {
        const reading = this.next();
        this.reading = reading;
        const b = await reading;
        this.reading = undefined;
        if (!b || this.closed) break;
        this.cache.stats.bytesServed += b.length;
        yield b;
      }
      const ok = !this.closed && await this.verdict();
      this.resolveDone({ ok, retryable: !ok });
    } finally {
      await this.close();
    }
  }

  private close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.resolveDone({ ok: false });
    this.progress.end();
    // the client left before the end (index-pack may have died on a damaged entry)
    const early = !this.readFailed && this.pos < this.pack.size;
    const rest = (async () => {
      // a read in flight finishes before the descriptor goes (it could be reused at once)
      await this.reading?.catch(() => undefined);
      try {
        // what was not sent is read and hashed too: a damaged entry is removed all the same
        if (!this.readFailed && this.pos < this.pack.size) {
          while (await this.next());
          await this.verdict();
        }
      } finally {
        await this.pack.close().catch(() => undefined);
      }
    })();
    if (!early) return rest;
    // checked in the background; the next request for the key waits for the verdict
    this.cache.checking(this.key, rest);
    return Promise.resolve();
  }

  async abort(): Promise<void> { await this.close(); }
}
