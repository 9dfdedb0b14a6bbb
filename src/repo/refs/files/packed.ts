/**
 * packed-refs: one sorted file of refs, read by seeks and chunked scans,
 * or held whole in memory when it is small (WHOLE_MAX).
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { GitwireError } from '../../../errors.js';
import { NO_REFS, Peel, Ref, cmpName, type RefCursor } from '../ref.js';
import { checkRefnameFormat } from '../../refname.js';

const CHUNK = 1 << 20;
/** room for a line carried from one chunk into the next */
const SLACK = 1 << 16;
/** the reads of a seek or lookup: small and positional */
const PROBE = 4096;
const TAGS = Buffer.from('refs/tags/');
const REFS = Buffer.from('refs/');
/**
 * A file of at most this many bytes is read whole, once, when opened (git
 * mmaps it whole): its every later seek, lookup and scan is done in
 * memory, without a read. 2 MiB is ~25,000 refs; a larger file is read
 * by positional reads (PROBE for seeks, CHUNK for scans), so that memory
 * stays bounded however many refs a repository has.
 */
export const WHOLE_MAX = 2 << 20;

/**
 * Pairs of hex digits, as git's parse_oid_hex takes them (either case): a
 * 64 KiB table looked up two bytes at a time, which halves what checking
 * every id of a million-ref advertisement costs (measured: +60 ms of CPU
 * by the byte, +30 ms by the pair, over ~70 ms without the check).
 */
const HEX_PAIR = (() => {
  const one = new Uint8Array(256);
  for (const c of '0123456789abcdefABCDEF') one[c.charCodeAt(0)] = 1;
  const t = new Uint8Array(65536);
  for (let x = 0; x < 256; x++) for (let y = 0; y < 256; y++) t[x | (y << 8)] = one[x]! & one[y]!;
  return t;
})();
/** Are b[at..at+n) hex digits? (`n` even: an id's length) */
function isHex(b: Buffer, at: number, n: number): boolean {
  let ok = 1;
  for (let i = at, e = at + n; i < e; i += 2) ok &= HEX_PAIR[b[i]! | (b[i + 1]! << 8)]!;
  return ok === 1;
}

/**
 * A packed-refs line git's reader dies on (packed-backend.c
 * die_invalid_line, die_unterminated_line): the message is git's, the line
 * cut at 80 bytes as git cuts it.
 */
