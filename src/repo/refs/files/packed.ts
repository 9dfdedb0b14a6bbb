/**
 * packed-refs: one sorted file of refs, read by seeks and chunked scans.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GitwireError } from '../../../errors.js';
import { NO_REFS, Peel, Ref, cmpName, type RefCursor } from '../ref.js';

const CHUNK = 1 << 20;
/** room for a line carried from one chunk into the next */
const SLACK = 1 << 16;
/** the reads of a seek or lookup: small and positional */
const PROBE = 4096;
const TAGS = Buffer.from('refs/tags/');

interface Traits { peeled: boolean; fullyPeeled: boolean; sorted: boolean }

export function stampOf(st: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
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

