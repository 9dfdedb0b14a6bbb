/**
 * The object database: loose objects, packs (through their .idx), and
 * alternates. Every object is located once; its type, size and content
 * come from that one location.
 *
 * Packs and their indexes are opened on the first lookup that needs them
 * and read in place. A lookup miss rescans objects/pack (so a concurrent
 * `git repack` does not make objects vanish), but only when the directory
 * changed or a short interval passed; `quick` lookups never rescan (git's
 * OBJECT_INFO_QUICK, for negotiation haves).
 *
 * Deltas are resolved through a delta-base cache keyed by pack offset
 * and bounded in bytes (git's core.deltaBaseCacheLimit).
 */
import { closeSync, existsSync, fstatSync, openSync, opendirSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inflateSync } from 'node:zlib';
import { GitwireError } from '../errors.js';
import type { Config } from './config.js';
import { CommitGraph, GraphCorrupt, type GraphCommit } from './commit-graph.js';
import { applyDelta, applyDeltaIn, deltaResultSize, deltaResultSizeAt } from './delta.js';
import { InflateCursor, InflateError, Inflater, cursorChunks, sharedInflater, type Feed } from './inflate.js';
import { readAlternates } from './alternates.js';
import { ByteLru, type LruSpace } from './lru.js';
import { MultiPackIndex } from './midx.js';
import { ObjType, typeFromName } from './object-type.js';
import { PackFile, checkSize, packWindows, reserveWindows, setPackWindowLimits, type EntryHeader, type PackInfoTable } from './pack.js';

export interface RawObject { type: ObjType; data: Buffer }
/** a pack-order walk's bookkeeping, by rank in pack order */
/** per pack: its delta bases in the shared cache, and resolved types of its delta entries */
interface PackState { bases: LruSpace<CachedObject>; types: Map<number, ObjType> }
interface WalkPlan { base: Int32Array; kids: Uint8Array; offsets: Float64Array }
/** a delta-base cache entry: the object and its depth in its delta chain */
interface CachedObject extends RawObject { depth: number }
export interface ObjectInfo {
  type: ObjType;
  size: number;
  /** bytes on disk (compressed entry, or loose file size) */
  diskSize?: number;
  /** for a packed delta: its base id */
  deltaBase?: Buffer;
}

/** An object on its way out: small ones whole, large non-delta ones as chunks inflated on demand. */
export interface OutputObject {
  type: ObjType;
  size: number;
  data?: Buffer;
  chunks?: Generator<Buffer>;
}

export type Location =
  | { kind: 'loose'; path: string }
  | { kind: 'packed'; pack: PackFile; pos: number; offset: number; /** place in pack order, during a pack-order walk */ rank?: number };

export interface WalkOptions {
  /** the walk needs types and sizes only (cat-file --batch-check): build header tables */
  infoOnly?: boolean;
}

export interface LookupOptions {
  /** do not rescan objects/pack on a miss (git's OBJECT_INFO_QUICK) */
  quick?: boolean;
}

export interface InfoOptions extends LookupOptions {
  /** also report %(objectsize:disk) */
  disk?: boolean;
}

/** git's cache knobs, in bytes. */
export interface OdbLimits {
  /** core.deltaBaseCacheLimit (default 96 MiB) */
  deltaBaseCacheLimit?: number;
  /** core.packedGitLimit: bytes of pack windows held (process-wide) */
  packedGitLimit?: number;
  /** core.packedGitWindowSize */
  packedGitWindowSize?: number;
  /** core.bigFileThreshold: non-delta objects above min(this, 8 MiB) are streamed, never held */
  bigFileThreshold?: number;
}

export interface OdbOptions extends OdbLimits {
  /** directory listing used for pack scans (injectable: tests count scans) */
  readdir?: (dir: string) => string[];
  /** a miss rescans an unchanged objects/pack at most this often (ms) */
  rescanInterval?: number;
}

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);
/** git's words for a loose object it cannot read: its id and its file (objects/xx/rest gives the id) */
function looseCorrupt(path: string): GitwireError {
  const m = /([0-9a-f]{2})[\\/]([0-9a-f]{38}|[0-9a-f]{62})$/.exec(path);
  return corrupt(m ? `loose object ${m[1]}${m[2]} (stored in ${path}) is corrupt` : `loose object ${path} is corrupt`);
}

export const DEFAULT_DELTA_BASE_CACHE = 96 << 20;
/** objects above this are streamed when they can be (loose or non-delta packed) */
export const STREAM_THRESHOLD = 8 << 20;

/** Read git's cache settings from config (invalid numbers fail as in git). */
export function limitsFromConfig(config: Config): OdbLimits {
  const l: OdbLimits = {};
  const n = (key: string) => {
    const v = config.get(key);
    return v === undefined ? undefined : config.getInt(key, 0);
  };
  const dbc = n('core.deltaBaseCacheLimit');
  if (dbc !== undefined) l.deltaBaseCacheLimit = dbc;
  const lim = n('core.packedGitLimit');
  if (lim !== undefined) l.packedGitLimit = lim;
  const ws = n('core.packedGitWindowSize');
  if (ws !== undefined) l.packedGitWindowSize = Math.max(1, Math.floor(ws / 8192)) * 8192; // a multiple of 2 pages, as git
  const big = n('core.bigFileThreshold');
  if (big !== undefined) l.bigFileThreshold = big;
  return l;
}

function defaultReaddir(dir: string): string[] {
  // directory order (not sorted), as git's readdir loop sees it
  const d = opendirSync(dir);
  const names: string[] = [];
  try { for (let e = d.readSync(); e; e = d.readSync()) names.push(e.name); } finally { d.closeSync(); }
  return names;
}

/** One object directory (the repository's own or an alternate). */
export class Source {
  packs: PackFile[] = [];
  readonly packNames = new Set<string>();
  /** packs by .idx file name, for multi-pack-index lookups */
  readonly byIdx = new Map<string, PackFile>();
  midxPath: string | undefined;
  private midxLoaded: MultiPackIndex | undefined | null = null; // null: not loaded yet
  midxStamp = '';
  /** objects/pack's change time at the last scan */
  scanStamp = -1n;
  scanAt = 0;

  constructor(readonly objectsDir: string, private readonly hashLen: number) {}

  /** The multi-pack-index, opened on first use. */
  get midx(): MultiPackIndex | undefined {
    if (this.midxLoaded === null) {
      this.midxLoaded = undefined;
      if (this.midxPath) {
        try { this.midxLoaded = MultiPackIndex.open(this.midxPath, this.hashLen); } catch { this.midxLoaded = undefined; }
      }
    }
    return this.midxLoaded;
  }

  resetMidx(path: string | undefined, stamp: string): void {
    if (path === this.midxPath && stamp === this.midxStamp) return;
    this.midxLoaded?.close();
    this.midxLoaded = null;
    this.midxPath = path;
    this.midxStamp = stamp;
  }

  close(): void {
    for (const p of this.packs) p.close();
    this.midxLoaded?.close();
  }
}

