/**
 * Refs: loose, packed-refs (streamed in chunks, never loaded whole),
 * symbolic refs and HEAD, iterated in git's order (loose shadows packed).
 *
 * Records hold views of the bytes read from disk: names and hex ids are
 * already in wire form, so the advertisement copies them without building
 * strings.
 */
import { closeSync, existsSync, fstatSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';

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
const HASH_HEX = new Set([40, 64]);

function isHexByte(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102);
}

function validHex(b: Buffer, len: number): boolean {
  if (b.length !== len) return false;
  for (let i = 0; i < len; i++) if (!isHexByte(b[i]!)) return false;
  return true;
}

/** git's check_refname_format, enough to skip junk files under refs/. */
export function isValidRefName(name: string): boolean {
  if (!name || name.endsWith('/') || name.endsWith('.') || name.endsWith('.lock') || name.includes('..') || name.includes('@{')) return false;
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) return false;
  for (const comp of name.split('/')) if (comp === '' || comp.startsWith('.')) return false;
  return name !== '@';
}

export class RefStore {
  readonly hexLen: number;
  constructor(readonly gitDir: string, readonly commonDir: string, hashLen: number) {
    this.hexLen = hashLen * 2;
    if (!HASH_HEX.has(this.hexLen)) throw new Error('bad hash length');
  }

  private get packedPath(): string { return join(this.commonDir, 'packed-refs'); }

