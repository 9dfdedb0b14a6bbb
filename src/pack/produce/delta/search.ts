/**
 * The delta window search (git's find_deltas() and try_delta() in
 * builtin/pack-objects.c), for the objects a pack must otherwise send
 * whole: loose objects, and packed deltas whose base is not sent.
 *
 * Objects are visited in search order (./search-order.ts). Each is tried
 * as a delta against the `window` objects visited just before it, newest
 * first, stopping at the first one of another type; the smallest delta
 * wins, and a later base must beat the best so far. A base already at
 * `depth` is not used. The winning base moves up to just behind the
 * object, so it stays in the window longest.
 *
 * The size a delta may have is git's: half the object less a hash length,
 * scaled down by how deep the base is, so deep chains must pay their way.
 * One difference: git gives up on a delta as soon as its output passes
 * the limit, before taking back the literals a following copy would
 * cover; we give up only once it cannot come back under. So we keep a few
 * deltas git drops, and on git.git histories our delta bytes come out a
 * little under git's (test/pack-delta-search.test.ts; bench/delta.mjs).
 * Pairs git does not try are skipped before loading anything: a target
 * smaller than 1/32 of the base, or one whose size differs from the base's
 * by more than the delta may take.
 *
 * Bounded memory: only the window's objects and indexes are held, at most
 * `windowMemory` bytes of them (the oldest leave first; two always stay, as
 * git's pack.windowMemory), objects over `bigFileThreshold` are not tried,
 * and kept delta bytes are bounded by `deltaCacheSize` (a delta past it is
 * reported by base and size alone, for the writer to make again with
 * createDelta(); the encoder gives the same bytes).
 *
 * Each visited object's base was visited before it: writing objects in
 * visiting order (or any order that writes a base first) keeps every base
 * ahead of its deltas, as OFS_DELTA needs. There are no cycles.
 *
 * It runs on the shared event loop: it gives the loop away on the slicer's
 * time budget between steps (one index build or one delta attempt), and
 * stops with the signal's reason once the signal aborts.
 */
import { GitwireError } from '../../../errors.js';
import type { ObjType } from '../../../repo/object-type.js';
import { Slicer } from '../../../util/budget.js';
import { createDeltaFrom } from './create-delta.js';
import { createDeltaIndex, type DeltaIndex } from './delta-index.js';
import { searchOrder } from './search-order.js';

export interface DeltaObject {
  type: ObjType;
  /** the object's size (what load() gives) */
  size: number;
  /** git's pack_name_hash() of the path it was reached by (0: none) */
  nameHash: number;
  /** its content; called at most once per stay in the window */
  load(): Buffer | Promise<Buffer>;
  /** the client has it (thin pack): a base only, never itself made a delta nor counted */
  preferredBase?: boolean;
  /**
   * how deep the delta chains already hanging on it go (deltas reused from
   * a pack against this object, git's check_delta_limit()): its own delta
   * may be that much shallower
   */
  childDepth?: number;
  /** the pack it is read from, if any (any value that tells packs apart) */
  inPack?: object;
  /**
   * it is stored whole in `inPack`: it is not tried against other objects
   * of that pack (git: the repack that wrote them found no delta worth it)
   */
  storedWhole?: boolean;
}

export interface DeltaChoice {
  /** index (in the input) of the base; visited before this object */
  base: number;
  /** the delta; undefined when the delta cache was full (make it again: createDelta(base, target)) */
  delta: Buffer | undefined;
  deltaSize: number;
  /** length of the chain down to this object (1: its base is whole) */
  depth: number;
}

export interface DeltaSearchOptions {
  /** bases tried per object (git's pack.window, 10) */
  window?: number;
  /** longest delta chain (git's pack.depth, 50) */
  depth?: number;
  /** bytes of an object id (20 for SHA-1, 32 for SHA-256): a delta must save at least that */
  hashLen?: number;
  /** bytes of objects and indexes the window may hold (git's pack.windowMemory; ours bounds it by default) */
  windowMemory?: number;
  /** objects larger than this are sent whole (git's core.bigFileThreshold) */
  bigFileThreshold?: number;
  /** bytes of delta data kept for the writer (git's pack.deltaCacheSize) */
  deltaCacheSize?: number;
  signal?: AbortSignal;
  slicer?: Slicer;
  /** after each object searched ("Compressing objects: done/total") */
  onProgress?: (done: number, total: number) => void;
  /** filled in as the search goes (logs, tests) */
  stats?: DeltaSearchStats;
  /** told the visiting order (input indexes) before the first load, for a caller that reads ahead */
  onOrder?: (order: Uint32Array) => void;
}

