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
import { closeSync, constants as fsc, existsSync, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve as resolvePath } from 'node:path';
import { GitwireError } from '../errors.js';
import { checkRefnameFormat } from './refname.js';
import { decodeName, encodeName, fsPath } from '../util/byte-name.js';
import type { Slicer } from '../util/budget.js';

/** What is known about peeling a ref. */
export const enum Peel {
  /** nothing: look the object up */
  Unknown = 0,
  /** known not to peel (packed-refs' `fully-peeled` trait, or `peeled` for a tag) */
  None = 1,
  /** the peeled id is at `peelBuf[peeledAt..]` */
  Peeled = 2,
}

/**
 * One ref. The name, id and peeled id are regions of buffers read from
 * disk (`buf[hexAt..hexAt+hexLen]`, `buf[nameAt..nameEnd]`); the getters
 * make views of them. A scan callback's record is reused for the next
 * ref; iteration yields records of their own.
 */
export class Ref {
  constructor(
    public buf: Buffer,
    public hexAt: number,
    public nameAt: number,
    public nameEnd: number,
    public hexLen: number,
    public peel: Peel = Peel.Unknown,
    public peelBuf: Buffer = buf,
    public peeledAt = -1,
    /** for a symbolic ref: the full name it points to (`hex` is the target's) */
    public symref?: string,
    /** where `buf` starts in the scratch memory of a scan (PacketWriter.scratch), or -1 */
    public memAt = -1,
  ) {}

  /** full ref name bytes, e.g. `refs/heads/main` */
  get name(): Buffer { return this.buf.subarray(this.nameAt, this.nameEnd); }
  /** object id in hex (ASCII bytes) */
  get hex(): Buffer { return this.buf.subarray(this.hexAt, this.hexAt + this.hexLen); }
  /** peeled id in hex, when packed-refs has it */
  get peeled(): Buffer | undefined {
    return this.peel === Peel.Peeled ? this.peelBuf.subarray(this.peeledAt, this.peeledAt + this.hexLen) : undefined;
  }

  copy(): Ref {
    return new Ref(this.buf, this.hexAt, this.nameAt, this.nameEnd, this.hexLen, this.peel, this.peelBuf, this.peeledAt, this.symref);
  }

  /** A record over a fresh `<hex> SP <name>` buffer. */
  static of(hex: Buffer, name: Buffer, symref?: string): Ref {
    const b = Buffer.allocUnsafe(hex.length + 1 + name.length);
    hex.copy(b, 0);
    b[hex.length] = 0x20;
    name.copy(b, hex.length + 1);
    return new Ref(b, 0, hex.length + 1, b.length, hex.length, Peel.Unknown, b, -1, symref);
  }
}

export interface HeadState {
  /** target ref name when HEAD is symbolic */
  symref?: string;
  /** resolved id (hex); undefined when unborn */
  hex?: Buffer;
}

/** A loose ref file's content: an id or `ref: <target>`. */
export interface LooseValue { hex?: Buffer; symref?: string }

/** A loose ref found by listing the refs directory. */
interface LooseEntry {
  name: Buffer;
  nameStr: string;
  /** the record, for a ref holding an id */
  ref?: Ref;
  symref?: string;
}

/** A pull cursor over refs in name order. */
export interface RefCursor { next(): Ref | undefined }

const NO_REFS: RefCursor = { next: () => undefined };
const NO_LOOSE: LooseEntry[] = [];
const EMPTY = Buffer.alloc(0);
/**
 * Bytes of packed-refs one seek is worth: a binary search costs about as
 * much as reading this much of the file in order. Above size / SEEK_COST
 * prefixes, one pass over their span is cheaper than a seek each.
 */
const SEEK_COST = 64 * 1024;

/** a loose ref file is an id or `ref: <name>`: anything bigger is not a ref */
export const MAX_LOOSE_REF_SIZE = 64 * 1024;
/** O_NOFOLLOW: a symlink is looked at before it is followed; O_NONBLOCK: opening a FIFO cannot block */
const OPEN_FLAGS = fsc.O_RDONLY | (fsc.O_NOFOLLOW ?? 0) | (fsc.O_NONBLOCK ?? 0);

