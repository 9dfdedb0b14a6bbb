/**
 * git's pack_name_hash() (name-hash version 1, pack-objects' default): a
 * number that sorts paths by their last non-blank characters, so that
 * `*.c` files sit together when pack-objects looks for delta bases. The
 * name-hash cache of a .bitmap holds the same values.
 */
export function packNameHash(name: Buffer | string): number {
  const b = typeof name === 'string' ? Buffer.from(name) : name;
  let hash = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    // git's isspace(): tab, line feed, carriage return, space
    if (c === 9 || c === 10 || c === 13 || c === 32) continue;
    hash = ((hash >>> 2) + ((c << 24) >>> 0)) >>> 0;
  }
  return hash;
}
