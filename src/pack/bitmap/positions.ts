/**
 * Bit positions for one request: objects of the bitmapped pack(s) have
 * their bit; any other object a walk meets (pushed after the bitmap was
 * written: loose, or in a newer pack) is numbered after them, in the order
 * met — git's "extended index" (ext_index). The numbering lives as long as
 * the request, so the wants and haves bitmaps share it.
 */
import type { ObjType } from '../../repo/object-type.js';
import type { BoundBitmap } from './bitmap-index.js';
import { OidIndex } from './oid-index.js';

export class Positions {
  readonly n: number;
  /** extended objects: types, name hashes (position n + i); ids in `ext` */
  readonly extTypes: ObjType[] = [];
  readonly extNames: number[] = [];
  private readonly ext: OidIndex;

  constructor(readonly bound: BoundBitmap) {
    this.n = bound.objectCount;
    this.ext = new OidIndex(bound.packs[0]!.hashLen);
  }

  /** The id of extended object `i` (a view, not to be written). */
  extId(i: number): Buffer { return this.ext.id(i); }

  /** The object's position, or -1 when it has none yet. */
  of(oid: Buffer): number {
    const b = this.bound.bitOf(oid);
    if (b >= 0) return b;
    if (this.ext.count === 0) return -1;
    const e = this.ext.find(oid, 0);
    return e < 0 ? -1 : this.n + e;
  }

  /** of() for the id at buf[at…at+hashLen). */
  at(buf: Buffer, at: number): number {
    const b = this.bound.bitAt(buf, at);
    if (b >= 0) return b;
    if (this.ext.count === 0) return -1;
    const e = this.ext.find(buf, at);
    return e < 0 ? -1 : this.n + e;
  }

  /** The object's position, numbering it as an extended object if it has none. */
  ofOrAdd(oid: Buffer, type: ObjType, nameHash: number): number {
    const p = this.of(oid);
    return p >= 0 ? p : this.addExt(oid, type, nameHash);
  }

  /** Number an object outside the bitmapped pack(s) (the caller knows it has no position). */
  addExt(oid: Buffer, type: ObjType, nameHash: number): number {
    return this.addExtAt(oid, 0, type, nameHash);
  }

  /** addExt() for the id at buf[at…at+hashLen). */
  addExtAt(buf: Buffer, at: number, type: ObjType, nameHash: number): number {
    const i = this.ext.add(buf, at);
    if (i === this.extTypes.length) {
      this.extTypes.push(type);
      this.extNames.push(nameHash);
    }
    return this.n + i;
  }

  get extCount(): number { return this.ext.count; }
}