function parseLooseHeader(buf: Buffer, n: number, path: string): { type: ObjType; size: number; at: number } {
  const sp = buf.indexOf(0x20);
  const nul = buf.indexOf(0);
  if (sp < 0 || nul < sp || nul >= n) throw looseCorrupt(path);
  const type = typeFromName(buf.toString('latin1', 0, sp));
  const digits = buf.toString('latin1', sp + 1, nul);
  if (type === undefined || !/^\d+$/.test(digits)) throw looseCorrupt(path);
  return { type, size: Number(digits), at: nul + 1 };
}

/** Loose headers are short ("blob 1234567\0"); git reads at most this much for them. */
const LOOSE_HEADER_MAX = 64;
const looseHeaderScratch = Buffer.allocUnsafe(LOOSE_HEADER_MAX);

/** Bytes of a loose file, read on demand (for streaming and headers). */
function fdFeed(fd: number, size: number, scratch: Buffer): Feed {
  return (pos: number) => {
    if (pos >= size) return undefined;
    const n = readSync(fd, scratch, 0, Math.min(scratch.length, size - pos), pos);
    return n > 0 ? scratch.subarray(0, n) : undefined;
  };
}

/**
 * The loose-object fan-out directories (`00`…`ff`) present, in ascending
 * order: one directory listing instead of 256 failed opens (each an
 * exception) in a packed repository.
 */
function looseDirs(objectsDir: string): string[] {
  let names: string[];
  try { names = readdirSync(objectsDir); } catch { return []; }
  return names.filter((n) => n.length === 2 && /^[0-9a-f]{2}$/.test(n)).sort();
}

const DELTA_HEAD = 24;
/** scratch buffers grow up to this; larger results get their own buffer */
const SCRATCH_MAX = 16 << 20;
/** share of the delta-base cache a sorted walk plans to fill (memory stays well under the limit) */
const SORTED_WALK_SHARE = 0.4;
/** the checkpoint spacing for reads by name (outside walks that plan their own) */
const BUSY_CHECKPOINT = 8;
/** header tables (17 bytes an entry) are built for packs of at most this many objects */
const INFO_TABLE_MAX = 8_000_000; // two varints of at most 10 bytes (64-bit sizes), with room

export class ObjectDatabase {
  readonly sources: Source[] = [];
  /** delta bases keyed by (pack, offset), bounded in bytes (git's delta_base_cache) */
  readonly cache: ByteLru<CachedObject>;
  private readonly readdir: (dir: string) => string[];
  private readonly rescanInterval: number;
  readonly streamThreshold: number;
  private readonly windowSize: number | undefined;
  private readonly packStates = new Map<PackFile, PackState>();
  /** the last pack asked for in state(), and its state */
  private lastStatePack: PackFile | undefined;
  private lastState: PackState | undefined;
  private readonly walkPlans = new Map<PackFile, WalkPlan>();
  /** during a walk that only needs headers: every entry's type and size, per pack */
  private infoTables: Map<PackFile, PackInfoTable> | undefined;
  /** lookups answered by a multi-pack-index (observable for tests) */
  midxHits = 0;
  /** directory scans of objects/pack made so far (observable for tests) */
  scans = 0;
  private deltaScratch = Buffer.allocUnsafe(64 * 1024);
  /** delta application space for readPacked: four regions of arenaCap bytes (three results, one delta) */
  private arena = Buffer.allocUnsafeSlow(4 * 64 * 1024);
  private arenaCap = 64 * 1024;
  /** two buffers for intermediate delta results, one for a transient final result */
  private readonly scratches: [Buffer, Buffer, Buffer] = [Buffer.allocUnsafe(64 * 1024), Buffer.allocUnsafe(64 * 1024), Buffer.allocUnsafe(64 * 1024)];
  /** keep intermediate delta results at every n-th depth of a chain (1: every one, as git, until an eighth of the cache is used; 0: BUSY_CHECKPOINT, for reads by name) */
  checkpoint = 0;
  private readonly headScratch = Buffer.allocUnsafe(DELTA_HEAD);
  /** whether git would use a commit-graph here (set by the repository; asked once, on first use) */
  commitGraphGate: () => boolean = () => true;
  private graph: CommitGraph | undefined | null = null; // null: not opened yet

  constructor(objectsDir: string, readonly hashLen: number, extraAlternates: string[] = [], opts: OdbOptions = {}) {
    this.cache = new ByteLru<CachedObject>(opts.deltaBaseCacheLimit ?? DEFAULT_DELTA_BASE_CACHE);
    this.readdir = opts.readdir ?? defaultReaddir;
    this.rescanInterval = opts.rescanInterval ?? 1000;
    this.streamThreshold = Math.max(1, Math.min(opts.bigFileThreshold ?? Infinity, STREAM_THRESHOLD));
    if (opts.packedGitLimit !== undefined || opts.packedGitWindowSize !== undefined) {
      setPackWindowLimits({ limit: opts.packedGitLimit, windowSize: opts.packedGitWindowSize });
    }
    this.windowSize = opts.packedGitWindowSize;
    if (opts.packedGitLimit !== undefined && this.windowSize !== undefined) this.windowSize = Math.min(this.windowSize, Math.max(8192, opts.packedGitLimit));
    this.addSource(resolve(objectsDir), 0);
    for (const a of extraAlternates) this.addSource(resolve(a), 1);
  }

  private addSource(dir: string, depth: number): void {
    if (this.sources.some((s) => s.objectsDir === dir) || !existsSync(dir)) return;
    const src = new Source(dir, this.hashLen);
    this.sources.push(src);
    this.scanPacks(src);
    if (depth >= 5) return;
    for (const alt of readAlternates(dir).dirs) {
      this.addSource(alt, depth + 1);
    }
  }

  private packStamp(dir: string): bigint {
    try {
      const st = statSync(dir, { bigint: true });
      return st.mtimeNs ^ (st.ctimeNs << 1n) ^ (st.ino << 3n);
    } catch {
      return -2n;
    }
  }

  /** Note packs that appeared since the last scan (opened lazily). Returns how many. */
  private scanPacks(src: Source): number {
    const dir = join(src.objectsDir, 'pack');
    src.scanStamp = this.packStamp(dir);
    src.scanAt = Date.now();
    let names: string[];
    try {
      this.scans++;
      names = this.readdir(dir);
    } catch { return 0; }
    const present = new Set(names);
    let added = 0;
    if (present.has('multi-pack-index')) {
      const p = join(dir, 'multi-pack-index');
      let stamp = '';
      try { const st = statSync(p); stamp = `${st.mtimeMs}:${st.size}:${st.ino}`; } catch { /* removed */ }
      src.resetMidx(stamp ? p : undefined, stamp);
    } else src.resetMidx(undefined, '');
    for (const n of names) {
      if (!n.endsWith('.idx') || src.packNames.has(n)) continue;
      const base = n.slice(0, -4);
      if (!present.has(`${base}.pack`)) continue;
      const pack = new PackFile(join(dir, `${base}.pack`), join(dir, n), this.hashLen, { windowSize: this.windowSize });
      src.packs.push(pack);
      src.packNames.add(n);
      src.byIdx.set(n, pack);
      added++;
    }
    return added;
  }

