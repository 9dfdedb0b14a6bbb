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
import { typeName } from '../repo/object-type.js';
import type { Repository } from '../repo/repository.js';
import type { Location } from '../repo/odb.js';
import { compileFormat, DEFAULT_FORMAT, type CompiledFormat } from './format.js';
import { NameResolver } from './names.js';

export const COALESCE = 64 * 1024;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
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
}

const die = (msg: string) => new GitwireError('GW_USAGE', msg);

export class BatchEngine {
  private readonly fmt: CompiledFormat | undefined; // undefined: the default format
  private readonly names: NameResolver;
  private readonly delim: Buffer;
  private mode: 'contents' | 'info';
  private queue: Array<{ mode: 'contents' | 'info'; arg: string }> = [];
  private carry = '';
  private hdr = Buffer.allocUnsafe(128);

  constructor(readonly repo: Repository, readonly out: PacketWriter, readonly o: BatchOptions) {
    const f = o.format ?? DEFAULT_FORMAT;
    const compiled = compileFormat(f); // validates atoms, as git does up front
    this.fmt = f === DEFAULT_FORMAT ? undefined : compiled;
    this.names = new NameResolver(repo, o.diag);
    this.delim = Buffer.from(o.outputDelim, 'latin1');
    this.mode = o.mode === 'info' ? 'info' : 'contents';
  }

  private emit(buf: Buffer): void {
    this.out.raw(buf);
    if (!this.o.buffer || this.out.buffered >= COALESCE) this.out.push();
  }

  private status(text: string): void {
    this.emit(Buffer.from(`${text}${this.o.outputDelim}`, 'latin1'));
  }

