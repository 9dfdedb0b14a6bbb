/**
 * One cache type with a byte bound (git sizes its caches in bytes:
 * core.deltaBaseCacheLimit, core.packedGitLimit). A map plus an intrusive
 * doubly linked list: get, set and eviction are O(1).
 *
 * Keys are numbers; a cache shared by several owners (packs) gives each
 * its own key space (`space()`), so that keys stay small integers (pack
 * offsets, window numbers), which V8's maps hash several times faster
 * than large numbers.
 */
interface Node<V> {
  key: number;
  value: V;
  bytes: number;
  space: LruSpace<V>;
  prev: Node<V> | undefined;
  next: Node<V> | undefined;
}

export class LruSpace<V> {
  readonly map = new Map<number, Node<V>>();
  /** called when one of this space's entries leaves the cache */
  onDrop: ((key: number) => void) | undefined;
  constructor(readonly lru: ByteLru<V>) {}

  get(key: number): V | undefined {
    const n = this.map.get(key);
    if (!n) return undefined;
    this.lru.touch(n);
    return n.value;
  }

  /** Look without changing recency. */
  peek(key: number): V | undefined { return this.map.get(key)?.value; }

  has(key: number): boolean { return this.map.has(key); }

  /** Insert or replace; returns false when the entry is too large to keep. */
  set(key: number, value: V, bytes: number): boolean { return this.lru.insert(this, key, value, bytes); }

  delete(key: number): boolean {
    const n = this.map.get(key);
    if (!n) return false;
    this.lru.drop(n);
    return true;
  }

  get size(): number { return this.map.size; }

  /** Remove every entry of this space from the cache. */
  clear(): void { for (const n of [...this.map.values()]) this.lru.drop(n); }
}

export class ByteLru<V> {
  private head: Node<V> | undefined; // most recent
  private tail: Node<V> | undefined; // least recent
  private used = 0;
  private count = 0;
  private readonly main: LruSpace<V>;
  /** entries refused or evicted, for tests and tuning */
  evictions = 0;
  /** called for every entry that leaves the cache (evicted, deleted, replaced or cleared) */
  onDrop: ((value: V, key: number, space: LruSpace<V>) => void) | undefined;

  /**
   * @param limit byte bound for the sum of entry sizes
   * @param maxEntry entries larger than this are not kept (default: the whole limit)
   */
  constructor(public limit: number, public maxEntry = limit) {
    this.main = new LruSpace(this);
  }

  /** A separate key space in this cache (same bound, same recency list). */
  space(): LruSpace<V> { return new LruSpace(this); }

  get bytes(): number { return this.used; }
  get size(): number { return this.count; }

  private unlink(n: Node<V>): void {
    if (n.prev) n.prev.next = n.next; else this.head = n.next;
    if (n.next) n.next.prev = n.prev; else this.tail = n.prev;
    n.prev = n.next = undefined;
  }

  private pushFront(n: Node<V>): void {
    n.next = this.head;
    if (this.head) this.head.prev = n;
    this.head = n;
    if (!this.tail) this.tail = n;
  }

  /** @internal */
  touch(n: Node<V>): void {
    if (n !== this.head) { this.unlink(n); this.pushFront(n); }
  }

  /** @internal */
  insert(space: LruSpace<V>, key: number, value: V, bytes: number): boolean {
    const old = space.map.get(key);
    if (old) this.drop(old);
    if (bytes > this.maxEntry || bytes > this.limit) { this.evictions++; return false; }
    const n: Node<V> = { key, value, bytes, space, prev: undefined, next: undefined };
    space.map.set(key, n);
    this.pushFront(n);
    this.used += bytes;
    this.count++;
    this.trim();
    return true;
  }

  /** @internal */
  drop(n: Node<V>): void {
    this.unlink(n);
    n.space.map.delete(n.key);
    this.used -= n.bytes;
    this.count--;
    n.space.onDrop?.(n.key);
    this.onDrop?.(n.value, n.key, n.space);
  }

  get(key: number): V | undefined { return this.main.get(key); }
  peek(key: number): V | undefined { return this.main.peek(key); }
  has(key: number): boolean { return this.main.has(key); }
  set(key: number, value: V, bytes: number): boolean { return this.main.set(key, value, bytes); }
  delete(key: number): boolean { return this.main.delete(key); }

  /** Drop least recently used entries until the bound holds. */
  trim(limit = this.limit): void {
    while (this.used > limit && this.tail) {
      this.drop(this.tail);
      this.evictions++;
    }
  }

  clear(): void {
    while (this.tail) this.drop(this.tail);
  }
}
