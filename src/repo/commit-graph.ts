/**
 * git's commit-graph (objects/info/commit-graph, or a split chain in
 * objects/info/commit-graphs/): parents, tree, commit date and
 * generation of a commit without inflating it.
 *
 * Loading follows git's rules: the first object directory (the
 * repository's own, then its alternates) that has a usable graph gives
 * it; a single file is tried before a chain; a file with a bad header,
 * bad chunk table or missing/mis-sized required chunk is not used (git
 * reports it and reads the commit objects instead); a chain layer whose
 * base list does not match the layers under it ends the chain there.
 * Like git, the trailing checksum is not recomputed on load (only
 * `git commit-graph verify` does); it names the layer in a chain.
 *
 * A file of up to 16 MiB (about 300,000 commits) is read whole, in one
 * read: even a short walk touches commits spread over the whole file, and
 * hundreds of small reads cost more. A larger file is read with positioned
 * reads of just the bytes a lookup needs (a fan-out bucket of ids, one
 * commit's record), into reused buffers.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Commit } from './objects.js';

const SIGNATURE = 0x43475048; // "CGPH"
const CHUNK_OIDF = 0x4f494446;
const CHUNK_OIDL = 0x4f49444c;
const CHUNK_CDAT = 0x43444154;
const CHUNK_EDGE = 0x45444745;
const CHUNK_BASE = 0x42415345;
const CHUNK_GDA2 = 0x47444132;
const CHUNK_GDO2 = 0x47444f32;
const PARENT_NONE = 0x70000000;
const EXTRA_EDGES = 0x80000000;
const LAST_EDGE = 0x80000000;
const HEADER = 8;
const TOC_ENTRY = 12;
const FANOUT = 256 * 4;

/** A commit as the graph knows it. */
export interface GraphCommit extends Commit {
  /** topological level (generation number v1) */
  level: number;
  /** git's generation: the corrected commit date when every layer has it, else the level */
  generation: number;
}

interface Chunk { at: number; len: number }

/** graph files up to this size are read whole (one read), larger ones with positioned reads (tests lower it) */
export const graphFiles = { wholeLimit: 16 << 20 };

/** A graph file: held whole when small (one read beats hundreds), else read with positioned reads. */
class GraphFile {
  private readonly small = Buffer.allocUnsafe(64);
  whole: Buffer | undefined;
  /**
   * The whole file's words: lookups read them with DataView's built-in
   * getters. A one-shot process (an upload-pack over ssh) makes a few
   * hundred lookups, all in code not yet optimized, where each call of
   * Buffer's readUInt32BE runs as interpreted JavaScript (measured: half
   * of the graph's time in a one-shot incremental fetch).
   */
  dv: DataView | undefined;
  constructor(readonly length: number, private readonly fd: number) {
    if (length <= graphFiles.wholeLimit) {
      const b = Buffer.allocUnsafe(length);
      this.fill(b, 0, length);
      this.whole = b;
      this.dv = new DataView(b.buffer, b.byteOffset, b.length);
    }
  }

  private fill(b: Buffer, pos: number, len: number): void {
    let got = 0;
    while (got < len) {
      const n = readSync(this.fd, b, got, len - got, pos + got);
      if (n <= 0) throw new GraphCorrupt('commit-graph file shrank while being read');
      got += n;
    }
  }

  /** bytes [pos, pos+len): a view of the file, or read into `into` / a reused buffer (valid until the next read) */
  read(pos: number, len: number, into?: Buffer): Buffer {
    if (pos < 0 || pos + len > this.length) throw new GraphCorrupt('commit-graph read out of bounds');
    if (this.whole) {
      if (!into) return this.whole.subarray(pos, pos + len);
      this.whole.copy(into, 0, pos, pos + len);
      return into.length === len ? into : into.subarray(0, len);
    }
    const b = into ?? (len <= this.small.length ? this.small : Buffer.allocUnsafe(len));
    this.fill(b, pos, len);
    return len === b.length ? b : b.subarray(0, len);
  }

  u32(pos: number): number {
    const dv = this.dv;
    if (!dv) return this.read(pos, 4).readUInt32BE(0);
    if (pos < 0 || pos + 4 > this.length) throw new GraphCorrupt('commit-graph read out of bounds');
    return dv.getUint32(pos);
  }

  close(): void {
    this.whole = undefined;
    this.dv = undefined;
    try { closeSync(this.fd); } catch { /* closed */ }
  }
}

