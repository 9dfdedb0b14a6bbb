/**
 * Refs: loose, packed-refs, symbolic refs and HEAD, in git's order (loose
 * shadows packed).
 *
 * Two readers share one implementation:
 * - `RefStore` reads live: every call sees the refs as they are on disk
 *   (ref transactions use it, under their locks);
 * - `RefSnapshot` (`RefStore.snapshot()`) is what one request reads: the
 *   loose refs are listed once and `packed-refs` is opened once, after the
 *   listing (a concurrent `pack-refs` writes packed-refs before it prunes
 *   loose refs, so every ref is seen in one of the two), and every later
 *   question of the request is answered from that state.
 *
 * `packed-refs` is a `PackedRefs` value: the file held open (a rename by
 * git cannot change what it reads), its header traits read once, and
 * sorted by construction: a file without the `sorted` trait (no header, as
 * older git and other tools write) is sorted in memory once, as git does,
 * and every reader (lookups, scans, seeks) goes through the sorted form.
 * A store keeps its `PackedRefs` across calls and requests, revalidated by
 * a stat of the file, as git's packed-refs snapshot is.
 *
 * Refs are handed over as `Ref` records: regions of the bytes read from
 * disk, names and hex ids already in wire form, so advertisements copy
 * them without building strings.
 */
import { lstat } from 'node:fs/promises';
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { checkRefnameFormat } from '../../refname.js';
import { refsCorrupt } from '../../../errors.js';
import { decodeName, encodeName, fsPath } from '../../../util/byte-name.js';
import type { Slicer } from '../../../util/budget.js';
import { Peel, Ref, reducePrefixes, upperBound, type HeadState, type LooseValue } from '../ref.js';
import { isLooseRefName, isValidRefName, validHex } from '../names.js';
import { MAX_LOOSE_REF_SIZE, OPEN_FLAGS, within, type LooseEntry } from './loose.js';
import { PackedRefs, WHOLE_MAX, stampOf } from './packed.js';
import { MergeCursor } from './merge-cursor.js';
import { RefTransaction } from './transaction.js';
import { readReflog, reflogExists, type ReflogEntry } from '../../reflog.js';
import type { PointReader, RefStore } from '../ref-store.js';
import type { RawRef } from '../ref.js';
import type { TransactionOptions } from '../transaction.js';

const NO_LOOSE: LooseEntry[] = [];
/**
 * Bytes of packed-refs one seek is worth: a binary search costs about as
 * much as reading this much of the file in order. Above size / SEEK_COST
 * prefixes, one pass over their span is cheaper than a seek each.
 */
const SEEK_COST = 64 * 1024;
/** resolveAt's answer for a symref chain too deep to follow (a loop) */
const SYMREF_LOOP = Symbol('symref loop');
const HASH_HEX = new Set([40, 64]);

/**
 * Refs read live: each call sees the refs as they are on disk. Lookups read
 * the loose file, then packed-refs; listings take the loose refs first and
 * packed-refs after. `snapshot()` gives the reader one request uses.
 */
export class FilesRefStore implements RefStore {
  readonly format = 'files' as const;
  readonly hexLen: number;
  /** the packed-refs last opened, kept while a stat says it is current */
  private packedCache?: PackedRefs;
  /** packed-refs of at most this many bytes is read whole when opened, and held in memory (PackedRefs.open) */
  packedWholeMax = WHOLE_MAX;

  constructor(readonly gitDir: string, readonly commonDir: string, readonly hashLen: number) {
    this.hexLen = hashLen * 2;
    if (!HASH_HEX.has(this.hexLen)) throw new Error('bad hash length');
  }

  get packedPath(): string { return join(this.commonDir, 'packed-refs'); }

  /** real paths of the directories loose refs may live in (resolved once) */
  private realDirs?: string[];
  /** the two directories as dirname() spells them: where a walk up from a ref's path stops */
  private rootDirs?: Set<string>;
  /** directories already checked to lie inside the repository (only answers that cannot change by a push) */
  private readonly okDirs = new Map<string, boolean>();

  private inside(p: string): boolean {
    this.realDirs ??= [this.gitDir, this.commonDir].map((d) => { try { return realpathSync(d); } catch { return resolvePath(d); } });
    return this.realDirs.some((d) => within(d, p));
  }