/**
 * Names a loose ref may have: git's check_refname_format for `refs/…`,
 * root-ref syntax (`HEAD`, `FETCH_HEAD`, …) for the rest. Everything that
 * reaches the filesystem passes through here first.
 */
export function isLooseRefName(name: string): boolean {
  if (name.startsWith('refs/')) return checkRefnameFormat(name);
  return /^[A-Z][A-Z0-9_-]*$/.test(name) && (name === 'HEAD' || name.endsWith('_HEAD'));
}

function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}
/** resolveAt's answer for a symref chain too deep to follow (a loop) */
const SYMREF_LOOP = Symbol('symref loop');
const HASH_HEX = new Set([40, 64]);

function isHexByte(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102);
}

function validHex(b: Buffer, len: number): boolean {
  if (b.length !== len) return false;
  for (let i = 0; i < len; i++) if (!isHexByte(b[i]!)) return false;
  return true;
}

/** A name loose-ref iteration accepts: git's check_refname_format with one level allowed. */
export function isValidRefName(name: string): boolean {
  return checkRefnameFormat(name, { allowOnelevel: true });
}


const CHUNK = 1 << 20;
/** room for a line carried from one chunk into the next */
const SLACK = 1 << 16;
/** the reads of a seek or lookup: small and positional */
const PROBE = 4096;
const TAGS = Buffer.from('refs/tags/');

interface Traits { peeled: boolean; fullyPeeled: boolean; sorted: boolean }

function stampOf(st: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** Compare a ref's name with `key`: <0, 0, >0. */
function cmpName(r: Ref, key: Buffer): number {
  return r.buf.compare(key, 0, key.length, r.nameAt, r.nameEnd);
}

/** The smallest name above every name starting with `prefix` (undefined: none is). */
function upperBound(prefix: Buffer): Buffer | undefined {
  let n = prefix.length;
  while (n > 0 && prefix[n - 1] === 0xff) n--;
  if (n === 0) return undefined;
  const b = Buffer.from(prefix.subarray(0, n));
  b[n - 1]!++;
  return b;
}

/** Sorted prefixes with those covered by a shorter one dropped (git's find_longest_prefixes). */
function reducePrefixes(prefixes: readonly string[]): Buffer[] {
  // sorted as strings of one char per byte (byte order, and far cheaper than sorting Buffers: 65,000 prefixes)
  const sorted = prefixes.map((p) => encodeName(p).toString('latin1')).sort();
  const out: string[] = [];
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && p.startsWith(last)) continue;
    out.push(p);
  }
  return out.map((p) => Buffer.from(p, 'latin1'));
}

/**
 * One version of `packed-refs`: the file held open (git replaces it by a
 * rename, so what this reads never changes), its traits read once from
 * the header. Sorted by construction: a file that does not say `sorted`
 * is sorted in memory when opened, and every read goes through the
 * sorted form. Reference-counted: `pin()` for each user, `unpin()` when
 * done; the last unpin closes the file.
 */
export class PackedRefs {
  private pins = 1;
  /** the refs in name order, when the file is not known to be sorted */
  private mem?: Ref[];
  private readonly probe = Buffer.allocUnsafe(PROBE);

  private constructor(
    readonly fd: number,
    readonly path: string,
    readonly hexLen: number,
    readonly size: number,
    readonly traits: Traits,
    /** device, inode, size and times at open: what revalidation compares */
    readonly stamp: string,
  ) {}