  /** One object by id (already resolved). `name` is what the user typed. `walk`: part of a pack-order walk. */
  writeObject(oid: Buffer, name: string | undefined, rest: string | undefined, mode: number | undefined, known?: Location, walk = false): void {
    const odb = this.repo.odb;
    const f = this.fmt;
    const contents = this.mode === 'contents';
    let type = 0, size = 0, data: Buffer | undefined, chunks: Generator<Buffer> | undefined, disk = 0, deltaBase: Buffer | undefined;
    const loc = known ?? odb.locate(oid);
    if (!loc) { this.status(`${name ?? oid.toString('hex')} missing`); return; }
    if (contents) {
      if (walk) {
        const o = odb.readInWalk(loc, true); // copied out before the next read
        type = o.type; data = o.data; size = o.data.length;
      } else {
        const o = odb.readForOutput(loc, STREAM_CHUNK, true); // copied out before the next read
        type = o.type; data = o.data; chunks = o.chunks; size = o.size;
      }
      if (f && (f.needDisk || f.needDelta)) { const i = odb.infoAt(loc, f.needDisk); disk = i.diskSize ?? 0; deltaBase = i.deltaBase; }
    } else if (!f || !f.nameOnly) {
      const i = odb.infoAt(loc, !!f?.needDisk, !!f?.needDelta);
      type = i.type; size = i.size; disk = i.diskSize ?? 0; deltaBase = i.deltaBase;
    }
    if (!f) { this.writeAnswer(this.defaultHeader(oid, type, size), data, chunks); return; }
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
          case 'rest': if (rest !== undefined) header += rest; break;
          case 'deltabase': header += deltaBase ? deltaBase.toString('hex') : '0'.repeat(this.repo.hexLen); break;
          case 'objectmode': if (mode !== undefined) header += mode.toString(8).padStart(6, '0'); break;
        }
      }
    }
    const hlen = Buffer.byteLength(header, 'latin1');
    const head = Buffer.allocUnsafe(hlen + 1);
    head.write(header, 0, 'latin1');
    this.delim.copy(head, hlen);
    this.writeAnswer(head, data, chunks);
  }

  /** `<hex> <type> <size><delim>` straight into a reused buffer (copied out by the writer). */
  private defaultHeader(oid: Buffer, type: number, size: number): Buffer {
    const need = oid.length * 2 + 32;
    if (this.hdr.length < need) this.hdr = Buffer.allocUnsafe(need);
    const b = this.hdr;
    let p = 0;
    for (let i = 0; i < oid.length; i++) {
      const x = oid[i]!;
      b[p++] = HEX[x >> 4]!;
      b[p++] = HEX[x & 15]!;
    }
    b[p++] = 0x20;
    const tn = TYPE_BYTES[type];
    if (!tn) typeName(type); // throws git's error for a bad type
    for (let i = 0; i < tn!.length; i++) b[p++] = tn![i]!;
    b[p++] = 0x20;
    if (size === 0) b[p++] = 0x30;
    else {
      const start = p;
      for (let v = size; v > 0; v = Math.floor(v / 10)) b[p++] = 0x30 + (v % 10);
      b.subarray(start, p).reverse();
    }
    b[p++] = this.delim[0]!;
    return b.subarray(0, p);
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

  /** batch_one_object(): resolve a name and answer for it. */
  one(input: string): void {
    let name = input;
    let rest: string | undefined;
    if (this.fmt?.splitOnWhitespace) {
      const m = /[ \t]/.exec(input);
      if (m) {
        name = input.slice(0, m.index);
        rest = input.slice(m.index).replace(/^[ \t]+/, '');
      }
    }
    const r = this.names.resolve(name, this.o.followSymlinks);
    const od = this.o.outputDelim;
    switch (r.status) {
      case 'found': return this.writeObject(r.oid, name, rest, r.mode);
      case 'missing': return this.status(`${name} missing`);
      case 'ambiguous': return this.status(`${name} ambiguous`);
      case 'dangling': case 'loop': case 'notdir':
        return this.status(`${r.status} ${Buffer.byteLength(name)}${od}${name}`);
      case 'symlink':
        return this.status(`symlink ${Buffer.byteLength(r.target)}${od}${r.target}`);
    }
  }

  private command(line: string): void {
    if (!line) throw die('empty command in input');
    if (/^\s/.test(line)) throw die(`whitespace before command: '${line}'`);
    for (const [name, takesArgs] of [['contents', true], ['info', true], ['flush', false]] as const) {
      if (!line.startsWith(name)) continue;
      const after = line.slice(name.length);
      if (takesArgs) {
        if (after[0] !== ' ') throw die(`${name} requires arguments`);
        const arg = after.slice(1);
        if (!this.o.buffer) { this.mode = name as 'contents' | 'info'; this.one(arg); }
        else this.queue.push({ mode: name as 'contents' | 'info', arg });
        return;
      }
      if (after) throw die(`${name} takes no arguments`);
      this.dispatch();
      return;
    }
    throw die(`unknown command: '${line}'`);
  }

  private dispatch(): void {
    if (!this.o.buffer) throw die('flush is only for --buffer mode');
    for (const q of this.queue) { this.mode = q.mode; this.one(q.arg); }
    this.queue = [];
    this.out.push();
  }

  /** Feed raw input; complete lines are answered at once. */
  feed(chunk: string): void {
    const text = this.carry + chunk;
    const dl = this.o.inputDelim;
    let start = 0;
    for (;;) {
      const i = text.indexOf(dl, start);
      if (i < 0) break;
      this.line(text.slice(start, i));
      start = i + 1;
    }
    this.carry = text.slice(start);
  }

  private line(l: string): void {
    if (this.o.inputDelim === '\n' && l.endsWith('\r')) l = l.slice(0, -1);
    if (this.o.mode === 'command') this.command(l); else this.one(l);
  }

  /** End of input: the last unterminated line, queued commands, buffered output. */
  end(): void {
    if (this.carry) { const c = this.carry; this.carry = ''; this.line(c); }
    if (this.o.mode === 'command' && this.o.buffer && this.queue.length) this.dispatch();
    this.out.push();
  }

  /** --batch-all-objects */
  all(unordered: boolean): void {
    const odb = this.repo.odb;
    const infoOnly = this.mode === 'info';
    if (unordered) for (const x of odb.allObjectsWithLocation({ infoOnly })) this.writeObject(x.oid, undefined, undefined, undefined, x.loc, true);
    else for (const x of odb.allObjectsSortedWithLocation({ infoOnly })) this.writeObject(x.oid, undefined, undefined, undefined, x.loc);
    this.out.push();
  }
}
