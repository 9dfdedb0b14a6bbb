/**
 * Object filters as git's list-objects-filter.c applies them during a
 * traversal: blob:none, blob:limit, tree:<depth>, object:type, sparse:oid
 * and combine:. Each answers, for one object in one situation, git's
 * LOFR_ bits: mark it seen, show it, skip the tree's contents.
 *
 * Objects the request named itself (tips) and those met only through them
 * before a walk reached them are never filtered: git filters only objects
 * flagged NOT_USER_GIVEN (list_objects_filter__filter_object), and so does
 * applyFilter() here.
 */
import { ObjType } from '../../../repo/object-type.js';
import type { FilterSpec } from '../../../protocol/filter.js';
import { Flag, type ObjectTable } from './object-table.js';
import { Match, PatternList } from './sparse-patterns.js';

export const enum Sit { Tag, Commit, BeginTree, EndTree, Blob }
export const enum Lofr { Zero = 0, MarkSeen = 1, DoShow = 2, SkipTree = 4 }

/** What a filter may ask about the object at hand. */
export interface FilterContext {
  table: ObjectTable;
  /** the object's path: bytes [0, pathLen) of pathBuf; its last component starts at nameAt */
  pathBuf: Buffer;
  pathLen: number;
  nameAt: number;
  /** a blob's size (undefined: not in the repository) */
  blobSize(n: number): number | undefined;
}

export interface ObjectFilter {
  apply(sit: Sit, n: number, ctx: FilterContext): number;
  /** each object costs more than a walk step (many sparse patterns): the walk looks at the clock after each */
  readonly costly?: boolean;
}

/** list_objects_filter__filter_object() */
export function applyFilter(filter: ObjectFilter | undefined, sit: Sit, n: number, ctx: FilterContext): number {
  if (filter && (ctx.table.flags[n]! & Flag.NotUserGiven)) return filter.apply(sit, n, ctx);
  return sit === Sit.EndTree ? Lofr.Zero : Lofr.MarkSeen | Lofr.DoShow;
}

const ALL = Lofr.MarkSeen | Lofr.DoShow;

class BlobNone implements ObjectFilter {
  apply(sit: Sit): number {
    switch (sit) {
      case Sit.EndTree: return Lofr.Zero;
      case Sit.Blob: return Lofr.MarkSeen;
      default: return ALL;
    }
  }
}

class BlobLimit implements ObjectFilter {
  constructor(private readonly max: number) {}
  apply(sit: Sit, n: number, ctx: FilterContext): number {
    switch (sit) {
      case Sit.EndTree: return Lofr.Zero;
      case Sit.Blob: {
        const size = ctx.blobSize(n);
        if (size === undefined || size < this.max) return ALL;
        return Lofr.MarkSeen;
      }
      default: return ALL;
    }
  }
}

class TreeDepth implements ObjectFilter {
  private readonly seenAt = new Map<number, number>();
  private depth = 0;
  constructor(private readonly exclude: number) {}
  apply(sit: Sit, n: number): number {
    const include = this.depth < this.exclude;
    switch (sit) {
      case Sit.EndTree: this.depth--; return Lofr.Zero;
      case Sit.Blob: return include ? ALL : Lofr.Zero;
      case Sit.BeginTree: {
        const at = this.seenAt.get(n);
        let res: number;
        if (at !== undefined && this.depth >= at) res = Lofr.SkipTree;
        else {
          this.seenAt.set(n, this.depth);
          // pack-objects keeps no omit set: an excluded tree is skipped whole
          res = include ? Lofr.DoShow : Lofr.SkipTree;
        }
        this.depth++;
        return res;
      }
      default: return ALL;
    }
  }
}

class ObjectTypeFilter implements ObjectFilter {
  constructor(private readonly type: ObjType) {}
  apply(sit: Sit): number {
    const t = this.type;
    switch (sit) {
      case Sit.Tag: return t === ObjType.Tag ? ALL : Lofr.MarkSeen;
      case Sit.Commit: return t === ObjType.Commit ? ALL : Lofr.MarkSeen;
      case Sit.BeginTree:
        if (t === ObjType.Commit || t === ObjType.Tag) return Lofr.SkipTree;
        return t === ObjType.Tree ? ALL : Lofr.MarkSeen;
      case Sit.Blob: return t === ObjType.Blob ? ALL : Lofr.MarkSeen;
      default: return Lofr.Zero;
    }
  }
}

