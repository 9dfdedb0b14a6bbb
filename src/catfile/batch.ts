/**
 * cat-file's batch modes with gitwire's write discipline:
 * - without --buffer, each answer (header, content, delimiter) leaves in
 *   exactly one write, as soon as it is ready;
 * - each object is located once: type, size and content come from one lookup;
 * - with --buffer, output is coalesced into writes of at least 64 KiB
 *   until `flush` or the end.
 */
import { GitwireError } from '../errors.js';
import type { PacketWriter } from '../pktline/writer.js';
import { ObjType, typeName } from '../repo/object-type.js';
import type { Repository } from '../repo/repository.js';
import type { Location } from '../repo/odb.js';
import { compileFormat, DEFAULT_FORMAT, type CompiledFormat } from './format.js';
import { NameResolver } from './names.js';
import { filterAccepts, type ObjectFilter } from './filter.js';
import { ReplaceMap } from '../repo/replace.js';
import { finalLine, splitInput, splitRest } from './input.js';
import { transformBlob, type Transform } from './transform.js';
import { diagnoseLoose, dictLines, headerTooLong } from './unreadable.js';
import { assertCatFileSupported } from './support.js';
import { Mailmap } from './mailmap.js';
import type { CompatView } from './compat.js';

export const COALESCE = 64 * 1024;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** byte → its two lowercase hex digits (high digit in the high byte) */
const HEX2 = (() => { const t = new Uint16Array(256); for (let x = 0; x < 256; x++) t[x] = (HEX[x >> 4]! << 8) | HEX[x & 15]!; return t; })();
const TYPE_BYTES: Array<Buffer | undefined> = [undefined, Buffer.from('commit'), Buffer.from('tree'), Buffer.from('blob'), Buffer.from('tag')];
/** objects larger than this leave in chunks of STREAM_CHUNK bytes (each at least 64 KiB) */
const STREAM_OVER = 4 * 1024 * 1024;
const STREAM_CHUNK = 1024 * 1024;

export interface BatchOptions {
  mode: 'contents' | 'info' | 'command';
  format?: string;
  buffer: boolean;
  /** input delimiter: '\n' or '\0' */
  inputDelim: string;
  /** output delimiter: '\n' or '\0' (-Z) */
  outputDelim: string;
  followSymlinks: boolean;
  /** git's error:/hint: lines (stderr in the CLI) */
  diag?: (line: string) => void;
  /** --filter=<spec> (git 2.48+): objects it rejects are `excluded` (or skipped with --batch-all-objects) */
  filter?: ObjectFilter;
  /** --textconv ('c') or --filters ('w') with a batch mode: blobs are converted using the path in %(rest) */
  transform?: Transform;
  /** --use-mailmap: idents in commits and tags rewritten (sizes follow) */
  useMailmap?: boolean;
}

const die = (msg: string) => new GitwireError('GW_USAGE', msg);

export class BatchEngine {
  private readonly fmt: CompiledFormat | undefined; // undefined: the default format
  private readonly names: NameResolver;
  private readonly delim: Buffer;
  private mode: 'contents' | 'info';
  private queue: Array<{ mode: 'contents' | 'info' | 'mailmap'; arg: Buffer }> = [];
  private mailmap: Mailmap | undefined;
  private useMailmap: boolean;
  private carry: Buffer = Buffer.alloc(0);
  private readonly replace: ReplaceMap;
  /** extensions.compatObjectFormat: names in the compat hash (undefined without it) */
  private readonly compat: CompatView | undefined;
  private allObjects = false;
  private hdr = Buffer.allocUnsafe(128);

  constructor(readonly repo: Repository, readonly out: PacketWriter, readonly o: BatchOptions) {
    assertCatFileSupported(repo);
    const f = o.format ?? DEFAULT_FORMAT;
    const compiled = compileFormat(f); // validates atoms, as git does up front
    this.fmt = f === DEFAULT_FORMAT ? undefined : compiled;
    this.replace = new ReplaceMap(repo);
    this.names = new NameResolver(repo, o.diag, this.replace);
    this.compat = this.names.compat;
    this.delim = Buffer.from(o.outputDelim, 'latin1');
    this.mode = o.mode === 'info' ? 'info' : 'contents';
    this.useMailmap = !!o.useMailmap;
  }

