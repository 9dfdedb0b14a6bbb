/**
 * Where the pack-objects cache keeps its entries. The store is an
 * interface, so a deployment over several machines can put entries on
 * shared storage; the default keeps them as files in one directory.
 *
 * An entry is written to a temporary name (a spool) and renamed into place
 * when it is complete; readers of a spool read what was written so far.
 * Complete entries never change. Expiry and the size bound are applied by
 * `prune` (least recently used first).
 *
 * A stored entry says which key it was stored under (and, where the store
 * knows, the pack's trailer): the cache serves it only for that key, so a
 * file replaced by another entry or another repository's pack is refused.
 * DirectoryStore keeps this in a header before the pack bytes.
 */
import { promises as fsp, read as fsRead, readv as fsReadv, writev as fsWritev, type Stats } from 'node:fs';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** A complete entry opened for reading. */
export interface StoredPack {
  /** pack bytes */
  readonly size: number;
  readonly createdMs: number;
  /** the key the entry was stored under; undefined when the entry does not say (damaged, or not an entry) */
  readonly key: string | undefined;
  /** the pack's trailer as recorded when it was stored, if the store keeps it */
  readonly trailer?: Buffer;
  /** read pack bytes into buf from pack position pos; returns the count (0 at the end) */
  read(buf: Buffer, pos: number): Promise<number>;
  /** the same into several buffers in order, in one call where the store can (else into the first) */
  readv?(bufs: Buffer[], pos: number): Promise<number>;
  close(): Promise<void>;
}

/** An entry being written. */
export interface PackSpool {
  /** its name in the store, for another node to follow (FollowedSpool) */
  readonly name?: string;
  /** write `bufs`, one after the other, at `pos` (writes come in order) */
  write(bufs: Buffer[], pos: number): Promise<void>;
  /** read back bytes already written */
  read(buf: Buffer, pos: number): Promise<number>;
  /** the same into several buffers in order (see StoredPack.readv) */
  readv?(bufs: Buffer[], pos: number): Promise<number>;
  /** publish the entry under its key, with the pack's size and trailer (the spool stays readable until closed) */
  commit(size: number, trailer: Buffer): Promise<void>;
  /** forget the entry (it stays readable until closed) */
  discard(): Promise<void>;
  close(): Promise<void>;
}

/** Another writer's spool (another node's, over shared storage), read as it grows. */
export interface FollowedSpool {
  /** read pack bytes written so far into buf from pack position pos; 0 when there are none (yet) */
  read(buf: Buffer, pos: number): Promise<number>;
  /** the same into several buffers in order (see StoredPack.readv) */
  readv?(bufs: Buffer[], pos: number): Promise<number>;
  /** remove the spool (its writer died) */
  remove(): Promise<void>;
  close(): Promise<void>;
}

export interface PruneLimits {
  maxAgeMs: number;
  maxBytes: number;
  /** room to make for an entry about to be committed */
  reserve?: number;
  now?: number;
}

export interface PruneResult { expired: number; evicted: number }

export interface PackCacheStore {
  /** A complete, unexpired entry, or undefined. */
  open(key: string, maxAgeMs: number): Promise<StoredPack | undefined>;
  /** Start a new entry. Throws when the store cannot take one (missing or unwritable directory). */
  create(key: string): Promise<PackSpool>;
  /** Remove an entry (corrupt). */
  remove(key: string): Promise<void>;
  /** Drop expired entries, then evict the least recently used until `reserve` more bytes fit. */
  prune(l: PruneLimits): Promise<PruneResult>;
  /** Open the spool `name` of `key` written by another process, if it is there (optional: no cross-node joins without it). */
  follow?(key: string, name: string): Promise<FollowedSpool | undefined>;
  /** bytes held by complete entries */
  readonly bytes: number;
  /** complete entries held (for the metrics' gauge; a store that cannot tell leaves it out) */
  readonly entries?: number;
}

/** fs.read on the descriptor (cheaper per call than FileHandle.read) */
function readAt(fd: number, buf: Buffer, pos: number): Promise<number> {
  return new Promise((resolve, reject) => fsRead(fd, buf, 0, buf.length, pos, (e, n) => (e ? reject(e) : resolve(n))));
}

/** one preadv into several buffers (the payload areas of frame blocks) */
function readvAt(fd: number, bufs: Buffer[], pos: number): Promise<number> {
  return new Promise((resolve, reject) => fsReadv(fd, bufs, pos, (e, n) => (e ? reject(e) : resolve(n))));
}

