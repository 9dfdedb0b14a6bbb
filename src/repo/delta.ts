/** git's delta format: apply a delta to a base. */
import { GitwireError } from '../errors.js';

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);

/** Read a delta header varint at `pos`; returns [value, next]. */
export function deltaVarint(d: Uint8Array, pos: number): [number, number] {
  const v = varint(d, pos);
  return [v, varintEnd];
}

/** where the last `varint` read ended (a module variable: no tuple per call on the hot path) */
let varintEnd = 0;

function varint(d: Uint8Array, pos: number): number {
  let v = 0, shift = 0, m = 1, c: number;
  do {
    if (pos >= d.length) throw corrupt('delta header truncated');
    c = d[pos++]!;
    v += (c & 0x7f) * m; // (a multiplier: 2 ** shift is a slow call on this path)
    m *= 128;
    shift += 7;
  } while (c & 0x80 && shift < 64);
  varintEnd = pos;
  return v;
}

/** Result size of a delta, from its header alone. */
export function deltaResultSize(d: Uint8Array): number {
  varint(d, 0);
  return varint(d, varintEnd);
}

/** Copies shorter than this are done byte by byte (cheaper than a native call). */
const SMALL_COPY = 48;

/**
 * Apply `delta` to `base`: into `into` when given (it must hold the
 * result; a view of it is returned), else into a new buffer.
 */
/** git's DELTA_SIZE_MIN: a shorter delta is refused, as patch_delta() refuses it */
const DELTA_SIZE_MIN = 4;

export function applyDelta(base: Buffer, delta: Buffer, into?: Buffer): Buffer {
  // the header first: a base of the wrong size is refused before anything is allocated
  if (varint(delta, 0) !== base.length) throw corrupt('delta base size mismatch');
  const dstSize = varint(delta, varintEnd);
  if (into && into.length < dstSize) throw corrupt('delta result buffer too small');
  const out = into ? (into.length === dstSize ? into : into.subarray(0, dstSize)) : Buffer.allocUnsafe(dstSize);
  applyDeltaIn(base, 0, base.length, delta, 0, delta.length, out, 0, dstSize, false, false);
  return out;
}

/** Result size of the delta at d[at, end), from its header alone. */
export function deltaResultSizeAt(d: Uint8Array, at: number, end: number): number {
  varintIn(d, at, end);
  return varintIn(d, varintEnd, end);
}

function varintIn(d: Uint8Array, pos: number, end: number): number {
  let v = 0, shift = 0, m = 1, c: number;
  do {
    if (pos >= end) throw corrupt('delta header truncated');
    c = d[pos++]!;
    v += (c & 0x7f) * m;
    m *= 128;
    shift += 7;
  } while (c & 0x80 && shift < 64);
  varintEnd = pos;
  return v;
}

/**
 * applyDelta() on ranges: the base at base[bAt, bAt+bLen), the delta at
 * delta[dAt, dEnd), the result written at out[oAt…] (room for `oCap`
 * bytes). `baseInOut` / `deltaInOut` say that base or delta are the same
 * array as `out`: their copies are then copyWithin() calls, which create
 * no view (a copy between two buffers costs a new typed array and a
 * native call each). Returns the result size.
 */
export function applyDeltaIn(base: Uint8Array, bAt: number, bLen: number, delta: Uint8Array, dAt: number, dEnd: number, out: Uint8Array, oAt: number, oCap: number, baseInOut: boolean, deltaInOut: boolean): number {
  // git's patch_delta(): DELTA_SIZE_MIN (two header bytes and an opcode at the least, and a byte more)
  if (dEnd - dAt < DELTA_SIZE_MIN) throw corrupt('delta too short');
  const srcSize = varintIn(delta, dAt, dEnd);
  if (srcSize !== bLen) throw corrupt('delta base size mismatch');
  const dstSize = varintIn(delta, varintEnd, dEnd);
  let pos = varintEnd;
  if (oCap < dstSize) throw corrupt('delta result buffer too small');
  let o = oAt;
  const oEnd = oAt + dstSize;
  while (pos < dEnd) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let off = 0, size = 0;
      if (op & 0x0f) {
        if (op & 0x01) off = delta[pos++]!;
        if (op & 0x02) off |= delta[pos++]! << 8;
        if (op & 0x04) off |= delta[pos++]! << 16;
        if (op & 0x08) off = (off | (delta[pos++]! << 24)) >>> 0;
      }
      if (op & 0x70) {
        if (op & 0x10) size = delta[pos++]!;
        if (op & 0x20) size |= delta[pos++]! << 8;
        if (op & 0x40) size |= delta[pos++]! << 16;
      }
      if (size === 0) size = 0x10000;
      if (pos > dEnd || off + size > bLen || o + size > oEnd) throw corrupt('delta copy out of range');
      const from = bAt + off;
      if (size < SMALL_COPY) {
        for (let k = 0; k < size; k++) out[o + k] = base[from + k]!;
      } else if (baseInOut) {
        out.copyWithin(o, from, from + size);
      } else {
        out.set(base.subarray(from, from + size), o);
      }
      o += size;
    } else if (op) {
      if (o + op > oEnd || pos + op > dEnd) throw corrupt('delta insert out of range');
      if (op < SMALL_COPY) {
        for (let k = 0; k < op; k++) out[o + k] = delta[pos + k]!;
      } else if (deltaInOut) {
        out.copyWithin(o, pos, pos + op);
      } else {
        out.set(delta.subarray(pos, pos + op), o);
      }
      o += op;
      pos += op;
    } else {
      throw corrupt('unexpected delta opcode 0');
    }
  }
  if (o !== oEnd) throw corrupt('delta result size mismatch');
  return dstSize;
}
