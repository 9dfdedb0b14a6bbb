/**
 * Refs: loose, packed-refs (streamed in chunks, never loaded whole),
 * symbolic refs and HEAD, iterated in git's order (loose shadows packed).
 *
 * Records hold views of the bytes read from disk: names and hex ids are
 * already in wire form, so the advertisement copies them without building
 * strings.
 */
import { closeSync, constants as fsc, existsSync, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve as resolvePath } from 'node:path';
import { GitwireError } from '../errors.js';
import { checkRefnameFormat } from './refname.js';

export type PeelState = 'peeled' | 'none' | 'unknown';

export interface RefRecord {
  /** full ref name bytes, e.g. `refs/heads/main` */
  name: Buffer;
  /** object id in hex (ASCII bytes) */
  hex: Buffer;
  /** peeled id in hex, when known from packed-refs */
  peeled?: Buffer;
  peelState: PeelState;
  /** for a symbolic ref: the full name it points to */
  symref?: string;
}

export type RefScanCallback = (buf: Buffer, hexAt: number, nameAt: number, nameEnd: number, peeledAt: number, peelState: 0 | 1 | 2, symref?: string) => void;

export interface HeadState {
  /** target ref name when HEAD is symbolic */
  symref?: string;
  /** resolved id (hex); undefined when unborn */
  hex?: Buffer;
}

const CHUNK = 1 << 20;
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

export class RefStore {
  readonly hexLen: number;
  constructor(readonly gitDir: string, readonly commonDir: string, hashLen: number) {
    this.hexLen = hashLen * 2;
    if (!HASH_HEX.has(this.hexLen)) throw new Error('bad hash length');
  }

  private get packedPath(): string { return join(this.commonDir, 'packed-refs'); }

  /** real paths of the directories loose refs may live in (resolved once) */
  private realDirs?: string[];
  /** directories already checked to lie inside the repository */
  private readonly okDirs = new Map<string, boolean>();

  private inside(p: string): boolean {
    this.realDirs ??= [this.gitDir, this.commonDir].map((d) => { try { return realpathSync(d); } catch { return resolvePath(d); } });
    return this.realDirs.some((d) => within(d, p));
  }