function writevAt(fd: number, bufs: Buffer[], pos: number): Promise<number> {
  return new Promise((resolve, reject) => fsWritev(fd, bufs, pos, (e, n) => (e ? reject(e) : resolve(n))));
}

interface IndexEntry { size: number; createdMs: number; usedMs: number }

/**
 * Bytes before the pack in an entry file: `GWPCACHE`, version (u32), the
 * key (32 bytes), the pack's size (u64), the trailer's length (u8) and the
 * trailer (32 bytes, zero-padded), zeros to the end. Written when the entry
 * is committed, so a spool that never completed has none.
 */
export const ENTRY_HEADER_BYTES = 96;
const MAGIC = Buffer.from('GWPCACHE', 'latin1');
const HEADER_VERSION = 1;

function encodeHeader(key: string, size: number, trailer: Buffer): Buffer {
  const h = Buffer.alloc(ENTRY_HEADER_BYTES);
  MAGIC.copy(h, 0);
  h.writeUInt32BE(HEADER_VERSION, 8);
  Buffer.from(key, 'hex').copy(h, 12, 0, 32);
  h.writeBigUInt64BE(BigInt(size), 44);
  h.writeUInt8(Math.min(trailer.length, 32), 52);
  trailer.copy(h, 53, 0, 32);
  return h;
}

/** The header's key and trailer, when it is one and its size is the file's. */
function decodeHeader(h: Buffer, fileSize: number): { key: string; trailer: Buffer } | undefined {
  if (h.length < ENTRY_HEADER_BYTES || !h.subarray(0, 8).equals(MAGIC) || h.readUInt32BE(8) !== HEADER_VERSION) return undefined;
  if (h.readBigUInt64BE(44) !== BigInt(fileSize - ENTRY_HEADER_BYTES)) return undefined;
  const tl = h.readUInt8(52);
  if (tl > 32) return undefined;
  return { key: h.subarray(12, 44).toString('hex'), trailer: Buffer.from(h.subarray(53, 53 + tl)) };
}

const ENTRY = /^([0-9a-f]{64})\.pack$/;
const TMP_PREFIX = 'tmp-';
const SPOOL = /^tmp-([0-9a-f]{64})-[0-9a-f]{12}$/;

/**
 * Entries as `<dir>/<key>.pack` (ENTRY_HEADER_BYTES of header, then the
 * pack), spools as `<dir>/tmp-<key>-<random>`.
 * The entry's mtime is its creation time. An index of sizes and last use
 * is kept in memory and rebuilt from the directory at start.
 */
export class DirectoryStore implements PackCacheStore {
  private readonly index = new Map<string, IndexEntry>();
  private total = 0;
  private scanned?: Promise<void>;

  constructor(readonly dir: string) {}

  get bytes(): number { return this.total; }
  get entries(): number { return this.index.size; }

  private path(key: string): string { return join(this.dir, `${key}.pack`); }

  /** Learn what is already there (once); stale spools of dead writers go. */
  scan(): Promise<void> {
    this.scanned ??= (async () => {
      let names: string[];
      try { names = await fsp.readdir(this.dir); } catch { return; }
      const now = Date.now();
      for (const n of names) {
        const m = ENTRY.exec(n);
        let st: Stats;
        try { st = await fsp.stat(join(this.dir, n)); } catch { continue; }
        if (m) this.track(m[1]!, Math.max(0, st.size - ENTRY_HEADER_BYTES), st.mtimeMs, st.atimeMs);
        else if (n.startsWith(TMP_PREFIX) && now - st.mtimeMs > 3_600_000) await fsp.rm(join(this.dir, n), { force: true }).catch(() => undefined);
      }
    })();
    return this.scanned;
  }

  private track(key: string, size: number, createdMs: number, usedMs: number): void {
    this.untrack(key);
    this.index.set(key, { size, createdMs, usedMs });
    this.total += size;
  }

  private untrack(key: string): void {
    const e = this.index.get(key);
    if (!e) return;
    this.total -= e.size;
    this.index.delete(key);
  }