/** One graph file (a whole graph, or one layer of a chain). */
class Layer {
  /** commits in the layers below */
  base = 0;
  readonly n: number;
  readonly fan: Uint32Array;
  readonly oidl: number;
  readonly cdat: number;
  readonly edge: Chunk | undefined;
  readonly gdat: Chunk | undefined;
  readonly gdov: Chunk | undefined;
  readonly baseList: Chunk | undefined;
  /** the trailing hash: this layer's name in a chain */
  readonly id: Buffer;

  /** the ids of the fan-out bucket last searched */
  private bucket = Buffer.allocUnsafe(0);
  private bucketView = new DataView(new ArrayBuffer(0));

  /** bytes this layer holds in memory: the file when read whole, else its lookup buffer */
  get memoryBytes(): number { return (this.bytes.whole?.length ?? 0) + this.bucket.length + this.fan.byteLength; }
  private bucketByte = -1;

  constructor(readonly path: string, readonly bytes: GraphFile, readonly hashLen: number) {
    const len = bytes.length;
    const fail = (msg: string): never => { throw new GraphError(msg); };
    if (len < HEADER + 4 * TOC_ENTRY + FANOUT + hashLen) fail('commit-graph file is too small');
    const first = bytes.read(0, HEADER + 4 * TOC_ENTRY, Buffer.allocUnsafe(HEADER + 4 * TOC_ENTRY));
    const sig = first.readUInt32BE(0);
    if (sig !== SIGNATURE) fail(`commit-graph signature ${hex32(sig)} does not match signature ${hex32(SIGNATURE)}`);
    const head = first.subarray(4, 8);
    if (head[0] !== 1) fail(`commit-graph version ${head[0]!.toString(16).toUpperCase()} does not match version 1`);
    const hv = hashLen === 32 ? 2 : 1;
    if (head[1] !== hv) fail(`commit-graph hash version ${head[1]!.toString(16).toUpperCase()} does not match version ${hv}`);
    const chunks = head[2]!;
    if (len < HEADER + (chunks + 1) * TOC_ENTRY + FANOUT + hashLen) fail(`commit-graph file is too small to hold ${chunks} chunks`);
    const toc = new Map<number, Chunk>();
    const tb = bytes.read(0, HEADER + (chunks + 1) * TOC_ENTRY, Buffer.allocUnsafe(HEADER + (chunks + 1) * TOC_ENTRY));
    const u64 = (at: number) => tb.readUInt32BE(at) * 2 ** 32 + tb.readUInt32BE(at + 4);
    for (let i = 0; i < chunks; i++) {
      const e = HEADER + i * TOC_ENTRY;
      const id = tb.readUInt32BE(e);
      const at = u64(e + 4);
      const next = u64(e + TOC_ENTRY + 4);
      if (id === 0) fail('terminating chunk id appears earlier than expected');
      if (at < HEADER + (chunks + 1) * TOC_ENTRY || next < at || next > len - hashLen) {
        fail(`improper chunk offset(s) ${at.toString(16).padStart(16, '0')} and ${next.toString(16).padStart(16, '0')}`);
      }
      if (toc.has(id)) fail(`duplicate chunk ID ${hex32(id)}`);
      toc.set(id, { at, len: next - at });
    }
    const oidf = toc.get(CHUNK_OIDF);
    if (!oidf) fail('commit-graph required OID fanout chunk missing or corrupted');
    if (oidf!.len !== FANOUT) fail('commit-graph oid fanout chunk is wrong size');
    const fan = new Uint32Array(257);
    const fb = bytes.read(oidf!.at, FANOUT, Buffer.allocUnsafe(FANOUT));
    for (let b = 0; b < 256; b++) fan[b + 1] = fb.readUInt32BE(b * 4);
    for (let b = 0; b < 256; b++) if (fan[b + 1]! < fan[b]!) fail('commit-graph fanout values out of order');
    this.fan = fan;
    this.n = fan[256]!;
    const oidl = toc.get(CHUNK_OIDL);
    if (!oidl) fail('commit-graph required OID lookup chunk missing or corrupted');
    if (oidl!.len !== this.n * hashLen) fail('commit-graph OID lookup chunk is the wrong size');
    const cdat = toc.get(CHUNK_CDAT);
    if (!cdat) fail('commit-graph required commit data chunk missing or corrupted');
    if (cdat!.len !== this.n * (hashLen + 16)) fail('commit-graph commit data chunk is wrong size');
    this.oidl = oidl!.at;
    this.cdat = cdat!.at;
    this.edge = toc.get(CHUNK_EDGE);
    const gdat = toc.get(CHUNK_GDA2);
    // a generation-data chunk of the wrong size is ignored (the levels are used)
    this.gdat = gdat && gdat.len === this.n * 4 ? gdat : undefined;
    this.gdov = toc.get(CHUNK_GDO2);
    this.baseList = toc.get(CHUNK_BASE);
    this.id = Buffer.from(bytes.read(len - hashLen, hashLen));
  }