  /**
   * Does the directory holding `path` really lie inside the repository (no
   * symlinked directory leading out)? A directory is inside when its parent
   * is and it is a real directory (lstat), or a symlink whose target is
   * inside. The walk goes up only to the nearest directory already known,
   * so the ancestors of a ref 2,000 levels deep cost one lstat each, once
   * (a realpath per ancestor made them quadratic in syscalls).
   */
  private get roots(): Set<string> {
    return this.rootDirs ??= new Set([this.gitDir, this.commonDir].map((d) => dirname(join(d, 'x'))));
  }

  private dirInside(path: string): boolean {
    const roots = this.roots;
    const chain: string[] = [];
    let dir = dirname(path);
    let ok: boolean | undefined;
    for (;;) {
      if (roots.has(dir)) { ok = true; break; }
      ok = this.okDirs.get(dir);
      if (ok !== undefined) break;
      const up = dirname(dir);
      if (up === dir) { ok = false; break; }
      chain.push(dir);
      dir = up;
    }
    if (this.okDirs.size + chain.length > 16384) this.okDirs.clear();
    for (let i = chain.length - 1; ok && i >= 0; i--) {
      const d = chain[i]!;
      // a directory that does not exist (yet) is not remembered: a push may create it
      let st;
      try { st = lstatSync(fsPath(d), { throwIfNoEntry: false }); } catch { return false; }
      if (!st) return false;
      if (st.isSymbolicLink()) {
        try { ok = this.inside(decodeName(realpathSync(fsPath(d), 'buffer'))); } catch { return false; }
      } else if (!st.isDirectory()) {
        return false; // a file where a directory goes (a ref below a ref): not remembered either
      }
      this.okDirs.set(d, ok);
    }
    return ok;
  }

  /**
   * Check the directories above `path` off the event loop (lstat on the
   * thread pool), so that the synchronous reads after it find them known
   * (a ref thousands of levels deep).
   */
  async learnDirs(path: string): Promise<void> {
    const chain: string[] = [];
    for (let dir = dirname(path); !this.roots.has(dir) && !this.okDirs.get(dir); dir = dirname(dir)) {
      if (dirname(dir) === dir) return;
      chain.push(dir);
    }
    if (this.okDirs.size + chain.length > 16384) this.okDirs.clear();
    for (let i = chain.length - 1; i >= 0; i--) {
      const d = chain[i]!;
      let st;
      try { st = await lstat(fsPath(d)); } catch { return; }
      if (st.isSymbolicLink() || !st.isDirectory()) return; // left to dirInside
      this.okDirs.set(d, true);
    }
  }

