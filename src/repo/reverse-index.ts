/**
 * A pack's reverse index: its entries in pack order (by offset), each with
 * its index position — git's `.rev` file (gitformat-pack(5), written by
 * default since git 2.41), or the same order sorted in memory from the
 * index's offsets when there is no file (git's create_pack_revindex()).
 *
 * This is the light form a one-shot process needs: the positions, and
 * the offsets only when a sort made them anyway. Looking up the rank of
 * one offset is a binary search; nothing is done per entry that the
 * request does not ask for. PackFile builds the full form (offsets as
 * numbers, every .rev entry checked) on top of it when a caller walks the
 * whole pack.
 */
import { createHash } from 'node:crypto';
import { endianness } from 'node:os';

const RIDX = 0x52494458;
/** whether typed arrays read words little-endian (big-endian words must be swapped) */
export const LITTLE = endianness() === 'LE';

export class PackOrder {
  /** rank lookups made while the offsets are read through the index */
  private lookups = 0;

  /**
   * @param positions index position of each rank
   * @param offsets offset of each rank, when known (else read through `offsetOf`)
   * @param offsetOf the offset of an index position (the .idx)
   */
  constructor(readonly positions: Uint32Array, private offsets: Uint32Array | Float64Array | undefined, private readonly offsetOf: (pos: number) => number) {}

  get count(): number { return this.positions.length; }

  /** Offset of the entry at `rank`. */
  offsetAt(rank: number): number {
    return this.offsets ? this.offsets[rank]! : this.offsetOf(this.positions[rank]!);
  }

  /** Rank of the entry at `offset` (its place in pack order), or -1 when no entry starts there. */
  rankOf(offset: number): number {
    let lo = 0, hi = this.positions.length;
    // (a process that asks for many ranks, a server writing a large pack, gets the offsets
    // in an array once the lookups have cost about what reading them all costs)
    if (!this.offsets && ++this.lookups > (hi >>> 4) + 64) this.offsets = this.allOffsets();
    const offs = this.offsets;
    if (offs) {
      while (lo < hi) {
        const m = (lo + hi) >>> 1;
        if (offs[m]! < offset) lo = m + 1; else hi = m;
      }
      return lo < offs.length && offs[lo] === offset ? lo : -1;
    }
    const pos = this.positions, at = this.offsetOf;
    while (lo < hi) {
      const m = (lo + hi) >>> 1;
      if (at(pos[m]!) < offset) lo = m + 1; else hi = m;
    }
    return lo < pos.length && at(pos[lo]!) === offset ? lo : -1;
  }

  private allOffsets(): Float64Array {
    const n = this.positions.length;
    const out = new Float64Array(n);
    for (let r = 0; r < n; r++) out[r] = this.offsetOf(this.positions[r]!);
    return out;
  }
}

/**
 * The index positions in pack order from a `.rev` file's bytes: header
 * `RIDX`, version 1, hash id (1 SHA-1, 2 SHA-256), one 32-bit position
 * per entry, the pack's checksum, the file's own checksum. Undefined when
 * the header, the size, the pack checksum or the file's checksum is not
 * right (the caller sorts instead). The entries themselves are not
 * checked one by one: the file's checksum stands for them, as git trusts
 * the file (a lookup still only answers for an offset it finds exactly).
 */
export function revFilePositions(b: Buffer, n: number, hashLen: number, packChecksum: Buffer): Uint32Array | undefined {
  if (b.length !== 12 + 4 * n + 2 * hashLen || b.readUInt32BE(0) !== RIDX || b.readUInt32BE(4) !== 1 || b.readUInt32BE(8) !== (hashLen === 32 ? 2 : 1)) return undefined;
  const end = 12 + 4 * n;
  if (!b.subarray(end, end + hashLen).equals(packChecksum)) return undefined;
  const sum = createHash(hashLen === 32 ? 'sha256' : 'sha1').update(b.subarray(0, end + hashLen)).digest();
  if (!sum.equals(b.subarray(end + hashLen))) return undefined;
  return bigEndianWords(b, 12, n);
}

/** `n` big-endian 32-bit words at b[at…] as numbers (copied and swapped in native code). */
export function bigEndianWords(b: Buffer, at: number, n: number): Uint32Array {
  const out = new Uint32Array(n);
  const view = Buffer.from(out.buffer, out.byteOffset, n * 4);
  b.copy(view, 0, at, at + n * 4);
  if (LITTLE) view.swap32();
  return out;
}

/**
 * Sort entries by offset: `keys[i]` is the offset of index position i
 * (all below 2^32). Returns the offsets ascending and the position of
 * each. `maxMoves` bounds the insertion pass (entries moved per entry)
 * before two radix passes are used instead; negative goes to them at once.
 * `keys` is scratch: the radix passes sort into it.
 */
export function sortByOffset(keys: Uint32Array, maxMoves: number): { offsets: Uint32Array; positions: Uint32Array } {
  const n = keys.length;
  let max = 0;
  for (let i = 0; i < n; i++) { const o = keys[i]!; if (o > max) max = o; }
  // Entries follow each other in the pack, so with about as many buckets as
  // entries, one counting pass on the offsets' high bits puts nearly every
  // entry in place; an insertion pass fixes the few that share a bucket.
  let lb = 10;
  while ((1 << lb) < n && lb < 22) lb++;
  const shift = Math.max(0, 32 - Math.clz32(max) - lb);
  const nb = (max >>> shift) + 1;
  const count = new Uint32Array(nb + 1);
  for (let i = 0; i < n; i++) count[(keys[i]! >>> shift) + 1]!++;
  for (let b = 0; b < nb; b++) count[b + 1]! += count[b]!;
  const sk = new Uint32Array(n);
  const sp = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const k = keys[i]!;
    const d = count[k >>> shift]!++;
    sk[d] = k;
    sp[d] = i;
  }
  let moves = 0;
  const budget = maxMoves < 0 ? -1 : maxMoves * n + 1024;
  if (budget < 0) moves = 1;
  for (let i = 1; i < n && moves <= budget; i++) {
    const k = sk[i]!;
    if (sk[i - 1]! <= k) continue;
    const v = sp[i]!;
    let j = i - 1;
    while (j >= 0 && sk[j]! > k) { sk[j + 1] = sk[j]!; sp[j + 1] = sp[j]!; j--; moves++; }
    sk[j + 1] = k;
    sp[j + 1] = v;
  }
  if (moves <= budget) return { offsets: sk, positions: sp };
  // (offsets bunched far more than entries allow: two 16-bit LSD radix passes instead)
  let k1: Uint32Array = keys, v1: Uint32Array = new Uint32Array(n);
  for (let i = 0; i < n; i++) v1[i] = i;
  let k2: Uint32Array = sk, v2: Uint32Array = sp;
  const rc = new Uint32Array(65537);
  for (const sh of [0, 16]) {
    rc.fill(0);
    for (let i = 0; i < n; i++) rc[((k1[i]! >>> sh) & 0xffff) + 1]!++;
    for (let b = 0; b < 65536; b++) rc[b + 1]! += rc[b]!;
    for (let i = 0; i < n; i++) {
      const d = rc[(k1[i]! >>> sh) & 0xffff]!++;
      k2[d] = k1[i]!;
      v2[d] = v1[i]!;
    }
    [k1, k2] = [k2, k1];
    [v1, v2] = [v2, v1];
  }
  // (after two passes k1 is the first scratch array, not `keys`)
  return { offsets: k1, positions: v1 };
}