export interface DeltaSearchStats {
  /** objects searched (the progress total) */
  searched: number;
  /** deltas made (attempts that gave a delta within the size allowed) */
  attempts: number;
  /** objects given a delta */
  deltas: number;
  loads: number;
  /** most bytes of objects and indexes the window held at once */
  peakWindowBytes: number;
  /** delta bytes handed back, and those dropped past deltaCacheSize */
  cachedBytes: number;
  droppedBytes: number;
}

export function newDeltaStats(): DeltaSearchStats {
  return { searched: 0, attempts: 0, deltas: 0, loads: 0, peakWindowBytes: 0, cachedBytes: 0, droppedBytes: 0 };
}

export const DELTA_DEFAULTS = {
  window: 10,
  depth: 50,
  hashLen: 20,
  /** git has no bound by default; a server needs one per request */
  windowMemory: 64 * 1024 * 1024,
  /** git's is 512 MiB; ours is below windowMemory so one pair fits */
  bigFileThreshold: 16 * 1024 * 1024,
  /** git's is 256 MiB; past it the writer makes the delta again (one createDelta() each) */
  deltaCacheSize: 16 * 1024 * 1024,
} as const;

/** git tries no delta for objects smaller than this */
const MIN_SIZE = 50;

/** One place in the window. */
interface Slot {
  /** input index, -1 when empty */
  obj: number;
  data: Buffer | undefined;
  index: DeltaIndex | undefined;
  /** delta chain depth of this object as chosen */
  depth: number;
}

/** Which objects a search would consider (and count in its progress total). */
export function deltaCandidate(o: DeltaObject, bigFileThreshold: number = DELTA_DEFAULTS.bigFileThreshold): boolean {
  return o.size >= MIN_SIZE && o.size <= bigFileThreshold && o.type >= 1 && o.type <= 4;
}

/**
 * Search deltas for `objs`. Returns, per input index, the chosen delta, or
 * undefined for an object best sent whole (always for preferred bases).
 */
export async function searchDeltas(objs: readonly DeltaObject[], opts: DeltaSearchOptions = {}): Promise<Array<DeltaChoice | undefined>> {
  const s = new Search(objs, opts);
  await s.run();
  return s.choices;
}

/**
 * Whether a search of `objs` would try no pair at all: every object it
 * would consider is stored whole in one and the same pack, and none is a
 * preferred base (git's try_delta() turns each such pair down before
 * loading anything). What a clone or fetch from one repacked pack offers:
 * nothing to sort, search or hand to a thread.
 */
export function noPairTried(objs: readonly DeltaObject[], bigFileThreshold: number = DELTA_DEFAULTS.bigFileThreshold): boolean {
  let pack: object | undefined;
  for (let i = 0; i < objs.length; i++) {
    const o = objs[i]!;
    if (!deltaCandidate(o, bigFileThreshold)) continue;
    if (!o.storedWhole || o.inPack === undefined || o.preferredBase) return false;
    if (pack === undefined) pack = o.inPack;
    else if (o.inPack !== pack) return false;
  }
  return true;
}

class Search {
  readonly choices: Array<DeltaChoice | undefined>;
  private readonly win: number;
  private readonly maxDepth: number;
  private readonly hashLen: number;
  private readonly memLimit: number;
  private readonly big: number;
  private readonly cacheLimit: number;
  private readonly slicer: Slicer;
  private readonly signal: AbortSignal | undefined;
  private readonly slots: Slot[] = [];
  private mem = 0;
  private cached = 0;
  /** the window's ring: the object being searched sits at idx, `count` older ones before it */
  private idx = 0;
  private count = 0;
  // the target being searched: its best delta so far
  private bestBase = -1;
  private bestSize = 0;
  private bestDelta: Buffer | undefined;
  private readonly stats: DeltaSearchStats;

