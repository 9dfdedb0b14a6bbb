/**
 * Reachability as a bitmap: git's find_objects() and fill_in_bitmap().
 *
 * Roots that are commits with a stored bitmap are OR-ed in (newest first,
 * so that older roots are then found inside and skipped). The others are
 * walked: commits newest first (by committer date, as git's revision walk
 * goes), stopping at commits already in the result, in `seen` (the haves,
 * for the wants' walk) or with a stored bitmap (OR-ed in); then the trees
 * of the commits walked, skipping trees and blobs already in. Objects
 * outside the bitmapped pack(s) get extended positions (positions.ts).
 *
 * The walk yields the event loop on a time budget and stops when the
 * request's signal fires.
 */
import { GitwireError } from '../../errors.js';
import { ObjType } from '../../repo/object-type.js';
import type { Repository } from '../../repo/repository.js';
import type { Slicer } from '../../util/budget.js';
import { Bitset } from './bitset.js';
import { childNameHash } from '../name-hash.js';
import { OidIndex } from './oid-index.js';
import type { Positions } from './positions.js';
import { cachedTree, keepTree } from './tree-cache.js';

export interface Root { oid: Buffer; type: ObjType }

export interface WalkContext {
  repo: Repository;
  pos: Positions;
  slicer: Slicer;
  signal?: AbortSignal;
  /** walk counters (tests, tracing) */
  stats: WalkStats;
}

export interface WalkStats {
  /** stored commit bitmaps OR-ed in */
  bitmapsUsed: number;
  /** commits read by a walk */
  commitsWalked: number;
  /** trees read by a walk */
  treesWalked: number;
}

/** An object the walk needed is missing (haves: skipped, as git's ignore_missing_links). */
export class WalkMissing extends Error {}

/**
 * A commit to walk. Its position and index position are looked up once,
 * when it is queued: neither changes while the walk runs (a commit is
 * numbered extended only when it is taken from the queue, and a commit is
 * queued once), only whether the result holds it does.
 */
interface Queued { oid: Buffer; time: number; p: number; ip: number }

/**
 * A tree to walk: its id, the name hash of its path (the root's path is
 * empty), and its position when it was pushed (-1: none then; it may be
 * numbered extended by the time it is taken, when met twice).
 */
interface TreeItem { oid: Buffer; name: number; root: boolean; p: number }