  async open(key: string, maxAgeMs: number): Promise<StoredPack | undefined> {
    await this.scan();
    const p = this.path(key);
    let fh: fsp.FileHandle;
    try { fh = await fsp.open(p, 'r'); } catch { this.untrack(key); return undefined; }
    try {
      const st = await fh.stat();
      if (Date.now() - st.mtimeMs > maxAgeMs) {
        await fh.close();
        await this.remove(key);
        return undefined;
      }
      const head = Buffer.alloc(ENTRY_HEADER_BYTES);
      const got = await readAt(fh.fd, head, 0);
      const h = decodeHeader(head.subarray(0, got), st.size);
      const size = Math.max(0, st.size - ENTRY_HEADER_BYTES);
      const e = this.index.get(key);
      if (e) e.usedMs = Date.now(); else this.track(key, size, st.mtimeMs, Date.now());
      return {
        size,
        createdMs: st.mtimeMs,
        key: h?.key,
        trailer: h?.trailer,
        read: (buf, pos) => readAt(fh.fd, buf, pos + ENTRY_HEADER_BYTES),
        readv: (bufs, pos) => readvAt(fh.fd, bufs, pos + ENTRY_HEADER_BYTES),
        close: () => fh.close(),
      };
    } catch (e) {
      await fh.close().catch(() => undefined);
      throw e;
    }
  }

  async create(key: string): Promise<PackSpool> {
    await this.scan();
    const tmp = join(this.dir, `${TMP_PREFIX}${key}-${randomBytes(6).toString('hex')}`);
    const fh = await fsp.open(tmp, 'wx+', 0o644);
    let gone = false;
    let closed = false;
    return {
      name: basename(tmp),
      write: async (bufs, at) => {
        // one writev for everything pending: the per-call cost of async file I/O dominates 64 KiB writes
        let rest = bufs;
        let pos = at + ENTRY_HEADER_BYTES;
        while (rest.length) {
          let n = await writevAt(fh.fd, rest, pos);
          if (n <= 0) throw new Error('short write');
          pos += n;
          const left: Buffer[] = [];
          for (const b of rest) {
            if (n >= b.length) { n -= b.length; continue; }
            left.push(n > 0 ? b.subarray(n) : b);
            n = 0;
          }
          rest = left;
        }
      },
      read: (buf, pos) => readAt(fh.fd, buf, pos + ENTRY_HEADER_BYTES),
      readv: (bufs, pos) => readvAt(fh.fd, bufs, pos + ENTRY_HEADER_BYTES),
      commit: async (size, trailer) => {
        const h = encodeHeader(key, size, trailer);
        if (await writevAt(fh.fd, [h], 0) !== h.length) throw new Error('short write');
        await fsp.rename(tmp, this.path(key));
        gone = true;
        const st = await fh.stat();
        this.track(key, size, st.mtimeMs, Date.now());
      },
      discard: async () => {
        if (gone) return;
        gone = true;
        await fsp.rm(tmp, { force: true });
      },
      close: async () => {
        if (closed) return;
        closed = true;
        await fh.close();
      },
    };
  }

  async follow(key: string, name: string): Promise<FollowedSpool | undefined> {
    // a name from another node: only a spool of this very key, in this directory
    if (SPOOL.exec(name)?.[1] !== key) return undefined;
    const p = join(this.dir, name);
    let fh: fsp.FileHandle;
    try { fh = await fsp.open(p, 'r'); } catch { return undefined; }
    let closed = false;
    return {
      read: (buf, pos) => readAt(fh.fd, buf, pos + ENTRY_HEADER_BYTES),
      readv: (bufs, pos) => readvAt(fh.fd, bufs, pos + ENTRY_HEADER_BYTES),
      remove: () => fsp.rm(p, { force: true }),
      close: async () => {
        if (closed) return;
        closed = true;
        await fh.close();
      },
    };
  }

  async remove(key: string): Promise<void> {
    this.untrack(key);
    await fsp.rm(this.path(key), { force: true }).catch(() => undefined);
  }

  async prune(l: PruneLimits): Promise<PruneResult> {
    await this.scan();
    const now = l.now ?? Date.now();
    const r: PruneResult = { expired: 0, evicted: 0 };
    for (const [key, e] of [...this.index]) {
      if (now - e.createdMs > l.maxAgeMs) { await this.remove(key); r.expired++; }
    }
    const need = l.reserve ?? 0;
    if (this.total + need > l.maxBytes) {
      const byUse = [...this.index].sort((a, b) => a[1].usedMs - b[1].usedMs);
      for (const [key] of byUse) {
        if (this.total + need <= l.maxBytes) break;
        await this.remove(key);
        r.evicted++;
      }
    }
    return r;
  }
}