  private emit(buf: Buffer): void {
    this.out.raw(buf);
    if (!this.o.buffer || this.out.buffered >= COALESCE) this.out.push();
  }

  /** report_object_status(): `<name> <status>` (the name's bytes as given) */
  private status(name: Buffer | string, status: string): void {
    const n = typeof name === 'string' ? Buffer.from(name, 'latin1') : name;
    this.emit(Buffer.concat([n, Buffer.from(` ${status}`, 'latin1'), this.delim]));
  }

  /** `dangling 5\nHEAD:x\n` and the like: a status word, the length, then the bytes */
  private statusWithBody(word: string, body: Buffer): void {
    this.emit(Buffer.concat([Buffer.from(`${word} ${body.length}`, 'latin1'), this.delim, body, this.delim]));
  }

  /** One object by id (already resolved). `name` is what the user typed. `walk`: part of a pack-order walk. */
  writeObject(oid: Buffer, name: Buffer | undefined, rest: Buffer | undefined, mode: number | undefined, known?: Location, walk = false): void {
    try {
      this.writeObjectUnchecked(oid, name, rest, mode, known, walk);
    } catch (e) {
      if (!this.unreadable(e, oid, name, known)) throw e;
    }
  }

  /**
   * An object the database could not read: answer as git does for a loose
   * object that needs a zlib dictionary (errors, then `missing`) or has a
   * bogus type (die). False when it is some other failure.
   */
  private unreadable(e: unknown, oid: Buffer, name: Buffer | undefined, known?: Location): boolean {
    const loc = known ?? this.repo.odb.locate(this.allObjects ? oid : this.replace.lookup(oid));
    const d = diagnoseLoose(loc);
    if (!d) return false;
    if (d.kind === 'badtype') throw die('invalid object type');
    if (d.kind === 'toolong') this.o.diag?.(headerTooLong(oid));
    else for (const l of dictLines(oid)) this.o.diag?.(l);
    this.status(name ?? oid.toString('hex'), 'missing');
    void e;
    return true;
  }

  private writeObjectUnchecked(oid: Buffer, name: Buffer | undefined, rest: Buffer | undefined, mode: number | undefined, known: Location | undefined, walk: boolean): void {
    if (this.compat?.is(oid)) { this.writeCompat(oid, name, rest, mode); return; }
    const odb = this.repo.odb;
    const f = this.fmt;
    const contents = this.mode === 'contents';
    let type = 0, size = 0, data: Buffer | undefined, chunks: Generator<Buffer> | undefined, disk = 0, deltaBase: Buffer | undefined;
    let failed: unknown; // a failed --textconv/--filters: git has written the header when it dies
    // replace refs decide what is read; the id printed stays the one asked for
    const loc = known ?? odb.locate(this.allObjects ? oid : this.replace.lookup(oid));
    if (!loc) {
      if (mode === 0o160000) this.status(oid.toString('hex'), 'submodule');
      else this.status(name ?? oid.toString('hex'), 'missing');
      return;
    }
    if (this.o.filter) {
      const i = odb.infoAt(loc);
      if (!filterAccepts(this.o.filter, i.type, i.size)) {
        if (!this.allObjects) this.status(name ?? oid.toString('hex'), 'excluded');
        return;
      }
    }
    const mm = this.mailmapOn();
    if (contents) {
      if (walk) {
        const o = odb.readInWalk(loc, true); // copied out before the next read
        type = o.type; data = o.data; size = o.data.length;
      } else {
        // copied out before the next read; a large object's chunks share two buffers when each is written at once
        const o = odb.readForOutput(loc, STREAM_CHUNK, true, !this.out.retains);
        type = o.type; data = o.data; chunks = o.chunks; size = o.size;
      }
      // a mailmap rewrite or a conversion needs the whole object, and may read
      // other objects (attributes) before this one is written: its own copy
      if ((mm && type !== ObjType.Blob) || (this.o.transform && type === ObjType.Blob)) {
        if (chunks) { data = odb.readAt(loc).data; chunks = undefined; } else if (data) data = Buffer.from(data);
      }
      if (mm && type !== ObjType.Blob && data) { data = mm.rewrite(data); if (type === ObjType.Commit || type === ObjType.Tag) size = data.length; }
      if (f && (f.needDisk || f.needDelta)) { const i = odb.infoAt(loc, f.needDisk); disk = i.diskSize ?? 0; deltaBase = i.deltaBase; }
      if (this.o.transform && type === ObjType.Blob && data) {
        try { data = this.transformed(oid, data, rest); } catch (e) { failed = e; data = undefined; }
      }
    } else if (!f || !f.nameOnly) {
      const i = odb.infoAt(loc, !!f?.needDisk, !!f?.needDelta);
      type = i.type; size = i.size; disk = i.diskSize ?? 0; deltaBase = i.deltaBase;
      if (mm && (type === ObjType.Commit || type === ObjType.Tag)) size = mm.rewrite(odb.readAt(loc).data).length;
    }
    this.answer(oid, rest, mode, type, size, disk, deltaBase, data, chunks, failed);
  }