  /**
   * The bytes of a loose ref file, read safely: the name is checked first
   * (nothing outside refs/ or the root refs), symlinks are followed only
   * when they stay inside the repository, and only regular files of at
   * most MAX_LOOSE_REF_SIZE bytes are read (never a FIFO, device or
   * directory; opening cannot block). A legacy symlink symref
   * (`refs/heads/x -> refs/heads/y`) reads as `ref: <target>`, as in git.
   */
  private readLooseBytes(name: string): Buffer | undefined {
    if (!isLooseRefName(name)) return undefined;
    const dir = name === 'HEAD' || !name.startsWith('refs/') ? this.gitDir : this.commonDir;
    let path = join(dir, name);
    if (!this.dirInside(path)) return undefined;
    let fd: number;
    try {
      fd = openSync(fsPath(path), OPEN_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ELOOP' && code !== 'EMLINK') return undefined;
      // a symlink: git's legacy symref when it names a ref, else its target if that stays inside
      let target: string;
      try {
        if (!lstatSync(fsPath(path)).isSymbolicLink()) return undefined;
        target = decodeName(readlinkSync(fsPath(path), 'buffer'));
      } catch { return undefined; }
      if (target.startsWith('refs/') && checkRefnameFormat(target)) return encodeName(`ref: ${target}`);
      let real: string;
      try { real = decodeName(realpathSync(fsPath(path), 'buffer')); } catch { return undefined; }
      if (!this.inside(real)) return undefined;
      path = real;
      try { fd = openSync(fsPath(path), OPEN_FLAGS); } catch { return undefined; }
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > MAX_LOOSE_REF_SIZE) return undefined;
      const buf = Buffer.allocUnsafe(st.size);
      let n = 0;
      while (n < buf.length) {
        const r = readSync(fd, buf, n, buf.length - n, n);
        if (r <= 0) break;
        n += r;
      }
      return buf.subarray(0, n);
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }

  /** Read a loose ref file now: hex id or `ref: <target>`; undefined if absent, junk or not a ref name. */
  readLooseLive(name: string): LooseValue | undefined {
    const raw = this.readLooseBytes(name);
    if (!raw) return undefined;
    let end = raw.length;
    while (end > 0 && (raw[end - 1] === 10 || raw[end - 1] === 13 || raw[end - 1] === 32)) end--;
    const body = raw.subarray(0, end);
    if (body.length > 5 && body.toString('latin1', 0, 5) === 'ref: ') {
      return { symref: decodeName(body, 5).trim() };
    }
    const hex = body.subarray(0, this.hexLen);
    if (!validHex(hex, this.hexLen)) return undefined;
    return { hex };
  }

  /**
   * The current packed-refs, pinned for the caller (unpin it when done):
   * the one kept from the last call when a stat of the file still matches
   * it, else the file opened afresh.
   */
  openPacked(): PackedRefs | undefined {
    let stamp: string | undefined;
    try {
      const st = statSync(this.packedPath, { bigint: true, throwIfNoEntry: false });
      stamp = st ? stampOf(st) : undefined;
    } catch { stamp = undefined; }
    const cur = this.packedCache;
    if (cur && cur.stamp === stamp) return cur.pin();
    if (cur) { this.packedCache = undefined; cur.unpin(); }
    if (stamp === undefined) return undefined;
    const p = PackedRefs.open(this.packedPath, this.hexLen, this.packedWholeMax);
    if (!p) return undefined;
    this.packedCache = p;
    return p.pin();
  }

  /** The loose refs whose names start with `prefix`, in name order, read now. */
  listLoose(prefix: string): LooseEntry[] {
    const out: LooseEntry[] = [];
    for (const e of this.walkLoose(prefix)) if (e) out.push(e);
    return out.sort((a, b) => Buffer.compare(a.name, b.name));
  }

  /**
   * The same listing, giving the event loop away on `slicer` between
   * files: 100,000 loose refs take seconds to read, and a server's other
   * requests go on meanwhile.
   */
  async listLooseSliced(prefix: string, slicer: Slicer): Promise<LooseEntry[]> {
    const out: LooseEntry[] = [];
    for (const e of this.walkLoose(prefix)) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (e) out.push(e);
    }
    return out.sort((a, b) => Buffer.compare(a.name, b.name));
  }

  /** The loose refs under `prefix`, unsorted; undefined for a file that is no ref (one step of work all the same). */
  private *walkLoose(prefix: string): Generator<LooseEntry | undefined> {
    // only names under refs/ are loose refs a listing can find
    if (!prefix.startsWith('refs/') && !'refs/'.startsWith(prefix)) return;
    // walk only the part of the tree the prefix allows
    const cut = prefix.lastIndexOf('/');
    yield* this.walkLooseDir(cut > 4 ? prefix.slice(0, cut) : 'refs', prefix);
  }

  private *walkLooseDir(rel: string, prefix: string): Generator<LooseEntry | undefined> {
    let ents;
    // entries as bytes: a file name that is not UTF-8 is a ref all the same (git lists it)
    try { ents = readdirSync(fsPath(join(this.commonDir, rel)), { withFileTypes: true, encoding: 'buffer' }); } catch { return; }
    for (const e of ents) {
      const name = `${rel}/${decodeName(e.name)}`;
      // a directory is a step of work too: a ref 2,000 levels deep is 2,000 readdirs, in slices
      if (e.isDirectory()) { yield undefined; yield* this.walkLooseDir(name, prefix); continue; }
      if (!e.isFile() && !e.isSymbolicLink()) continue;
      if (!name.startsWith(prefix) || !isValidRefName(name)) continue;
      const v = this.readLooseLive(name);
      if (!v) { yield undefined; continue; }
      const nb = encodeName(name);
      yield v.hex ? { name: nb, nameStr: name, ref: Ref.of(v.hex, nb) } : { name: nb, nameStr: name, symref: v.symref };
    }
  }

