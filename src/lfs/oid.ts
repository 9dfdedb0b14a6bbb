/**
 * What every LFS request names: an object id (SHA-256, 64 lowercase hex
 * digits, checked before it is used in any path or key) and a size.
 */

/** git-lfs's media type for the batch, verify and locks APIs */
export const LFS_MEDIA_TYPE = 'application/vnd.git-lfs+json';

const OID_RE = /^[0-9a-f]{64}$/;

/** Is `s` a SHA-256 object id as git-lfs writes it (64 lowercase hex digits)? */
export function isOid(s: unknown): s is string {
  return typeof s === 'string' && OID_RE.test(s);
}

/** Is `n` an object size: a whole number of bytes, at least 0, exactly representable? */
export function isSize(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
}

/** `aa/bb/<oid>`: where git-lfs itself keeps an object under `lfs/objects` */
export function oidPath(oid: string): string {
  return `${oid.slice(0, 2)}/${oid.slice(2, 4)}/${oid}`;
}
