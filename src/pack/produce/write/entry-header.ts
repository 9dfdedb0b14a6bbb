/**
 * Pack entry headers as pack-objects writes them: the type and inflated
 * size (4 bits, then 7 per byte, low first), then for an OFS_DELTA the
 * distance back to its base (git's offset encoding: 7 bits per byte, high
 * first, each continuation byte carrying one less), for a REF_DELTA the
 * base's id.
 */
import { ObjType } from '../../../repo/object-type.js';

/** Bytes of the largest header: 10 for the size, the id of a REF_DELTA (or 10 for an offset). */
export const MAX_HEADER = 10 + 32;

/** Write the type and size at dst[at…]; returns the end. */
export function putTypeSize(dst: Buffer, at: number, type: ObjType, size: number): number {
  let c = (type << 4) | (size & 15);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    dst[at++] = c | 0x80;
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  dst[at++] = c;
  return at;
}

/** Write an OFS_DELTA's distance to its base at dst[at…]; returns the end. */
export function putOfsDistance(dst: Buffer, at: number, rel: number): number {
  const tmp = ofsScratch;
  let p = tmp.length - 1;
  tmp[p] = rel & 127;
  let v = Math.floor(rel / 128);
  while (v > 0) {
    v -= 1;
    tmp[--p] = 128 | (v & 127);
    v = Math.floor(v / 128);
  }
  const n = tmp.length - p;
  tmp.copy(dst, at, p);
  return at + n;
}
const ofsScratch = Buffer.alloc(10);

/** Where the type-and-size bytes of the header at b[at…] end (the source header is copied as it is). */
export function typeSizeEnd(b: Buffer, at: number): number {
  while (b[at]! & 0x80) at++;
  return at + 1;
}
