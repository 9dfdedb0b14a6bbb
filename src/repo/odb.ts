/**
 * The object database: loose objects, packs (through their .idx), and
 * alternates. Every object is located once; its type, size and content
 * come from that one location. A miss rescans objects/pack, so a
 * concurrent `git repack` does not make objects vanish.
 */
import { existsSync, opendirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { inflateSync, constants as zc } from 'node:zlib';
import { GitwireError } from '../errors.js';
import { applyDelta, deltaResultSize } from './delta.js';
import { ObjType, typeFromName } from './object-type.js';
import { PackIndex } from './pack-index.js';
import { PackFile, type EntryHeader } from './pack.js';
import { MultiPackIndex } from './midx.js';

export interface RawObject { type: ObjType; data: Buffer }
export interface ObjectInfo {
  type: ObjType;
  size: number;
  /** bytes on disk (compressed entry, or loose file size) */
  diskSize?: number;
  /** for a packed delta: its base id */
  deltaBase?: Buffer;
}

export type Location =
  | { kind: 'loose'; path: string }
  | { kind: 'packed'; pack: PackFile; pos: number; offset: number };

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);

/** A bounded LRU of delta bases (git's delta_base_cache): a map plus a linked list, O(1) eviction. */
interface LruNode { key: string; value: RawObject; prev?: LruNode; next?: LruNode }
class DeltaBaseCache {
  private map = new Map<string, LruNode>();
  private head?: LruNode; // most recent
  private tail?: LruNode; // least recent
  private bytes = 0;
  constructor(private readonly limit: number) {}
  private unlink(n: LruNode): void {
    if (n.prev) n.prev.next = n.next; else this.head = n.next;
    if (n.next) n.next.prev = n.prev; else this.tail = n.prev;
    n.prev = n.next = undefined;
  }
  private pushFront(n: LruNode): void {
    n.next = this.head;
    if (this.head) this.head.prev = n;
    this.head = n;
    if (!this.tail) this.tail = n;
  }
  get(key: string): RawObject | undefined {
    const n = this.map.get(key);
    if (!n) return undefined;
    if (n !== this.head) { this.unlink(n); this.pushFront(n); }
    return n.value;
  }
  set(key: string, value: RawObject): void {
    if (value.data.length > this.limit / 4 || this.map.has(key)) return;
    const n: LruNode = { key, value };
    this.map.set(key, n);
    this.pushFront(n);
    this.bytes += value.data.length;
    while (this.bytes > this.limit && this.tail) {
      const t = this.tail;
      this.unlink(t);
      this.map.delete(t.key);
      this.bytes -= t.value.data.length;
    }
  }
}

interface Source {
  objectsDir: string;
  packs: PackFile[];
  packNames: Set<string>;
  midx?: MultiPackIndex;
  /** packs by .idx file name, for multi-pack-index lookups */
  byIdx: Map<string, PackFile>;
  /** objects/pack's identity and mtime at the last scan: an unchanged directory has no new packs */
  packDirStamp?: string;
}

let packSeq = 0;
const packIds = new WeakMap<PackFile, number>();
function packId(p: PackFile): number {
  let id = packIds.get(p);
  if (id === undefined) { id = ++packSeq; packIds.set(p, id); }
  return id;
}

function parseLooseHeader(buf: Buffer, path: string): { type: ObjType; size: number; at: number } {
  const sp = buf.indexOf(0x20);
  const nul = buf.indexOf(0);
  if (sp < 0 || nul < sp) throw corrupt(`loose object ${path} is corrupt`);
  const type = typeFromName(buf.toString('latin1', 0, sp));
  if (type === undefined) throw corrupt(`loose object ${path} is corrupt`);
  return { type, size: Number(buf.toString('latin1', sp + 1, nul)), at: nul + 1 };
}

export class ObjectDatabase {
  readonly sources: Source[] = [];
  private cache = new DeltaBaseCache(96 << 20); // git's core.deltaBaseCacheLimit default

  constructor(objectsDir: string, readonly hashLen: number, extraAlternates: string[] = []) {
    this.addSource(resolve(objectsDir), 0);
    for (const a of extraAlternates) this.addSource(resolve(a), 1);
  }

