/**
 * git's pack_name_hash() (name-hash version 1, pack-objects' default): a
 * number that sorts paths by their last non-blank characters, so that
 * `*.c` files sit together when pack-objects looks for delta bases. The
 * name-hash cache of a .bitmap holds the same values.
 */
export function packNameHash(name: Buffer | string): number {
  const b = typeof name === 'string' ? Buffer.from(name) : name;
  return foldName(0, b, 0, b.length);
}

/**
 * The hash continued over b[start…end): the hash is a left fold, so a
 * path's hash is its parent's continued over `/<name>` (a walk carries
 * numbers, not paths).
 */
export function foldName(hash: number, b: Buffer, start: number, end: number): number {
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    // git's isspace(): tab, line feed, carriage return, space
    if (c === 9 || c === 10 || c === 13 || c === 32) continue;
    hash = ((hash >>> 2) + ((c << 24) >>> 0)) >>> 0;
  }
  return hash;
}

const SLASH_HASH = 0x2f << 24;

/** The hash of `<parent>/<name>` (or of `<name>` under the root, whose path is empty). */
export function childNameHash(parentHash: number, parentIsRoot: boolean, b: Buffer, start: number, end: number): number {
  const h = parentIsRoot ? parentHash : (((parentHash >>> 2) + SLASH_HASH) >>> 0);
  return foldName(h, b, start, end);
}