  /** Does the directory holding `path` really lie inside the repository (no symlinked directory leading out)? */
  private dirInside(path: string): boolean {
    const dir = dirname(path);
    let ok = this.okDirs.get(dir);
    if (ok === undefined) {
      try { ok = this.inside(realpathSync(dir)); } catch { ok = false; }
      if (this.okDirs.size > 4096) this.okDirs.clear();
      this.okDirs.set(dir, ok);
    }
    return ok;
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
      fd = openSync(path, OPEN_FLAGS);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ELOOP' && code !== 'EMLINK') return undefined;
      // a symlink: git's legacy symref when it names a ref, else its target if that stays inside
      let target: string;
      try {
        if (!lstatSync(path).isSymbolicLink()) return undefined;
        target = readlinkSync(path);
      } catch { return undefined; }
      if (target.startsWith('refs/') && checkRefnameFormat(target)) return Buffer.from(`ref: ${target}`);
      let real: string;
      try { real = realpathSync(path); } catch { return undefined; }
      if (!this.inside(real)) return undefined;
      path = real;
      try { fd = openSync(path, OPEN_FLAGS); } catch { return undefined; }
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

  /** Read a loose ref file: hex id or `ref: <target>`; undefined if absent, junk or not a ref name. */
  readLoose(name: string): { hex?: Buffer; symref?: string } | undefined {
    const raw = this.readLooseBytes(name);
    if (!raw) return undefined;
    let end = raw.length;
    while (end > 0 && (raw[end - 1] === 10 || raw[end - 1] === 13 || raw[end - 1] === 32)) end--;
    const body = raw.subarray(0, end);
    if (body.length > 5 && body.toString('latin1', 0, 5) === 'ref: ') {
      return { symref: body.subarray(5).toString().trim() };
    }
    const hex = body.subarray(0, this.hexLen);
    if (!validHex(hex, this.hexLen)) return undefined;
    return { hex };
  }

  /** The header traits of packed-refs (`peeled`, `fully-peeled`, `sorted`), from its first line. */
  private packedTraits(fd: number): { peeled: boolean; fullyPeeled: boolean; sorted: boolean } {
    const b = Buffer.alloc(256);
    const head = b.toString('latin1', 0, readSync(fd, b, 0, 256, 0));
    const t = head.startsWith('#') ? ` ${head.split('\n')[0]} ` : '';
    return { peeled: t.includes(' peeled '), fullyPeeled: t.includes(' fully-peeled '), sorted: t.includes(' sorted ') };
  }

  /**
   * Find one ref in packed-refs: binary search with positional reads when
   * the file says it is sorted, a streamed scan otherwise. The record's
   * peelState reflects the file's traits.
   */
  lookupPacked(name: string): RefRecord | undefined {
    let fd: number;
    try { fd = openSync(this.packedPath, 'r'); } catch { return undefined; }
    try {
      const traits = this.packedTraits(fd);
      const known = (rec: RefRecord): RefRecord => {
        if (rec.peelState === 'unknown' && (traits.fullyPeeled || (traits.peeled && name.startsWith('refs/tags/')))) rec.peelState = 'none';
        return rec;
      };
      if (!traits.sorted) {
        for (const r of this.packedRefs(Buffer.from(name))) if (r.name.toString() === name) return known(r);
        return undefined;
      }
      const size = fstatSync(fd).size;
      const want = Buffer.from(name);
      const lineAt = (pos: number): { line: Buffer; next: number } | undefined => {
        // find the start of the line containing pos, then read it
        let start = pos;
        const back = Buffer.allocUnsafe(512);
        while (start > 0) {
          const from = Math.max(0, start - 512);
          const n = readSync(fd, back, 0, start - from, from);
          const idx = back.subarray(0, n).lastIndexOf(10);
          if (idx >= 0) { start = from + idx + 1; break; }
          start = from;
        }
        const buf = Buffer.allocUnsafe(4096);
        let len = 0;
        let out = Buffer.alloc(0);
        for (;;) {
          const n = readSync(fd, buf, 0, buf.length, start + len);
          if (n <= 0) break;
          const nl = buf.subarray(0, n).indexOf(10);
          out = Buffer.concat([out, buf.subarray(0, nl >= 0 ? nl : n)]);
          len += nl >= 0 ? nl + 1 : n;
          if (nl >= 0) break;
        }
        if (len === 0) return undefined;
        return { line: out, next: start + len };
      };
      let lo = 0, hi = size;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        let r = lineAt(mid);
        if (!r) { hi = mid; continue; }
        // skip comment and peel lines forward
        let lineStart = r.next - r.line.length - 1;
        while (r && (r.line[0] === 0x23 || r.line[0] === 0x5e)) {
          lineStart = r.next;
          r = r.next < size ? lineAt(r.next) : undefined;
        }
        if (!r || lineStart >= hi) { hi = mid; continue; }
        const refName = r.line.subarray(this.hexLen + 1);
        const c = Buffer.compare(refName, want);
        if (c === 0) {
          const rec: RefRecord = { name: want, hex: r.line.subarray(0, this.hexLen), peelState: 'unknown' };
          const p = r.next < size ? lineAt(r.next) : undefined;
          if (p && p.line[0] === 0x5e) { rec.peeled = p.line.subarray(1, 1 + this.hexLen); rec.peelState = 'peeled'; }
          return known(rec);
        }
        if (c < 0) lo = r.next; else hi = lineStart;
        if (lo >= hi) break;
        if (c < 0 && lo <= mid) lo = mid + 1;
      }
      return undefined;
    } finally {
      closeSync(fd);
    }
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
    if (loose?.hex) return undefined;
    const rec = this.lookupPacked(name);
    if (!rec) return undefined;
    if (rec.peelState === 'peeled') return rec.peeled;
    return rec.peelState === 'none' ? 'none' : undefined;
  }

