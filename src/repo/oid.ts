/**
 * Object ids: raw (20 or 32 bytes) inside, hex only at the edge. This is
 * the one place ids change form and the one hex validator.
 *
 * The types are brands over Buffer and string, so a raw id passes wherever
 * a Buffer is taken, while an id spelt as hex bytes (a view into
 * packed-refs or a loose ref) cannot be mistaken for a raw one by a reader
 * of the code: each form says what it is instead of being sniffed by its
 * length.
 */
declare const rawBrand: unique symbol;
declare const hexBrand: unique symbol;
declare const hexBytesBrand: unique symbol;

/** A raw object id: 20 bytes (SHA-1) or 32 (SHA-256). */
export type RawOid = Buffer & { readonly [rawBrand]: true };
/** An object id as lower-case hex text: 40 or 64 characters. */
export type HexOid = string & { readonly [hexBrand]: true };
/** An object id as lower-case hex ASCII bytes, as ref files hold it (often a view into one). */
export type HexOidBytes = Buffer & { readonly [hexBytesBrand]: true };

/** hex digit values by character code; -1 for anything else (upper case only when asked) */
const LOWER = new Int8Array(256).fill(-1);
const ANY = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) { LOWER[48 + i] = i; ANY[48 + i] = i; }
for (let i = 0; i < 6; i++) { LOWER[97 + i] = 10 + i; ANY[97 + i] = 10 + i; ANY[65 + i] = 10 + i; }

/**
 * Is `h` exactly `len` hex digits? Lower case only, as upload-pack and the
 * ref files take them; `anyCase` for names typed by a user (cat-file).
 */
export function isHex(h: string, len: number, anyCase?: false): h is HexOid;
export function isHex(h: string | Buffer, len: number, anyCase?: boolean): boolean;
export function isHex(h: string | Buffer, len: number, anyCase = false): boolean {
  if (h.length !== len) return false;
  const t = anyCase ? ANY : LOWER;
  if (typeof h === 'string') {
    for (let i = 0; i < len; i++) if (t[h.charCodeAt(i) & 0xff]! < 0 || h.charCodeAt(i) > 0xff) return false;
  } else {
    for (let i = 0; i < len; i++) if (t[h[i]!]! < 0) return false;
  }
  return len > 0;
}

/** Raw id from validated hex text (isHex), or hex git wrote itself. */
export function parseHex(hex: HexOid | string): RawOid {
  return Buffer.from(hex, 'hex') as RawOid;
}

/** Raw id from hex ASCII bytes (`b[at, at+len)`, default all of `b`), without a string in between. */
export function rawFromHexBytes(b: Buffer, at = 0, len = b.length - at): RawOid {
  const out = Buffer.allocUnsafe(len >> 1);
  for (let i = 0; i < out.length; i++) {
    const hi = ANY[b[at + 2 * i]!]!, lo = ANY[b[at + 2 * i + 1]!]!;
    if (hi < 0 || lo < 0) return out.subarray(0, i) as RawOid; // as Buffer.from(…, 'hex') stops at the first non-digit
    out[i] = (hi << 4) | lo;
  }
  return out as RawOid;
}

/** Hex text for the wire or a file. */
export function toHex(oid: Buffer): HexOid {
  return oid.toString('hex') as HexOid;
}

/** Hex text of hex ASCII bytes (a ref's value as read). */
export function hexOfBytes(b: Buffer): HexOid {
  return b.toString('latin1') as HexOid;
}