  /**
   * A compat id (extensions.compatObjectFormat): the stored object it maps
   * to, shown as the compat hash names it (converted content and its size,
   * the delta base mapped back). An id inside that is not mapped fails it,
   * after git's error line: `missing`, as git answers.
   */
  private writeCompat(oid: Buffer, name: Buffer | undefined, rest: Buffer | undefined, mode: number | undefined): void {
    const cv = this.compat!;
    const odb = this.repo.odb;
    const f = this.fmt;
    const diag = this.o.diag;
    const missing = () => this.status(name ?? oid.toString('hex'), 'missing');
    const real = cv.real(oid, this.replace);
    const loc = real && odb.locate(real);
    if (!loc) { missing(); return; }
    let type = 0, size = 0, data: Buffer | undefined, disk = 0, deltaBase: Buffer | undefined;
    let failed: unknown;
    const needSize = !f || f.needSize || !!this.o.filter;
    const mm = this.mailmapOn();
    if (this.mode === 'contents') {
      const c = cv.convert(odb.readAt(loc), diag);
      if (!c) { missing(); return; }
      type = c.type; data = c.data; size = data.length;
    } else if (!f || !f.nameOnly || this.o.filter) {
      const i = cv.info(oid, this.replace, { size: needSize }, diag);
      if (!i) { missing(); return; }
      type = i.type; size = i.size;
      if (mm && (type === ObjType.Commit || type === ObjType.Tag)) size = mm.rewrite(cv.read(oid, this.replace, diag)!.data).length;
    }
    if (this.o.filter && !filterAccepts(this.o.filter, type, size)) { this.status(name ?? oid.toString('hex'), 'excluded'); return; }
    if (data) {
      if (mm && type !== ObjType.Blob) { data = mm.rewrite(Buffer.from(data)); if (type === ObjType.Commit || type === ObjType.Tag) size = data.length; }
      if (this.o.transform && type === ObjType.Blob) {
        try { data = this.transformed(oid, Buffer.from(data), rest); } catch (e) { failed = e; data = undefined; }
      }
    }
    if (f && (f.needDisk || f.needDelta)) {
      const i = cv.info(oid, this.replace, { disk: f.needDisk, delta: f.needDelta });
      if (!i) { missing(); return; }
      disk = i.diskSize ?? 0; deltaBase = i.deltaBase;
    }
    this.answer(oid, rest, mode, type, size, disk, deltaBase, data, undefined, failed);
  }