  /** Read a loose ref file: hex id or `ref: <target>`; undefined if absent or junk. */
  readLoose(name: string): { hex?: Buffer; symref?: string } | undefined {
    const dir = name === 'HEAD' || !name.startsWith('refs/') ? this.gitDir : this.commonDir;
    let raw: Buffer;
    try { raw = readFileSync(join(dir, name)); } catch { return undefined; }
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

  /** Find one ref in packed-refs by binary search with positional reads. */
  lookupPacked(name: string): RefRecord | undefined {
    let fd: number;
    try { fd = openSync(this.packedPath, 'r'); } catch { return undefined; }
    try {
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
          return rec;
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

  /** Resolve a ref name to a hex id, following symrefs. */
  resolve(name: string, depth = 0): { hex?: Buffer; target: string } | undefined {
    if (depth > 5) return undefined;
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
    let fd: number;
    try { fd = openSync(this.packedPath, 'r'); } catch { return; }
    try {
      let fullyPeeled = false, peeledTrait = false, sorted = false;
      let pos = 0;
      let carry: Buffer = Buffer.alloc(0);
      let pending: RefRecord | undefined;
      let first = true;
      const hexLen = this.hexLen;
      const unsorted: RefRecord[] = [];
      const emit = function* (rec: RefRecord): Generator<RefRecord> {
        if (rec.peelState === 'unknown') {
          if (fullyPeeled) rec.peelState = 'none';
          else if (peeledTrait && rec.name.length > 10 && rec.name.toString('latin1', 0, 10) === 'refs/tags/') rec.peelState = 'none';
        }
        if (prefix && (rec.name.length < prefix.length || rec.name.compare(prefix, 0, prefix.length, 0, prefix.length) !== 0)) return;
        if (sorted) yield rec; else unsorted.push(rec);
      };
      for (;;) {
        const chunk = Buffer.allocUnsafe(CHUNK + carry.length);
        carry.copy(chunk, 0);
        const n = readSync(fd, chunk, carry.length, CHUNK, pos);
        pos += n;
        const avail = carry.length + n;
        const eof = n === 0;
        let start = 0;
        for (;;) {
          let nl = chunk.indexOf(10, start);
          if (nl < 0 || nl >= avail) {
            if (!eof || start >= avail) break;
            nl = avail; // last line without LF
          }
          const line = chunk.subarray(start, nl);
          start = nl + 1;
          if (line.length === 0) continue;
          if (first && line[0] === 0x23) {
            first = false;
            const t = ` ${line.toString('latin1')} `;
            fullyPeeled = t.includes(' fully-peeled ');
            peeledTrait = t.includes(' peeled ');
            sorted = t.includes(' sorted ');
            continue;
          }
          first = false;
          if (line[0] === 0x5e) {
            if (!pending) throw new GitwireError('GW_UNSUPPORTED_REPO', 'unexpected line in packed-refs');
            pending.peeled = line.subarray(1, 1 + hexLen);
            pending.peelState = 'peeled';
            continue;
          }
          if (line[0] === 0x23) continue;
          if (pending) yield* emit(pending);
          if (line.length < hexLen + 2 || line[hexLen] !== 0x20) {
            throw new GitwireError('GW_UNSUPPORTED_REPO', `unexpected line in ${this.packedPath}: ${line.toString()}`);
          }
          pending = { name: line.subarray(hexLen + 1), hex: line.subarray(0, hexLen), peelState: 'unknown' };
        }
        if (eof) break;
        carry = Buffer.from(chunk.subarray(start, avail));
      }
      if (pending) yield* emit(pending);
      if (!sorted) {
        unsorted.sort((a, b) => Buffer.compare(a.name, b.name));
        yield* unsorted;
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * The hot path for advertisements: every ref under `prefix` in name
   * order (loose shadowing packed), handed over as regions of the bytes
   * read from disk. Nothing is allocated per packed ref. `peelState`:
   * 0 unknown (look the object up), 1 known not to peel, 2 `peeledAt` is set.
   */
  scan(prefix: string, cb: RefScanCallback): void {
    const loose = this.looseRefs(prefix);
    const hexLen = this.hexLen;
    const pfx = Buffer.from(prefix);
    const plen = pfx.length;
    let li = 0;
    const emitLoose = (l: RefRecord) => {
      if (l.name.length < plen || l.name.compare(pfx, 0, plen, 0, plen) !== 0) return;
      const b = Buffer.allocUnsafe(hexLen + 1 + l.name.length);
      l.hex.copy(b, 0);
      b[hexLen] = 0x20;
      l.name.copy(b, hexLen + 1);
      cb(b, 0, hexLen + 1, b.length, -1, 0, l.symref);
    };
    let fd: number | undefined;
    try { fd = openSync(this.packedPath, 'r'); } catch { fd = undefined; }
    if (fd !== undefined) {
      try {
        let fullyPeeled = false, peeledTrait = false, sorted = true, first = true;
        let pos = 0;
        let carry: Buffer = Buffer.alloc(0);
        // the ref waiting for a possible `^` line
        let pb: Buffer | undefined, pHex = 0, pName = 0, pEnd = 0, pPeel = -1;
        const flush = () => {
          if (!pb) return;
          const b = pb;
          pb = undefined;
          if (pEnd - pName < plen || b.compare(pfx, 0, plen, pName, pName + plen) !== 0) return;
          while (li < loose.length) {
            const l = loose[li]!;
            const c = b.compare(l.name, 0, l.name.length, pName, pEnd);
            if (c < 0) break; // packed name < loose name
            li++;
            emitLoose(l);
            if (c === 0) return; // loose shadows packed
          }
          let state: 0 | 1 | 2 = 0;
          if (pPeel >= 0) state = 2;
          else if (fullyPeeled) state = 1;
          else if (peeledTrait && pEnd - pName > 10 && b.toString('latin1', pName, pName + 10) === 'refs/tags/') state = 1;
          cb(b, pHex, pName, pEnd, pPeel, state);
        };
        for (;;) {
          const chunk = Buffer.allocUnsafe(CHUNK + carry.length);
          carry.copy(chunk, 0);
          const n = readSync(fd, chunk, carry.length, CHUNK, pos);
          pos += n;
          const avail = carry.length + n;
          const eof = n === 0;
          let start = 0;
          for (;;) {
            let nl = chunk.indexOf(10, start);
            if (nl < 0 || nl >= avail) {
              if (!eof || start >= avail) break;
              nl = avail;
            }
            const c0 = chunk[start];
            if (nl === start) { start = nl + 1; continue; }
            if (first && c0 === 0x23) {
              const t = ` ${chunk.toString('latin1', start, nl)} `;
              fullyPeeled = t.includes(' fully-peeled ');
              peeledTrait = t.includes(' peeled ');
              sorted = t.includes(' sorted ');
              first = false;
              start = nl + 1;
              if (!sorted) break;
              continue;
            }
            first = false;
            if (c0 === 0x5e) { if (pb) pPeel = start + 1; start = nl + 1; continue; }
            if (c0 === 0x23) { start = nl + 1; continue; }
            flush();
            if (nl - start < hexLen + 2 || chunk[start + hexLen] !== 0x20) {
              throw new GitwireError('GW_UNSUPPORTED_REPO', `unexpected line in ${this.packedPath}: ${chunk.toString('latin1', start, nl)}`);
            }
            pb = chunk; pHex = start; pName = start + hexLen + 1; pEnd = nl; pPeel = -1;
            start = nl + 1;
          }
          if (!sorted) break;
          if (eof) break;
          carry = Buffer.from(chunk.subarray(start, avail));
        }
        flush();
        if (!sorted) {
          // an unsorted packed-refs (never written by git): take the slow, sorting path
          closeSync(fd);
          fd = undefined;
          for (const r of this.iterate(prefix)) {
            const b = Buffer.allocUnsafe(hexLen + 1 + r.name.length + (r.peeled ? hexLen : 0));
            r.hex.copy(b, 0); b[hexLen] = 0x20; r.name.copy(b, hexLen + 1);
            let peelAt = -1;
            if (r.peeled) { peelAt = hexLen + 1 + r.name.length; r.peeled.copy(b, peelAt); }
            cb(b, 0, hexLen + 1, hexLen + 1 + r.name.length, peelAt, r.peelState === 'peeled' ? 2 : r.peelState === 'none' ? 1 : 0, r.symref);
          }
          return;
        }
      } finally {
        if (fd !== undefined) closeSync(fd);
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
