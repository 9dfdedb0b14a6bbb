/**
 * One cache type with a byte bound (git sizes its caches in bytes:
 * core.deltaBaseCacheLimit, core.packedGitLimit). A map plus an intrusive
 * doubly linked list: get, set and eviction are O(1).
 */
interface Node<V> { key: number; value: V; bytes: number; prev: Node<V> | undefined; next: Node<V> | undefined }

export class ByteLru<V> {
  private readonly map = new Map<number, Node<V>>();
  private head: Node<V> | undefined; // most recent
  private tail: Node<V> | undefined; // least recent
  private used = 0;
  /** entries refused or evicted, for tests and tuning */
  evictions = 0;

  /**
   * @param limit byte bound for the sum of entry sizes
   * @param maxEntry entries larger than this are not kept (default: the whole limit)
   */
  constructor(public limit: number, public maxEntry = limit) {}

  get bytes(): number { return this.used; }
  get size(): number { return this.map.size; }

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

  get(key: number): V | undefined {
    const n = this.map.get(key);
    if (!n) return undefined;
    if (n !== this.head) { this.unlink(n); this.pushFront(n); }
    return n.value;
  }

  /** Look without changing recency. */
  peek(key: number): V | undefined { return this.map.get(key)?.value; }

  has(key: number): boolean { return this.map.has(key); }

  /** Insert or replace; returns false when the entry is too large to keep. */
  set(key: number, value: V, bytes: number): boolean {
    const old = this.map.get(key);
    if (old) this.remove(key);
    if (bytes > this.maxEntry || bytes > this.limit) { this.evictions++; return false; }
    const n: Node<V> = { key, value, bytes, prev: undefined, next: undefined };
    this.map.set(key, n);
    this.pushFront(n);
    this.used += bytes;
    this.trim();
    return true;
  }

  delete(key: number): boolean { return this.remove(key); }

  private remove(key: number): boolean {
    const n = this.map.get(key);
    if (!n) return false;
    this.unlink(n);
    this.map.delete(key);
    this.used -= n.bytes;
    return true;
  }

  /** Drop least recently used entries until the bound holds. */
  trim(limit = this.limit): void {
    while (this.used > limit && this.tail) {
      const t = this.tail;
      this.unlink(t);
      this.map.delete(t.key);
      this.used -= t.bytes;
      this.evictions++;
    }
  }

  /** Remove every entry whose key satisfies `pred`. */
  deleteWhere(pred: (key: number) => boolean): void {
    for (const k of [...this.map.keys()]) if (pred(k)) this.remove(k);
  }

  clear(): void {
    this.map.clear();
    this.head = this.tail = undefined;
    this.used = 0;
  }
}
