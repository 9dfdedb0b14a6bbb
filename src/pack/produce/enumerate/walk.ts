/**
 * Object enumeration without bitmaps: what `git pack-objects --revs`
 * packs for the wants, `--not` haves and extra edges, `--shallow` grafts,
 * `--thin`, `--include-tag` and `--filter` upload-pack gives it (git 2.55:
 * revision.c's prepare_revision_walk/limit_list, list-objects.c's
 * traversal, list-objects-filter.c, pack-objects' get_object_list).
 *
 * It follows git step by step, because the object set depends on the
 * details: uninteresting commits are propagated only as far as git's
 * limited walk goes (it stops five commits after the queue holds nothing
 * interesting), the trees of boundary commits are marked as
 * `pack.useSparse` (default on) or the classic edge marking does, and
 * filters see objects in git's order with git's bookkeeping.
 *
 * Objects live in an ObjectTable (a few bytes each); the walk yields on a
 * Slicer and stops when its AbortSignal fires.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GitwireError } from '../../../errors.js';
import { parseFilter } from '../../../protocol/filter.js';
import { ObjType, typeName } from '../../../repo/object-type.js';
import { parseCommit } from '../../../repo/objects.js';
import type { Repository } from '../../../repo/repository.js';
import { Slicer } from '../../../util/budget.js';
import type { PackObjectsRequest } from '../../pack-objects.js';
import type { IdsPart, PackPlan } from '../plan.js';
import { CommitQueue } from './commit-queue.js';
import { Lofr, Sit, applyFilter, makeFilter, sparseNames, type FilterContext, type ObjectFilter } from './filter.js';
import { includeTags } from './include-tag.js';
import { nameHashByte, nameHashFold } from '../../name-hash.js';
import { Flag, IntList, ObjectTable } from './object-table.js';
import { PathMap } from './path-map.js';
import { PreferredBases } from './preferred-base.js';
import { sparsePatterns } from './sparse-blob.js';
import type { PatternList } from './sparse-patterns.js';

export interface WalkOptions {
  signal?: AbortSignal;
  slicer?: Slicer;
  /** objects found so far, now and then */
  onProgress?: (n: number) => void;
  /** warning lines pack-objects would print (without "\n") */
  warn?: (line: string) => void;
}

/** git's DEFAULT_MAX_ALLOWED_TREE_DEPTH */
const MAX_TREE_DEPTH = 2048;
/** limit_list()'s SLOP */
const SLOP = 5;

const S_IFMT = 0o170000, S_IFDIR = 0o040000, S_IFREG = 0o100000, S_IFLNK = 0o120000;

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);
const missing = (msg: string) => new GitwireError('GW_OBJECT_MISSING', msg);

interface TreeFrame {
  n: number;
  data: Buffer;
  pos: number;
  /** path length before this tree's name */
  baseLen: number;
  /** name hash of the path with its trailing '/' (what children continue) */
  hash: number;
}

class Walker implements FilterContext {
  readonly table: ObjectTable;
  private readonly h: number;
  private readonly slicer: Slicer;
  /** commit data by commit slot (cslot[n] - 1) */
  private cslot = new Int32Array(1024);
  private cDate = new Float64Array(256);
  private cTree = new Int32Array(256);
  private cPar = new Int32Array(256);
  private cParN = new Int32Array(256);
  private ncommits = 0;
  private readonly pool = new IntList(1024);
  private readonly grafts: Set<string>;
  /** the pack's list, in git's order */
  readonly list = new IntList(1024);
  readonly names = new IntList(1024);
  /** tags, trees and blobs to traverse after the commits (revs->pending) */
  private readonly pending = new IntList();
  private readonly pendingName = new IntList();
  /** tag names of pending tags (git's pending->name) */
  private readonly tagNames = new Map<number, Buffer>();
  /** objects in the list that are sent (git's nr_result) */
  private nrResult = 0;
  /** add() calls, duplicates too (pack-objects' nr_seen, the Enumerating count) */
  private nrSeen = 0;
  private readonly pbase: PreferredBases | undefined;
  /** core.maxTreeDepth */
  private readonly maxTreeDepth: number;
  private filter: ObjectFilter | undefined;
  pathBuf = Buffer.allocUnsafe(4096);
  pathLen = 0;
  nameAt = 0;

