/**
 * A multi-pack index's pseudo-pack order: the order of a midx bitmap's
 * bits. Entry i of the midx reverse index (the `RIDX` chunk, or for midx
 * files written before it, `multi-pack-index-<checksum>.rev`) is the midx
 * position of the object at bit i. Objects are laid out pack by pack
 * (preferred pack first), each pack's in pack order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MultiPackIndex } from '../../repo/midx.js';
import { BitmapCorrupt } from './corrupt.js';

const MISSING = 'multi-pack bitmap is missing required reverse index';

/**
 * The reverse index (bit → midx position), checked to be a permutation.
 * @throws BitmapCorrupt (git's warning) when there is none or it is damaged
 */
export function midxReverseIndex(midx: MultiPackIndex, packDir: string): Uint32Array {
  const n = midx.count;
  const hl = midx.hashLen;
  const out = new Uint32Array(n);
  const at = midx.chunks.get('RIDX');
  if (at !== undefined) {
    if (at + n * 4 > midx.buf.length - hl) throw new BitmapCorrupt(MISSING, 'warning');
    const b = midx.buf.slice(at, n * 4);
    for (let i = 0; i < n; i++) out[i] = b.readUInt32BE(i * 4);
  } else {
    let b: Buffer;
    try { b = readFileSync(join(packDir, `multi-pack-index-${midx.checksum().toString('hex')}.rev`)); } catch { throw new BitmapCorrupt(MISSING, 'warning'); }
    if (b.length !== 12 + 4 * n + 2 * hl || b.readUInt32BE(0) !== 0x52494458 || b.readUInt32BE(4) !== 1 || b.readUInt32BE(8) !== (hl === 32 ? 2 : 1)) throw new BitmapCorrupt(MISSING, 'warning');
    if (!b.subarray(12 + 4 * n, 12 + 4 * n + hl).equals(midx.checksum())) throw new BitmapCorrupt(MISSING, 'warning');
    for (let i = 0; i < n; i++) out[i] = b.readUInt32BE(12 + i * 4);
  }
  const seen = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const m = out[i]!;
    if (m >= n || seen[m]) throw new BitmapCorrupt(MISSING, 'warning');
    seen[m] = 1;
  }
  return out;
}