  /** Read ahead what a request's first look at the refs reads (a snapshot lists its loose refs), yielding on `slicer`. */
  async prepare(slicer: Slicer): Promise<void> { void slicer; }

  // What a snapshot answers from its own state; live here.
  /** A loose ref's content (see readLooseLive). */
  readLoose(name: string): LooseValue | undefined { return this.readLooseLive(name); }
  /** The packed-refs this reader uses, pinned. */
  protected packed(): PackedRefs | undefined { return this.openPacked(); }
  /** Loose refs under `prefix` (see listLoose). */
  protected loose(prefix: string): LooseEntry[] { return this.listLoose(prefix); }

  /** One ref in packed-refs (loose refs not consulted). */
  lookupPacked(name: string): Ref | undefined {
    const p = this.packed();
    if (!p) return undefined;
    try { return p.lookup(encodeName(name)); } finally { p.unpin(); }
  }

  /** The first packed ref whose name starts with `prefix` (loose refs not consulted). */
  firstPackedUnder(prefix: string): string | undefined {
    const p = this.packed();
    if (!p) return undefined;
    try {
      const key = encodeName(prefix);
      const r = p.cursor(key, upperBound(key)).next();
      return r && decodeName(r.buf, r.nameAt, r.nameEnd);
    } finally { p.unpin(); }
  }

  /** Which of `names` packed-refs holds, the file opened once for all of them. */
  packedAmong(names: readonly string[]): Set<string> {
    const out = new Set<string>();
    const p = names.length ? this.packed() : undefined;
    if (!p) return out;
    try { for (const n of names) if (n.startsWith('refs/') && p.lookup(encodeName(n))) out.add(n); } finally { p.unpin(); }
    return out;
  }

  /**
   * What packed-refs knows about peeling `name` (after following symrefs):
   * the peeled hex, 'none' when it is known not to peel, undefined when
   * only the object can tell (a loose ref, or no fully-peeled trait).
   */
  knownPeeled(name: string, depth = 0): Buffer | 'none' | undefined {
    if (depth > 5) return undefined;
    const loose = this.readLoose(name);
    if (loose?.symref) return this.knownPeeled(loose.symref, depth + 1);
    if (loose?.hex || !name.startsWith('refs/')) return undefined;
    const rec = this.lookupPacked(name);
    if (!rec) return undefined;
    if (rec.peel === Peel.Peeled) return rec.peeled;
    return rec.peel === Peel.None ? 'none' : undefined;
  }

  /** Resolve a ref name to a hex id, following symrefs. */
  resolve(name: string): { hex?: Buffer; target: string } | undefined {
    const r = this.resolveAt(name, 0);
    return r === SYMREF_LOOP ? undefined : r;
  }

  /** A dangling symref resolves to its target without an id; a loop (too deep) does not resolve at all, as in git. */
  private resolveAt(name: string, depth: number): { hex?: Buffer; target: string } | undefined | typeof SYMREF_LOOP {
    if (depth > 5) return SYMREF_LOOP;
    if (!isLooseRefName(name)) return undefined;
    const loose = this.readLoose(name);
    if (loose?.symref) {
      const t = this.resolveAt(loose.symref, depth + 1);
      if (t === SYMREF_LOOP) return t;
      return t ? { hex: t.hex, target: t.target } : { target: loose.symref };
    }
    if (loose?.hex) return { hex: loose.hex, target: name };
    if (name.startsWith('refs/')) {
      const p = this.lookupPacked(name);
      if (p) return { hex: p.hex, target: name };
    }
    return undefined;
  }

  head(): HeadState {
    const loose = this.readLoose('HEAD');
    if (!loose) return {};
    if (loose.symref) {
      const r = this.resolve(loose.symref);
      return { symref: loose.symref, hex: r?.hex };
    }
    return { hex: loose.hex };
  }

  /** A listed loose ref as a record: a symref resolved, undefined when it dangles (skipped, as git does). */
  private looseRef(l: LooseEntry): Ref | undefined {
    if (l.ref) return l.ref;
    const t = this.resolve(l.symref!);
    return t?.hex ? Ref.of(t.hex, l.name, l.symref) : undefined;
  }