function packedCorrupt(path: string, what: 'unexpected' | 'unterminated', line: Buffer): GitwireError {
  const text = line.length < 80 ? line.toString('latin1') : `${line.toString('latin1', 0, 75)}...`;
  return new GitwireError('GW_REFS_CORRUPT', `${what} line in ${path}: ${text}`, { data: { file: path, kind: `${what} line in packed-refs` } });
}

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
  /** the whole file, when it was small enough to read at open (then `fd` is closed) */
  private whole?: Buffer;
  private readonly probe = Buffer.allocUnsafe(PROBE);

  private constructor(
    private fd: number,
    readonly path: string,
    readonly hexLen: number,
    readonly size: number,
    readonly traits: Traits,
    /** device, inode, size and times at open: what revalidation compares */
    readonly stamp: string,
  ) {}

  /**
   * Open `path`; undefined when there is no such file. A file of at most
   * `wholeMax` bytes (default WHOLE_MAX) is read whole and closed.
   */
  static open(path: string, hexLen: number, wholeMax = WHOLE_MAX): PackedRefs | undefined {
    let fd: number;
    try { fd = openSync(path, 'r'); } catch { return undefined; }
    // closed once only: a second close could close a descriptor another request has opened since
    let open = true;
    try {
      const st = fstatSync(fd, { bigint: true });
      let size = Number(st.size);
      let whole: Buffer | undefined;
      if (size <= wholeMax) {
        whole = Buffer.allocUnsafe(size);
        let got = 0;
        while (got < size) {
          const r = readSync(fd, whole, got, size - got, got);
          if (r <= 0) break;
          got += r;
        }
        // the file does not change under its descriptor (git renames a new one in), but a short read ends it
        size = got;
        whole = whole.subarray(0, got);
      }
      const head = whole ? whole.subarray(0, Math.min(size, 256)) : Buffer.allocUnsafe(Math.min(size, 256));
      const n = whole ? head.length : head.length ? readSync(fd, head, 0, head.length, 0) : 0;
      let t = '';
      if (n > 0 && head[0] === 0x23) {
        const nl = head.subarray(0, n).indexOf(10);
        t = ` ${head.toString('latin1', 0, nl < 0 ? n : nl)} `;
      }
      // only a `# pack-refs with: … sorted` header makes the file sorted: git sorts any other before use
      const traits = { peeled: t.includes(' peeled '), fullyPeeled: t.includes(' fully-peeled '), sorted: t.includes(' sorted ') };
      const p = new PackedRefs(fd, path, hexLen, size, traits, stampOf(st));
      if (whole) { p.whole = whole; p.fd = -1; open = false; try { closeSync(fd); } catch { /* closed */ } }
      if (!traits.sorted) p.sortInMemory();
      return p;
    } catch (e) {
      if (open) closeSync(fd);
      throw e;
    }
  }

  pin(): this { this.pins++; return this; }

  /** Are the refs held sorted in memory as records (the file did not say it was sorted)? */
  get inMemory(): boolean { return this.mem !== undefined; }

  /** The whole file, when it is held in memory as read. */
  get bytes(): Buffer | undefined { return this.whole; }

  unpin(): void {
    if (--this.pins === 0) {
      if (this.fd >= 0) { try { closeSync(this.fd); } catch { /* closed */ } }
      this.fd = -1;
      this.mem = undefined;
      this.whole = undefined;
    }
  }

  /** Read `len` bytes at `pos` into `buf` at `at`: from memory when held whole, else a positional read. */
  read(buf: Buffer, at: number, len: number, pos: number): number {
    const w = this.whole;
    if (!w) return readSync(this.fd, buf, at, len, pos);
    if (pos >= w.length) return 0;
    return w.copy(buf, at, pos, Math.min(w.length, pos + len));
  }

  /** Bytes read at a time: 1 MiB, or the whole of a smaller file. */
  get chunkSize(): number { return Math.min(CHUNK, Math.max(PROBE, this.size + 1)); }

  /** Memory a reusing cursor can read into: two chunks with room for a carried line. */
  get cursorMemory(): number { return 2 * (this.chunkSize + SLACK); }

  /** Bytes held in memory beyond the open file. */
  get memoryBytes(): number { return (this.whole?.length ?? 0) + (this.mem ? this.size + this.mem.length * 64 : 0); }

  private sortInMemory(): void {
    const c = new FileCursor(this, 0, this.size, false, CHUNK, undefined, this.whole);
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
    // every ref git packs is under refs/: what a seek for `refs/` (or less of it) passed over is damage
    // (an empty line, a cut id, a name that is none), which git's reader, starting at the top, dies on
    if (start > 0 && from!.length <= REFS.length && REFS.subarray(0, from!.length).equals(from!)) {
      const c = new FileCursor(this, 0, start, false, PROBE, undefined, this.whole);
      for (let r = c.next(); r; r = c.next()) if (!checkRefnameFormat(r.name, { allowOnelevel: true })) throw packedCorrupt(this.path, 'unexpected', r.name);
    }
    const end = to ? this.seek(to) : this.size;
    if (start >= end) return NO_REFS;
    // memory given (a packet writer's, whose lines copy within one block): chunks copied into it from the held file
    const whole = reuse && mem ? undefined : this.whole;
    return new FileCursor(this, start, end, reuse, this.chunkSize, mem, whole);
  }

  /** The ref called `name`, read with a few small positional reads. */
  lookup(name: Buffer): Ref | undefined {
    if (this.mem) {
      const i = this.lowerBound(name);
      const r = this.mem[i];
      return r && cmpName(r, name) === 0 ? r : undefined;
    }
    const r = new FileCursor(this, this.seek(name), this.size, false, PROBE, undefined, this.whole).next();
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
    const w = this.whole;
    if (w) { const i = pos < w.length ? w.indexOf(10, pos) : -1; return i < 0 ? this.size : i; }
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
    const w = this.whole;
    if (w) {
      while (p < this.size) {
        const nl = this.lineEnd(p);
        const c = w[p];
        if (nl > p && c !== 0x5e && c !== 0x23) return { start: p, next: nl + 1, line: w.subarray(p, nl) };
        p = nl + 1;
      }
      return undefined;
    }
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

  /** `whole`: the file in memory, read as one chunk that is never refilled */
  constructor(private readonly p: PackedRefs, start: number, private readonly end: number, private readonly reuse: boolean, private readonly chunkSize: number, mem?: Buffer, whole?: Buffer) {
    this.base = start;
    this.pos = start;
    if (whole) {
      this.chunk = whole;
      this.base = 0;
      this.at = start;
      this.avail = whole.length;
      this.pos = whole.length;
      this.eof = true;
    }
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
        // a last line without LF: a file cut short (git's die_unterminated_line)
        throw packedCorrupt(this.p.path, 'unterminated', this.chunk.subarray(this.at, this.avail));
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
    const n = this.p.read(next, carry, this.chunkSize, this.pos);
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
      if (en - st < hexLen + 2 || b[st + hexLen] !== 0x20 || !isHex(b, st, hexLen)) throw packedCorrupt(this.p.path, 'unexpected', b.subarray(st, en));
      const r = this.ref ?? new Ref(b, 0, 0, 0, hexLen);
      r.buf = b;
      r.memAt = this.chunkAt;
      r.hexAt = st;
      r.nameAt = st + hexLen + 1;
      r.nameEnd = en;
      const more = this.line();
      if (more && this.chunk[this.lineAt] === 0x5e) {
        if (this.lineEnd - this.lineAt !== hexLen + 1 || !isHex(this.chunk, this.lineAt + 1, hexLen)) {
          throw packedCorrupt(this.p.path, 'unexpected', this.chunk.subarray(this.lineAt, this.lineEnd));
        }
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