  private addSource(dir: string, depth: number): void {
    if (this.sources.some((s) => s.objectsDir === dir) || !existsSync(dir)) return;
    const src: Source = { objectsDir: dir, packs: [], packNames: new Set(), byIdx: new Map() };
    this.sources.push(src);
    this.scanPacks(src);
    if (depth >= 5) return;
    let alt: string;
    try { alt = readFileSync(join(dir, 'info', 'alternates'), 'utf8'); } catch { return; }
    for (let line of alt.split('\n')) {
      line = line.trim();
      if (!line || line.startsWith('#')) continue;
      if (line.startsWith('"') && line.endsWith('"')) line = JSON.parse(line) as string;
      this.addSource(isAbsolute(line) ? line : resolve(dir, line), depth + 1);
    }
  }

  /** Open packs that appeared since the last scan. Returns how many. */
  private scanPacks(src: Source): number {
    const dir = join(src.objectsDir, 'pack');
    // a miss looks for new packs; most misses (a client's haves we lack) find the directory unchanged
    let stamp: string | undefined;
    try { const st = statSync(dir, { bigint: true }); stamp = `${st.ino}:${st.mtimeNs}:${st.ctimeNs}`; } catch { stamp = undefined; }
    if (stamp !== undefined && stamp === src.packDirStamp) return 0;
    let names: string[];
    try {
      // directory order (not sorted), as git's readdir loop sees it
      const d = opendirSync(dir);
      names = [];
      try { for (let e = d.readSync(); e; e = d.readSync()) names.push(e.name); } finally { d.closeSync(); }
    } catch { return 0; }
    src.packDirStamp = stamp;
    let added = 0;
    if (names.includes('multi-pack-index')) {
      try { src.midx = MultiPackIndex.open(join(dir, 'multi-pack-index'), this.hashLen); } catch { src.midx = undefined; }
    } else src.midx = undefined;
    for (const n of names) {
      if (!n.endsWith('.idx') || src.packNames.has(n)) continue;
      const base = n.slice(0, -4);
      if (!names.includes(`${base}.pack`)) continue;
      try {
        const idx = PackIndex.open(join(dir, n), this.hashLen);
        const pack = new PackFile(join(dir, `${base}.pack`), idx, this.hashLen);
        src.packs.push(pack);
        src.packNames.add(n);
        src.byIdx.set(n, pack);
        added++;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed under us
        throw e;
      }
    }
    return added;
  }

  rescan(): boolean {
    let added = 0;
    for (const s of this.sources) added += this.scanPacks(s);
    return added > 0;
  }

  private loosePath(dir: string, hex: string): string {
    return join(dir, hex.slice(0, 2), hex.slice(2));
  }

  /** lookups answered by a multi-pack-index (observable for tests) */
  midxHits = 0;

  private locateOnce(oid: Buffer): Location | undefined {
    for (const s of this.sources) {
      if (s.midx) {
        const i = s.midx.find(oid);
        if (i >= 0) {
          const loc = s.midx.location(i);
          const pack = s.byIdx.get(loc.pack);
          if (pack) {
            this.midxHits++;
            return { kind: 'packed', pack, pos: -1, offset: loc.offset };
          }
        }
      }
      for (const p of s.packs) {
        const pos = p.index.find(oid);
        if (pos >= 0) return { kind: 'packed', pack: p, pos, offset: p.index.offset(pos) };
      }
    }
    const hex = oid.toString('hex');
    for (const s of this.sources) {
      const path = this.loosePath(s.objectsDir, hex);
      if (existsSync(path)) return { kind: 'loose', path };
    }
    return undefined;
  }

  locate(oid: Buffer): Location | undefined {
    const l = this.locateOnce(oid);
    if (l) return l;
    if (this.rescan()) return this.locateOnce(oid);
    return undefined;
  }

  has(oid: Buffer): boolean { return this.locate(oid) !== undefined; }

