/**
 * A ref as every backend hands it over: `Ref` records are regions of the
 * bytes read from storage, names and hex ids already in wire form, so
 * advertisements copy them without building strings.
 */
import { encodeName } from '../../util/byte-name.js';

const EMPTY_BUF = Buffer.alloc(0);

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

  /**
   * Where the object id sits in binary, when the backend has it so
   * (reftable: the record's bytes in its block): `oidBuf[oidAt..]`, for
   * a lookup without a hex round trip; -1 when only the hex is there.
   */
  oidBuf: Buffer = EMPTY_BUF;
  oidAt = -1;

  /** The object id in binary: a view of the backend's bytes when it has them, else decoded from the hex. */
  oid(): Buffer {
    const n = this.hexLen >>> 1;
    return this.oidAt >= 0 ? this.oidBuf.subarray(this.oidAt, this.oidAt + n) : Buffer.from(this.buf.toString('latin1', this.hexAt, this.hexAt + this.hexLen), 'hex');
  }

  private idScratch: Buffer | undefined;

  /**
   * The object id in binary in a buffer of this record's own that the
   * next call overwrites: for a lookup that does not keep its argument
   * (peeling a scan's refs one after the other), without a view or a
   * buffer made per ref.
   */
  oidTemp(): Buffer {
    if (this.oidAt < 0) return this.oid();
    const n = this.hexLen >>> 1;
    const d = this.idScratch ??= Buffer.allocUnsafe(n);
    const src = this.oidBuf, at = this.oidAt;
    for (let i = 0; i < n; i++) d[i] = src[at + i]!;
    return d;
  }

  /** full ref name bytes, e.g. `refs/heads/main` */
  get name(): Buffer { return this.buf.subarray(this.nameAt, this.nameEnd); }
  /** object id in hex (ASCII bytes) */
  get hex(): Buffer { return this.buf.subarray(this.hexAt, this.hexAt + this.hexLen); }
  /** peeled id in hex, when packed-refs has it */
  get peeled(): Buffer | undefined {
    return this.peel === Peel.Peeled ? this.peelBuf.subarray(this.peeledAt, this.peeledAt + this.hexLen) : undefined;
  }

  copy(): Ref {
    const r = new Ref(this.buf, this.hexAt, this.nameAt, this.nameEnd, this.hexLen, this.peel, this.peelBuf, this.peeledAt, this.symref);
    r.oidBuf = this.oidBuf;
    r.oidAt = this.oidAt;
    return r;
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

/** A ref's own value, symrefs not followed: an id or `ref: <target>`. */
export interface RawRef { hex?: Buffer; symref?: string }
/** the files backend's name for it: a loose ref file's content */
export type LooseValue = RawRef;

/** A pull cursor over refs in name order. */
export interface RefCursor { next(): Ref | undefined }

export const NO_REFS: RefCursor = { next: () => undefined };
export const EMPTY = Buffer.alloc(0);

/** Compare a ref's name with `key`: <0, 0, >0. */
export function cmpName(r: Ref, key: Buffer): number {
  return r.buf.compare(key, 0, key.length, r.nameAt, r.nameEnd);
}

/** The smallest name above every name starting with `prefix` (undefined: none is). */
export function upperBound(prefix: Buffer): Buffer | undefined {
  let n = prefix.length;
  while (n > 0 && prefix[n - 1] === 0xff) n--;
  if (n === 0) return undefined;
  const b = Buffer.from(prefix.subarray(0, n));
  b[n - 1]!++;
  return b;
}

/** Sorted prefixes with those covered by a shorter one dropped (git's find_longest_prefixes). */
export function reducePrefixes(prefixes: readonly string[]): Buffer[] {
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