  /** local position of oid, or -1: its fan-out bucket is read (once per first byte in a row) and searched */
  find(oid: Buffer): number {
    const b0 = oid[0]!;
    const first = this.fan[b0]!, n = this.fan[b0 + 1]! - first;
    if (n === 0) return -1;
    const h = this.hashLen;
    const whole = this.bytes.whole;
    let ids: Buffer, dv: DataView, base: number;
    if (whole) { ids = whole; dv = this.bytes.dv!; base = this.oidl + first * h; } else {
      if (b0 !== this.bucketByte) {
        if (this.bucket.length < n * h) {
          this.bucket = Buffer.allocUnsafe(Math.max(n * h, this.bucket.length * 2, 4096));
          this.bucketView = new DataView(this.bucket.buffer, this.bucket.byteOffset, this.bucket.length);
        }
        this.bytes.read(this.oidl + first * h, n * h, this.bucket.subarray(0, n * h));
        this.bucketByte = b0;
      }
      ids = this.bucket;
      dv = this.bucketView;
      base = 0;
    }
    // ids in one bucket share their first byte: bytes 1-4 decide almost every step
    const key = ((oid[1]! << 24) | (oid[2]! << 16) | (oid[3]! << 8) | oid[4]!) >>> 0;
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const at = base + mid * h;
      const v = dv.getUint32(at + 1);
      const c = v !== key ? (v > key ? 1 : -1) : ids.compare(oid, 0, h, at, at + h);
      if (c === 0) return first + mid;
      if (c > 0) hi = mid; else lo = mid + 1;
    }
    return -1;
  }
}

class GraphError extends Error {}

const hex32 = (v: number) => (v >>> 0).toString(16).toUpperCase();

function openBytes(path: string): GraphFile | undefined {
  let fd: number;
  try { fd = openSync(path, 'r'); } catch { return undefined; }
  try {
    return new GraphFile(fstatSync(fd).size, fd);
  } catch {
    closeSync(fd);
    return undefined;
  }
}

/** A corrupt position in a graph that loaded: the caller reads the commit object instead. */
export class GraphCorrupt extends Error {}

export class CommitGraph {
  /** what git would have reported about the files that were not used */
  readonly warnings: string[];
  /** every layer has generation data (corrected commit dates) */
  readonly generationData: boolean;
  readonly count: number;

  private constructor(private readonly layers: Layer[], readonly hashLen: number, warnings: string[]) {
    this.warnings = warnings;
    this.generationData = layers.every((l) => l.gdat !== undefined);
    const top = layers[layers.length - 1]!;
    this.count = top.base + top.n;
  }

  /**
   * The graph git would use for these object directories (the
   * repository's own first, then its alternates), or undefined. What git
   * would report about files it could not use is added to `warnings`.
   */
  static open(objectDirs: string[], hashLen: number, warnings: string[] = []): CommitGraph | undefined {
    for (const dir of objectDirs) {
      const single = CommitGraph.loadLayer(join(dir, 'info', 'commit-graph'), hashLen, warnings);
      if (single) return new CommitGraph([single], hashLen, warnings);
      const chain = CommitGraph.loadChain(dir, objectDirs, hashLen, warnings);
      if (chain) return new CommitGraph(chain, hashLen, warnings);
    }
    return undefined;
  }

  private static loadLayer(path: string, hashLen: number, warnings: string[]): Layer | undefined {
    const bytes = openBytes(path);
    if (!bytes) return undefined;
    try {
      return new Layer(path, bytes, hashLen);
    } catch (e) {
      bytes.close();
      if (!(e instanceof GraphError)) throw e;
      warnings.push(`error: ${e.message}`);
      return undefined;
    }
  }

