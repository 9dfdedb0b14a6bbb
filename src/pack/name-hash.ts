/**
 * git's pack_name_hash() (pack-objects.h, name-hash version 1, its
 * default): a number made of the last sixteen non-space bytes of a path,
 * the last counting most, so that objects at similar paths sort together
 * for delta search. The name-hash cache of a .bitmap holds the same values.
 * It is a left fold, byte by byte, so a path's hash continues its
 * directory's: a walk carries numbers, not paths.
 */

/** git's isspace(): tab, newline, carriage return and space only */
function space(c: number): boolean { return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; }

/** Continue `hash` over bytes [from, to) of `b`. */
export function nameHashFold(hash: number, b: Buffer, from = 0, to = b.length): number {
  for (let i = from; i < to; i++) {
    const c = b[i]!;
    if (space(c)) continue;
    hash = ((hash >>> 2) + (c << 24)) >>> 0;
  }
  return hash;
}

/** Continue `hash` over one byte. */
export function nameHashByte(hash: number, c: number): number {
  return space(c) ? hash : ((hash >>> 2) + (c << 24)) >>> 0;
}

/** The hash of `<parent>/<name>` (or of `<name>` under the root, whose path is empty), name being b[start…end). */
export function childNameHash(parentHash: number, parentIsRoot: boolean, b: Buffer, start: number, end: number): number {
  return nameHashFold(parentIsRoot ? parentHash : nameHashByte(parentHash, 0x2f), b, start, end);
}

/** pack_name_hash(name); 0 for no name. */
export function packNameHash(name: Buffer | string | undefined): number {
  if (name === undefined) return 0;
  return nameHashFold(0, typeof name === 'string' ? Buffer.from(name, 'utf8') : name);
}
