/**
 * writePack(): a PackPlan as a PackSource for relaySource(), producing the
 * pack as the relay pulls it.
 *
 * - Each pull does a bounded amount of work (it fills the views it is
 *   given, about one frame block) and gives the event loop away between
 *   pulls on the shared time slice (util/budget.ts), so a fast client never
 *   holds the loop and a slow one holds nothing but this state.
 * - The pack is hashed as it goes out; the trailer is that hash. A source
 *   that turns out damaged (CRC, zlib, truncation, a pack closed under the
 *   request) ends the pack with `done` → ok: false and a `fatal:` line on
 *   band 2, as pack-objects dies; the relay then never shows it complete.
 * - `abort()` (client gone, signal) stops at once and releases the state.
 */
import { createHash, type Hash } from 'node:crypto';
import type { Repository } from '../../../repo/repository.js';
import { GitwireError } from '../../../errors.js';
import { Slicer } from '../../../util/budget.js';
import { Queue } from '../../cache/progress.js';
import type { PackSource, PackSourceResult } from '../../relay.js';
import type { PackFile } from '../../../repo/pack.js';
import type { PackPlan } from '../plan.js';
import { ProgressMeter, totalLine, type PackWriteCounts } from '../progress.js';
import { packCompressionLevel } from './deflater.js';
import type { BaseCandidate, DeltaSearch, SearchedDelta, WholeCandidate } from './delta-seam.js';
import { DELTA_DEFAULTS } from '../delta/index.js';
import { wholeCandidates } from './candidates.js';
import { isIdentityRanks } from '../identity-ranks.js';
import { layOut, type Layout } from './layout.js';
import { PackStream } from './stream.js';
import { VerbatimPack } from './verbatim.js';

export interface WritePackOptions {
  /** the client takes OFS_DELTA (else every delta goes as REF_DELTA) */
  ofsDelta: boolean;
  /** band-2 progress in pack-objects' words */
  progress: boolean;
  signal?: AbortSignal;
  /** check each reused entry's CRC-32 against its .idx (default true) */
  verifyCrc?: boolean;
  /** zlib level for objects deflated afresh (default: pack.compression, core.compression, -1) */
  compression?: number;
  /** a delta search for the objects that would go whole (src/pack/produce/delta/) */
  deltaSearch?: DeltaSearch;
  /** the event-loop slice shared with other work (default: a slicer of its own, 2 ms) */
  slicer?: Slicer;
}

/** What a finished (or failed) write did, for logs and stats. */
export interface WritePackStats extends PackWriteCounts {
  bytes: number;
  /** bytes of a whole pack sent as it is that were hashed to check it (0 when its file was verified before) */
  verbatimHashed?: number;
  /** the error that ended it, when it failed */
  error?: unknown;
}

/** bytes of the stream one pull makes at most (what a frame block held before blocks grew to 2 MiB for whole packs) */
const PULL_MAX = 8 * 65515;

/** git tries no delta for an object smaller than this (should_attempt_deltas) */
const MIN_DELTA_SIZE = 50;

export function writePack(repo: Repository, plan: PackPlan, opts: WritePackOptions): NativePackSource {
  return new NativePackSource(repo, plan, opts);
}

export class NativePackSource implements PackSource {
  readonly stderr: AsyncIterable<Buffer>;
  readonly stdout: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  readonly stats: WritePackStats = { written: 0, writtenDelta: 0, reused: 0, reusedDelta: 0, packReused: 0, packsReused: 0, bytes: 0 };
  private resolveDone!: (r: PackSourceResult) => void;
  private readonly progressQ = new Queue();
  private readonly hash: Hash;
  private readonly slicer: Slicer;
  private closed = false;
  private finished = false;
  private stream?: PackStream;
  private verbatim?: VerbatimPack;
  /** counts for the closing line (the stream's, or the verbatim pack's) */
  private counts: PackWriteCounts = { written: 0, writtenDelta: 0, reused: 0, reusedDelta: 0, packReused: 0, packsReused: 0 };
  private gen?: Generator<Buffer>;
  private pending: Buffer | undefined;
  private pendingAt = 0;
  private trailerSent = false;
  private starting?: Promise<void>;
  private readonly onAbort = () => { void this.abort(); };