  /** The header in the format asked for, then the content (if any). */
  private answer(oid: Buffer, rest: Buffer | undefined, mode: number | undefined, type: number, size: number, disk: number,
    deltaBase: Buffer | undefined, data: Buffer | undefined, chunks: Generator<Buffer> | undefined, failed: unknown): void {
    const f = this.fmt;
    if (!f) {
      this.writeAnswer(this.defaultHeader(oid, type, size), data, chunks);
      if (failed) { this.out.push(); throw failed; }
      return;
    }
    let header: string;
    {
      header = '';
      for (const p of f.parts) {
        if (typeof p === 'string') { header += p; continue; }
        switch (p.atom) {
          case 'objectname': header += oid.toString('hex'); break;
          case 'objecttype': header += typeName(type); break;
          case 'objectsize': header += String(size); break;
          case 'objectsize:disk': header += String(disk); break;
          case 'rest': if (rest !== undefined) header += rest.toString('latin1'); break;
          case 'deltabase': header += deltaBase ? deltaBase.toString('hex') : '0'.repeat(oid.length * 2); break;
          case 'objectmode': if (mode !== undefined) header += mode.toString(8).padStart(6, '0'); break;
        }
      }
    }
    const hlen = Buffer.byteLength(header, 'latin1');
    const head = Buffer.allocUnsafe(hlen + 1);
    head.write(header, 0, 'latin1');
    this.delim.copy(head, hlen);
    this.writeAnswer(head, data, chunks);
    if (failed) { this.out.push(); throw failed; }
  }

  /** `<hex> <type> <size><delim>` straight into a reused buffer (copied out by the writer). */
  private defaultHeader(oid: Buffer, type: number, size: number): Buffer {
    return this.defaultHeaderAt(oid, 0, oid.length, type, size);
  }

  /** the same, for the id at src[at, at+len) */
  private defaultHeaderAt(src: Buffer, at: number, len: number, type: number, size: number): Buffer {
    const need = len * 2 + 32;
    if (this.hdr.length < need) this.hdr = Buffer.allocUnsafe(need);
    return this.hdr.subarray(0, writeDefaultHeader(this.hdr, 0, src, at, len, type, size, this.delim[0]!));
  }

  /** Header (with its delimiter), then the content (whole or in chunks) and a delimiter. */
  private writeAnswer(head: Buffer, data: Buffer | undefined, chunks: Generator<Buffer> | undefined): void {
    const hlen = head.length - 1;
    const d = this.delim;
    if (!data && !chunks) {
      this.out.raw(head);
      if (!this.o.buffer || this.out.buffered >= COALESCE) this.out.push();
      return;
    }
    if (chunks) {
      // a large object inflated as it goes out, in chunks of STREAM_CHUNK
      // bytes: the header rides with the first, the delimiter with the last,
      // and a short tail joins the chunk before it (every write >= 64 KiB)
      let pending: Buffer = head;
      let started = false;
      for (const c of chunks) {
        if (!started) { pending = Buffer.concat([head, c]); started = true; continue; }
        if (c.length < COALESCE) { pending = Buffer.concat([pending, c]); continue; }
        this.emit(pending);
        pending = c;
      }
      this.emit(Buffer.concat([pending, d]));
      return;
    }
    const body = data!;
    const total = hlen + 1 + body.length + 1;
    if (this.out.buffered + total <= this.out.limit) {
      // header, content, delimiter: copied once into the writer, one write
      this.out.raw(head);
      this.out.raw(body);
      this.out.raw(d);
      if (!this.o.buffer || this.out.buffered >= COALESCE) this.out.push();
      return;
    }
    if (body.length > STREAM_OVER) {
      // a large object: the first chunk carries the header, the last the
      // delimiter, the ones between go out as views (no copy of the object)
      const first = Buffer.allocUnsafe(hlen + 1 + STREAM_CHUNK);
      head.copy(first, 0);
      body.copy(first, hlen + 1, 0, STREAM_CHUNK);
      this.emit(first);
      let off = STREAM_CHUNK;
      while (body.length - off > STREAM_CHUNK + COALESCE) {
        this.emit(body.subarray(off, off + STREAM_CHUNK));
        off += STREAM_CHUNK;
      }
      const last = Buffer.allocUnsafe(body.length - off + 1);
      body.copy(last, 0, off);
      d.copy(last, body.length - off);
      this.emit(last);
      return;
    }
    // header, delimiter, content, delimiter: one buffer, one write
    const b = Buffer.allocUnsafe(total);
    head.copy(b, 0);
    body.copy(b, hlen + 1);
    d.copy(b, hlen + 1 + body.length);
    this.emit(b);
  }