  /** Loose lists first, packed-refs after: a ref packed and pruned meanwhile is in one of the two. */
  private merged(prefixes: readonly string[], reuse: boolean, scratch?: (n: number) => Buffer | undefined): { cursor: MergeCursor; packed?: PackedRefs } {
    const pfx = reducePrefixes(prefixes);
    const lists = this.looseLists(pfx);
    const packed = this.packed();
    const mem = packed && reuse && scratch && !packed.inMemory ? scratch(packed.cursorMemory) : undefined;
    // many prefixes: one pass over the part of packed-refs they span, not two seeks each
    // (65,000 prefixes made 130,000 binary searches of small reads); few: a seek each
    const onePass = !!packed && pfx.length > 1 && pfx.length * SEEK_COST > packed.size;
    return { cursor: new MergeCursor(pfx, lists, packed, reuse, (l) => this.looseRef(l), mem, onePass), packed };
  }

  /** The loose refs of each prefix (sorted, disjoint): one listing split between them when there are many. */
  private looseLists(pfx: Buffer[]): LooseEntry[][] {
    if (pfx.length <= 8) return pfx.map((p) => this.loose(decodeName(p)));
    const last = pfx[pfx.length - 1]!;
    let n = Math.min(pfx[0]!.length, last.length);
    while (n > 0 && pfx[0]!.compare(last, 0, n, 0, n) !== 0) n--;
    // the listing's prefix ends at a '/' (the walk goes by directory), never inside a character
    n = pfx[0]!.lastIndexOf(0x2f, n - 1) + 1;
    const all = this.loose(decodeName(pfx[0]!, 0, n));
    const out: LooseEntry[][] = [];
    let i = 0;
    for (const p of pfx) {
      while (i < all.length && Buffer.compare(all[i]!.name, p) < 0) i++;
      const from = i;
      while (i < all.length && all[i]!.name.length >= p.length && all[i]!.name.compare(p, 0, p.length, 0, p.length) === 0) i++;
      out.push(from === i ? NO_LOOSE : all.slice(from, i));
    }
    return out;
  }

  /**
   * The hot path for advertisements: every ref whose name starts with one
   * of `prefixes`, in name order (loose shadowing packed), each prefix
   * found by a seek into packed-refs. The record handed to `cb` is reused
   * for the next ref: nothing is allocated per packed ref. Every 1024 refs
   * `pause` may make the scan wait (a backed-up socket). `scratch`, when
   * given, supplies the memory packed-refs is read into (the packet
   * writer's, so that lines copy within one block).
   */
  async scan(prefixes: string | readonly string[], cb: (r: Ref) => void, pause?: () => Promise<void> | undefined, scratch?: (n: number) => Buffer | undefined): Promise<void> {
    const { cursor, packed } = this.merged(typeof prefixes === 'string' ? [prefixes] : prefixes, true, scratch);
    try {
      // the work counted is refs read and prefixes sought, not refs handed over: a scan
      // whose prefixes match nothing still gives the loop away (pause looks at the clock)
      let asked = 0;
      if (pause) cursor.pacedBy(1024);
      for (;;) {
        const r = cursor.next();
        if (r) cb(r);
        else if (cursor.done) break;
        if (pause && cursor.work - asked >= 1024) {
          asked = cursor.work;
          const w = pause();
          if (w) await w;
        }
      }
    } finally {
      packed?.unpin();
    }
    this.stillThere();
  }

  /** Every ref under `prefix` (default `refs/`), in name order, loose shadowing packed; each record its own. */
  *iterate(prefix = 'refs/'): Generator<Ref> {
    const { cursor, packed } = this.merged([prefix], false);
    try {
      for (let r = cursor.next(); r; r = cursor.next()) yield r;
    } finally {
      packed?.unpin();
    }
    this.stillThere();
  }

  /**
   * After a walk of the refs: the repository is still there. One deleted
   * (admin/delete.ts renames it away) while its refs were read gave a
   * walk that found some or none of them, which must not be answered as
   * the repository's refs (a clone would succeed, empty).
   */
  private stillThere(): void {
    const refs = join(this.commonDir, 'refs');
    if (!lstatSync(refs, { throwIfNoEntry: false })) throw refsCorrupt(refs, 'ref storage is gone', 'the repository was removed while its refs were read');
  }