  /** Open `path`; undefined when there is no such file. */
  static open(path: string, hexLen: number): PackedRefs | undefined {
    let fd: number;
    try { fd = openSync(path, 'r'); } catch { return undefined; }
    try {
      const st = fstatSync(fd, { bigint: true });
      const size = Number(st.size);
      const head = Buffer.allocUnsafe(Math.min(size, 256));
      const n = head.length ? readSync(fd, head, 0, head.length, 0) : 0;
      let t = '';
      if (n > 0 && head[0] === 0x23) {
        const nl = head.subarray(0, n).indexOf(10);
        t = ` ${head.toString('latin1', 0, nl < 0 ? n : nl)} `;
      }
      // only a `# pack-refs with: … sorted` header makes the file sorted: git sorts any other before use
      const traits = { peeled: t.includes(' peeled '), fullyPeeled: t.includes(' fully-peeled '), sorted: t.includes(' sorted ') };
      const p = new PackedRefs(fd, path, hexLen, size, traits, stampOf(st));
      if (!traits.sorted) p.sortInMemory();
      return p;
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  pin(): this { this.pins++; return this; }

  /** Is the file held sorted in memory (it did not say it was sorted)? */
  get inMemory(): boolean { return this.mem !== undefined; }

  unpin(): void {
    if (--this.pins === 0) { try { closeSync(this.fd); } catch { /* closed */ } this.mem = undefined; }
  }

  /** Bytes read at a time: 1 MiB, or the whole of a smaller file. */
  get chunkSize(): number { return Math.min(CHUNK, Math.max(PROBE, this.size + 1)); }

  /** Memory a reusing cursor can read into: two chunks with room for a carried line. */
  get cursorMemory(): number { return 2 * (this.chunkSize + SLACK); }

  /** Bytes held in memory beyond the open file. */
  get memoryBytes(): number { return this.mem ? this.size + this.mem.length * 64 : 0; }

  private sortInMemory(): void {
    const c = new FileCursor(this, 0, this.size, false, CHUNK);
    const all: Ref[] = [];
    for (let r = c.next(); r; r = c.next()) all.push(r);
    all.sort((a, b) => a.buf.compare(b.buf, b.nameAt, b.nameEnd, a.nameAt, a.nameEnd));
    this.mem = all;
  }

  /** Index of the first in-memory ref whose name is >= key. */
  private lowerBound(key: Buffer): number {
    const a = this.mem!;
    let lo = 0, hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cmpName(a[mid]!, key) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /**
   * Refs with `from <= name < to`, in name order. With `reuse`, the
   * cursor hands over one record and recycles its read buffers: each
   * record is valid until the next call.
   */
  cursor(from?: Buffer, to?: Buffer, reuse = false, mem?: Buffer): RefCursor {
    if (this.mem) {
      const a = this.mem;
      let i = from ? this.lowerBound(from) : 0;
      const end = to ? this.lowerBound(to) : a.length;
      return { next: () => (i < end ? a[i++] : undefined) };
    }
    const start = from ? this.seek(from) : 0;
    const end = to ? this.seek(to) : this.size;
    return start < end ? new FileCursor(this, start, end, reuse, this.chunkSize, mem) : NO_REFS;
  }

  /** The ref called `name`, read with a few small positional reads. */
  lookup(name: Buffer): Ref | undefined {
    if (this.mem) {
      const i = this.lowerBound(name);
      const r = this.mem[i];
      return r && cmpName(r, name) === 0 ? r : undefined;
    }
    const r = new FileCursor(this, this.seek(name), this.size, false, PROBE).next();
    return r && cmpName(r, name) === 0 ? r : undefined;
  }

  /**
   * Binary search over byte offsets: the start of a line from which the
   * first ref with a name >= key is the next ref line (git's
   * find_reference_location, with positional reads instead of mmap).
   */
  private seek(key: Buffer): number {
    let lo = 0, hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const start = mid === 0 ? 0 : this.lineEnd(mid - 1) + 1;
      const rec = this.refLineAt(start);
      if (!rec || rec.start >= hi) { hi = mid; continue; }
      if (rec.line.compare(key, 0, key.length, this.hexLen + 1) < 0) lo = rec.next;
      else hi = mid;
    }
    return lo;
  }

  /** Offset of the first LF at or after `pos` (or the size). */
  private lineEnd(pos: number): number {
    const b = this.probe;
    for (let p = pos; p < this.size; p += PROBE) {
      const n = readSync(this.fd, b, 0, PROBE, p);
      if (n <= 0) break;
      const i = b.subarray(0, n).indexOf(10);
      if (i >= 0) return p + i;
    }
    return this.size;
  }

  /** The first ref line starting at or after `pos` (a line start): skips `^` and `#` lines. */
  private refLineAt(pos: number): { start: number; next: number; line: Buffer } | undefined {
    let p = pos;
    while (p < this.size) {
      let n = readSync(this.fd, this.probe, 0, PROBE, p);
      if (n <= 0) return undefined;
      let buf = this.probe;
      let nl = buf.subarray(0, n).indexOf(10);
      if (nl < 0 && p + n < this.size) {
        // a line longer than a probe: read it whole
        const end = this.lineEnd(p);
        buf = Buffer.allocUnsafe(end - p);
        n = readSync(this.fd, buf, 0, buf.length, p);
        nl = n;
      }
      if (nl < 0) nl = n;
      const c = buf[0];
      if (nl > 0 && c !== 0x5e && c !== 0x23) return { start: p, next: p + nl + 1, line: buf.subarray(0, nl) };
      p += nl + 1;
    }
    return undefined;
  }
}

/**
 * Reads packed-refs from a line start up to `end`, one ref at a time (with
 * its `^` peeled line), in chunks by positional reads. Nothing is
 * allocated per ref in `reuse` mode.
 */
class FileCursor implements RefCursor {
  private chunk: Buffer = Buffer.alloc(0);
  private spare?: Buffer;
  /** file offset of chunk[0] */
  private base: number;
  private avail = 0;
  private at = 0;
  private pos: number;
  private eof = false;
  /** the line last read: chunk[lineAt..lineEnd] (no per-line allocation) */
  private lineAt = 0;
  private lineEnd = 0;
  /** the line read ahead of a ref (not a peel line) is the next one to look at */
  private pending = false;
  private readonly ref?: Ref;
  /** two chunk buffers used in turn (reuse mode with memory given), at offsets 0 and half of it */
  private readonly pair?: [Buffer, Buffer];
  private half = 0;
  private turn = 0;
  /** offset of the current chunk in the given memory, or -1 */
  private chunkAt = -1;

  constructor(private readonly p: PackedRefs, start: number, private readonly end: number, private readonly reuse: boolean, private readonly chunkSize: number, mem?: Buffer) {
    this.base = start;
    this.pos = start;
    if (reuse) this.ref = new Ref(this.chunk, 0, 0, 0, p.hexLen);
    if (reuse && mem) {
      const half = mem.length >>> 1;
      this.half = half;
      this.pair = [mem.subarray(0, half), mem.subarray(half, 2 * half)];
    }
  }

  /** Read the next non-empty line into lineAt/lineEnd of the current chunk; false at the end of the file. */
  private line(): boolean {
    for (;;) {
      let nl = this.chunk.indexOf(10, this.at);
      if (nl >= this.avail) nl = -1;
      if (nl < 0 && this.eof) {
        if (this.at >= this.avail) return false;
        nl = this.avail; // last line without LF
      }
      if (nl >= 0) {
        const st = this.at;
        this.at = nl + 1;
        if (nl === st) continue; // empty line
        this.lineAt = st;
        this.lineEnd = nl;
        return true;
      }
      this.refill();
    }
  }

  /** Carry the partial line into the next chunk and read more. */
  private refill(): void {
    const carry = this.avail - this.at;
    const need = carry + this.chunkSize;
    let next: Buffer;
    let nextAt = -1;
    if (this.pair && this.pair[0].length >= need) {
      // the other buffer of the pair: the current record may sit in this one
      if (this.pair[this.turn] === this.chunk) this.turn ^= 1;
      next = this.pair[this.turn]!;
      nextAt = this.turn * this.half;
      this.turn ^= 1;
    } else {
      next = this.spare && this.spare.length >= need ? this.spare : Buffer.allocUnsafe(need + (this.reuse ? SLACK : 0));
    }
    this.spare = undefined;
    this.chunk.copy(next, 0, this.at, this.avail);
    const n = readSync(this.p.fd, next, carry, this.chunkSize, this.pos);
    this.pos += n;
    this.eof = n === 0;
    // the chunk left behind may still hold the current record: it is overwritten only at the refill after next
    if (this.reuse && !this.pair) this.spare = this.chunk;
    this.base += this.at;
    this.chunk = next;
    this.chunkAt = nextAt;
    this.avail = carry + n;
    this.at = 0;
  }

  next(): Ref | undefined {
    const hexLen = this.p.hexLen;
    for (;;) {
      if (this.pending) this.pending = false;
      else if (!this.line()) return undefined;
      const b = this.chunk, st = this.lineAt, en = this.lineEnd;
      const c = b[st];
      if (c === 0x23 || c === 0x5e) continue; // the header, or a peel line without a ref: ignored
      if (this.base + st >= this.end) return undefined;
      if (en - st < hexLen + 2 || b[st + hexLen] !== 0x20) {
        throw new GitwireError('GW_UNSUPPORTED_REPO', `unexpected line in ${this.p.path}: ${b.toString('latin1', st, en)}`);
      }
      const r = this.ref ?? new Ref(b, 0, 0, 0, hexLen);
      r.buf = b;
      r.memAt = this.chunkAt;
      r.hexAt = st;
      r.nameAt = st + hexLen + 1;
      r.nameEnd = en;
      const more = this.line();
      if (more && this.chunk[this.lineAt] === 0x5e) {
        r.peelBuf = this.chunk;
        r.peeledAt = this.lineAt + 1;
        r.peel = Peel.Peeled;
      } else {
        // not a peel line (or none): it is looked at next
        this.pending = more;
        r.peelBuf = b;
        r.peeledAt = -1;
        const t = this.p.traits;
        r.peel = t.fullyPeeled || (t.peeled && en - r.nameAt > TAGS.length && b.compare(TAGS, 0, TAGS.length, r.nameAt, r.nameAt + TAGS.length) === 0) ? Peel.None : Peel.Unknown;
      }
      return r;
    }
  }
}

/**
 * Refs read live: each call sees the refs as they are on disk. Lookups read
 * the loose file, then packed-refs; listings take the loose refs first and
 * packed-refs after. `snapshot()` gives the reader one request uses.
 */
export class RefStore {
  readonly hexLen: number;
  /** the packed-refs last opened, kept while a stat says it is current */
  private packedCache?: PackedRefs;

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
    try { stamp = stampOf(statSync(this.packedPath, { bigint: true })); } catch { stamp = undefined; }
    const cur = this.packedCache;
    if (cur && cur.stamp === stamp) return cur.pin();
    if (cur) { this.packedCache = undefined; cur.unpin(); }
    if (stamp === undefined) return undefined;
    const p = PackedRefs.open(this.packedPath, this.hexLen);
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
  peeledFromPacked(name: string, depth = 0): Buffer | 'none' | undefined {
    if (depth > 5) return undefined;
    const loose = this.readLoose(name);
    if (loose?.symref) return this.peeledFromPacked(loose.symref, depth + 1);
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
  }

  /** Every ref under `prefix` (default `refs/`), in name order, loose shadowing packed; each record its own. */
  *iterate(prefix = 'refs/'): Generator<Ref> {
    const { cursor, packed } = this.merged([prefix], false);
    try {
      for (let r = cursor.next(); r; r = cursor.next()) yield r;
    } finally {
      packed?.unpin();
    }
  }

  /** The reader one request uses (see RefSnapshot). */
  snapshot(): RefSnapshot { return new RefSnapshot(this); }

  /** Bytes held in memory (an unsorted packed-refs kept sorted). */
  get memoryBytes(): number { return this.packedCache?.memoryBytes ?? 0; }

  /** Let go of the kept packed-refs. */
  close(): void {
    const p = this.packedCache;
    this.packedCache = undefined;
    p?.unpin();
  }

  /** Is this a reftable repository? (refused for now) */
  static usesReftable(commonDir: string, refStorage: string | undefined): boolean {
    return refStorage === 'reftable' || (existsSync(join(commonDir, 'reftable')) && statSync(join(commonDir, 'reftable')).isDirectory());
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
export class RefSnapshot extends RefStore {
  private list?: LooseEntry[];
  private readonly values = new Map<string, LooseValue | null>();
  private pinned?: PackedRefs;
  private closed = false;

  constructor(private readonly store: RefStore) {
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

  override get memoryBytes(): number { return 0; }

  /** The request is over: let go of its packed-refs. */
  override close(): void {
    this.closed = true;
    const p = this.pinned;
    this.pinned = undefined;
    p?.unpin();
  }
}

/** Loose and packed refs of each prefix merged in name order, a loose ref shadowing its packed namesake. */
class MergeCursor implements RefCursor {
  private pi = -1;
  private loose: LooseEntry[] = [];
  private li = 0;
  private packedRefs: RefCursor = NO_REFS;
  /** the packed ref read and not yet handed over */
  private pr: Ref | undefined;
  private fresh = false;
  /** the current prefix and the name above its range (undefined: none) */
  private lo: Buffer = EMPTY;
  private hi: Buffer | undefined;
  /** refs read and prefixes sought so far (what a scan's pause is paced by) */
  work = 0;
  /** every ref handed over (next() also answers undefined when paced and the work is due a pause) */
  done = false;
  private pace = 0;
  private stopAt = Infinity;

  /** Make next() come back (with undefined, not done) after every `n` units of work, even with no ref found. */
  pacedBy(n: number): void { this.pace = n; this.stopAt = this.work + n; }

  constructor(
    private readonly prefixes: Buffer[],
    private readonly lists: LooseEntry[][],
    private readonly packed: PackedRefs | undefined,
    private readonly reuse: boolean,
    private readonly looseRef: (l: LooseEntry) => Ref | undefined,
    private readonly mem?: Buffer,
    /** one cursor over the span of every prefix, its refs outside them skipped */
    private readonly onePass = false,
  ) {}

  next(): Ref | undefined {
    for (;;) {
      if (this.work >= this.stopAt) { this.stopAt = this.work + this.pace; return undefined; }
      if (!this.fresh) { this.pr = this.packedRefs.next(); this.fresh = true; this.work++; }
      let pr = this.pr;
      if (pr && this.onePass) {
        // below the current prefix: skipped; at or above its end: kept for a later prefix
        if (cmpName(pr, this.lo) < 0) { this.fresh = false; continue; }
        if (this.hi && cmpName(pr, this.hi) >= 0) pr = undefined;
      }
      const l = this.loose[this.li];
      if (l === undefined) {
        if (pr) { this.fresh = false; return pr; }
        if (!this.advance()) { this.done = true; return undefined; }
        continue;
      }
      if (pr) {
        const c = pr.buf.compare(l.name, 0, l.name.length, pr.nameAt, pr.nameEnd);
        if (c < 0) { this.fresh = false; return pr; }
        if (c === 0) this.fresh = false; // shadowed by the loose ref
      }
      this.li++;
      const r = this.looseRef(l);
      if (r) return r;
    }
  }

  private advance(): boolean {
    if (++this.pi >= this.prefixes.length) return false;
    const p = this.prefixes[this.pi]!;
    this.loose = this.lists[this.pi]!;
    this.li = 0;
    this.lo = p;
    this.hi = upperBound(p);
    if (this.onePass) {
      if (this.pi === 0 && this.packed) {
        const end = upperBound(this.prefixes[this.prefixes.length - 1]!);
        this.packedRefs = this.packed.cursor(p.length ? p : undefined, end, this.reuse, this.mem);
        this.fresh = false;
      }
      this.work++;
      return true;
    }
    this.packedRefs = this.packed ? this.packed.cursor(p.length ? p : undefined, this.hi, this.reuse, this.mem) : NO_REFS;
    this.fresh = false;
    this.work += 32;
    return true;
  }
}