  constructor(readonly repo: Repository, readonly req: PackObjectsRequest, readonly opts: WalkOptions) {
    this.h = repo.hashLen;
    this.table = new ObjectTable(this.h);
    this.slicer = opts.slicer ?? new Slicer();
    this.grafts = new Set((req.useShallow ? req.shallow : ownShallow(repo)).map((o) => o.toString('latin1')));
    this.maxTreeDepth = repo.config.getInt('core.maxtreedepth', MAX_TREE_DEPTH);
    if (req.thin) this.pbase = new PreferredBases(repo, this.table, Math.max(0, repo.config.getInt('pack.window', 10)));
  }

  /** show_edge(): with --thin, a boundary commit reported once; its tree becomes a preferred base */
  private edge(c: number): void {
    if (!this.pbase || this.has(c, Flag.Shown)) return;
    this.setFlag(c, Flag.Shown);
    this.pbase.addEdge(this.treeOf(c));
  }

  private aborted(): void {
    const s = this.opts.signal;
    if (s?.aborted) throw s.reason instanceof Error ? s.reason : new GitwireError('GW_CLIENT_GONE', 'object enumeration was stopped');
  }

  /** give the loop away when the slice is spent; stop when aborted */
  private async pause(): Promise<void> {
    // a costly filter (hundreds of sparse patterns per path) makes every step count: the clock is read at each
    const t = this.filter?.costly ? this.slicer.due() : this.slicer.tick();
    if (t) {
      await t;
      this.aborted();
      this.opts.onProgress?.(this.nrSeen);
    }
  }

  blobSize(n: number): number | undefined {
    const i = this.repo.odb.info(this.table.oidView(n));
    return i && i.type === ObjType.Blob ? i.size : undefined;
  }

  // ---- commits ----

  private slotOf(n: number): number { return n < this.cslot.length ? this.cslot[n]! - 1 : -1; }

  /** repo_parse_commit(): parents (none for a graft), tree and date; false when the commit cannot be read */
  private parse(n: number): boolean {
    const fl = this.table.flags;
    if (fl[n]! & Flag.Parsed) return true;
    // a view: nothing is added to the table until the commit is read
    const oid = this.table.oidView(n);
    const odb = this.repo.odb;
    let c: { tree: Buffer; parents: Buffer[]; time: number } | undefined = odb.graphCommit(oid);
    if (!c) {
      const o = odb.read(oid);
      if (!o) return false;
      if (o.type !== ObjType.Commit) throw corrupt(`object ${oid.toString('hex')} is a ${typeName(o.type)}, not a commit`);
      c = parseCommit(o.data, this.h);
    }
    const graft = this.grafts.size > 0 && this.grafts.has(oid.toString('latin1'));
    const tree = this.table.intern(c.tree, ObjType.Tree);
    const parents = graft ? [] : c.parents.map((p) => this.table.intern(p, ObjType.Commit));
    const slot = this.ncommits++;
    if (slot === this.cDate.length) {
      const cap = slot * 2;
      const d = new Float64Array(cap); d.set(this.cDate); this.cDate = d;
      const t = new Int32Array(cap); t.set(this.cTree); this.cTree = t;
      const p = new Int32Array(cap); p.set(this.cPar); this.cPar = p;
      const q = new Int32Array(cap); q.set(this.cParN); this.cParN = q;
    }
    if (n >= this.cslot.length) {
      let cap = this.cslot.length;
      while (cap <= n) cap *= 2;
      const s = new Int32Array(cap); s.set(this.cslot); this.cslot = s;
    }
    this.cslot[n] = slot + 1;
    this.cDate[slot] = c.time;
    this.cTree[slot] = tree;
    this.cPar[slot] = this.pool.length;
    this.cParN[slot] = parents.length;
    for (const p of parents) this.pool.push(p);
    this.table.flags[n] = this.table.flags[n]! | Flag.Parsed;
    return true;
  }