  /** A ref's own value: the loose file, else packed-refs. */
  readRaw(name: string): RawRef | undefined {
    const loose = this.readLoose(name);
    if (loose) return loose;
    const p = name.startsWith('refs/') && isLooseRefName(name) ? this.lookupPacked(name) : undefined;
    return p ? { hex: p.hex } : undefined;
  }

  readReflog(name: string): ReflogEntry[] { return readReflog(this.gitDir, this.commonDir, name, this.hexLen); }

  reflogExists(name: string): boolean { return reflogExists(this.gitDir, this.commonDir, name); }

  /** A transaction with git's lock protocol (files/transaction.ts), against the live refs. */
  transaction(opts: TransactionOptions = {}): RefTransaction { return new RefTransaction(this.live, opts); }

  /** the store that reads live (a snapshot's transactions go there) */
  protected get live(): FilesRefStore { return this; }

  /** The reader one request uses (see RefSnapshot). */
  snapshot(): RefSnapshot { return new RefSnapshot(this); }

  /** Point reads, live: listing every loose ref first would cost more than the reads. */
  pointReader(): PointReader {
    return { readRaw: (n) => this.readRaw(n), resolve: (n) => this.resolve(n), close: () => undefined };
  }

  /** Bytes held in memory (an unsorted packed-refs kept sorted). */
  get memoryBytes(): number { return this.packedCache?.memoryBytes ?? 0; }

  /** Let go of the kept packed-refs. */
  close(): void {
    const p = this.packedCache;
    this.packedCache = undefined;
    p?.unpin();
  }

}

/**
 * The refs as one request sees them. On first use it lists every loose ref
 * under `refs/` and then pins the current packed-refs; from then on every
 * lookup, listing and scan of the request is answered from that state, so
 * an advertisement and the want checks after it agree even while refs
 * are updated or packed. Root refs (HEAD, …) are read once, when first
 * asked for. `close()` when the request ends.
 */
export class RefSnapshot extends FilesRefStore {
  private list?: LooseEntry[];
  private readonly values = new Map<string, LooseValue | null>();
  private pinned?: PackedRefs;
  private closed = false;

  constructor(private readonly store: FilesRefStore) {
    super(store.gitDir, store.commonDir, store.hashLen);
  }

  private ensure(): LooseEntry[] {
    if (this.closed) throw new Error('ref snapshot used after close');
    if (this.list) return this.list;
    return this.take(this.store.listLoose('refs/'));
  }

  private take(list: LooseEntry[]): LooseEntry[] {
    for (const l of list) this.values.set(l.nameStr, l.ref ? { hex: l.ref.hex } : { symref: l.symref });
    this.pinned = this.store.openPacked();
    this.list = list;
    return list;
  }

  /** List the loose refs now, in slices, unless the request has read its refs already. */
  override async prepare(slicer: Slicer): Promise<void> {
    if (this.closed || this.list) return;
    const list = await this.store.listLooseSliced('refs/', slicer);
    if (!this.list && !this.closed) this.take(list);
  }

  override readLoose(name: string): LooseValue | undefined {
    this.ensure();
    let v = this.values.get(name);
    if (v === undefined) {
      // names under refs/ were all listed; a root ref is read once
      v = name.startsWith('refs/') ? null : this.store.readLooseLive(name) ?? null;
      this.values.set(name, v);
    }
    return v ?? undefined;
  }

  protected override packed(): PackedRefs | undefined {
    this.ensure();
    return this.pinned?.pin();
  }

  protected override loose(prefix: string): LooseEntry[] {
    const list = this.ensure();
    const key = encodeName(prefix);
    let lo = 0, hi = list.length;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (Buffer.compare(list[mid]!.name, key) < 0) lo = mid + 1; else hi = mid; }
    let end = lo;
    while (end < list.length && list[end]!.name.length >= key.length && list[end]!.name.compare(key, 0, key.length, 0, key.length) === 0) end++;
    return list.slice(lo, end);
  }

  override snapshot(): RefSnapshot { return this; }

  protected override get live(): FilesRefStore { return this.store; }

  override get memoryBytes(): number { return 0; }

  /** The request is over: let go of its packed-refs. */
  override close(): void {
    this.closed = true;
    const p = this.pinned;
    this.pinned = undefined;
    p?.unpin();
  }
}

