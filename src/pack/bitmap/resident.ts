/**
 * Loaded bitmaps kept between requests: one process-wide cache bounded by
 * bytes, least recently used first out, shared by every repository.
 *
 * An entry is named by its .bitmap file (path and stat identity). Each
 * open repository (its object database) that used an entry holds it; an
 * entry is dropped when the last of them closes — the repository pool
 * closes a repository when its pack set changes (a new pack, a repack, a
 * new midx) or when it evicts it — or when the budget needs the room.
 * A file that could not be used is remembered too (with git's message),
 * so a damaged bitmap costs one look, not one per request.
 */
import type { ObjectDatabase } from '../../repo/odb.js';
import type { BitmapIndex } from './bitmap-index.js';

export const DEFAULT_BITMAP_BUDGET = 256 * 1024 * 1024;

export interface ResidentEntry {
  readonly key: string;
  /** the loaded bitmap, or undefined when the file cannot be used */
  readonly index: BitmapIndex | undefined;
  /** why it cannot be used: the line git prints */
  readonly failure: string | undefined;
  bytes: number;
  /** databases holding it */
  readonly owners: Set<ObjectDatabase>;
}

export class ResidentBitmaps {
  private readonly entries = new Map<string, ResidentEntry>();
  /** the keys each database holds */
  private readonly held = new WeakMap<ObjectDatabase, Set<string>>();
  readonly stats = { loads: 0, hits: 0, evictions: 0, drops: 0 };

  /**
   * Load bitmaps light (BitmapIndex.forPack): nothing built per object.
   * For a process that answers one request (`gitwire upload-pack`), where
   * the tables a resident bitmap keeps would cost more to build than the
   * request's lookups.
   */
  light = false;

  constructor(public limit = DEFAULT_BITMAP_BUDGET) {}

  /** Bytes held by every entry. */
  get bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.bytes;
    return n;
  }

  get size(): number { return this.entries.size; }

  /** loads under way, by key: requests asking meanwhile wait for the same one */
  private readonly loading = new Map<string, Promise<{ index?: BitmapIndex; failure?: string }>>();

  /**
   * The entry for `key`, loaded by `load` when it is not held (one load
   * at a time per key), and held for `odb` until that database closes.
   */
  async get(key: string, odb: ObjectDatabase, load: () => Promise<{ index?: BitmapIndex; failure?: string }>): Promise<ResidentEntry> {
    let e = this.entries.get(key);
    if (e) {
      this.stats.hits++;
      this.entries.delete(key);
      this.entries.set(key, e);
    } else {
      let p = this.loading.get(key);
      if (!p) {
        this.stats.loads++;
        p = load().finally(() => this.loading.delete(key));
        this.loading.set(key, p);
      }
      const r = await p;
      e = this.entries.get(key);
      if (!e) {
        e = { key, index: r.index, failure: r.failure, bytes: r.index ? r.index.bytes : 256, owners: new Set() };
        this.entries.set(key, e);
      }
    }
    this.hold(e, odb);
    this.trim(e);
    return e;
  }

  private hold(e: ResidentEntry, odb: ObjectDatabase): void {
    if (e.owners.has(odb)) return;
    e.owners.add(odb);
    let keys = this.held.get(odb);
    if (!keys) {
      keys = new Set();
      this.held.set(odb, keys);
      odb.onClose(() => this.release(odb));
    }
    keys.add(e.key);
  }

  /** `odb` closed: entries no other database holds are dropped. */
  private release(odb: ObjectDatabase): void {
    const keys = this.held.get(odb);
    this.held.delete(odb);
    if (!keys) return;
    for (const k of keys) {
      const e = this.entries.get(k);
      if (!e) continue;
      e.owners.delete(odb);
      if (e.owners.size === 0) { this.entries.delete(k); this.stats.drops++; }
    }
  }

  /** An entry's bytes changed (bitmaps resolved while it was used): account and trim. */
  update(e: ResidentEntry): void {
    if (e.index) e.bytes = e.index.bytes;
    this.trim(e);
  }

  /** Drop least recently used entries until within the budget (`keep` stays, even alone over it). */
  trim(keep?: ResidentEntry): void {
    let total = this.bytes;
    for (const [k, e] of this.entries) {
      if (total <= this.limit) break;
      if (e === keep) continue;
      this.entries.delete(k);
      total -= e.bytes;
      this.stats.evictions++;
    }
  }

  /** Forget every entry. */
  clear(): void { this.entries.clear(); }
}

/** The process's resident bitmaps. */
export const residentBitmaps = new ResidentBitmaps();

/** Set the process-wide byte budget for resident bitmaps (0: keep none between requests). */
export function setBitmapBudget(bytes: number): void {
  if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError(`bitmap budget: expected a number of bytes >= 0, not ${bytes}`);
  residentBitmaps.limit = bytes;
  residentBitmaps.trim();
}

/** Load bitmaps light from now on (a one-shot process: see ResidentBitmaps.light). */
export function setLightBitmaps(on: boolean): void {
  residentBitmaps.light = on;
}
