/**
 * Bit positions for one request: objects of the bitmapped pack(s) have
 * their bit; any other object a walk meets (pushed after the bitmap was
 * written: loose, or in a newer pack) is numbered after them, in the order
 * met — git's "extended index" (ext_index). The numbering lives as long as
 * the request, so the wants and haves bitmaps share it.
 */
import type { ObjType } from '../../repo/object-type.js';
import type { BoundBitmap } from './bitmap-index.js';

export class Positions {
  readonly n: number;
  /** extended objects: ids, types, name hashes (position n + i) */
  readonly extIds: Buffer[] = [];
  readonly extTypes: ObjType[] = [];
  readonly extNames: number[] = [];
  private readonly ext = new Map<string, number>();

  constructor(readonly bound: BoundBitmap) {
    this.n = bound.objectCount;
  }

  /** The object's position, or -1 when it has none yet. */
  of(oid: Buffer): number {
    const b = this.bound.bitOf(oid);
    if (b >= 0) return b;
    if (this.ext.size === 0) return -1;
    const e = this.ext.get(oid.toString('latin1'));
    return e === undefined ? -1 : this.n + e;
  }

  /** of() for the id at buf[at…at+hashLen). */
  at(buf: Buffer, at: number, hashLen: number): number {
    const b = this.bound.bitAt(buf, at);
    if (b >= 0) return b;
    if (this.ext.size === 0) return -1;
    const e = this.ext.get(buf.toString('latin1', at, at + hashLen));
    return e === undefined ? -1 : this.n + e;
  }

  /** The object's position, numbering it as an extended object if it has none. */
  ofOrAdd(oid: Buffer, type: ObjType, nameHash: number): number {
    const p = this.of(oid);
    return p >= 0 ? p : this.addExt(oid, type, nameHash);
  }

  /** Number an object outside the bitmapped pack(s) (the caller knows it has no position). */
  addExt(oid: Buffer, type: ObjType, nameHash: number): number {
    const k = oid.toString('latin1');
    const e = this.ext.get(k);
    if (e !== undefined) return this.n + e;
    const i = this.extIds.length;
    this.ext.set(k, i);
    this.extIds.push(Buffer.from(oid));
    this.extTypes.push(type);
    this.extNames.push(nameHash);
    return this.n + i;
  }

  get extCount(): number { return this.extIds.length; }
}