class Sparse implements ObjectFilter {
  private readonly frames: Array<{ match: Match; provOmit: boolean }> = [{ match: Match.NotMatched, provOmit: false }];
  readonly costly: boolean;
  constructor(private readonly pl: PatternList) { this.costly = pl.costly; }
  apply(sit: Sit, n: number, ctx: FilterContext): number {
    const fl = ctx.table.flags;
    switch (sit) {
      case Sit.BeginTree: {
        let m = this.pl.match(ctx.pathBuf.subarray(0, ctx.pathLen), ctx.nameAt, true);
        if (m === Match.Undecided) m = this.frames[this.frames.length - 1]!.match;
        this.frames.push({ match: m, provOmit: false });
        if (fl[n]! & Flag.ShownButRevisit) return Lofr.Zero;
        fl[n] = fl[n]! | Flag.ShownButRevisit;
        return Lofr.DoShow;
      }
      case Sit.EndTree: {
        const f = this.frames.pop()!;
        const parent = this.frames[this.frames.length - 1]!;
        if (f.provOmit) parent.provOmit = true;
        return f.provOmit ? Lofr.Zero : Lofr.MarkSeen;
      }
      case Sit.Blob: {
        const frame = this.frames[this.frames.length - 1]!;
        let m = this.pl.match(ctx.pathBuf.subarray(0, ctx.pathLen), ctx.nameAt, false);
        if (m === Match.Undecided) m = frame.match;
        if (m === Match.Matched) return ALL;
        frame.provOmit = true;
        return Lofr.Zero;
      }
      default: return ALL;
    }
  }
}

interface Sub { filter: ObjectFilter; seen: Set<number>; skipping: boolean; skipTree: number }

class Combine implements ObjectFilter {
  private readonly subs: Sub[];
  readonly costly: boolean;
  constructor(filters: ObjectFilter[]) {
    this.subs = filters.map((filter) => ({ filter, seen: new Set(), skipping: false, skipTree: -1 }));
    this.costly = filters.some((f) => f.costly);
  }
  apply(sit: Sit, n: number, ctx: FilterContext): number {
    let res = Lofr.DoShow | Lofr.MarkSeen | Lofr.SkipTree;
    for (const sub of this.subs) {
      let r: number;
      if (sub.skipping && !(sit === Sit.EndTree && n === sub.skipTree)) r = Lofr.Zero;
      else {
        sub.skipping = false;
        if (sub.seen.has(n)) r = Lofr.Zero;
        else {
          r = applyFilter(sub.filter, sit, n, ctx);
          if (r & Lofr.MarkSeen) sub.seen.add(n);
          if (r & Lofr.SkipTree) { sub.skipping = true; sub.skipTree = n; }
        }
      }
      if (!(r & Lofr.DoShow)) res &= ~Lofr.DoShow;
      if (!(r & Lofr.MarkSeen)) res &= ~Lofr.MarkSeen;
      if (!sub.skipping) res &= ~Lofr.SkipTree;
    }
    return res;
  }
}

/** What building a filter needs from the repository. */
export interface FilterSource {
  /** the patterns of the blob a sparse:oid names (sparse-blob.ts reads them beforehand: sparseNames()) */
  sparsePatterns(name: string): PatternList;
}

function typeOf(name: string): ObjType {
  switch (name) {
    case 'blob': return ObjType.Blob;
    case 'tree': return ObjType.Tree;
    case 'commit': return ObjType.Commit;
    default: return ObjType.Tag;
  }
}

/** The blobs the sparse:oid filters of `spec` name, in the order git reads them. */
export function sparseNames(spec: FilterSpec): string[] {
  if (spec.choice === 'sparse:oid') return [spec.spec.slice('sparse:oid='.length)];
  return spec.choice === 'combine' ? spec.subs!.flatMap(sparseNames) : [];
}

/** A filter for a parsed spec (protocol/filter.ts parseFilter). */
export function makeFilter(spec: FilterSpec, src: FilterSource): ObjectFilter {
  switch (spec.choice) {
    case 'blob:none': return new BlobNone();
    case 'blob:limit': {
      const n = BigInt(spec.spec.slice('blob:limit='.length));
      return new BlobLimit(n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n));
    }
    case 'tree': {
      const d = spec.treeDepth!;
      return new TreeDepth(d > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(d));
    }
    case 'object:type': return new ObjectTypeFilter(typeOf(spec.spec.slice('object:type='.length)));
    case 'sparse:oid': {
      const name = spec.spec.slice('sparse:oid='.length);
      return new Sparse(src.sparsePatterns(name));
    }
    case 'combine': return new Combine(spec.subs!.map((s) => makeFilter(s, src)));
  }
}
