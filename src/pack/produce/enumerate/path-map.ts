/**
 * Paths to sets of trees, iterated in the order of git's hashmap
 * (hashmap.c): FNV-1 of the path (strhash), 64 buckets to start, four
 * times as many past 80% load, each bucket newest first, buckets in
 * index order. mark_trees_uninteresting_sparse() walks its paths in that
 * order, and which trees it marks can depend on the order (a tree met at
 * two paths), so the walk keeps it.
 */

interface Entry { path: string; hash: number; trees: Set<number>; next: Entry | undefined }

/** git's strhash(): FNV-1 over the bytes */
function strhash(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = (Math.imul(h, 0x01000193) ^ (path.charCodeAt(i) & 0xff)) >>> 0;
  return h;
}

export class PathMap {
  private table: Array<Entry | undefined> = new Array<Entry | undefined>(64);
  private count = 0;

  /** add `tree` to the set at `path` (latin1: one character per byte) */
  add(path: string, tree: number): void {
    const hash = strhash(path);
    const mask = this.table.length - 1;
    for (let e = this.table[hash & mask]; e; e = e.next) {
      if (e.hash === hash && e.path === path) { e.trees.add(tree); return; }
    }
    const b = hash & mask;
    this.table[b] = { path, hash, trees: new Set([tree]), next: this.table[b] };
    if (++this.count > Math.floor(this.table.length * 80 / 100)) this.rehash(this.table.length << 2);
  }

  private rehash(size: number): void {
    const old = this.table;
    this.table = new Array<Entry | undefined>(size);
    const mask = size - 1;
    for (let i = 0; i < old.length; i++) {
      for (let e = old[i]; e;) {
        const next = e.next;
        const b = e.hash & mask;
        e.next = this.table[b];
        this.table[b] = e;
        e = next;
      }
    }
  }

  /** the sets, in git's iteration order */
  *sets(): Generator<Set<number>> {
    for (let i = 0; i < this.table.length; i++) for (let e = this.table[i]; e; e = e.next) yield e.trees;
  }
}
