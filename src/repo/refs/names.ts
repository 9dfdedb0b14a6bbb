/** Ref names a backend accepts, and the hex ids it stores. */
import { checkRefnameFormat } from '../refname.js';

/**
 * Names a loose ref may have: git's check_refname_format for `refs/…`,
 * root-ref syntax (`HEAD`, `FETCH_HEAD`, …) for the rest. Everything that
 * reaches the filesystem passes through here first.
 */
export function isLooseRefName(name: string): boolean {
  if (name.startsWith('refs/')) return checkRefnameFormat(name);
  return /^[A-Z][A-Z0-9_-]*$/.test(name) && (name === 'HEAD' || name.endsWith('_HEAD'));
}

function isHexByte(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102);
}

export function validHex(b: Buffer, len: number): boolean {
  if (b.length !== len) return false;
  for (let i = 0; i < len; i++) if (!isHexByte(b[i]!)) return false;
  return true;
}

/** A name loose-ref iteration accepts: git's check_refname_format with one level allowed. */
export function isValidRefName(name: string): boolean {
  return checkRefnameFormat(name, { allowOnelevel: true });
}