  constructor(private readonly objs: readonly DeltaObject[], private readonly opts: DeltaSearchOptions) {
    this.choices = new Array<DeltaChoice | undefined>(objs.length).fill(undefined);
    // git searches window+1 slots: the object and `window` bases
    this.win = Math.max(0, opts.window ?? DELTA_DEFAULTS.window) + 1;
    this.maxDepth = opts.depth ?? DELTA_DEFAULTS.depth;
    this.hashLen = opts.hashLen ?? DELTA_DEFAULTS.hashLen;
    this.memLimit = opts.windowMemory ?? DELTA_DEFAULTS.windowMemory;
    this.big = opts.bigFileThreshold ?? DELTA_DEFAULTS.bigFileThreshold;
    this.cacheLimit = opts.deltaCacheSize ?? DELTA_DEFAULTS.deltaCacheSize;
    this.slicer = opts.slicer ?? new Slicer();
    this.signal = opts.signal;
    this.stats = opts.stats ?? newDeltaStats();
    for (let i = 0; i < this.win; i++) this.slots.push({ obj: -1, data: undefined, index: undefined, depth: 0 });
  }

  async run(): Promise<void> {
    this.signal?.throwIfAborted();
    const { objs } = this;
    if (this.win < 2 || this.maxDepth <= 0) return;
    if (noPairTried(objs, this.big)) {
      // each pair would be turned down unread (see allowance()): nothing to sort or visit
      let total = 0;
      for (const o of objs) if (deltaCandidate(o, this.big) && !o.preferredBase) total++;
      this.stats.searched = total;
      if (total > 0) this.opts.onProgress?.(total, total);
      return;
    }
    const order = searchOrder(objs, (i) => deltaCandidate(objs[i]!, this.big));
    let total = 0;
    for (const i of order) if (!objs[i]!.preferredBase) total++;
    this.stats.searched = total;
    if (total === 0 || order.length < 2) return;
    this.opts.onOrder?.(order);
    const W = this.win;
    const slots = this.slots;
    let done = 0;
    try {
      for (const obj of order) {
        // most objects take no step that pauses (their pairs end in allowance()): each is a tick
        const p = this.slicer.tick();
        if (p) await p;
        this.signal?.throwIfAborted();
        const idx = this.idx;
        const o = objs[obj]!;
        const n = slots[idx]!;
        this.free(n);
        n.obj = obj;
        this.evict(0, undefined);
        if (!o.preferredBase) {
          const maxDepth = this.maxDepth - (o.childDepth ?? 0);
          if (maxDepth > 0) {
            let best = -1;
            this.bestBase = -1;
            this.bestDelta = undefined;
            for (let j = W - 1; j > 0; j--) {
              const other = (idx + j) % W;
              const m = slots[other]!;
              if (m.obj < 0) break;
              // the pair's cheap rules first, synchronously: most pairs end there (no await per pair)
              const max = this.allowance(n, m, maxDepth);
              if (max < 0) break;
              if (max === 0) continue;
              if (await this.tryDelta(n, m, max)) best = other;
            }
            done++;
            this.opts.onProgress?.(done, total);
            if (best >= 0) {
              this.choices[obj] = { base: this.bestBase, delta: this.bestDelta, deltaSize: this.bestSize, depth: n.depth };
              this.stats.deltas++;
              if (this.bestDelta) this.stats.cachedBytes += this.bestSize;
              else this.stats.droppedBytes += this.bestSize;
              this.bestDelta = undefined;
              // at the depth limit it can be no one's base: let the next object take its place
              if (maxDepth <= n.depth) continue;
              // the base moves up behind the object, to stay longest
              const swap = slots[best]!;
              let dist = (W + idx - best) % W;
              let dst = best;
              while (dist--) {
                const src = (dst + 1) % W;
                slots[dst] = slots[src]!;
                dst = src;
              }
              slots[dst] = swap;
            }
          } else {
            done++;
            this.opts.onProgress?.(done, total);
          }
        }
        if (++this.idx >= W) this.idx = 0;
        if (this.count + 1 < W) this.count++;
      }
    } finally {
      for (const s of slots) this.free(s);
    }
  }

