/**
 * Object ids: raw (20 or 32 bytes) inside, hex only at the edge. The one
 * place ids change form and hex is validated.
 */

/** Is `h` exactly `len` lower-case hex digits (git's get_oid_hex on a protocol line)? */
export function isHex(h: string, len: number): boolean {
  return h.length === len && /^[0-9a-f]+$/.test(h);
}

/** Raw id from hex the caller has validated (isHex) or read from git's own files. */
export function parseHex(hex: string): Buffer {
  return Buffer.from(hex, 'hex');
}

/** Hex for the wire or a file. */
export function toHex(oid: Buffer): string {
  return oid.toString('hex');
}