  /** Rescan every source's objects/pack now. Returns whether packs appeared. */
  rescan(): boolean {
    let added = 0;
    for (const s of this.sources) added += this.scanPacks(s);
    return added > 0;
  }

  /**
   * After a miss: rescan the sources whose objects/pack changed since
   * their last scan, or (for file systems with coarse times) whose last
   * scan is older than the rescan interval.
   */
  private rescanIfChanged(): boolean {
    let added = 0;
    const now = Date.now();
    for (const s of this.sources) {
      const stamp = this.packStamp(join(s.objectsDir, 'pack'));
      if (stamp === s.scanStamp && now - s.scanAt < this.rescanInterval) continue;
      added += this.scanPacks(s);
    }
    return added > 0;
  }

  /** A pack's index, or undefined when the pack vanished under us. */
  private indexOf(s: Source, p: PackFile) {
    try {
      return p.index;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      this.dropVanished(s, p);
      return undefined;
    }
  }

  /**
   * git's is_pack_valid(): a pack whose index holds the id must open too.
   * One removed by a concurrent repack after its index was read (its file
   * never opened here) is forgotten, and the lookup goes on to the packs
   * that replaced it. An opened pack stays readable when it is unlinked.
   */
  private packOpens(s: Source, p: PackFile): boolean {
    try {
      return p.fd >= 0;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      this.dropVanished(s, p);
      return false;
    }
  }

  /** A pack removed by a concurrent repack: forget it. */
  private dropVanished(s: Source, p: PackFile): void {
    s.packs = s.packs.filter((x) => x !== p);
    s.packNames.delete(p.idxPath.slice(p.idxPath.lastIndexOf('/') + 1));
    this.forget(p);
  }

  private locateOnce(oid: Buffer): Location | undefined {
    for (const s of this.sources) {
      const midx = s.midx;
      if (midx) {
        const i = midx.find(oid);
        if (i >= 0) {
          const loc = midx.location(i);
          const pack = s.byIdx.get(loc.pack);
          if (pack && s.packs.includes(pack) && this.packOpens(s, pack)) {
            this.midxHits++;
            return { kind: 'packed', pack, pos: -1, offset: loc.offset };
          }
        }
      }
      for (let k = 0; k < s.packs.length; k++) {
        const p = s.packs[k]!;
        const idx = this.indexOf(s, p);
        if (!idx) { k--; continue; }
        const pos = idx.find(oid);
        if (pos < 0) continue;
        if (!this.packOpens(s, p)) { k--; continue; }
        return { kind: 'packed', pack: p, pos, offset: idx.offset(pos) };
      }
    }
    if (this.sources.length === 0) return undefined;
    const hex = oid.toString('hex');
    for (const s of this.sources) {
      const path = join(s.objectsDir, hex.slice(0, 2), hex.slice(2));
      if (existsSync(path)) return { kind: 'loose', path };
    }
    return undefined;
  }

  locate(oid: Buffer, opts?: LookupOptions): Location | undefined {
    const l = this.locateOnce(oid);
    if (l || opts?.quick) return l;
    if (this.rescanIfChanged()) return this.locateOnce(oid);
    return undefined;
  }

  has(oid: Buffer, opts?: LookupOptions): boolean { return this.locate(oid, opts) !== undefined; }