  private static loadChain(dir: string, objectDirs: string[], hashLen: number, warnings: string[]): Layer[] | undefined {
    let text: string;
    try { text = readFileSync(join(dir, 'info', 'commit-graphs', 'commit-graph-chain'), 'latin1'); } catch { return undefined; }
    const hexLen = hashLen * 2;
    if (text.length <= hexLen) return undefined;
    const count = Math.floor(text.length / (hexLen + 1));
    const lines = text.split('\n');
    const layers: Layer[] = [];
    const ids: Buffer[] = [];
    for (let i = 0; i < count && i < lines.length; i++) {
      const line = lines[i]!;
      if (!/^[0-9a-fA-F]+$/.test(line.slice(0, hexLen)) || line.length < hexLen) {
        warnings.push(`warning: invalid commit-graph chain: line '${line}' not a hash`);
        break;
      }
      ids.push(Buffer.from(line.slice(0, hexLen), 'hex'));
      let added = false;
      for (const od of objectDirs) {
        const g = CommitGraph.loadLayer(join(od, 'info', 'commit-graphs', `graph-${line}.graph`), hashLen, warnings);
        if (!g) continue;
        if (CommitGraph.fits(g, layers, ids, hashLen, warnings)) {
          g.base = layers.length ? layers[layers.length - 1]!.base + layers[layers.length - 1]!.n : 0;
          layers.push(g);
          added = true;
        } else g.bytes.close();
        break;
      }
      if (!added) {
        warnings.push('warning: unable to find all commit-graph files');
        break;
      }
    }
    return layers.length ? layers : undefined;
  }

  /** add_graph_to_chain's checks: the layer's base list names the layers under it, in order. */
  private static fits(g: Layer, below: Layer[], ids: Buffer[], hashLen: number, warnings: string[]): boolean {
    const n = below.length;
    if (n === 0) return true;
    if (!g.baseList) { warnings.push('warning: commit-graph has no base graphs chunk'); return false; }
    if (Math.floor(g.baseList.len / hashLen) < n) { warnings.push('warning: commit-graph base graphs chunk is too small'); return false; }
    for (let k = n - 1; k >= 0; k--) {
      const want = ids[k]!;
      if (!want.equals(below[k]!.id) || !g.bytes.read(g.baseList.at + k * hashLen, hashLen).equals(want)) {
        warnings.push('warning: commit-graph chain does not match');
        return false;
      }
    }
    return true;
  }

