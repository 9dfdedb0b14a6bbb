/**
 * Preferred bases of a thin pack (pack-objects' add_preferred_base /
 * add_preferred_base_object): the trees of the first `pack.window`
 * boundary commits the walk reports, and for each path the walk shows,
 * the object at that path in those trees. git puts them in its list as
 * excluded entries, and that is visible in the pack: an object already
 * listed that turns up as a preferred base leaves the pack, a preferred
 * base later shown is not packed, and `--include-tag` counts them as
 * packed. The walk keeps them so, to pack exactly what git packs.
 */
import { ObjType } from '../../../repo/object-type.js';
import type { Repository } from '../../../repo/repository.js';
import { nameHashFold } from '../../name-hash.js';
import type { ObjectTable } from './object-table.js';

const S_IFMT = 0o170000, S_IFDIR = 0o040000, S_IFGITLINK = 0o160000;
/** bytes of tree data kept for lookups */
const CACHE_BYTES = 16 << 20;

export type AddExcluded = (n: number, type: ObjType, hash: number) => void;

export class PreferredBases {
  /** boundary commits reported (git's num_preferred_base, counted past the window too) */
  edges = 0;
  /** trees of the first `window` edges, newest first (git's pbase_tree list) */
  private readonly trees: number[] = [];
  /** name hashes already looked up (check_pbase_path) */
  private readonly done = new Set<number>();

  constructor(private readonly repo: Repository, private readonly table: ObjectTable, private readonly window: number) {}

  /** show_edge(): a boundary commit whose tree is `tree` (-1: unknown) */
  addEdge(tree: number): void {
    if (this.window <= this.edges++) return;
    if (tree < 0 || this.trees.includes(tree)) return;
    this.trees.unshift(tree);
  }

  /** trees read for lookups (git's pbase_tree_cache): every shown path looks in the same few trees */
  private readonly cache = new Map<number, Buffer>();
  private cached = 0;

  private treeData(n: number): Buffer | undefined {
    const hit = this.cache.get(n);
    if (hit) return hit;
    const o = this.repo.odb.read(this.table.oidView(n));
    if (!o || o.type !== ObjType.Tree) return undefined;
    if (this.cached + o.data.length > CACHE_BYTES) { this.cache.clear(); this.cached = 0; }
    this.cache.set(n, o.data);
    this.cached += o.data.length;
    return o.data;
  }

  /** add_preferred_base_object(name) for a shown object's name */
  forName(name: Buffer, add: AddExcluded): void {
    if (!this.edges) return;
    const hash = nameHashFold(0, name);
    if (this.done.has(hash)) return;
    this.done.add(hash);
    const cmplen = cmpLen(name, 0);
    for (const t of this.trees) {
      if (cmplen === 0) { add(t, ObjType.Tree, 0); continue; }
      const data = this.treeData(t);
      if (data) this.lookup(data, name, 0, cmplen, hash, add);
    }
  }

  /** add_pbase_object(): follow `name` from `at` down the tree */
  private lookup(data: Buffer, name: Buffer, at: number, len: number, hash: number, add: AddExcluded): void {
    const h = this.table.hashLen;
    for (let p = 0; p < data.length;) {
      let mode = 0;
      let q = p;
      while (q < data.length && data[q] !== 0x20) mode = mode * 8 + (data[q++]! - 0x30);
      const nameAt = q + 1;
      const nul = data.indexOf(0, nameAt);
      if (nul < 0 || nul + 1 + h > data.length) return;
      const oidAt = nul + 1;
      p = oidAt + h;
      const fmt = mode & S_IFMT;
      if (fmt === S_IFGITLINK) continue;
      const cmp = nul - nameAt !== len ? 1 : name.compare(data, nameAt, nul, at, at + len);
      if (cmp > 0) continue;
      if (cmp < 0) return;
      if (name[at + len] !== 0x2f) {
        const type = fmt === S_IFDIR ? ObjType.Tree : ObjType.Blob;
        add(this.table.intern(data, type, oidAt), type, hash);
        return;
      }
      if (fmt === S_IFDIR) {
        const sub = this.treeData(this.table.intern(data, ObjType.Tree, oidAt));
        if (!sub) return;
        const down = at + len + 1;
        this.lookup(sub, name, down, cmpLen(name, down), hash, add);
      }
    }
  }
}

/** name_cmp_len(): up to the first '/' or newline */
function cmpLen(name: Buffer, at: number): number {
  let i = at;
  while (i < name.length && name[i] !== 0x2f && name[i] !== 0x0a) i++;
  return i - at;
}