  private date(n: number): number { return this.cDate[this.slotOf(n)]!; }
  private treeOf(n: number): number { const s = this.slotOf(n); return s < 0 ? -1 : this.cTree[s]!; }
  /** parents of a parsed commit (none when not parsed: git's commit->parents) */
  private parentsOf(n: number): number[] {
    const s = this.slotOf(n);
    if (s < 0) return [];
    const out: number[] = [];
    const at = this.cPar[s]!;
    for (let i = 0; i < this.cParN[s]!; i++) out.push(this.pool.get(at + i));
    return out;
  }

  private setFlag(n: number, f: number): void { this.table.flags[n] = this.table.flags[n]! | f; }
  private has(n: number, f: number): boolean { return (this.table.flags[n]! & f) !== 0; }

  /** mark_parents_uninteresting() */
  private markParentsUninteresting(n: number): void {
    const stack: number[] = [];
    const one = (c: number) => {
      if (this.has(c, Flag.Uninteresting)) return;
      this.setFlag(c, Flag.Uninteresting);
      for (const p of this.parentsOf(c)) stack.push(p);
    };
    for (const p of this.parentsOf(n)) one(p);
    while (stack.length) one(stack.pop()!);
  }

  /** process_parents() */
  private processParents(n: number, queue: CommitQueue): void {
    if (this.has(n, Flag.Added)) return;
    this.setFlag(n, Flag.Added);
    if (this.has(n, Flag.Uninteresting)) {
      for (const p of this.parentsOf(n)) {
        this.setFlag(p, Flag.Uninteresting);
        if (!this.parse(p)) continue;
        if (this.parentsOf(p).length) this.markParentsUninteresting(p);
        if (this.has(p, Flag.Seen)) continue;
        this.setFlag(p, Flag.Seen | Flag.NotUserGiven);
        queue.put(p, this.date(p));
      }
      return;
    }
    for (const p of this.parentsOf(n)) {
      if (!this.parse(p)) throw missing(`Failed to traverse parents of commit ${this.table.oid(n).toString('hex')}`);
      if (!this.has(p, Flag.Seen)) {
        this.setFlag(p, Flag.Seen | Flag.NotUserGiven);
        queue.put(p, this.date(p));
      }
    }
  }

  /** the last queued commit found interesting (git's interesting_cache), -1: none */
  private interestingCache = -1;

  /** everybody_uninteresting(): the cache keeps repeated asks cheap (65,000 haves would be quadratic without) */
  private everybodyUninteresting(q: CommitQueue): boolean {
    const ic = this.interestingCache;
    if (ic >= 0 && !this.has(ic, Flag.Uninteresting)) return false;
    for (let i = 0; i < q.size; i++) {
      const c = q.at(i);
      if (this.has(c, Flag.Uninteresting)) continue;
      this.interestingCache = c;
      return false;
    }
    return true;
  }

  /** limit_list(): the commits to show, in order */
  private async limitList(tips: number[]): Promise<number[]> {
    const q = new CommitQueue();
    for (const c of tips) q.put(c, this.date(c));
    const out: number[] = [];
    let slop = SLOP;
    let date = Infinity;
    while (q.size) {
      await this.pause();
      const c = q.get();
      if (c === this.interestingCache) this.interestingCache = -1;
      this.processParents(c, q);
      if (this.has(c, Flag.Uninteresting)) {
        this.markParentsUninteresting(c);
        // still_interesting()
        if (!q.size) slop = 0;
        else if (date <= q.peekDate()) slop = SLOP;
        else if (!this.everybodyUninteresting(q)) slop = SLOP;
        else slop--;
        if (slop) continue;
        break;
      }
      date = this.date(c);
      out.push(c);
    }
    return out;
  }

  // ---- trees ----

  private readTree(n: number): Buffer | undefined {
    const o = this.repo.odb.read(this.table.oidView(n));
    if (!o) return undefined;
    if (o.type !== ObjType.Tree) throw corrupt(`object ${this.table.oid(n).toString('hex')} is a ${typeName(o.type)}, not a tree`);
    return o.data;
  }