  /** --textconv / --filters in a batch: the path comes from %(rest) */
  private transformed(oid: Buffer, data: Buffer, rest: Buffer | undefined): Buffer {
    if (!rest) throw die(`missing path for '${oid.toString('hex')}'`);
    return transformBlob(this.repo, this.o.transform!, rest, 0o100644, oid, data, true);
  }

  /** batch_one_object(): resolve a name and answer for it. */
  one(input: Buffer): void {
    let name = input;
    let rest: Buffer | undefined;
    // names from --batch-command are never split: %(rest) stays empty there, as in git
    if ((this.fmt?.splitOnWhitespace || this.o.transform) && this.o.mode !== 'command') ({ name, rest } = splitRest(input));
    const r = this.names.resolve(name, this.o.followSymlinks);
    switch (r.status) {
      case 'found': return this.writeObject(r.oid, name, rest, r.mode);
      case 'missing': return this.status(name, 'missing');
      case 'ambiguous': return this.status(name, 'ambiguous');
      case 'dangling': case 'loop': case 'notdir':
        return this.statusWithBody(r.status, name);
      case 'symlink':
        return this.statusWithBody('symlink', r.target);
    }
  }

  private command(raw: Buffer): void {
    const line = raw.toString('latin1');
    const shown = () => raw.toString('utf8');
    if (!line) throw die('empty command in input');
    if (/^[ \t\n\v\f\r]/.test(line)) throw die(`whitespace before command: '${shown()}'`);
    for (const [name, takesArgs] of [['contents', true], ['info', true], ['flush', false], ['mailmap', true]] as const) {
      if (!line.startsWith(name)) continue;
      const after = line.slice(name.length);
      if (takesArgs) {
        if (after[0] !== ' ') throw die(`${name} requires arguments`);
        const arg = raw.subarray(name.length + 1);
        if (!this.o.buffer) this.run(name, arg);
        else this.queue.push({ mode: name, arg: Buffer.from(arg) });
        return;
      }
      if (after) throw die(`${name} takes no arguments`);
      this.dispatch();
      return;
    }
    throw die(`unknown command: '${shown()}'`);
  }

  /** one --batch-command command with its argument */
  private run(cmd: 'contents' | 'info' | 'mailmap', arg: Buffer): void {
    if (cmd !== 'mailmap') { this.mode = cmd; this.one(arg); return; }
    // the `mailmap <bool>` command (git 2.52+)
    const v = parseMaybeBool(arg.toString('latin1'));
    if (v === undefined) throw die(`mailmap: invalid boolean '${arg.toString()}'`);
    this.useMailmap = v;
  }

  private mailmapOn(): Mailmap | undefined {
    if (!this.useMailmap) return undefined;
    this.mailmap ??= Mailmap.load(this.repo);
    return this.mailmap;
  }

  private dispatch(): void {
    if (!this.o.buffer) throw die('flush is only for --buffer mode');
    for (const q of this.queue) this.run(q.mode, q.arg);
    this.queue = [];
    this.out.push();
  }

  /** Feed raw input (bytes); complete lines are answered at once. */
  feed(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk;
    const { lines, carry } = splitInput(this.carry, buf, this.o.inputDelim === '\0' ? 0 : 10);
    this.carry = carry;
    for (const l of lines) this.line(l);
  }

  private line(l: Buffer): void {
    if (this.o.mode === 'command') this.command(l); else this.one(l);
  }

