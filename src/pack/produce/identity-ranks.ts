/**
 * Ranks 0 to n-1: what a plan names when it wants every object of a pack
 * in pack order (a clone from a single-pack bitmap). One array is made and
 * shared, read-only, by every plan that needs such ranks, so a clone does
 * not fill (and the collector then free) a fresh 1.3 MB array for the
 * 329,000 objects of a pack, and the writer knows it for what it is
 * without reading it through.
 *
 * Nobody writes into ranks a plan holds (the layout copies them); typed
 * arrays cannot be frozen, so that is a rule, not a guard.
 */

/** the shared array: identity over its length (grown when a larger pack asks) */
let shared = new Uint32Array(0);

/** Ranks 0..n-1, a view of the shared array. */
export function identityRanks(n: number): Uint32Array {
  if (shared.length < n) {
    const a = new Uint32Array(Math.max(n, shared.length * 2));
    for (let i = 0; i < a.length; i++) a[i] = i;
    shared = a;
  }
  return shared.subarray(0, n);
}

/** Whether a[i] === i for every i: at once for a view of the shared array, else by reading it through. */
export function isIdentityRanks(a: Uint32Array): boolean {
  if (a.buffer === shared.buffer && a.byteOffset === 0) return true;
  for (let i = 0; i < a.length; i++) if (a[i] !== i) return false;
  return true;
}