  /**
   * The entries of a tree: calls `fn(type, oidAt, nameAt, nameEnd)` per
   * entry, with git's canonical modes (anything neither a directory, a
   * file nor a symlink is a submodule: type 0).
   */
  private entry(data: Buffer, pos: number, out: { type: number; oidAt: number; nameAt: number; nameEnd: number; next: number }): void {
    let mode = 0;
    let p = pos;
    for (;;) {
      const c = data[p];
      if (c === undefined) throw corrupt('too-short tree object');
      if (c === 0x20) break;
      if (c < 0x30 || c > 0x37) throw corrupt('malformed mode in tree entry');
      mode = mode * 8 + (c - 0x30);
      p++;
    }
    const nameAt = p + 1;
    const nul = data.indexOf(0, nameAt);
    if (nul < 0 || nul + 1 + this.h > data.length) throw corrupt('too-short tree object');
    if (nul === nameAt) throw corrupt('empty filename in tree entry');
    const fmt = mode & S_IFMT;
    out.type = fmt === S_IFDIR ? ObjType.Tree : fmt === S_IFREG || fmt === S_IFLNK ? ObjType.Blob : 0;
    out.oidAt = nul + 1;
    out.nameAt = nameAt;
    out.nameEnd = nul;
    out.next = nul + 1 + this.h;
  }

  private readonly ent = { type: 0, oidAt: 0, nameAt: 0, nameEnd: 0, next: 0 };

  /** mark_tree_uninteresting() */
  private async markTreeUninteresting(n: number): Promise<void> {
    if (n < 0 || this.has(n, Flag.Uninteresting)) return;
    this.setFlag(n, Flag.Uninteresting);
    await this.markTreeContentsUninteresting(n);
  }

  /** mark_tree_contents_uninteresting(): every tree under it not marked yet, and its blobs */
  private async markTreeContentsUninteresting(root: number): Promise<void> {
    const stack = [root];
    const e = this.ent;
    while (stack.length) {
      await this.pause();
      const n = stack.pop()!;
      const data = this.readTree(n);
      if (!data) continue;
      for (let p = 0; p < data.length; p = e.next) {
        this.entry(data, p, e);
        if (e.type === 0) continue;
        const c = this.table.intern(data, e.type, e.oidAt);
        if (this.has(c, Flag.Uninteresting)) continue;
        this.setFlag(c, Flag.Uninteresting);
        if (e.type === ObjType.Tree) stack.push(c);
      }
    }
  }

  /** mark_trees_uninteresting_sparse() */
  private async markTreesSparse(trees: Set<number>): Promise<void> {
    let interesting = false, uninteresting = false;
    for (const t of trees) {
      if (this.has(t, Flag.Uninteresting)) uninteresting = true; else interesting = true;
      if (interesting && uninteresting) break;
    }
    if (!interesting || !uninteresting) return;
    const byPath = new PathMap();
    const e = this.ent;
    for (const t of trees) {
      await this.pause();
      const data = this.readTree(t);
      if (!data) continue;
      const un = this.has(t, Flag.Uninteresting);
      for (let p = 0; p < data.length; p = e.next) {
        this.entry(data, p, e);
        if (e.type === 0) continue;
        const c = this.table.intern(data, e.type, e.oidAt);
        if (e.type === ObjType.Tree) {
          byPath.add(data.toString('latin1', e.nameAt, e.nameEnd), c);
        }
        if (un) this.setFlag(c, Flag.Uninteresting);
      }
    }
    for (const s of byPath.sets()) await this.markTreesSparse(s);
  }