  /** Read an object: one lookup gives type, size and content. */
  read(oid: Buffer, opts?: LookupOptions): RawObject | undefined {
    for (let attempt = 0; attempt < 2; attempt++) {
      const loc = this.locate(oid, opts);
      if (!loc) return undefined;
      try {
        return this.readAt(loc);
      } catch (e) {
        // a loose object removed by a concurrent prune/repack: look again
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && attempt === 0) { this.rescan(); continue; }
        throw e;
      }
    }
    return undefined;
  }

  readAt(loc: Location): RawObject {
    if (loc.kind === 'loose') return this.looseOr(loc.path, () => this.readLoose(loc.path), (l) => this.readAt(l));
    return this.readPacked(loc.pack, loc.offset);
  }

  /**
   * `read()` of a loose object, or, when the file is gone (a concurrent
   * `git repack -d` / `gc` packed and removed it after it was located), of
   * the object where it is now, found again by its name as git's reads do.
   */
  private looseOr<T>(path: string, read: () => T, again: (l: Location) => T): T {
    try {
      return read();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      const moved = this.movedLoose(path);
      if (!moved) throw e;
      return again(moved);
    }
  }

  /** Where the loose object once at `path` is now (after a rescan), if anywhere else. */
  private movedLoose(path: string): Location | undefined {
    const name = path.slice(path.length - (2 * this.hashLen + 1));
    const hex = name.slice(0, 2) + name.slice(3);
    if (name[2] !== '/' || !/^[0-9a-f]+$/.test(hex) || hex.length !== 2 * this.hashLen) return undefined;
    this.rescan();
    const l = this.locateOnce(Buffer.from(hex, 'hex'));
    return l && !(l.kind === 'loose' && l.path === path) ? l : undefined;
  }

  /* ---------- loose objects ---------- */

  private readLoose(path: string): RawObject {
    const file = readFileSync(path);
    if (!sharedInflater.native) {
      let raw: Buffer;
      try { raw = inflateSync(file); } catch { throw looseCorrupt(path); }
      const h = parseLooseHeader(raw, raw.length, path);
      const data = raw.subarray(h.at);
      if (data.length !== h.size) throw looseCorrupt(path);
      return { type: h.type, data };
    }
    const feed: Feed = (pos) => (pos < file.length ? file.subarray(pos) : undefined);
    try {
      const c = new InflateCursor(sharedInflater, feed, 0, () => `loose object ${path}`);
      const head = looseHeaderScratch;
      const got = c.read(head, 0, LOOSE_HEADER_MAX);
      const h = parseLooseHeader(head, got, path);
      checkSize(h.size, path);
      const data = Buffer.allocUnsafe(h.size + 1);
      const already = got - h.at;
      if (already > h.size) throw looseCorrupt(path);
      head.copy(data, 0, h.at, got);
      if (already < h.size || !c.ended) c.fill(data, already, h.size - already, true);
      c.finish();
      return { type: h.type, data: data.subarray(0, h.size) };
    } catch (e) {
      if (e instanceof InflateError) throw looseCorrupt(path);
      throw e;
    }
  }

  /** Type, size and (for streaming) a cursor positioned at the content, reading the file in pieces. */
  private openLoose(path: string, inf: Inflater, scratch: Buffer): { type: ObjType; size: number; disk: number; cursor: InflateCursor; head: Buffer; at: number; got: number; fd: number } {
    const fd = openSync(path, 'r');
    try {
      const disk = fstatSync(fd).size;
      const cursor = new InflateCursor(inf, fdFeed(fd, disk, scratch), 0, () => `loose object ${path}`);
      const head = Buffer.allocUnsafe(LOOSE_HEADER_MAX);
      const got = cursor.read(head, 0, LOOSE_HEADER_MAX);
      const h = parseLooseHeader(head, got, path);
      return { type: h.type, size: h.size, disk, cursor, head, at: h.at, got, fd };
    } catch (e) {
      closeSync(fd);
      if (e instanceof InflateError) throw looseCorrupt(path);
      throw e;
    }
  }

  private looseInfo(path: string): ObjectInfo {
    if (!sharedInflater.native) {
      const file = readFileSync(path);
      const raw = inflateSync(file);
      const h = parseLooseHeader(raw, raw.length, path);
      return { type: h.type, size: h.size, diskSize: file.length };
    }
    const o = this.openLoose(path, sharedInflater, Buffer.allocUnsafe(4096));
    closeSync(o.fd);
    return { type: o.type, size: o.size, diskSize: o.disk };
  }

  private *looseChunks(path: string, chunkSize: number, reuse: boolean): Generator<Buffer> {
    const inf = new Inflater();
    const o = this.openLoose(path, inf, Buffer.allocUnsafe(256 * 1024));
    try {
      // the content's first bytes came with the header
      const first = Math.max(0, Math.min(o.got - o.at, o.size));
      if (first > 0) yield Buffer.from(o.head.subarray(o.at, o.at + first));
      yield* cursorChunks(o.cursor, o.size - first, chunkSize, reuse);
      o.cursor.finish();
    } catch (e) {
      if (e instanceof InflateError) throw looseCorrupt(path);
      throw e;
    } finally {
      closeSync(o.fd);
      inf.close();
    }
  }

  /* ---------- packed objects ---------- */

  /** Drop a pack that is gone, with everything cached for it. */
  private forget(p: PackFile): void {
    this.packStates.get(p)?.bases.clear();
    this.packStates.delete(p);
    if (this.lastStatePack === p) { this.lastStatePack = undefined; this.lastState = undefined; }
    this.walkPlans.delete(p);
    p.close();
  }

  /** The pack's key spaces: delta bases and resolved types, by offset. */
  private state(pack: PackFile): PackState {
    if (pack === this.lastStatePack) return this.lastState!;
    let st = this.packStates.get(pack);
    if (!st) {
      st = { bases: this.cache.space(), types: new Map() };
      this.packStates.set(pack, st);
    }
    this.lastStatePack = pack;
    this.lastState = st;
    return st;
  }

  /** Inflate a delta into the reusable scratch buffer (it is consumed at once). */
  private inflateDelta(pack: PackFile, h: EntryHeader): Buffer {
    if (!sharedInflater.native) return pack.inflate(h);
    if (h.size + 1 >= SCRATCH_MAX) return pack.inflate(h);
    if (this.deltaScratch.length < h.size + 1) this.deltaScratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX, Math.max(h.size + 1, this.deltaScratch.length * 2)));
    pack.inflateInto(h, this.deltaScratch);
    return this.deltaScratch.subarray(0, h.size);
  }

  /** A scratch buffer of at least n+1 bytes (n bytes of result and one spare). */
  private scratch(which: 0 | 1 | 2, n: number): Buffer {
    if (n >= SCRATCH_MAX) return Buffer.allocUnsafe(n + 1); // not kept: a huge object would stay resident
    let b = this.scratches[which];
    if (b.length < n + 1) {
      b = Buffer.allocUnsafe(Math.min(SCRATCH_MAX, Math.max(n + 1, b.length * 2)));
      this.scratches[which] = b;
    }
    return b;
  }

  /**
   * Walk down the delta chain to a cached base or a whole object, then
   * apply the deltas upwards. Intermediate results are kept by offset
   * (git's add_delta_base_cache) at every `checkpoint`-th depth; the
   * others are built in scratch buffers.
   *
   * - keep: also cache the result (a pack-order walk, where the entries
   *   after it use it as their base);
   * - transient: the result may sit in a scratch buffer, valid until the
   *   next read (the caller copies it out at once).
   */
  /**
   * A whole (non-delta) entry inflated into its own buffer, or into scratch
   * space when the caller copies it out before the next read; kept in the
   * pack's base cache under `key` when later reads need it.
   */
  private inflateWhole(pack: PackFile, h: EntryHeader, key: number, keep: boolean, transient: boolean): CachedObject {
    checkSize(h.size, pack.packPath);
    const buf = keep || !transient ? Buffer.allocUnsafe(h.size + 1) : this.scratch(2, h.size);
    pack.inflateInto(h, buf);
    const o: CachedObject = { type: h.type, data: buf.subarray(0, h.size), depth: 0 };
    if (keep) this.state(pack).bases.set(key, o, h.size);
    return o;
  }

  private readPacked(pack: PackFile, offset: number, keep = false, transient = false, known?: EntryHeader): RawObject {
    const cache = this.state(pack).bases;
    // (a caller that knows the header has looked in the cache already)
    const hit = known ? undefined : cache.get(offset);
    if (hit) return hit;
    let h = known ?? pack.header(offset);
    if (h.type !== ObjType.OfsDelta && h.type !== ObjType.RefDelta) {
      if (!sharedInflater.native) return { type: h.type, data: pack.inflate(h) };
      return this.inflateWhole(pack, h, offset, keep, transient);
    }
    const chain: EntryHeader[] = [h];
    const keys: number[] = [offset];
    let base: CachedObject | undefined;
    for (let depth = 0; ; depth++) {
      if (depth > 10000) throw corrupt('delta chain too long');
      let boff: number;
      if (h.type === ObjType.OfsDelta) boff = h.baseOffset!;
      else {
        const idx = pack.index;
        const pos = idx.find(h.baseOid!);
        if (pos < 0) {
          const b = this.read(h.baseOid!);
          if (!b) throw corrupt(`failed to read delta base object ${h.baseOid!.toString('hex')}`);
          base = { type: b.type, data: b.data, depth: 0 };
          break;
        }
        boff = idx.offset(pos);
      }
      const cached = cache.get(boff);
      if (cached) { base = cached; break; }
      const bh = pack.header(boff);
      if (bh.type === ObjType.OfsDelta || bh.type === ObjType.RefDelta) {
        chain.push(bh);
        keys.push(boff);
        h = bh;
        continue;
      }
      // the whole object at the bottom of the chain: always kept (depth 0)
      const data = pack.inflate(bh);
      base = { type: bh.type, data, depth: 0 };
      cache.set(boff, base, data.length);
      break;
    }
    // git keeps every base; for reads by name, keeping every 8th depth costs a few more
    // delta applications but far fewer allocations (measured: less CPU than keeping
    // every base until an eighth of the cache is used, then every 8th)
    // (a walk whose plan says 1 keeps every base until an eighth of the cache is used, then every 8th)
    const every = this.checkpoint > 1 ? this.checkpoint : this.checkpoint === 0 || this.cache.bytes * 8 > this.cache.limit ? BUSY_CHECKPOINT : 1;
    // deltas are inflated into the arena and results built there (intermediates in
    // regions 0 and 1 by turns, a transient final result in region 2): the copies
    // between them are copyWithin() calls, without a view per copy. Results kept
    // in the cache (or larger than a region) get their own buffer.
    const A = this.arena, C = this.arenaCap;
    const type = base.type;
    let depth = base.depth;
    let bBuf: Uint8Array = base.data, bAt = 0, bLen = base.data.length, bIn = false;
    let own: CachedObject | undefined; // the last result, when it has its own buffer
    let flip = 0, want = 0;
    for (let i = chain.length - 1; i >= 0; i--) {
      const dh = chain[i]!;
      let dBuf: Uint8Array, dAt = 0, dEnd: number, dIn = false;
      if (sharedInflater.native && dh.size + 1 <= C) {
        dAt = 3 * C;
        pack.inflateInto(dh, A, dAt);
        dBuf = A; dEnd = dAt + dh.size; dIn = true;
      } else {
        dBuf = pack.inflate(dh); dEnd = dBuf.length;
        if (dh.size + 1 > want) want = dh.size + 1;
      }
      depth++;
      const keepThis = i > 0 ? depth % every === 0 : keep;
      const size = deltaResultSizeAt(dBuf, dAt, dEnd);
      checkSize(size, pack.packPath);
      if (keepThis || (i === 0 && !transient) || size + 1 > C) {
        if (size + 1 > want) want = size + 1;
        const out = Buffer.allocUnsafe(size);
        applyDeltaIn(bBuf, bAt, bLen, dBuf, dAt, dEnd, out, 0, size, false, false);
        own = { type, data: out, depth };
        if (keepThis) cache.set(keys[i]!, own, size);
        bBuf = out; bAt = 0; bIn = false;
      } else {
        const at = (i === 0 ? 2 : flip) * C;
        if (i > 0) flip ^= 1;
        applyDeltaIn(bBuf, bAt, bLen, dBuf, dAt, dEnd, A, at, C, bIn, dIn);
        own = undefined;
        bBuf = A; bAt = at; bIn = true;
      }
      bLen = size;
    }
    if (want > C && C < SCRATCH_MAX) this.growArena(want);
    return own ?? { type, data: A.subarray(bAt, bAt + bLen) };
  }

  /** A larger arena for the next reads (views handed out keep the old one alive). */
  private growArena(n: number): void {
    let c = this.arenaCap;
    while (c < n && c < SCRATCH_MAX) c *= 2;
    this.arenaCap = c;
    this.arena = Buffer.allocUnsafeSlow(4 * c);
  }

  /**
   * An object's type, the cheap way for a packed non-delta (its entry's
   * first byte: no Location or ObjectInfo built); anything else as info()
   * finds it. The same id has the same type in every pack, so the first
   * pack holding it answers. For a lookup per ref (peeling an
   * advertisement whose refs carry no peeled values).
   */
  typeOf(oid: Buffer): ObjType | undefined {
    for (const s of this.sources) {
      const midx = s.midx;
      if (midx) {
        const i = midx.find(oid);
        if (i >= 0) {
          const loc = midx.location(i);
          const pack = s.byIdx.get(loc.pack);
          if (pack && s.packs.includes(pack) && this.packOpens(s, pack)) return this.packedType(pack, loc.offset, oid);
        }
      }
      for (let k = 0; k < s.packs.length; k++) {
        const p = s.packs[k]!;
        const idx = this.indexOf(s, p);
        if (!idx) { k--; continue; }
        const pos = idx.find(oid);
        if (pos < 0) continue;
        if (!this.packOpens(s, p)) { k--; continue; }
        return this.packedType(p, idx.offset(pos), oid);
      }
    }
    return this.info(oid)?.type;
  }

  private packedType(pack: PackFile, offset: number, oid: Buffer): ObjType | undefined {
    const t = pack.header(offset).type;
    return t === ObjType.OfsDelta || t === ObjType.RefDelta ? this.info(oid)?.type : t;
  }

  /** Type and size without reading content where the format allows. */
  info(oid: Buffer, opts: boolean | InfoOptions = {}): ObjectInfo | undefined {
    const o = typeof opts === 'boolean' ? { disk: opts } : opts;
    const loc = this.locate(oid, o);
    if (!loc) return undefined;
    return this.infoAt(loc, o.disk ?? false);
  }

  infoAt(loc: Location, wantDisk = false, wantDeltaBase = true): ObjectInfo {
    if (loc.kind === 'loose') return this.looseOr(loc.path, () => this.looseInfo(loc.path), (l) => this.infoAt(l, wantDisk, wantDeltaBase));
    const table = this.infoTables?.get(loc.pack);
    if (table) {
      const r = loc.rank ?? (loc.pos >= 0 ? table.rankOfPos[loc.pos]! : loc.pack.rankOfOffset(loc.offset));
      if (r >= 0) return this.infoFromTable(loc.pack, table, r, wantDisk, wantDeltaBase);
    }
    const { pack, offset } = loc;
    const h = pack.header(offset);
    const info: ObjectInfo = { type: h.type, size: h.size };
    if (wantDisk) info.diskSize = pack.diskSize(offset);
    if (h.type === ObjType.OfsDelta || h.type === ObjType.RefDelta) {
      // the delta's header carries the result size: inflate only that
      const st = this.state(pack);
      const hit = st.bases.peek(offset);
      if (hit) { info.size = hit.data.length; info.type = hit.type; }
      else {
        info.size = deltaResultSize(pack.inflatePrefix(h, DELTA_HEAD, this.headScratch));
        info.type = this.baseType(pack, h, st.types);
      }
      if (!wantDeltaBase) { /* not asked for */ } else if (h.type === ObjType.RefDelta) info.deltaBase = h.baseOid;
      else {
        const pos = pack.positionOfOffset(h.baseOffset!);
        info.deltaBase = pos >= 0 ? Buffer.from(pack.index.oid(pos)) : undefined;
      }
    }
    return info;
  }

  private infoFromTable(pack: PackFile, t: PackInfoTable, r: number, wantDisk: boolean, wantDeltaBase: boolean): ObjectInfo {
    const info: ObjectInfo = { type: t.type[r]!, size: t.size[r]! };
    if (wantDisk) info.diskSize = (r + 1 < t.offsets.length ? t.offsets[r + 1]! : pack.size - this.hashLen) - t.offsets[r]!;
    if (wantDeltaBase) {
      const b = t.base[r]!;
      if (b >= 0) info.deltaBase = Buffer.from(pack.index.oid(t.positions[b]!));
      else if (b === -2) info.deltaBase = pack.header(t.offsets[r]!).baseOid;
    }
    return info;
  }

  /** Build the header tables of these packs for a walk that needs no content (released by the caller). */
  private beginInfoWalk(packs: PackFile[]): Map<PackFile, PackInfoTable> | undefined {
    if (!sharedInflater.native) return undefined;
    const tables = new Map<PackFile, PackInfoTable>();
    for (const p of packs) {
      if (p.index.count > INFO_TABLE_MAX) continue;
      tables.set(p, p.infoTable((oid) => {
        const i = this.info(oid);
        if (!i) throw corrupt(`failed to read delta base object ${oid.toString('hex')}`);
        return i.type;
      }));
    }
    return tables;
  }

  /** The type at the bottom of a delta chain (headers only), remembered per offset. */
  private baseType(pack: PackFile, h: EntryHeader, tc: Map<number, ObjType>): ObjType {
    const known = tc.get(h.offset);
    if (known !== undefined) return known;
    const seen: number[] = [h.offset];
    let t: ObjType | undefined;
    for (let depth = 0; depth < 10000; depth++) {
      if (h.type === ObjType.OfsDelta) {
        const b = tc.get(h.baseOffset!);
        if (b !== undefined) { t = b; break; }
        seen.push(h.baseOffset!);
        h = pack.header(h.baseOffset!);
        continue;
      }
      if (h.type === ObjType.RefDelta) {
        const pos = pack.index.find(h.baseOid!);
        if (pos >= 0) { h = pack.header(pack.index.offset(pos)); continue; }
        const i = this.info(h.baseOid!);
        if (!i) throw corrupt(`failed to read delta base object ${h.baseOid!.toString('hex')}`);
        t = i.type;
        break;
      }
      t = h.type;
      break;
    }
    if (t === undefined) throw corrupt('delta chain too long');
    if (tc.size > 4_000_000) tc.clear();
    for (const k of seen) tc.set(k, t);
    return t;
  }

  /**
   * An object for output: loose and non-delta packed objects above the
   * stream threshold come as chunks inflated while they are written
   * (never held whole); everything else whole. With `reuseChunks`, the
   * chunks share two buffers: each is valid until two more have been taken
   * (for a caller that writes them out at once).
   */
  readForOutput(loc: Location, chunkSize = 1 << 20, transient = false, reuseChunks = false): OutputObject {
    if (loc.kind === 'loose') return this.looseOr(loc.path, () => this.looseForOutput(loc.path, chunkSize, reuseChunks), (l) => this.readForOutput(l, chunkSize, transient, reuseChunks));
    const { pack, offset } = loc;
    const hit = this.state(pack).bases.get(offset);
    if (hit) return { type: hit.type, size: hit.data.length, data: hit.data };
    const h = pack.header(offset);
    if (h.type !== ObjType.OfsDelta && h.type !== ObjType.RefDelta && h.size > this.streamThreshold) {
      return { type: h.type, size: h.size, chunks: pack.inflateChunks(h, chunkSize, undefined, reuseChunks) };
    }
    const o = this.readPacked(pack, offset, false, transient, h);
    return { type: o.type, size: o.data.length, data: o.data };
  }

  private looseForOutput(path: string, chunkSize: number, reuseChunks: boolean): OutputObject {
    // zlib cannot expand by more than about 1032:1, so a small file is a small object
    let small = false;
    try { small = statSync(path).size * 1032 < this.streamThreshold; } catch { /* read below reports it */ }
    if (small || !sharedInflater.native) {
      const o = this.readLoose(path);
      return { type: o.type, size: o.data.length, data: o.data };
    }
    const info = this.looseInfo(path);
    if (info.size > this.streamThreshold) return { type: info.type, size: info.size, chunks: this.looseChunks(path, chunkSize, reuseChunks) };
    const o = this.readLoose(path);
    return { type: o.type, size: o.data.length, data: o.data };
  }

  /** Content in chunks; large objects are inflated chunk by chunk, never held whole. */
  *stream(oid: Buffer, chunkSize = 64 * 1024): Generator<Buffer> {
    const loc = this.locate(oid);
    if (!loc) return;
    const o = this.readForOutput(loc, chunkSize);
    if (o.chunks) { yield* o.chunks; return; }
    const d = o.data!;
    for (let off = 0; off < d.length; off += chunkSize) yield d.subarray(off, off + chunkSize);
  }

  /** Ids starting with a hex prefix (deduplicated), at most `limit`. */
  findByPrefix(hexPrefix: string, limit = 2): Buffer[] {
    const even = hexPrefix.length & ~1;
    const prefix = Buffer.from(hexPrefix.slice(0, even), 'hex');
    const odd = hexPrefix.length & 1 ? parseInt(hexPrefix[even]!, 16) : undefined;
    const seen = new Map<string, Buffer>();
    const add = (b: Buffer) => { const k = b.toString('hex'); if (!seen.has(k)) seen.set(k, Buffer.from(b)); };
    for (const s of this.sources) {
      for (const p of [...s.packs]) {
        const idx = this.indexOf(s, p);
        if (idx) for (const i of idx.findPrefix(prefix, odd, limit + 1)) add(idx.oid(i));
      }
      if (hexPrefix.length >= 2) {
        let names: string[] = [];
        try { names = defaultReaddir(join(s.objectsDir, hexPrefix.slice(0, 2))); } catch { /* none */ }
        const rest = hexPrefix.slice(2);
        for (const n of names) if (n.startsWith(rest) && n.length === this.hashLen * 2 - 2) add(Buffer.from(hexPrefix.slice(0, 2) + n, 'hex'));
      }
      if (seen.size > limit) break;
    }
    return [...seen.values()].slice(0, Math.max(limit, seen.size));
  }

  /** Loose object ids of one source, with their paths. */
  private looseIds(s: Source): Array<{ oid: Buffer; path: string }> {
    const out: Array<{ oid: Buffer; path: string }> = [];
    for (const d of looseDirs(s.objectsDir)) {
      let names: string[];
      try { names = defaultReaddir(join(s.objectsDir, d)); } catch { continue; }
      for (const n of names) {
        if (n.length === this.hashLen * 2 - 2 && /^[0-9a-f]+$/.test(n)) out.push({ oid: Buffer.from(d + n, 'hex'), path: join(s.objectsDir, d, n) });
      }
    }
    return out;
  }

  /** Every object id, sorted and deduplicated (git cat-file --batch-all-objects). */
  allObjectsSorted(): Buffer[] {
    const out: Buffer[] = [];
    for (const x of this.allObjectsSortedWithLocation()) out.push(x.oid);
    return out;
  }

  /**
   * Every object in id order, deduplicated, each with its location: a
   * merge of the (already sorted) pack indexes and the loose objects. An
   * id stored in several places is located as a lookup would.
   */
  *allObjectsSortedWithLocation(opts: WalkOptions = {}): Generator<{ oid: Buffer; loc: Location }> {
    interface Run { pack?: PackFile; loose?: Array<{ oid: Buffer; path: string }>; i: number; n: number; head?: Buffer }
    const runs: Run[] = [];
    for (const s of this.sources) {
      for (const p of [...s.packs]) {
        const idx = this.indexOf(s, p);
        if (!idx || idx.count === 0) continue;
        idx.preload();
        runs.push({ pack: p, i: 0, n: idx.count });
      }
      const loose = this.looseIds(s);
      if (loose.length) {
        loose.sort((a, b) => Buffer.compare(a.oid, b.oid));
        runs.push({ loose, i: 0, n: loose.length });
      }
    }
    const packs = runs.filter((r) => r.pack).map((r) => r.pack!);
    const saved = this.checkpoint;
    let restore = () => {};
    if (opts.infoOnly) this.infoTables = this.beginInfoWalk(packs);
    else {
      // id order reads the packs at random: hold them in windows (as git maps them)
      restore = reserveWindows(packs.reduce((n, p) => n + p.size, 0));
      this.checkpoint = this.checkpointFor(packs);
    }
    try {
      yield* this.mergeRuns(runs);
    } finally {
      this.checkpoint = saved;
      this.infoTables = undefined;
      restore();
    }
  }

  /**
   * `--batch-all-objects --batch-check` in id order for the usual shape
   * of a served repository (after gc): one object directory, one pack, no
   * loose objects. Every id with its type and size straight from the
   * index and the pack's header table: no location or info object per
   * id. `emit` gets the index bytes and where the id sits in them. False,
   * with nothing emitted, for any other shape (the caller walks instead).
   */
  sortedInfoOnePack(emit: (ids: Buffer, at: number, type: number, size: number) => void): boolean {
    if (!sharedInflater.native || this.sources.length !== 1) return false;
    const s = this.sources[0]!;
    const live: PackFile[] = [];
    for (const p of [...s.packs]) {
      const idx = this.indexOf(s, p);
      if (idx && idx.count > 0) live.push(p);
    }
    if (live.length !== 1 || live[0]!.index.count > INFO_TABLE_MAX) return false;
    if (this.hasLoose(s)) return false;
    const pack = live[0]!;
    const idx = pack.index;
    idx.preload();
    const ids = idx.buf.wholeBytes();
    if (!ids) return false;
    const t = pack.infoTable((oid) => {
      const i = this.info(oid);
      if (!i) throw corrupt(`failed to read delta base object ${oid.toString('hex')}`);
      return i.type;
    });
    const { rankOfPos, type, size } = t;
    for (let i = 0, n = idx.count; i < n; i++) {
      const r = rankOfPos[i]!;
      emit(ids, idx.nameOffset(i), type[r]!, size[r]!);
    }
    return true;
  }

  /** Whether a source has any loose object (stops at the first). */
  private hasLoose(s: Source): boolean {
    for (const sub of looseDirs(s.objectsDir)) {
      let d;
      try { d = opendirSync(join(s.objectsDir, sub)); } catch { continue; }
      try {
        for (let e = d.readSync(); e; e = d.readSync()) if (e.name.length === this.hashLen * 2 - 2) return true;
      } finally { d.closeSync(); }
    }
    return false;
  }

  /**
   * In id order every object is read once, at random places in the packs:
   * an LRU of every intermediate base churns. Keeping every k-th depth of
   * each chain instead spreads the budget over all chains, so that each
   * object costs at most k delta applications. k is estimated from a
   * sample of entry headers: bytes of delta results against the budget.
   */
  private checkpointFor(packs: PackFile[]): number {
    let deltas = 0, whole = 0, wholeBytes = 0, entries = 0;
    for (const p of packs) {
      const n = p.index.count;
      entries += n;
      const step = Math.max(1, Math.floor(n / 512));
      for (let i = 0; i < n; i += step) {
        const h = p.header(p.index.offset(i));
        if (h.type === ObjType.OfsDelta || h.type === ObjType.RefDelta) deltas++;
        else { whole++; wholeBytes += h.size; }
      }
    }
    if (deltas === 0 || whole === 0) return 1;
    const estimate = (deltas / (deltas + whole)) * entries * (wholeBytes / whole);
    return Math.max(1, Math.min(16, Math.ceil(estimate / (this.cache.limit * SORTED_WALK_SHARE))));
  }

  private *mergeRuns(runs: Array<{ pack?: PackFile; loose?: Array<{ oid: Buffer; path: string }>; i: number; n: number; head?: Buffer }>): Generator<{ oid: Buffer; loc: Location }> {
    type Run = typeof runs[number];
    const idOf = (r: Run): Buffer => (r.pack ? r.pack.index.oid(r.i) : r.loose![r.i]!.oid);
    const locOf = (r: Run): Location => (r.pack
      ? { kind: 'packed', pack: r.pack, pos: r.i, offset: r.pack.index.offset(r.i) }
      : { kind: 'loose', path: r.loose![r.i]!.path });
    if (runs.length === 1) {
      const r = runs[0]!;
      for (; r.i < r.n; r.i++) yield { oid: idOf(r), loc: locOf(r) };
      return;
    }
    // k-way merge (few runs: a linear pick is enough)
    for (const r of runs) r.head = idOf(r);
    let last: Buffer | undefined;
    for (;;) {
      let best: Run | undefined;
      let dup = false;
      for (const r of runs) {
        if (r.i >= r.n) continue;
        if (!best) { best = r; continue; }
        const c = Buffer.compare(r.head!, best.head!);
        if (c < 0) { best = r; dup = false; } else if (c === 0) dup = true;
      }
      if (!best) return;
      const oid = best.head!;
      if (!last || !last.equals(oid)) {
        const loc = dup ? this.locate(oid) ?? locOf(best) : locOf(best);
        yield { oid, loc };
        last = oid;
      }
      best.i++;
      if (best.i < best.n) best.head = idOf(best);
    }
  }

  /**
   * Every object in storage order, as `git cat-file --unordered`: loose
   * objects (directory order), then each pack in pack order. Each comes
   * with its location, so nothing is looked up twice.
   */
  *allObjectsUnordered(): Generator<Buffer> {
    for (const x of this.allObjectsWithLocation()) yield x.oid;
  }

  *allObjectsWithLocation(opts: WalkOptions = {}): Generator<{ oid: Buffer; loc: Location }> {
    const packs = this.packsByAge();
    let loose = 0;
    const looseFirst: Array<{ oid: Buffer; loc: Location }> = [];
    for (const s of this.sources) {
      for (const d of looseDirs(s.objectsDir)) {
        let dir;
        try { dir = opendirSync(join(s.objectsDir, d)); } catch { continue; }
        try {
          for (let e = dir.readSync(); e; e = dir.readSync()) {
            if (e.name.length !== this.hashLen * 2 - 2) continue;
            looseFirst.push({ oid: Buffer.from(d + e.name, 'hex'), loc: { kind: 'loose', path: join(s.objectsDir, d, e.name) } });
            loose++;
          }
        } finally { dir.closeSync(); }
      }
    }
    // duplicates are only possible with several places to look
    const dedupe = loose > 0 || packs.length > 1;
    const seen = new Set<string>();
    const once = (o: Buffer) => {
      if (!dedupe) return true;
      const k = o.toString('latin1');
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    };
    for (const x of looseFirst) if (once(x.oid)) yield x;
    for (const p of packs) {
      const idx = p.index;
      idx.preload();
      const order = p.positionsInPackOrder();
      const offs = p.offsetsInPackOrder();
      if (opts.infoOnly) this.infoTables = this.beginInfoWalk([p]);
      try {
        for (let r = 0; r < order.length; r++) {
          const i = order[r]!;
          const o = idx.oid(i);
          if (once(o)) yield { oid: o, loc: { kind: 'packed', pack: p, pos: i, offset: offs[r]!, rank: r } };
        }
      } finally {
        this.walkPlans.delete(p);
        this.infoTables = undefined;
      }
    }
  }

  /**
   * For a pack-order walk: each entry's base (by rank; -1 none, -2 outside
   * the pack) and how many entries use it as their base, from one pass
   * over the entry headers (index-pack's bookkeeping).
   */
  private walkPlan(pack: PackFile): WalkPlan {
    let plan = this.walkPlans.get(pack);
    if (plan) return plan;
    const offs = pack.offsetsInPackOrder();
    const n = offs.length;
    const base = new Int32Array(n);
    const kids = new Uint8Array(n);
    const idx = pack.index;
    for (let r = 0; r < n; r++) {
      const h = pack.header(offs[r]!);
      let b = -1;
      if (h.type === ObjType.OfsDelta) b = pack.rankOfOffset(h.baseOffset!);
      else if (h.type === ObjType.RefDelta) {
        const pos = idx.find(h.baseOid!);
        b = pos >= 0 ? pack.rankOfOffset(idx.offset(pos)) : -2;
      }
      if (b === -1 && (h.type === ObjType.OfsDelta)) b = -2; // a base offset that starts no entry
      base[r] = b;
      if (b >= 0 && kids[b]! < 255) kids[b]!++;
    }
    plan = { base, kids, offsets: offs };
    this.walkPlans.set(pack, plan);
    return plan;
  }

  /**
   * Read every object of a pack-order walk: each result is kept in the
   * delta-base cache, so the entries after it that use it as their base
   * find it resolved (index-pack's order: each base inflated once).
   */
  readInWalk(loc: Location, transient = false): RawObject {
    if (loc.kind === 'loose') return this.looseOr(loc.path, () => this.readLoose(loc.path), (l) => this.readAt(l));
    if (loc.rank === undefined || !sharedInflater.native) return this.readPacked(loc.pack, loc.offset, false, transient);
    const pack = loc.pack, r = loc.rank;
    const plan = this.walkPlan(pack);
    const cache = this.state(pack).bases;
    const key = loc.offset;
    const keepIt = plan.kids[r]! > 0;
    const b = plan.base[r]!;
    if (b === -1) {
      // a whole object: inflated once; kept while later entries need it
      return this.inflateWhole(pack, pack.header(loc.offset), key, keepIt, transient);
    }
    if (b === -2) {
      const o = this.readPacked(pack, loc.offset, false, transient && !keepIt);
      if (keepIt) cache.set(key, { type: o.type, data: o.data, depth: 0 }, o.data.length);
      return o;
    }
    // a delta: its base was resolved earlier in the walk (or is resolved now)
    const boff = plan.offsets[b]!;
    const base = cache.get(boff) ?? this.readPacked(pack, boff);
    const h = pack.header(loc.offset);
    const delta = this.inflateDelta(pack, h);
    const size = deltaResultSize(delta);
    checkSize(size, pack.packPath);
    const out = keepIt || !transient ? Buffer.allocUnsafe(size) : this.scratch(2, size);
    const o: CachedObject = { type: base.type, data: applyDelta(base.data, delta, out), depth: 0 };
    // the base's last user releases it (counts saturate at 255: those stay until evicted)
    const left = plan.kids[b]!;
    if (left < 255) {
      plan.kids[b] = left - 1;
      if (left === 1) cache.delete(boff);
    }
    if (keepIt) cache.set(key, o, size);
    return o;
  }

  /**
   * git's pack order (get_all_packs): packs outside any multi-pack-index,
   * local first, newest first; the packs a multi-pack-index names are put
   * in front of them one by one, so they come in reverse of its order.
   */
  private packsByAge(): PackFile[] {
    const inMidx: PackFile[] = [];
    for (const s of this.sources) {
      const m = s.midx;
      if (!m) continue;
      for (const name of m.packNames) {
        const p = s.byIdx.get(name);
        if (p && s.packs.includes(p)) inMidx.push(p);
      }
    }
    const covered = new Set(inMidx);
    const out: Array<{ p: PackFile; local: boolean; mtime: number }> = [];
    this.sources.forEach((s, i) => {
      for (const p of s.packs) {
        if (covered.has(p)) continue;
        let mtime = 0;
        try { mtime = statSync(p.packPath).mtimeMs; } catch { /* removed */ }
        out.push({ p, local: i === 0, mtime });
      }
    });
    // git prepends each pack it finds (reverse directory order), then sorts stably by whole seconds
    out.reverse();
    out.sort((a, b) => (a.local !== b.local ? (a.local ? -1 : 1) : Math.floor(b.mtime / 1000) - Math.floor(a.mtime / 1000)));
    return [...inMidx.reverse(), ...out.map((x) => x.p)];
  }

  /** Bytes the commit-graph holds, once it has been opened (0 before: asking does not open it). */
  get commitGraphBytes(): number { return this.graph ? this.graph.memoryBytes : 0; }

  /** The commit-graph git would use (the first object directory that has one), opened on first use. */
  get commitGraph(): CommitGraph | undefined {
    if (this.graph === null) {
      this.graph = this.commitGraphGate() ? CommitGraph.open(this.sources.map((s) => s.objectsDir), this.hashLen) : undefined;
    }
    return this.graph;
  }

  /**
   * A commit's parents, tree and date from the commit-graph, without
   * reading the object; undefined when there is no graph, the commit is
   * not in it, or its entry is corrupt (the object is read instead).
   */
  graphCommit(oid: Buffer): GraphCommit | undefined {
    const g = this.commitGraph;
    if (!g) return undefined;
    try {
      return g.lookup(oid);
    } catch (e) {
      if (e instanceof GraphCorrupt) return undefined;
      throw e;
    }
  }

  /** Cache figures (tests, tracing). */
  get stats(): { deltaBaseBytes: number; deltaBaseLimit: number; windowBytes: number; windowLimit: number; windowReads: number; scans: number } {
    return {
      deltaBaseBytes: this.cache.bytes, deltaBaseLimit: this.cache.limit,
      windowBytes: packWindows.cache.bytes, windowLimit: packWindows.cache.limit, windowReads: packWindows.reads,
      scans: this.scans,
    };
  }

  private closeHooks: Array<() => void> = [];

  /** Run `fn` once when this database is closed (what upper layers keep for it, such as resident bitmaps, lets go). */
  onClose(fn: () => void): void { this.closeHooks.push(fn); }

  close(): void {
    const hooks = this.closeHooks;
    this.closeHooks = [];
    for (const f of hooks) f();
    for (const s of this.sources) s.close();
    if (this.graph) this.graph.close();
    this.graph = null;
    this.cache.clear();
    this.packStates.clear();
    this.lastStatePack = undefined;
    this.lastState = undefined;
  }
}