  constructor(private readonly repo: Repository, private readonly plan: PackPlan, private readonly opts: WritePackOptions) {
    this.done = new Promise((r) => { this.resolveDone = r; });
    this.hash = createHash(repo.format === 'sha256' ? 'sha256' : 'sha1');
    this.slicer = opts.slicer ?? new Slicer();
    this.stderr = this.progressQ;
    this.stdout = this.iterate();
    if (opts.signal) {
      if (opts.signal.aborted) queueMicrotask(this.onAbort);
      else opts.signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Lay out the plan (sliced), run the delta search if any, and set up the stream. */
  private async start(): Promise<void> {
    const whole = this.opts.ofsDelta && this.plan.source === 'bitmap' && allowsPackReuse(this.repo) ? wholePackOf(this.plan) : undefined;
    if (whole) {
      // one whole pack: its file as it is (no layout: nothing is located, rewritten or checked entry by entry)
      this.verbatim = new VerbatimPack(whole, this.repo.format === 'sha256' ? 'sha256' : 'sha1');
      const n = this.plan.count;
      Object.assign(this.counts, { written: n, packReused: n, packsReused: n > 0 ? 1 : 0 });
      return;
    }
    const layout = await layOut(this.repo.odb, this.plan, this.slicer, () => this.closed);
    if (this.closed) return;
    // every pack opened now: a `git repack` that deletes one later leaves it readable to this request
    for (const g of layout.groups) void g.pack.fd;
    const level = this.opts.compression ?? packCompressionLevel((k) => {
      const v = this.repo.config.get(k);
      return typeof v === 'string' ? this.repo.config.getInt(k, -1) : undefined;
    });
    const only = layout.groups[0];
    if (layout.groups.length === 1 && only!.wholePack && layout.loose.length === 0 && this.opts.ofsDelta) {
      // one whole pack named object by object (ids): its file as it is
      const n = layout.count;
      if (only!.reuse && this.plan.source === 'bitmap' && allowsPackReuse(this.repo)) Object.assign(this.counts, { written: n, packReused: n, packsReused: n > 0 ? 1 : 0 });
      else {
        // git reuses a pack as it is only from a bitmap: found by a walk, every entry is reused one by
        // one, and the ones stored whole go through the delta search (which finds nothing new in a pack
        // that git's own search wrote; the same is true of ours: stored-whole pairs are not tried)
        const stored = { whole: 0 };
        const whole = await wholeCandidates(this.repo.odb, layout, this.plan.clientHas, this.slicer, () => this.closed, stored);
        if (this.closed) return;
        this.countingLine(listedCount(this.plan));
        this.compressingLine(whole, 0);
        // (the candidates leave out what is under 50 bytes: the deltas are what is not stored whole)
        const deltas = n - stored.whole;
        Object.assign(this.counts, { written: n, writtenDelta: deltas, reused: n, reusedDelta: deltas });
      }
      this.verbatim = new VerbatimPack(only!.pack, this.repo.format === 'sha256' ? 'sha256' : 'sha1');
      return;
    }
    // what git's pack reuse sends as it stands (from a bitmap's reused pack), found with what would go whole
    const packReused = this.plan.source === 'bitmap' && allowsPackReuse(this.repo) && layout.groups.some((g) => g.reuse) ? new Uint8Array(layout.count) : undefined;
    const candidates = this.opts.deltaSearch || packReused ? await wholeCandidates(this.repo.odb, layout, this.plan.clientHas, this.slicer, () => this.closed, undefined, packReused) : [];
    if (this.closed) return;
    // pack-objects counts (check_object()) what its pack reuse left to it
    let reusedN = 0;
    if (packReused) for (let i = 0; i < packReused.length; i++) reusedN += packReused[i]!;
    this.countingLine(listedCount(this.plan) - reusedN);
    const searched = await this.search(layout, candidates);
    if (this.closed) return;
    this.stream = new PackStream(this.repo.odb, layout, {
      ofsDelta: this.opts.ofsDelta, clientHas: this.plan.clientHas, verifyCrc: this.opts.verifyCrc ?? true, level, searched: searched?.found, candidates: searched?.candidates, packReused,
    });
    this.counts = this.stream.counts;
    this.gen = this.stream.bytes();
  }

  /** pack-objects' "Counting objects" line over `n` objects (none for none). */
  private countingLine(n: number): void {
    if (!this.opts.progress || this.plan.count === 0 || n <= 0) return;
    const meter = new ProgressMeter('Counting objects', n, (t) => this.say(t));
    meter.display(n);
    meter.stop();
  }

  /** Offer the objects that would go out whole to the delta search. */
  private async search(layout: Layout, candidates: WholeCandidate[]): Promise<{ found: Map<number, SearchedDelta>; candidates: Set<number> } | undefined> {
    const ds = this.opts.deltaSearch;
    if (!ds || candidates.length === 0 || this.closed) return undefined;
    const odb = this.repo.odb;
    // git counts what it searches; objects whose delta is reused are not among them
    const meter = this.compressingMeter(candidates, this.plan.preferredBases && this.plan.clientHas ? this.plan.preferredBases.count : 0);
    const helper = new PackStream(odb, layout, { ofsDelta: true, verifyCrc: false, level: 0 });
    const read = (e: number) => {
      if (e >= layout.looseStart) return odb.readAt({ kind: 'loose', path: layout.loose[e - layout.looseStart]!.path }).data;
      const g = helper.groupOf(e);
      const r = layout.ranks[e]!;
      return odb.readAt({ kind: 'packed', pack: g.pack, pos: g.positions[r]!, offset: g.offsets[r]! }).data;
    };
    // a thin pack's preferred bases (the client's objects at the same paths) join the window as bases only
    const pb = this.plan.preferredBases;
    const bases: BaseCandidate[] = [];
    if (pb && this.plan.clientHas) {
      const h = this.repo.hashLen;
      for (let i = 0; i < pb.count; i++) {
        const oid = pb.ids.subarray(i * h, (i + 1) * h);
        const info = odb.info(oid, { quick: true });
        if (info) bases.push({ oid, type: info.type, size: info.size, name: pb.names?.[i] ?? 0 });
      }
    }
    const readBase = (oid: Buffer) => {
      const o = odb.read(oid, { quick: true });
      if (!o) throw new GitwireError('GW_OBJECT_MISSING', `missing delta base ${oid.toString('hex')}`);
      return o.data;
    };
    const found = await ds({ candidates, bases, read, readBase, signal: this.opts.signal, onProgress: meter ? (n) => meter.display(Math.min(n, meter.total)) : undefined });
    meter?.display(meter.total);
    meter?.stop();
    return { found: new Map(found.map((d) => [d.entry, d])), candidates: new Set(candidates.map((c) => c.entry)) };
  }

  /**
   * pack-objects' "Compressing objects" meter over `candidates` (what
   * would go whole): git's total is the objects it tries deltas for
   * (should_attempt_deltas: 50 bytes or more, not past
   * core.bigFileThreshold; not the preferred bases), shown when there is
   * one and, bases included, more than one object in the list. Undefined
   * when git shows no such line (or progress is off).
   */
  private compressingMeter(candidates: readonly WholeCandidate[], bases: number): ProgressMeter | undefined {
    if (!this.opts.progress) return undefined;
    const big = bigFileThreshold(this.repo);
    let total = 0;
    // (the search's own test, deltaCandidate() in ../delta/search.ts)
    for (const c of candidates) if (c.size >= MIN_DELTA_SIZE && c.size <= big && c.type >= 1 && c.type <= 4) total++;
    if (total === 0 || total + bases < 2) return undefined;
    return new ProgressMeter('Compressing objects', total, (t) => this.say(t));
  }

  /** The meter's line whole, for a list that is searched at once (or, stored whole in git's own pack, finds nothing). */
  private compressingLine(candidates: readonly WholeCandidate[], bases: number): void {
    const meter = this.compressingMeter(candidates, bases);
    meter?.display(meter.total);
    meter?.stop();
  }

  private say(text: string): void {
    if (!this.closed) this.progressQ.push(Buffer.from(text, 'utf8'));
  }

  /** PackSource.readInto: the next bytes of the pack into `views`. */
  async readInto(views: Buffer[]): Promise<number> {
    if (this.closed) return 0;
    try {
      if (!this.gen && !this.verbatim) {
        this.starting ??= this.start();
        await this.starting;
      } else if (this.gen) {
        const p = this.slicer.due();
        if (p) await p;
      }
      if (this.closed) return 0;
      let n: number;
      if (this.verbatim) {
        n = await this.verbatim.readInto(views);
        if (this.closed) return 0;
        this.stats.bytes += n;
      } else n = this.fill(views);
      if (n > 0) return n;
      this.finish(true);
      return 0;
    } catch (e) {
      this.fail(e);
      return 0;
    }
  }

  /**
   * Fill `views` from the stream (synchronously), up to PULL_MAX bytes (the
   * relay sends what a pull gave: a block's worth of entries rewritten or
   * deflated afresh would hold the loop); 0 only at the end.
   */
  private fill(views: Buffer[]): number {
    let total = 0;
    for (const v0 of views) {
      if (total >= PULL_MAX) break;
      const v = v0.length > PULL_MAX - total ? v0.subarray(0, PULL_MAX - total) : v0;
      let at = 0;
      while (at < v.length) {
        if (!this.pending) {
          if (!this.next()) return total + at;
          continue;
        }
        const b = this.pending;
        const k = Math.min(v.length - at, b.length - this.pendingAt);
        b.copy(v, at, this.pendingAt, this.pendingAt + k);
        at += k;
        this.pendingAt += k;
        if (this.pendingAt === b.length) this.pending = undefined;
      }
      total += at;
    }
    return total;
  }

  /** Take the next chunk (hashed as it is taken); false after the trailer. */
  private next(): boolean {
    if (this.trailerSent) return false;
    const r = this.gen!.next();
    if (!r.done) {
      if (r.value.length === 0) return true;
      this.hash.update(r.value);
      this.stats.bytes += r.value.length;
      this.pending = r.value;
      this.pendingAt = 0;
      return true;
    }
    const digest = this.hash.digest();
    this.trailerSent = true;
    this.stats.bytes += digest.length;
    this.pending = digest;
    this.pendingAt = 0;
    return true;
  }

  private async *iterate(): AsyncGenerator<Buffer> {
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (;;) {
      const n = await this.readInto([buf]);
      if (n === 0) return;
      yield buf.subarray(0, n);
    }
  }

  private finish(ok: boolean): void {
    if (this.finished) return;
    this.finished = true;
    if (this.verbatim) this.stats.verbatimHashed = this.verbatim.hashed;
    if (ok) {
      Object.assign(this.stats, this.counts);
      if (this.opts.progress) this.say(totalLine(this.counts));
    }
    this.release();
    this.resolveDone({ ok });
  }

  private fail(e: unknown): void {
    if (this.finished) return;
    this.stats.error = e;
    if (!this.closed) {
      // as pack-objects dies: its last words on band 2 (without server paths)
      const msg = e instanceof GitwireError && e.code === 'GW_OBJECT_MISSING' ? e.message : 'pack source is damaged; cannot write the pack';
      this.say(`fatal: ${msg}\n`);
    }
    this.finish(false);
  }

  private release(): void {
    this.closed = true;
    this.opts.signal?.removeEventListener('abort', this.onAbort);
    try { this.gen?.return(undefined); } catch { /* ended */ }
    this.stream?.close();
    this.verbatim?.close();
    this.gen = undefined;
    this.pending = undefined;
    this.progressQ.end();
  }

  async abort(): Promise<void> {
    if (this.finished) { this.release(); return; }
    this.closed = true;
    this.finish(false);
    await this.starting?.catch(() => undefined);
  }
}

/** The objects of git's list for `plan`: the plan's, and a thin pack's preferred bases (never sent). */
export function listedCount(plan: PackPlan): number {
  return plan.count + (plan.clientHas ? plan.preferredBases?.count ?? 0 : 0);
}

/**
 * The pack a plan is, whole and in its own order: one part of ranks that
 * are every rank of the pack, 0 to n-1 (what a clone from one bitmapped
 * pack plans), so that nothing of it needs laying out. Undefined for any
 * other plan (layOut() then checks it and finds the same when the plan
 * names the pack's objects otherwise).
 */
export function wholePackOf(plan: PackPlan): PackFile | undefined {
  const only = plan.parts[0];
  if (plan.parts.length !== 1 || only?.kind !== 'ranks' || plan.count !== only.ranks.length) return undefined;
  const pack = only.pack;
  if (only.ranks.length !== pack.index.count || pack.size <= pack.hashLen) return undefined;
  return isIdentityRanks(only.ranks) ? pack : undefined;
}

/** core.bigFileThreshold as git reads it (objects larger are never tried for a delta). */
function bigFileThreshold(repo: Repository): number {
  try {
    const v = repo.config.get('core.bigfilethreshold');
    if (typeof v !== 'string') return DELTA_DEFAULTS.bigFileThreshold;
    const n = repo.config.getInt('core.bigfilethreshold', DELTA_DEFAULTS.bigFileThreshold);
    return n > 0 ? n : DELTA_DEFAULTS.bigFileThreshold;
  } catch { return DELTA_DEFAULTS.bigFileThreshold; }
}

/**
 * Whether git would send runs of a bitmapped pack as they are
 * (pack.allowPackReuse, default true): then what a bitmap found of one
 * pack, sent whole, is "pack-reused", never counted or searched.
 */
export function allowsPackReuse(repo: Repository): boolean {
  return packReuseMode(repo) !== 'none';
}

/**
 * pack.allowPackReuse as pack-objects reads it: a boolean (true: single),
 * or "single" or "multi"; what it cannot read is git's default, single.
 */
export function packReuseMode(repo: Repository): 'none' | 'single' | 'multi' {
  const v = repo.config.get('pack.allowpackreuse');
  if (v === undefined) return 'single';
  if (typeof v === 'string') {
    const l = v.toLowerCase();
    if (l === 'single' || l === 'multi') return l;
  }
  try { return repo.config.getBool('pack.allowpackreuse', true) ? 'single' : 'none'; } catch { return 'single'; }
}