  /** mark_edges_uninteresting() */
  private async markEdges(commits: number[], sparse: boolean, aggressive: boolean, cmdline: number[]): Promise<void> {
    if (sparse) {
      const set = new Set<number>();
      for (const c of commits) {
        const t = this.treeOf(c);
        if (this.has(c, Flag.Uninteresting)) this.setFlag(t, Flag.Uninteresting);
        set.add(t);
        for (const p of this.parentsOf(c)) {
          const pt = this.treeOf(p);
          if (pt < 0) continue;
          set.add(pt);
          if (!this.has(p, Flag.Uninteresting)) continue;
          this.setFlag(pt, Flag.Uninteresting);
          this.edge(p);
        }
      }
      await this.markTreesSparse(set);
    } else {
      for (const c of commits) {
        if (this.has(c, Flag.Uninteresting)) {
          await this.markTreeUninteresting(this.treeOf(c));
          if (aggressive) this.edge(c);
          continue;
        }
        for (const p of this.parentsOf(c)) {
          if (!this.has(p, Flag.Uninteresting)) continue;
          await this.markTreeUninteresting(this.treeOf(p));
          this.edge(p);
        }
      }
    }
    if (aggressive) {
      for (const o of cmdline) {
        if (this.table.types[o] !== ObjType.Commit || !this.has(o, Flag.Uninteresting)) continue;
        await this.markTreeUninteresting(this.treeOf(o));
        this.edge(o);
      }
    }
  }

  // ---- the list ----

  /**
   * add_object_entry(): a duplicate is dropped, except that an object
   * listed to be sent that turns up as a preferred base (`exclude`) is
   * not sent after all.
   */
  add(n: number, type: ObjType, hash: number, exclude = false): void {
    this.nrSeen++;
    if (this.has(n, Flag.Packed)) {
      if (exclude && !this.has(n, Flag.PreferredBase)) { this.setFlag(n, Flag.PreferredBase); this.nrResult--; }
      return;
    }
    this.setFlag(n, exclude ? Flag.Packed | Flag.PreferredBase : Flag.Packed);
    if (!exclude) this.nrResult++;
    this.table.types[n] = type;
    this.list.push(n);
    this.names.push(hash);
  }

  private readonly addExcluded = (n: number, type: ObjType, hash: number) => this.add(n, type, hash, true);

  /** pack-objects' show_object(): the preferred bases at its name first, then the object */
  private show(n: number, type: ObjType, hash: number, name: Buffer): void {
    this.pbase?.forName(name, this.addExcluded);
    this.add(n, type, hash);
  }

  private appendPath(src: Buffer, from: number, to: number): void {
    const need = this.pathLen + (to - from) + 1;
    if (need > this.pathBuf.length) {
      const b = Buffer.allocUnsafe(Math.max(need, this.pathBuf.length * 2));
      this.pathBuf.copy(b, 0, 0, this.pathLen);
      this.pathBuf = b;
    }
    src.copy(this.pathBuf, this.pathLen, from, to);
    this.pathLen += to - from;
  }

  private filterAt(sit: Sit, n: number, nameAt: number): number {
    this.nameAt = nameAt;
    return applyFilter(this.filter, sit, n, this);
  }

  /** process_blob(): `name` is bytes [from, to) of `src`; `hash` the name hash of the directory part */
  private processBlob(n: number, src: Buffer, from: number, to: number, hash: number): void {
    if (this.has(n, Flag.Uninteresting | Flag.Seen)) return;
    const baseLen = this.pathLen;
    this.appendPath(src, from, to);
    const r = this.filterAt(Sit.Blob, n, baseLen);
    if (r & Lofr.MarkSeen) this.setFlag(n, Flag.Seen);
    if (r & Lofr.DoShow) this.show(n, ObjType.Blob, nameHashFold(hash, src, from, to), this.pathBuf.subarray(0, this.pathLen));
    this.pathLen = baseLen;
  }