  /** End of input: the last unterminated line, queued commands, buffered output. */
  end(): void {
    if (this.carry.length) { const c = finalLine(this.carry); this.carry = Buffer.alloc(0); this.line(c); }
    // GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT: queued commands are dropped at the end, as git's test knob does
    if (this.o.mode === 'command' && this.o.buffer && this.queue.length && !envBool(this.repo.env.GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT)) this.dispatch();
    this.out.push();
  }

  /** --batch-all-objects */
  all(unordered: boolean): void {
    const odb = this.repo.odb;
    this.allObjects = true; // disable_replace_refs(), and filtered objects are skipped silently
    const infoOnly = this.mode === 'info';
    if (!unordered && infoOnly && !this.fmt && !this.o.filter && !this.useMailmap) {
      // the default --batch-check format over one pack: ids, types and sizes from its tables
      // (headers gathered into one chunk, handed to the writer every 64 KiB: the same writes as one by one)
      const hl = this.repo.hashLen;
      const chunk = Buffer.allocUnsafe(COALESCE + 256);
      let used = 0;
      const d = this.delim[0]!;
      const done = this.o.buffer && odb.sortedInfoOnePack((ids, at, type, size) => {
        used = writeDefaultHeader(chunk, used, ids, at, hl, type, size, d);
        if (used >= COALESCE) { this.out.raw(chunk.subarray(0, used)); used = 0; this.out.push(); }
      });
      if (done) {
        if (used) this.out.raw(chunk.subarray(0, used));
        this.out.push();
        return;
      }
    }
    if (unordered) for (const x of odb.allObjectsWithLocation({ infoOnly })) this.writeObject(x.oid, undefined, undefined, undefined, x.loc, true);
    else for (const x of odb.allObjectsSortedWithLocation({ infoOnly })) this.writeObject(x.oid, undefined, undefined, undefined, x.loc);
    this.out.push();
  }
}

/** `<hex> <type> <size><delim>` for the id at src[at, at+len), written into b at p (room for len*2+32 bytes); returns the end. */
function writeDefaultHeader(b: Buffer, p: number, src: Buffer, at: number, len: number, type: number, size: number, delim: number): number {
  // two hex digits per byte from one table lookup (a 16-bit store of both)
  const hex2 = HEX2;
  for (let i = at, e = at + len; i < e; i++) {
    const v = hex2[src[i]!]!;
    b[p++] = v >> 8;
    b[p++] = v & 0xff;
  }
  b[p++] = 0x20;
  const tn = TYPE_BYTES[type];
  if (!tn) typeName(type); // throws git's error for a bad type
  for (let i = 0; i < tn!.length; i++) b[p++] = tn![i]!;
  b[p++] = 0x20;
  if (size === 0) b[p++] = 0x30;
  else {
    let digits = 1;
    for (let v = size; v >= 10; v = Math.floor(v / 10)) digits++;
    let q = p + digits;
    for (let v = size; v > 0; v = Math.floor(v / 10)) b[--q] = 0x30 + (v % 10);
    p += digits;
  }
  b[p++] = delim;
  return p;
}

/** git_parse_maybe_bool() */
export function parseMaybeBool(v: string): boolean | undefined {
  const l = v.toLowerCase();
  if (l === 'true' || l === 'yes' || l === 'on') return true;
  if (l === '' || l === 'false' || l === 'no' || l === 'off') return false;
  if (/^[+-]?(0[xX][0-9a-fA-F]+|[0-9]+)[kKmMgG]?$/.test(v)) return !/^[+-]?0+[kKmMgG]?$/.test(v) && !/^[+-]?0[xX]0+[kKmMgG]?$/.test(v);
  return undefined;
}

/** git_env_bool() with a false default: unset is false, a bad value dies as git's does */
function envBool(v: string | undefined): boolean {
  if (v === undefined) return false;
  const b = parseMaybeBool(v);
  if (b === undefined) throw die(`bad boolean config value '${v}' for 'GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT'`);
  return b;
}
