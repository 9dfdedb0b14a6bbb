/**
 * The reftable format's small parts (Documentation/technical/reftable.adoc):
 * big-endian fixed-width fields, varints (the ofs-delta encoding), the
 * constants of the header and footer, and the error a corrupt table gives.
 */
import { refsCorrupt, type GitwireError } from '../../../errors.js';

export const MAGIC = Buffer.from('REFT');
export const HEADER_V1 = 24;
export const HEADER_V2 = 28;
export const FOOTER_V1 = 68;
export const FOOTER_V2 = 72;
/** the largest block the format allows (uint24) */
export const MAX_BLOCK_SIZE = 16777215;
export const DEFAULT_BLOCK_SIZE = 4096;
export const DEFAULT_RESTART_INTERVAL = 16;

export const enum BlockType { Ref = 0x72, Log = 0x67, Obj = 0x6f, Index = 0x69 }
export const enum RefValue { Deletion = 0, Val1 = 1, Val2 = 2, Symref = 3 }
export const enum LogValue { Deletion = 0, Update = 1 }

/** hash ids of the v2 header: `sha1`, `s256` */
export const HASH_SHA1 = 0x73686131;
export const HASH_SHA256 = 0x73323536;

export function isBlockType(t: number): boolean {
  return t === BlockType.Ref || t === BlockType.Log || t === BlockType.Obj || t === BlockType.Index;
}

/** A table that cannot be read: git's REFTABLE_FORMAT_ERROR ("corrupt reftable file"). */
export function corrupt(file: string, why: string): GitwireError {
  return refsCorrupt(file, 'corrupt reftable file', why);
}

export function be24(b: Buffer, at: number): number { return (b[at]! << 16) | (b[at + 1]! << 8) | b[at + 2]!; }
export function be16(b: Buffer, at: number): number { return (b[at]! << 8) | b[at + 1]!; }
/** a uint64 that must fit a JavaScript number (positions, update indexes) */
export function be64(b: Buffer, at: number): number {
  const hi = b.readUInt32BE(at), lo = b.readUInt32BE(at + 4);
  if (hi >= 0x200000) return Number.MAX_SAFE_INTEGER + 1; // past 2^53: callers refuse it as out of range
  return hi * 0x100000000 + lo;
}
export function putBe24(b: Buffer, at: number, v: number): void { b[at] = (v >>> 16) & 0xff; b[at + 1] = (v >>> 8) & 0xff; b[at + 2] = v & 0xff; }
export function putBe64(b: Buffer, at: number, v: number): void {
  b.writeUInt32BE(Math.floor(v / 0x100000000), at);
  b.writeUInt32BE(v >>> 0, at + 4);
}

/** Where the last varint read ended (getVarint's second result, without an allocation per call). */
export const cursor = { pos: 0 };

/**
 * A varint at b[at..end): its value, its end in `cursor.pos`; -1 when it
 * runs past `end` or past 2^53 (the caller reports the corruption).
 */
export function getVarint(b: Buffer, at: number, end: number): number {
  if (at >= end) return -1;
  let c = b[at++]!;
  let v = c & 0x7f;
  while (c & 0x80) {
    if (at >= end) return -1;
    v += 1;
    if (v > 0x3fffffffffff) return -1; // (v << 7) would pass 2^53
    c = b[at++]!;
    v = v * 128 + (c & 0x7f);
  }
  cursor.pos = at;
  return v;
}

/** Append a varint to `out` at `at`; returns the new end. `out` must have 10 bytes of room. */
export function putVarint(out: Buffer, at: number, value: number): number {
  const end = at + varintLen(value);
  let i = end - 1;
  let v = value;
  out[i--] = v % 128;
  v = Math.floor(v / 128);
  while (v > 0) {
    v -= 1;
    out[i--] = 0x80 | (v % 128);
    v = Math.floor(v / 128);
  }
  return end;
}

export function varintLen(value: number): number {
  if (value < 128) return 1;
  let n = 1;
  let v = Math.floor(value / 128);
  while (v > 0) { n++; v = Math.floor((v - 1) / 128); }
  return n;
}

let crcTable: Uint32Array | undefined;
/** CRC-32 (zlib's), as the footer carries it. */
export function crc32(b: Buffer): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = crcTable[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