  /** process_tree() for a tree and everything under it, without recursion */
  private async processTree(root: number, rootHash: number): Promise<void> {
    const stack: TreeFrame[] = [];
    const e = this.ent;
    const enter = (n: number, src: Buffer, from: number, to: number, hash: number): void => {
      if (this.has(n, Flag.Uninteresting | Flag.Seen)) return;
      if (stack.length > this.maxTreeDepth) throw corrupt('exceeded maximum allowed tree depth');
      const data = this.readTree(n);
      if (!data) throw missing(`bad tree object ${this.table.oid(n).toString('hex')}`);
      const baseLen = this.pathLen;
      this.appendPath(src, from, to);
      const own = nameHashFold(hash, src, from, to);
      const r = this.filterAt(Sit.BeginTree, n, baseLen);
      if (r & Lofr.MarkSeen) this.setFlag(n, Flag.Seen);
      if (r & Lofr.DoShow) this.show(n, ObjType.Tree, own, this.pathBuf.subarray(0, this.pathLen));
      let childHash = own;
      if (this.pathLen) { this.appendPath(SLASH, 0, 1); childHash = nameHashByte(own, 0x2f); }
      const frame: TreeFrame = { n, data, pos: 0, baseLen, hash: childHash };
      if (r & Lofr.SkipTree) this.leave(frame);
      else stack.push(frame);
    };
    enter(root, EMPTY, 0, 0, rootHash);
    while (stack.length) {
      await this.pause();
      const f = stack[stack.length - 1]!;
      // a run of entries between pauses (one when the filter is costly)
      const run = this.filter?.costly ? 1 : 64;
      for (let k = 0; k < run && f.pos < f.data.length && stack[stack.length - 1] === f; k++) {
        this.entry(f.data, f.pos, e);
        f.pos = e.next;
        if (e.type === 0) continue;
        const c = this.table.intern(f.data, e.type, e.oidAt);
        if (this.table.types[c] !== e.type) {
          const what = e.type === ObjType.Tree ? 'tree' : 'blob';
          throw corrupt(`entry '${f.data.toString('utf8', e.nameAt, e.nameEnd)}' in tree ${this.table.oid(f.n).toString('hex')} has ${what} mode, but is not a ${what}`);
        }
        this.setFlag(c, Flag.NotUserGiven);
        if (e.type === ObjType.Tree) enter(c, f.data, e.nameAt, e.nameEnd, f.hash);
        else this.processBlob(c, f.data, e.nameAt, e.nameEnd, f.hash);
      }
      if (stack[stack.length - 1] === f && f.pos >= f.data.length) {
        stack.pop();
        this.leave(f);
      }
    }
  }

  /** the LOFS_END_TREE half of process_tree() */
  private leave(f: TreeFrame): void {
    const r = this.filterAt(Sit.EndTree, f.n, f.baseLen);
    if (r & Lofr.MarkSeen) this.setFlag(f.n, Flag.Seen);
    if (r & Lofr.DoShow) this.show(f.n, ObjType.Tree, f.hash, this.pathBuf.subarray(0, this.pathLen));
    this.pathLen = f.baseLen;
  }

  // ---- the whole walk ----

  /** The type of an object named by the request (undefined: not in the repository). */
  private typeOf(oid: Buffer): ObjType | undefined {
    return this.repo.odb.typeOf(oid);
  }