/** A max-heap of commits by committer date (ties: first queued first). */
class DateQueue {
  private readonly a: Array<Queued & { seq: number }> = [];
  private seq = 0;
  get size(): number { return this.a.length; }
  private before(x: Queued & { seq: number }, y: Queued & { seq: number }): boolean {
    return x.time > y.time || (x.time === y.time && x.seq < y.seq);
  }
  push(q: Queued): void {
    const a = this.a;
    const item = { oid: q.oid, time: q.time, p: q.p, ip: q.ip, seq: this.seq++ };
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(a[i]!, a[p]!)) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }
  pop(): Queued | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (a.length && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < a.length && this.before(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}

/**
 * Where the walk may give the event loop away: a promise to await when the
 * slice is used up, else nothing (no await, so no turn of the microtask
 * queue, per object). Throws once the request's signal fired.
 */
function pause(ctx: WalkContext): Promise<void> | undefined {
  ctx.signal?.throwIfAborted();
  const t = ctx.slicer.tick();
  return t ? t.then(() => ctx.signal?.throwIfAborted()) : undefined;
}

/**
 * The objects reachable from `roots`, as a bitmap over positions.
 * `seen`: objects known to be excluded already (they and all they reach).
 * `missingOk`: skip objects that are missing (the haves' walk).
 */
export async function findObjects(ctx: WalkContext, roots: Root[], seen: Bitset | undefined, missingOk: boolean): Promise<Bitset> {
  const { pos } = ctx;
  const bound = pos.bound;
  const base = new Bitset(pos.n);
  const mapped: Array<{ root: Root; ip: number; bit: number }> = [];
  const rest: Root[] = [];
  for (const r of roots) {
    if (r.type === ObjType.Commit) {
      const ip = bound.indexPos(r.oid);
      if (ip >= 0 && bound.index.file.entryFor(ip) >= 0) { mapped.push({ root: r, ip, bit: bound.bitOfIndexPos(ip) }); continue; }
    }
    rest.push(r);
  }
  // pack order puts newer commits first: their bitmaps are likely to hold the older roots
  mapped.sort((a, b) => a.bit - b.bit);
  for (const m of mapped) {
    if (base.get(m.bit)) continue;
    const e = bound.commitBitmap(m.ip);
    if (!e) { rest.push(m.root); continue; }
    e.orInto(base);
    ctx.stats.bitmapsUsed++;
    { const w = pause(ctx); if (w) await w; }
  }
  const pending = rest.filter((r) => { const p = pos.of(r.oid); return !(p >= 0 && base.get(p)); });
  if (pending.length) await fillIn(ctx, pending, base, seen, missingOk);
  return base;
}

function isIn(p: number, base: Bitset, seen: Bitset | undefined): boolean {
  return p >= 0 && (base.get(p) || (seen !== undefined && seen.get(p)));
}

function missing(oid: Buffer, what: string): WalkMissing {
  return new WalkMissing(`missing ${what} ${oid.toString('hex')}`);
}

async function fillIn(ctx: WalkContext, roots: Root[], base: Bitset, seen: Bitset | undefined, missingOk: boolean): Promise<void> {
  const { repo, pos } = ctx;
  const bound = pos.bound;
  const queue = new DateQueue();
  const queued = new OidIndex(repo.hashLen);
  const trees: TreeItem[] = [];
  const enqueue = (oid: Buffer): void => {
    const n = queued.count;
    if (queued.add(oid, 0) < n) return;
    let p = pos.extAt(oid, 0), ip = -1;
    if (p < 0) { ip = bound.indexPos(oid); if (ip >= 0) p = bound.bitOfIndexPos(ip); }
    if (isIn(p, base, seen)) return;
    const c = repo.commit(oid);
    if (!c) { if (missingOk) return; throw missing(oid, 'commit'); }
    queue.push({ oid, time: c.time, p, ip });
  };
  for (const r of roots) {
    switch (r.type) {
      case ObjType.Commit: enqueue(r.oid); break;
      case ObjType.Tree: trees.push({ oid: r.oid, name: 0, root: true, p: pos.of(r.oid) }); break;
      default: base.set(pos.ofOrAdd(r.oid, r.type, 0));
    }
  }
  // commits, newest first
  for (let q = queue.pop(); q; q = queue.pop()) {
    { const w = pause(ctx); if (w) await w; }
    const ip = q.ip;
    let p = q.p;
    if (isIn(p, base, seen)) continue;
    if (ip >= 0) {
      const e = bound.commitBitmap(ip);
      if (e) { e.orInto(base); ctx.stats.bitmapsUsed++; continue; }
    }
    const c = repo.commit(q.oid);
    if (!c) { if (missingOk) continue; throw missing(q.oid, 'commit'); }
    ctx.stats.commitsWalked++;
    if (p < 0) p = pos.addExt(q.oid, ObjType.Commit, 0);
    base.set(p);
    trees.push({ oid: c.tree, name: 0, root: true, p: pos.of(c.tree) });
    for (const parent of c.parents) enqueue(parent);
  }
  // then their trees
  const stack = trees.reverse();
  for (let t = stack.pop(); t; t = stack.pop()) {
    { const w = pause(ctx); if (w) await w; }
    // (without a bit when pushed, it has none now: only an extended number, if it was met meanwhile)
    let p = t.p >= 0 ? t.p : pos.extAt(t.oid, 0);
    if (isIn(p, base, seen)) continue;
    const o = readTree(ctx, t.oid);
    if (!o) { if (missingOk) continue; throw missing(t.oid, 'tree'); }
    ctx.stats.treesWalked++;
    if (p < 0) p = pos.addExt(t.oid, ObjType.Tree, t.name);
    base.set(p);
    walkEntries(ctx, t, o, base, seen, missingOk, stack);
  }
}

const corruptTree = (oid: Buffer) => new GitwireError('GW_OBJECT_CORRUPT', `bad tree object ${oid.toString('hex')}`);

/**
 * The entries of one tree: blobs not in yet are set, trees not in yet
 * pushed for the walk. Parsed in place: an entry already in costs one
 * table probe and no allocation.
 */
function walkEntries(ctx: WalkContext, tree: TreeItem, data: Buffer, base: Bitset, seen: Bitset | undefined, missingOk: boolean, stack: TreeItem[]): void {
  const { pos, repo } = ctx;
  const hl = repo.hashLen;
  const len = data.length;
  let p = 0;
  while (p < len) {
    // `<mode> <name>\0<id>`: find the end of the name first; the mode and name are
    // looked at only for entries not in yet (most entries of a tree are)
    let nul = p;
    while (nul < len && data[nul] !== 0) nul++;
    if (nul + 1 + hl > len) throw corruptTree(tree.oid);
    const entry = p;
    const oidAt = nul + 1;
    p = oidAt + hl;
    const c0 = data[entry]!;
    // 160000: a submodule's commit is not ours to send
    if (c0 === 0x31 && data[entry + 1] === 0x36) continue;
    let bp = pos.at(data, oidAt);
    if (isIn(bp, base, seen)) continue;
    let q = entry;
    let mode = 0;
    for (; q < nul && data[q] !== 0x20; q++) {
      const c = data[q]! - 48;
      if (c < 0 || c > 7 || q - entry > 7) throw corruptTree(tree.oid);
      mode = mode * 8 + c;
    }
    if (q >= nul || q === entry) throw corruptTree(tree.oid);
    if (mode === 0o160000) continue;
    const name = childNameHash(tree.name, tree.root, data, q + 1, nul);
    if ((mode & 0o170000) === 0o040000) {
      // a copy: the tree's bytes may be a read buffer that is reused before this entry is taken
      const oid = Buffer.allocUnsafe(hl);
      data.copy(oid, 0, oidAt, oidAt + hl);
      stack.push({ oid, name, root: false, p: bp });
      continue;
    }
    if (bp < 0) {
      if (!missingOk && !repo.odb.has(data.subarray(oidAt, oidAt + hl))) throw missing(Buffer.from(data.subarray(oidAt, oidAt + hl)), 'blob');
      bp = pos.addExtAt(data, oidAt, ObjType.Blob, name);
    }
    base.set(bp);
  }
}


function readTree(ctx: WalkContext, oid: Buffer): Buffer | undefined {
  const odb = ctx.repo.odb;
  const hit = cachedTree(odb, oid);
  if (hit) return hit;
  const o = odb.read(oid);
  if (!o) return undefined;
  if (o.type !== ObjType.Tree) throw new GitwireError('GW_OBJECT_CORRUPT', `object ${oid.toString('hex')} is a ${o.type === ObjType.Blob ? 'blob' : 'non-tree'}, not a tree`);
  keepTree(odb, oid, o.data);
  return o.data;
}