  /**
   * git's try_delta() up to its loads: -1 for another type (stop looking
   * further back), 0 when the pair is not tried, else the size the delta
   * may have.
   */
  private allowance(trg: Slot, src: Slot, maxDepth: number): number {
    const t = this.objs[trg.obj]!;
    const s = this.objs[src.obj]!;
    if (t.type !== s.type) return -1;
    if (t.storedWhole && t.inPack !== undefined && t.inPack === s.inPack && !s.preferredBase) return 0;
    if (src.depth >= maxDepth) return 0;
    const trgSize = t.size;
    let maxSize: number, refDepth: number;
    if (this.bestBase < 0) {
      maxSize = Math.floor(trgSize / 2) - this.hashLen;
      refDepth = 1;
    } else {
      maxSize = this.bestSize;
      refDepth = trg.depth;
    }
    // (git computes this unsigned: for a SHA-256 object of 50–63 bytes, half its size less 32
    // wraps to a huge limit and any delta goes; we try none, as the rule means)
    maxSize = Math.floor(maxSize * (maxDepth - src.depth) / (maxDepth - refDepth + 1));
    if (maxSize <= 0) return 0;
    const srcSize = s.size;
    const sizeDiff = srcSize < trgSize ? trgSize - srcSize : 0;
    if (sizeDiff >= maxSize) return 0;
    if (trgSize < Math.floor(srcSize / 32)) return 0;
    return maxSize;
  }

  /** The rest of try_delta(): load both, index the base, make the delta. Whether it is the best so far. */
  private async tryDelta(trg: Slot, src: Slot, maxSize: number): Promise<boolean> {
    const trgSize = this.objs[trg.obj]!.size;
    const srcSize = this.objs[src.obj]!.size;
    if (!trg.data) {
      this.evict(trgSize, src);
      trg.data = await this.load(trg.obj);
    }
    if (!src.data) {
      this.evict(srcSize * 1.6, src); // the object and its index, about
      src.data = await this.load(src.obj);
    }
    if (!src.index) {
      src.index = createDeltaIndex(src.data);
      this.grew(src.index.memSize);
      await this.pause();
    }
    const delta = createDeltaFrom(src.index, trg.data, maxSize);
    await this.pause();
    if (!delta) return false;
    this.stats.attempts++;
    // of two deltas the same size, keep the shallower
    if (this.bestBase >= 0 && delta.length === this.bestSize && src.depth + 1 >= trg.depth) return false;

    if (this.bestDelta) this.cached -= this.bestDelta.length;
    if (this.cached + delta.length <= this.cacheLimit) {
      this.bestDelta = delta;
      this.cached += delta.length;
    } else {
      this.bestDelta = undefined;
    }
    this.bestBase = src.obj;
    this.bestSize = delta.length;
    trg.depth = src.depth + 1;
    return true;
  }

  private async load(i: number): Promise<Buffer> {
    const o = this.objs[i]!;
    const got = o.load();
    const data = got instanceof Promise ? await got : got;
    if (data.length !== o.size) {
      throw new GitwireError('GW_OBJECT_CORRUPT', `object inconsistent object length (${data.length} vs ${o.size})`);
    }
    this.stats.loads++;
    this.grew(data.length);
    return data;
  }

  /**
   * Make room for `bytes` more under windowMemory: the oldest objects leave
   * the window (git evicts so as each object enters; we also do before each
   * load, so the bound holds while bases load). The object searched, one
   * base and `keep` always stay.
   */
  private evict(bytes: number, keep: Slot | undefined): void {
    if (this.memLimit <= 0) return;
    const W = this.win;
    while (this.mem + bytes > this.memLimit && this.count > 1) {
      const tail = this.slots[(this.idx + W - this.count) % W]!;
      if (tail === keep) return;
      this.free(tail);
      this.count--;
    }
  }

  private grew(bytes: number): void {
    this.mem += bytes;
    if (this.mem > this.stats.peakWindowBytes) this.stats.peakWindowBytes = this.mem;
  }

  private async pause(): Promise<void> {
    const p = this.slicer.due();
    if (p) await p;
    this.signal?.throwIfAborted();
  }

  private free(s: Slot): void {
    if (s.data) this.mem -= s.data.length;
    if (s.index) this.mem -= s.index.memSize;
    s.obj = -1;
    s.data = undefined;
    s.index = undefined;
    s.depth = 0;
  }
}