  async run(): Promise<void> {
    const req = this.req;
    this.aborted();
    if (req.filter) {
      const spec = parseFilter(req.filter);
      const patterns = new Map<string, PatternList>();
      for (const name of sparseNames(spec)) {
        if (!patterns.has(name)) patterns.set(name, await sparsePatterns(this.repo, name, { slicer: this.slicer, signal: this.opts.signal, warn: this.opts.warn }));
      }
      this.filter = makeFilter(spec, { sparsePatterns: (name) => patterns.get(name)! });
    }
    // handle_revision_arg() for each line: wants, then --not haves and extra edges
    const cmdline: number[] = [];
    const add = (oid: Buffer, uninteresting: boolean) => {
      const t = this.typeOf(oid);
      if (t === undefined) {
        // upload-pack only passes haves it has; one that vanished is left out
        if (uninteresting) return;
        throw missing(`bad object ${oid.toString('hex')}`);
      }
      const n = this.table.intern(oid, t);
      this.table.types[n] = t;
      if (uninteresting) this.setFlag(n, Flag.Uninteresting);
      cmdline.push(n);
    };
    for (const o of req.wants) { await this.pause(); add(o, false); }
    for (const o of req.haves) { await this.pause(); add(o, true); }
    for (const o of req.extraEdges) { await this.pause(); add(o, true); }

    // prepare_revision_walk(): handle_commit() for each
    let limited = false;
    const tips: number[] = [];
    for (const first of cmdline) {
      await this.pause();
      let n = first;
      const flags = this.table.flags[n]! & Flag.Uninteresting;
      let failed = false;
      while (this.table.types[n] === ObjType.Tag) {
        const o = this.repo.odb.read(this.table.oid(n));
        if (!o) throw missing(`bad object ${this.table.oid(n).toString('hex')}`);
        const tag = parseTagRaw(o.data, this.h);
        if (!flags) { this.pending.push(n); this.pendingName.push(nameHashFold(0, tag.name)); this.tagNames.set(n, tag.name); }
        const t = this.typeOf(tag.object);
        if (t === undefined) {
          if (flags) { failed = true; break; }
          throw missing(`bad object ${tag.object.toString('hex')}`);
        }
        n = this.table.intern(tag.object, t);
        this.table.types[n] = t;
        this.setFlag(n, flags);
      }
      if (failed) continue;
      const type = this.table.types[n];
      if (type === ObjType.Commit) {
        if (!this.parse(n)) throw missing(`unable to parse commit ${this.table.oid(n).toString('hex')}`);
        if (flags) { this.markParentsUninteresting(n); limited = true; }
        if (!this.has(n, Flag.Seen)) { this.setFlag(n, Flag.Seen); tips.push(n); }
      } else if (type === ObjType.Tree) {
        if (flags) await this.markTreeContentsUninteresting(n);
        else { this.pending.push(n); this.pendingName.push(0); }
      } else if (type === ObjType.Blob) {
        if (!flags) { this.pending.push(n); this.pendingName.push(0); }
      }
    }

    // the commit walk
    let shown: number[];
    if (limited) {
      const list = await this.limitList(tips);
      const sparse = this.repo.config.getBool('pack.usesparse', true);
      await this.markEdges(list, sparse, req.thin && req.useShallow, cmdline);
      shown = [];
      for (const c of list) {
        if (this.has(c, Flag.Shown | Flag.Uninteresting)) continue;
        this.setFlag(c, Flag.Shown);
        shown.push(c);
      }
    } else {
      // nothing uninteresting: the edge marking has nothing to mark, the walk streams
      const q = new CommitQueue();
      for (const c of tips) q.put(c, this.date(c));
      shown = [];
      while (q.size) {
        await this.pause();
        const c = q.get();
        this.processParents(c, q);
        if (this.has(c, Flag.Shown | Flag.Uninteresting)) continue;
        this.setFlag(c, Flag.Shown);
        shown.push(c);
      }
    }
    // do_traverse(): commits, each queueing its tree
    for (const c of shown) {
      const r = applyFilter(this.filter, Sit.Commit, c, this);
      const t = this.treeOf(c);
      this.setFlag(t, Flag.NotUserGiven);
      this.pending.push(t);
      this.pendingName.push(0);
      if (r & Lofr.MarkSeen) this.setFlag(c, Flag.Seen);
      if (r & Lofr.DoShow) this.add(c, ObjType.Commit, 0);
    }
    // traverse_non_commits()
    for (let i = 0; i < this.pending.length; i++) {
      const n = this.pending.get(i);
      if (this.has(n, Flag.Uninteresting | Flag.Seen)) continue;
      const type = this.table.types[n];
      this.pathLen = 0;
      if (type === ObjType.Tag) {
        const r = applyFilter(this.filter, Sit.Tag, n, this);
        if (r & Lofr.MarkSeen) this.setFlag(n, Flag.Seen);
        if (r & Lofr.DoShow) this.show(n, ObjType.Tag, this.pendingName.get(i), this.tagNames.get(n) ?? EMPTY);
      } else if (type === ObjType.Tree) await this.processTree(n, 0);
      else if (type === ObjType.Blob) this.processBlob(n, EMPTY, 0, 0, 0);
    }
    this.aborted();
    if (req.includeTag && this.nrResult) {
      await includeTags(this.repo, {
        isPacked: (oid) => { const n = this.table.find(oid); return n >= 0 && this.has(n, Flag.Packed); },
        addTag: (oid) => this.add(this.table.intern(oid, ObjType.Tag), ObjType.Tag, 0),
      }, () => this.pause(), this.slicer);
    }
    this.opts.onProgress?.(this.nrSeen);
  }