  /** Read an object: one lookup gives type, size and content. */
  read(oid: Buffer): RawObject | undefined {
    for (let attempt = 0; attempt < 2; attempt++) {
      const loc = this.locate(oid);
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
    if (loc.kind === 'loose') {
      const raw = inflateSync(readFileSync(loc.path));
      const h = parseLooseHeader(raw, loc.path);
      const data = raw.subarray(h.at);
      if (data.length !== h.size) throw corrupt(`loose object ${loc.path} is corrupt`);
      return { type: h.type, data };
    }
    return this.readPacked(loc.pack, loc.offset);
  }

  private readPacked(pack: PackFile, offset: number): RawObject {
    // walk down the delta chain to a base (or a cached one), then apply upwards
    const chain: Array<{ pack: PackFile; h: EntryHeader; key: string }> = [];
    let cur = pack, off = offset;
    let base: RawObject | undefined;
    for (let depth = 0; ; depth++) {
      if (depth > 10000) throw corrupt('delta chain too long');
      const key = `${packId(cur)}:${off}`;
      const cached = this.cache.get(key);
      if (cached) { base = cached; break; }
      const h = cur.header(off);
      if (h.type === ObjType.OfsDelta) {
        chain.push({ pack: cur, h, key });
        off = h.baseOffset!;
        continue;
      }
      if (h.type === ObjType.RefDelta) {
        chain.push({ pack: cur, h, key });
        const pos = cur.index.find(h.baseOid!);
        if (pos >= 0) { off = cur.index.offset(pos); continue; }
        const b = this.read(h.baseOid!);
        if (!b) throw corrupt(`failed to read delta base object ${h.baseOid!.toString('hex')}`);
        base = b;
        break;
      }
      base = { type: h.type, data: cur.inflate(h) };
      if (chain.length > 0) this.cache.set(key, base);
      break;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const { pack: p, h, key } = chain[i]!;
      base = { type: base.type, data: applyDelta(base.data, p.inflate(h)) };
      if (i > 0) this.cache.set(key, base);
    }
    return base;
  }

  /** Type and size without reading content where the format allows. */
  info(oid: Buffer, wantDisk = false): ObjectInfo | undefined {
    const loc = this.locate(oid);
    if (!loc) return undefined;
    return this.infoAt(loc, wantDisk);
  }

  infoAt(loc: Location, wantDisk = false): ObjectInfo {
    if (loc.kind === 'loose') {
      const file = readFileSync(loc.path);
      const head = inflateSync(file.subarray(0, Math.min(file.length, 256)), { finishFlush: zc.Z_SYNC_FLUSH });
      const h = parseLooseHeader(head, loc.path);
      return { type: h.type, size: h.size, diskSize: file.length };
    }
    const { pack, offset } = loc;
    const h = pack.header(offset);
    const info: ObjectInfo = { type: h.type, size: h.size };
    if (wantDisk) info.diskSize = pack.diskSize(offset);
    if (h.type === ObjType.OfsDelta || h.type === ObjType.RefDelta) {
      info.size = deltaResultSize(pack.inflatePrefix(h, 32));
      if (h.type === ObjType.RefDelta) info.deltaBase = h.baseOid;
      else {
        const pos = this.positionOfOffset(pack, h.baseOffset!);
        info.deltaBase = pos >= 0 ? Buffer.from(pack.index.oid(pos)) : undefined;
      }
      info.type = this.baseType(pack, h);
    }
    return info;
  }

  private offsetMaps = new WeakMap<PackFile, Map<number, number>>();
  private positionOfOffset(pack: PackFile, offset: number): number {
    let m = this.offsetMaps.get(pack);
    if (!m) {
      m = new Map();
      for (let i = 0; i < pack.index.count; i++) m.set(pack.index.offset(i), i);
      this.offsetMaps.set(pack, m);
    }
    return m.get(offset) ?? -1;
  }

  private baseType(pack: PackFile, h: EntryHeader): ObjType {
    for (let depth = 0; depth < 10000; depth++) {
      if (h.type === ObjType.OfsDelta) { h = pack.header(h.baseOffset!); continue; }
      if (h.type === ObjType.RefDelta) {
        const pos = pack.index.find(h.baseOid!);
        if (pos >= 0) { h = pack.header(pack.index.offset(pos)); continue; }
        const i = this.info(h.baseOid!);
        if (!i) throw corrupt(`failed to read delta base object ${h.baseOid!.toString('hex')}`);
        return i.type;
      }
      return h.type;
    }
    throw corrupt('delta chain too long');
  }

  /** Ids starting with a hex prefix (deduplicated), at most `limit`. */
  findByPrefix(hexPrefix: string, limit = 2): Buffer[] {
    const even = hexPrefix.length & ~1;
    const prefix = Buffer.from(hexPrefix.slice(0, even), 'hex');
    const odd = hexPrefix.length & 1 ? parseInt(hexPrefix[even]!, 16) : undefined;
    const seen = new Map<string, Buffer>();
    const add = (b: Buffer) => { const k = b.toString('hex'); if (!seen.has(k)) seen.set(k, Buffer.from(b)); };
    for (const s of this.sources) {
      for (const p of s.packs) for (const i of p.index.findPrefix(prefix, odd, limit + 1)) add(p.index.oid(i));
      if (hexPrefix.length >= 2) {
        let names: string[] = [];
        try { names = readdirSync(join(s.objectsDir, hexPrefix.slice(0, 2))); } catch { /* none */ }
        const rest = hexPrefix.slice(2);
        for (const n of names) if (n.startsWith(rest) && n.length === this.hashLen * 2 - 2) add(Buffer.from(hexPrefix.slice(0, 2) + n, 'hex'));
      }
      if (seen.size > limit) break;
    }
    return [...seen.values()].slice(0, Math.max(limit, seen.size));
  }

  /** Every object id, sorted and deduplicated (git cat-file --batch-all-objects). */
  allObjectsSorted(): Buffer[] {
    const all: Buffer[] = [];
    for (const s of this.sources) {
      for (const p of s.packs) for (let i = 0; i < p.index.count; i++) all.push(p.index.oid(i));
      for (let b = 0; b < 256; b++) {
        const d = b.toString(16).padStart(2, '0');
        let names: string[];
        try { names = readdirSync(join(s.objectsDir, d)); } catch { continue; }
        for (const n of names) if (n.length === this.hashLen * 2 - 2 && /^[0-9a-f]+$/.test(n)) all.push(Buffer.from(d + n, 'hex'));
      }
    }
    all.sort(Buffer.compare);
    const out: Buffer[] = [];
    for (const o of all) if (out.length === 0 || !out[out.length - 1]!.equals(o)) out.push(o);
    return out;
  }

  /**
   * Every object in storage order, as `git cat-file --unordered`: loose
   * objects (directory order), then each pack in pack order. Each comes
   * with its location, so nothing is looked up twice.
   */
  *allObjectsUnordered(): Generator<Buffer> {
    for (const x of this.allObjectsWithLocation()) yield x.oid;
  }

  *allObjectsWithLocation(): Generator<{ oid: Buffer; loc: Location }> {
    const packs = this.packsByAge();
    let loose = 0;
    const looseFirst: Array<{ oid: Buffer; loc: Location }> = [];
    for (const s of this.sources) {
      for (let b = 0; b < 256; b++) {
        const d = b.toString(16).padStart(2, '0');
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
      for (const i of p.positionsInPackOrder()) {
        const o = p.index.oid(i);
        if (once(o)) yield { oid: o, loc: { kind: 'packed', pack: p, pos: i, offset: p.index.offset(i) } };
      }
    }
  }

  /** Local packs first, newest first (git's pack order). */
  private packsByAge(): PackFile[] {
    const out: Array<{ p: PackFile; local: boolean; mtime: number }> = [];
    this.sources.forEach((s, i) => {
      for (const p of s.packs) {
        let mtime = 0;
        try { mtime = statSync(p.packPath).mtimeMs; } catch { /* removed */ }
        out.push({ p, local: i === 0, mtime });
      }
    });
    // git prepends each pack it finds (reverse directory order), then sorts stably by whole seconds
    out.reverse();
    out.sort((a, b) => (a.local !== b.local ? (a.local ? -1 : 1) : Math.floor(b.mtime / 1000) - Math.floor(a.mtime / 1000)));
    return out.map((x) => x.p);
  }

  close(): void {
    for (const s of this.sources) for (const p of s.packs) p.close();
  }
}
