/**
 * The native pack producer: what `git pack-objects --revs --stdout` does
 * for upload-pack, done in this process (issue #37).
 *
 * 1. Enumerate: reachability bitmaps when they can answer the request
 *    (../bitmap/), else a walk (./enumerate/). Both give a PackPlan.
 * 2. Write: the plan as a pack (./write/): existing entries verbatim,
 *    deltas rewritten for the new layout, loose objects deflated afresh
 *    after a delta search (./delta/), the trailer hashed as it streams.
 *
 * All of it is one PackSource for the relay, as pack-objects' pipes are:
 * progress in pack-objects' words on stderr (band 2), the pack on
 * readInto/stdout, `done` saying whether the pack is whole. Enumeration
 * runs while the relay already waits on the source, so the client gets
 * keepalives (and its queue slot is held) as with pack-objects. Every step
 * yields on the shared time slice; abort() (the client left) stops it at
 * once. A failure is said on band 2 as pack-objects dies (`fatal: …`), and
 * the relay then ends the response as git's upload-pack does.
 */
import { GitwireError } from '../../errors.js';
import type { Repository } from '../../repo/repository.js';
import { Slicer } from '../../util/budget.js';
import { bitmapPlan } from '../bitmap/index.js';
import { Queue } from '../cache/progress.js';
import type { PackObjectsRequest } from '../pack-objects.js';
import type { PackSource, PackSourceResult } from '../relay.js';
import { windowSearch } from './delta/writer-seam.js';
import { walkPlan } from './enumerate/index.js';
import type { PackPlan } from './plan.js';
import { ProgressMeter } from './progress.js';
import { listedCount, writePack, type NativePackSource } from './write/index.js';

export interface NativePackOptions {
  /** where a skipped (damaged) bitmap is reported besides band 2, e.g. the server's log */
  warn?: (line: string) => void;
  /** told how the pack was made once it is done (logs, tests) */
  onDone?: (r: NativePackResult) => void;
}

export interface NativePackResult {
  ok: boolean;
  /** how the objects were found */
  source?: PackPlan['source'];
  objects?: number;
  bytes?: number;
  /** ms spent enumerating */
  enumerateMs?: number;
  /** git's lines for damaged bitmaps skipped (with the server's paths: for the log) */
  warnings?: string[];
}

/** Start making the pack for `req`; bytes flow as the relay pulls them. */
export function nativePack(repo: Repository, req: PackObjectsRequest, opts: NativePackOptions = {}): PackSource {
  return new NativeProducer(repo, req, opts);
}

class NativeProducer implements PackSource {
  readonly stderr: Queue = new Queue();
  readonly done: Promise<PackSourceResult>;
  private readonly ac = new AbortController();
  private readonly slicer = new Slicer();
  private readonly writer: Promise<NativePackSource | undefined>;
  private settle!: (r: PackSourceResult) => void;
  private writerProgressDone: Promise<void> = Promise.resolve();
  private readonly warnings: string[] = [];

  constructor(private readonly repo: Repository, private readonly req: PackObjectsRequest, private readonly opts: NativePackOptions) {
    this.done = new Promise((r) => { this.settle = r; });
    this.writer = this.start();
  }

  private say(text: string): void { if (this.req.progress) this.stderr.push(Buffer.from(text)); }

  private async start(): Promise<NativePackSource | undefined> {
    const t0 = performance.now();
    const req = this.req;
    const signal = this.ac.signal;
    const enumerating = req.progress ? new ProgressMeter('Enumerating objects', 0, (t) => this.say(t)) : undefined;
    let plan: PackPlan | undefined;
    try {
      // pack-objects' stderr reaches the client whatever --progress says: so do its warnings
      // (the client is told the file's name, not where the server keeps it; the log gets the path)
      const warn = (line: string) => {
        this.stderr.push(Buffer.from(`${withoutDirs(line)}\n`));
        this.warnings.push(line);
        this.opts.warn?.(line);
      };
      plan = await bitmapPlan(this.repo, req, { signal, slicer: this.slicer, warn });
      plan ??= await walkPlan(this.repo, req, { signal, slicer: this.slicer, warn, onProgress: (n) => enumerating?.display(n) });
    } catch (e) {
      this.fail(e);
      return undefined;
    }
    if (signal.aborted) { this.finish({ ok: false }); return undefined; }
    // git's meter counts every object enumeration met (a thin pack's preferred bases too, never sent)
    const listed = plan.seen ?? listedCount(plan);
    enumerating?.display(listed);
    enumerating?.stop();
    const enumerateMs = performance.now() - t0;
    // (the writer says "Counting objects": how many git counts depends on what its pack reuse takes)
    const w = writePack(this.repo, plan, {
      ofsDelta: req.ofsDelta, progress: req.progress, signal, slicer: this.slicer,
      deltaSearch: windowSearch({ hashLen: this.repo.hashLen, slicer: this.slicer, config: this.repo.config }),
    });
    // the writer's own lines ("Compressing objects", "Total …") follow ours
    // (its `fatal:` line goes whatever --progress says, as pack-objects' last words do)
    this.writerProgressDone = (async () => {
      for await (const b of w.stderr) {
        if (b.subarray(0, 6).toString('latin1') === 'fatal:') this.stderr.push(b); else this.say(b.toString('latin1'));
      }
    })();
    void w.done.then(async (r) => {
      await this.writerProgressDone;
      this.finish(r, { source: plan.source, objects: plan.count, bytes: w.stats.bytes, enumerateMs });
    });
    return w;
  }

  private fail(e: unknown): void {
    if (!this.ac.signal.aborted) {
      // as pack-objects dies: its last words on band 2, whatever --progress says, in git's words (a corrupt
      // object is named with the file it is stored in, as git's pack-objects names it)
      const msg = e instanceof GitwireError && (e.code === 'GW_OBJECT_MISSING' || e.code === 'GW_OBJECT_CORRUPT') ? e.message
        : e instanceof GitwireError ? withoutDirs(e.message) : 'cannot enumerate the objects to pack';
      this.stderr.push(Buffer.from(`fatal: ${msg}\n`));
    }
    this.finish({ ok: false });
  }

  private finish(r: PackSourceResult, extra: Omit<NativePackResult, 'ok'> = {}): void {
    this.stderr.end();
    this.settle(r);
    this.opts.onDone?.({ ok: r.ok, ...extra, ...(this.warnings.length ? { warnings: this.warnings } : {}) });
  }

  async readInto(views: Buffer[]): Promise<number> {
    const w = await this.writer;
    if (!w || this.ac.signal.aborted) return 0;
    return w.readInto(views);
  }

  get stdout(): AsyncIterable<Buffer> {
    return this.pull();
  }

  private async *pull(): AsyncGenerator<Buffer> {
    const w = await this.writer;
    if (!w || this.ac.signal.aborted) return;
    yield* w.stdout;
  }

  async abort(): Promise<void> {
    this.ac.abort(new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly'));
    const w = await this.writer.catch(() => undefined);
    if (w) await w.abort();
    else this.finish({ ok: false });
  }
}

/**
 * A line with each absolute path cut to its file name, quoted or not
 * (`'/srv/x.git/objects/pack/p.bitmap'` → `'p.bitmap'`): what the client
 * is told names the file, not where the server keeps it.
 */
export function withoutDirs(line: string): string {
  return line.replace(/'\/[^']*\/([^'/]*)'/g, "'$1'").replace(/(^|\s)\/(?:[^\s']*\/)?([^\s'/]+)/g, '$1$2');
}