  plan(): PackPlan {
    const count = this.nrResult;
    const ids = Buffer.allocUnsafe(count * this.h);
    const types = new Uint8Array(count);
    const names = new Uint32Array(count);
    for (let i = 0, k = 0; i < this.list.length; i++) {
      const n = this.list.get(i);
      if (this.has(n, Flag.PreferredBase)) continue;
      this.table.copyOid(n, ids, k * this.h);
      types[k] = this.table.types[n]!;
      names[k++] = this.names.get(i) >>> 0;
    }
    const table = this.table;
    const clientHas = this.req.thin
      ? (oid: Buffer) => { const n = table.find(oid); return n >= 0 && (table.flags[n]! & (Flag.Uninteresting | Flag.PreferredBase)) !== 0; }
      : undefined;
    const plan: PackPlan = { count, parts: count ? [{ kind: 'ids', ids, count, types, names }] : [], clientHas, source: 'walk', preferredBases: this.preferredBases(), seen: this.nrSeen };
    return plan;
  }

  /** the preferred bases listed (excluded entries): the writer's delta search may use them as bases */
  private preferredBases(): IdsPart | undefined {
    if (!this.req.thin) return undefined;
    const at: number[] = [];
    for (let i = 0; i < this.list.length; i++) if (this.has(this.list.get(i), Flag.PreferredBase)) at.push(i);
    if (!at.length) return undefined;
    const ids = Buffer.allocUnsafe(at.length * this.h);
    const types = new Uint8Array(at.length);
    const names = new Uint32Array(at.length);
    at.forEach((i, k) => {
      const n = this.list.get(i);
      this.table.copyOid(n, ids, k * this.h);
      types[k] = this.table.types[n]!;
      names[k] = this.names.get(i) >>> 0;
    });
    return { kind: 'ids', ids, count: at.length, types, names };
  }
}

const EMPTY = Buffer.alloc(0);
const SLASH = Buffer.from('/');

/** A tag's object, its type, and its name as raw bytes (git's tag->tag). */
function parseTagRaw(data: Buffer, hashLen: number): { object: Buffer; name: Buffer } {
  const hexLen = hashLen * 2;
  if (data.toString('latin1', 0, 7) !== 'object ') throw corrupt('bad tag object');
  const object = Buffer.from(data.toString('latin1', 7, 7 + hexLen), 'hex');
  let p = data.indexOf(10, 7 + hexLen) + 1; // after "object <hex>\n"
  p = data.indexOf(10, p) + 1; // after "type <t>\n"
  let name: Buffer = EMPTY;
  if (p > 0 && data.toString('latin1', p, p + 4) === 'tag ') {
    const e = data.indexOf(10, p);
    name = data.subarray(p + 4, e < 0 ? data.length : e);
  }
  return { object, name };
}

/** $GIT_DIR/shallow: the grafts git honours when upload-pack passes no --shallow-file */
function ownShallow(repo: Repository): Buffer[] {
  let text: string;
  try { text = readFileSync(join(repo.gitDir, 'shallow'), 'latin1'); } catch { return []; }
  return text.split('\n').filter((l) => l.length === repo.hexLen).map((l) => Buffer.from(l, 'hex'));
}

/**
 * The objects `git pack-objects --revs --stdout` packs for this request,
 * found by walking commits and trees (no bitmaps): commits in walk order,
 * then tags, trees and blobs in traversal order, then the tags
 * `--include-tag` adds; each with its type and git's name hash.
 */
export async function walkPlan(repo: Repository, req: PackObjectsRequest, opts: WalkOptions = {}): Promise<PackPlan> {
  const w = new Walker(repo, req, opts);
  await w.run();
  return w.plan();
}