  /** Global position of a commit, or -1 (the top layer is searched first, as git does). */
  find(oid: Buffer): number {
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const l = this.layers[i]!;
      const p = l.find(oid);
      if (p >= 0) return l.base + p;
    }
    return -1;
  }

  private layerOf(pos: number): Layer {
    if (this.layers.length === 1) {
      const l = this.layers[0]!;
      if (pos < l.n) return l;
      throw new GraphCorrupt(`invalid commit position ${pos}`);
    }
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const l = this.layers[i]!;
      if (pos >= l.base) {
        if (pos >= l.base + l.n) break;
        return l;
      }
    }
    throw new GraphCorrupt(`invalid commit position ${pos}`);
  }

  private parentAt(p: number): Buffer { return this.oidAt(this.checkParent(p)); }

  /**
   * The id at a global position: a view of a graph file held whole (the
   * file is never written in place; the view keeps it alive), else a copy.
   */
  oidAt(pos: number): Buffer {
    const l = this.layerOf(pos);
    const at = l.oidl + (pos - l.base) * this.hashLen;
    const whole = l.bytes.whole;
    return whole ? whole.subarray(at, at + this.hashLen) : l.bytes.read(at, this.hashLen, Buffer.allocUnsafe(this.hashLen));
  }

  /** A commit's data from the graph (throws GraphCorrupt on positions outside it); ids as oidAt gives them. */
  commitAt(pos: number): GraphCommit {
    const l = this.layerOf(pos);
    const h = this.hashLen, b = l.bytes;
    const local = pos - l.base;
    const at = l.cdat + local * (h + 16);
    const whole = b.whole, dv = b.dv;
    let tree: Buffer, p1: number, p2: number, w: number, lo: number;
    if (whole && dv) {
      // (positions are inside the chunk, whose size the constructor checked)
      tree = whole.subarray(at, at + h);
      p1 = dv.getUint32(at + h); p2 = dv.getUint32(at + h + 4); w = dv.getUint32(at + h + 8); lo = dv.getUint32(at + h + 12);
    } else {
      const rec = b.read(at, h + 16);
      tree = Buffer.from(rec.subarray(0, h));
      p1 = rec.readUInt32BE(h); p2 = rec.readUInt32BE(h + 4); w = rec.readUInt32BE(h + 8); lo = rec.readUInt32BE(h + 12);
    }
    const time = (w & 3) * 2 ** 32 + lo;
    const level = w >>> 2;
    const parents: Buffer[] = [];
    if (p1 !== PARENT_NONE) {
      parents.push(this.parentAt(p1));
      if (p2 !== PARENT_NONE) {
        if (!(p2 & EXTRA_EDGES)) parents.push(this.parentAt(p2));
        else {
          const e = l.edge;
          if (!e) throw new GraphCorrupt('commit-graph requires extra edges, but has none');
          for (let k = p2 & 0x7fffffff; ; k++) {
            if ((k + 1) * 4 > e.len) throw new GraphCorrupt('commit-graph extra-edges pointer out of bounds');
            const v = b.u32(e.at + k * 4);
            parents.push(this.parentAt(v & 0x7fffffff));
            if (v & LAST_EDGE) break;
          }
        }
      }
    }
    let generation = level;
    if (this.generationData) {
      const g = l.gdat!;
      let off = b.u32(g.at + local * 4);
      if (off & 0x80000000) {
        const o = l.gdov;
        const k = off & 0x7fffffff;
        if (!o || (k + 1) * 8 > o.len) throw new GraphCorrupt('commit-graph overflow generation data is too small');
        const v = b.read(o.at + k * 8, 8);
        off = v.readUInt32BE(0) * 2 ** 32 + v.readUInt32BE(4);
      }
      generation = time + off;
    }
    return { tree, parents, time, level, generation };
  }

  /** The committer date at a position (what commitAt gives as `time`), read without building the commit. */
  timeAt(pos: number): number {
    const l = this.layerOf(pos);
    const at = l.cdat + (pos - l.base) * (this.hashLen + 16) + this.hashLen + 8;
    return (l.bytes.u32(at) & 3) * 2 ** 32 + l.bytes.u32(at + 4);
  }

  /**
   * The parents' positions at a position, in commitAt's order: written to
   * out[0], out[1], … and counted in the return value (`out` is reused, so
   * a walk over positions allocates nothing per commit). Throws
   * GraphCorrupt where commitAt would.
   */
  parentsAt(pos: number, out: number[]): number {
    const l = this.layerOf(pos);
    const b = l.bytes;
    const at = l.cdat + (pos - l.base) * (this.hashLen + 16) + this.hashLen;
    const p1 = b.u32(at), p2 = b.u32(at + 4);
    if (p1 === PARENT_NONE) return 0;
    out[0] = this.checkParent(p1);
    if (p2 === PARENT_NONE) return 1;
    if (!(p2 & EXTRA_EDGES)) { out[1] = this.checkParent(p2); return 2; }
    const e = l.edge;
    if (!e) throw new GraphCorrupt('commit-graph requires extra edges, but has none');
    let n = 1;
    for (let k = p2 & 0x7fffffff; ; k++) {
      if ((k + 1) * 4 > e.len) throw new GraphCorrupt('commit-graph extra-edges pointer out of bounds');
      const v = b.u32(e.at + k * 4);
      out[n++] = this.checkParent(v & 0x7fffffff);
      if (v & LAST_EDGE) return n;
    }
  }

  private checkParent(p: number): number {
    if (p >= this.count) throw new GraphCorrupt(`invalid parent position ${p}`);
    return p;
  }

  /** A commit by id, or undefined when the graph does not have it. */
  lookup(oid: Buffer): GraphCommit | undefined {
    const p = this.find(oid);
    return p < 0 ? undefined : this.commitAt(p);
  }

  /** bytes the graph holds in memory (for pools) */
  get memoryBytes(): number { return this.layers.reduce((n, l) => n + l.memoryBytes, 0); }

  close(): void { for (const l of this.layers) l.bytes.close(); }
}

/**
 * Whether git would use a commit-graph in this repository
 * (commit_graph_compatible, core.commitGraph): not with grafts, not in a
 * shallow repository. Replace refs do not matter here: the commits read
 * through the graph are the stored ones, as upload-pack reads them.
 */
export function commitGraphAllowed(commonDir: string, enabled: boolean, env: NodeJS.ProcessEnv): boolean {
  if (!enabled) return false;
  if (existsSync(env.GIT_GRAFT_FILE || join(commonDir, 'info', 'grafts'))) return false;
  if (existsSync(join(commonDir, 'shallow'))) return false;
  return true;
}