  /** Resolve a ref name to a hex id, following symrefs. */
  resolve(name: string, depth = 0): { hex?: Buffer; target: string } | undefined {
    if (depth > 5 || !isLooseRefName(name)) return undefined;
    const loose = this.readLoose(name);
    if (loose?.symref) {
      const t = this.resolve(loose.symref, depth + 1);
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

  /** Loose refs under refs/, sorted by name bytes. */
  private looseRefs(prefix: string): RefRecord[] {
    const out: RefRecord[] = [];
    const walk = (rel: string) => {
      let ents;
      try { ents = readdirSync(join(this.commonDir, rel), { withFileTypes: true }); } catch { return; }
      for (const e of ents) {
        const name = `${rel}/${e.name}`;
        if (e.isDirectory()) { walk(name); continue; }
        if (!e.isFile() && !e.isSymbolicLink()) continue;
        if (!isValidRefName(name)) continue;
        if (!name.startsWith(prefix) && !prefix.startsWith(name)) continue;
        const r = this.readLoose(name);
        if (!r) continue;
        if (r.symref) {
          const t = this.resolve(r.symref);
          if (!t?.hex) continue; // dangling symref: skipped, as git does
          out.push({ name: Buffer.from(name), hex: t.hex, peelState: 'unknown', symref: r.symref });
        } else {
          out.push({ name: Buffer.from(name), hex: r.hex!, peelState: 'unknown' });
        }
      }
    };
    // walk only the part of the tree the prefix allows
    const dirPrefix = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : 'refs';
    walk(dirPrefix.startsWith('refs') ? dirPrefix : 'refs');
    out.sort((a, b) => Buffer.compare(a.name, b.name));
    return out;
  }

  /** Stream packed-refs in chunks. Records' buffers are views into fresh chunks. */
  *packedRefs(prefix?: Buffer): Generator<RefRecord> {
    const r = PackedRefsReader.open(this.packedPath, this.hexLen);
    if (!r) return;
    try {
      const unsorted: RefRecord[] = [];
      while (r.next()) {
        const b = r.buf;
        if (prefix && (r.nameEnd - r.nameAt < prefix.length || b.compare(prefix, 0, prefix.length, r.nameAt, r.nameAt + prefix.length) !== 0)) continue;
        const rec: RefRecord = {
          name: b.subarray(r.nameAt, r.nameEnd),
          hex: b.subarray(r.hexAt, r.hexAt + this.hexLen),
          peelState: r.peelState === 2 ? 'peeled' : r.peelState === 1 ? 'none' : 'unknown',
        };
        if (r.peelState === 2) rec.peeled = r.peelBuf.subarray(r.peeledAt, r.peeledAt + this.hexLen);
        if (r.sorted) yield rec; else unsorted.push(rec);
      }
      if (!r.sorted) {
        unsorted.sort((x, y) => Buffer.compare(x.name, y.name));
        yield* unsorted;
      }
    } finally {
      r.close();
    }
  }

  /**
   * The hot path for advertisements: every ref under `prefix` in name
   * order (loose shadowing packed), handed over as regions of the bytes
   * read from disk. Nothing is allocated per packed ref. `peelState`:
   * 0 unknown (look the object up), 1 known not to peel, 2 `peeledAt` is set.
   */
  async scan(prefix: string, cb: RefScanCallback, pause?: () => Promise<void> | undefined): Promise<void> {
    const loose = this.looseRefs(prefix);
    let n = 0;
    // every 1024 refs the consumer may make us wait (a backed-up socket)
    const breathe = () => ((++n & 1023) === 0 && pause ? pause() : undefined);
    const hexLen = this.hexLen;
    const pfx = Buffer.from(prefix);
    const plen = pfx.length;
    const allRefs = prefix === 'refs/';
    let li = 0;
    const emitLoose = (l: RefRecord) => {
      if (l.name.length < plen || l.name.compare(pfx, 0, plen, 0, plen) !== 0) return;
      const b = Buffer.allocUnsafe(hexLen + 1 + l.name.length);
      l.hex.copy(b, 0);
      b[hexLen] = 0x20;
      l.name.copy(b, hexLen + 1);
      cb(b, 0, hexLen + 1, b.length, -1, 0, l.symref);
    };
    const r = PackedRefsReader.open(this.packedPath, hexLen);
    if (r) {
      try {
        while (r.next()) {
          if (!r.sorted) break;
          const b = r.buf, nameAt = r.nameAt, nameEnd = r.nameEnd;
          // packed-refs holds only refs/…: the default prefix needs no comparison
          if (!allRefs && (nameEnd - nameAt < plen || b.compare(pfx, 0, plen, nameAt, nameAt + plen) !== 0)) continue;
          let shadowed = false;
          while (li < loose.length) {
            const l = loose[li]!;
            const c = b.compare(l.name, 0, l.name.length, nameAt, nameEnd);
            if (c < 0) break; // packed name < loose name
            li++;
            emitLoose(l);
            if (c === 0) { shadowed = true; break; }
          }
          if (shadowed) continue;
          if (r.peelState === 2) {
            // the peeled id may sit in the next chunk: hand over one buffer
            if (r.peelBuf !== b) {
              const one = Buffer.concat([b.subarray(r.hexAt, nameEnd), r.peelBuf.subarray(r.peeledAt, r.peeledAt + hexLen)]);
              cb(one, 0, hexLen + 1, nameEnd - r.hexAt, nameEnd - r.hexAt, 2);
              continue;
            }
          }
          cb(b, r.hexAt, nameAt, nameEnd, r.peeledAt, r.peelState);
          const w = breathe();
          if (w) await w;
        }
        if (!r.sorted) {
          // no `sorted` trait (no header, as older git and other tools write): sorted in memory, as git does
          for (const x of this.iterate(prefix)) {
            const b = Buffer.allocUnsafe(hexLen + 1 + x.name.length + (x.peeled ? hexLen : 0));
            x.hex.copy(b, 0); b[hexLen] = 0x20; x.name.copy(b, hexLen + 1);
            let peelAt = -1;
            if (x.peeled) { peelAt = hexLen + 1 + x.name.length; x.peeled.copy(b, peelAt); }
            cb(b, 0, hexLen + 1, hexLen + 1 + x.name.length, peelAt, x.peelState === 'peeled' ? 2 : x.peelState === 'none' ? 1 : 0, x.symref);
            const w = breathe();
            if (w) await w;
          }
          return;
        }
      } finally {
        r.close();
      }
    }
    for (; li < loose.length; li++) emitLoose(loose[li]!);
  }

  /**
   * Every ref under `prefix` (default `refs/`), in name order, loose
   * shadowing packed. Packed refs are streamed.
   */
  *iterate(prefix = 'refs/'): Generator<RefRecord> {
    const loose = this.looseRefs(prefix);
    const pfx = Buffer.from(prefix);
    let li = 0;
    for (const p of this.packedRefs(pfx)) {
      while (li < loose.length) {
        const c = Buffer.compare(loose[li]!.name, p.name);
        if (c > 0) break;
        const l = loose[li++]!;
        if (l.name.length >= pfx.length && l.name.compare(pfx, 0, pfx.length, 0, pfx.length) === 0) yield l;
        if (c === 0) { p.peelState = 'shadowed' as PeelState; break; }
      }
      if ((p.peelState as string) === 'shadowed') continue;
      yield p;
    }
    for (; li < loose.length; li++) {
      const l = loose[li]!;
      if (l.name.length >= pfx.length && l.name.compare(pfx, 0, pfx.length, 0, pfx.length) === 0) yield l;
    }
  }

  /** Is this a reftable repository? (refused for now) */
  static usesReftable(commonDir: string, refStorage: string | undefined): boolean {
    return refStorage === 'reftable' || (existsSync(join(commonDir, 'reftable')) && statSync(join(commonDir, 'reftable')).isDirectory());
  }
}

/**
 * Pull reader over packed-refs: one ref at a time (with its `^` peeled
 * line), read in 1 MiB chunks with positional reads. The current ref is a
 * set of offsets into `buf`; nothing is allocated per ref.
 */
class PackedRefsReader {
  buf: Buffer = Buffer.alloc(0);
  hexAt = 0;
  nameAt = 0;
  nameEnd = 0;
  /** peeled id at peelBuf[peeledAt..], when peelState is 2 */
  peelBuf: Buffer = this.buf;
  peeledAt = -1;
  peelState: 0 | 1 | 2 = 0;
  /**
   * Only a `# pack-refs with: … sorted` header makes the file sorted: git
   * sorts a file without a header (or without the trait) before use.
   */
  sorted = false;
  private fullyPeeled = false;
  private peeledTrait = false;
  private chunk: Buffer = Buffer.alloc(0);
  private avail = 0;
  private start = 0;
  private pos = 0;
  private eof = false;
  private first = true;

  private constructor(private readonly fd: number, private readonly path: string, private readonly hexLen: number) {}

  static open(path: string, hexLen: number): PackedRefsReader | undefined {
    let fd: number;
    try { fd = openSync(path, 'r'); } catch { return undefined; }
    return new PackedRefsReader(fd, path, hexLen);
  }

  close(): void { try { closeSync(this.fd); } catch { /* closed */ } }

  /** The next line as [buf, start, end], or undefined at the end. */
  private line(): [Buffer, number, number] | undefined {
    for (;;) {
      let nl = this.chunk.indexOf(10, this.start);
      if (nl >= this.avail) nl = -1;
      if (nl < 0 && this.eof) {
        if (this.start >= this.avail) return undefined;
        nl = this.avail; // last line without LF
      }
      if (nl >= 0) {
        const r: [Buffer, number, number] = [this.chunk, this.start, nl];
        this.start = nl + 1;
        if (nl === r[1]) continue; // empty line
        return r;
      }
      // refill: carry the partial line into a fresh chunk
      const carry = this.avail - this.start;
      const next = Buffer.allocUnsafe(CHUNK + carry);
      this.chunk.copy(next, 0, this.start, this.avail);
      const n = readSync(this.fd, next, carry, CHUNK, this.pos);
      this.pos += n;
      this.eof = n === 0;
      this.chunk = next;
      this.avail = carry + n;
      this.start = 0;
    }
  }

  private pending: [Buffer, number, number] | undefined;

  /** Advance to the next ref; false at the end. */
  next(): boolean {
    for (;;) {
      const l = this.pending ?? this.line();
      this.pending = undefined;
      if (!l) return false;
      const [b, st, en] = l;
      if (b[st] === 0x23) {
        if (this.first) {
          const t = ` ${b.toString('latin1', st, en)} `;
          this.fullyPeeled = t.includes(' fully-peeled ');
          this.peeledTrait = t.includes(' peeled ');
          this.sorted = t.includes(' sorted ');
        }
        this.first = false;
        continue;
      }
      this.first = false;
      if (b[st] === 0x5e) continue; // a peel line without a ref: ignored
      if (en - st < this.hexLen + 2 || b[st + this.hexLen] !== 0x20) {
        throw new GitwireError('GW_UNSUPPORTED_REPO', `unexpected line in ${this.path}: ${b.toString('latin1', st, en)}`);
      }
      this.buf = b;
      this.hexAt = st;
      this.nameAt = st + this.hexLen + 1;
      this.nameEnd = en;
      this.peeledAt = -1;
      const peel = this.line();
      if (peel && peel[0][peel[1]] === 0x5e) {
        this.peelBuf = peel[0];
        this.peeledAt = peel[1] + 1;
        this.peelState = 2;
      } else {
        this.pending = peel;
        if (this.fullyPeeled) this.peelState = 1;
        else if (this.peeledTrait && en - this.nameAt > 10 && b.toString('latin1', this.nameAt, this.nameAt + 10) === 'refs/tags/') this.peelState = 1;
        else this.peelState = 0;
      }
      return true;
    }
  }
}
