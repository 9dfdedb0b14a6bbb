/**
 * Blocks of side-band-64k data frames laid out back to back, for bytes that
 * are read straight into place (the pack cache's readers): each frame is
 * its 4-byte length, the band byte and up to 65515 payload bytes. A reader
 * fills the payload areas (`views`) with one vectored read, the headers are
 * written into the 5 bytes reserved ahead of each payload, and the block
 * leaves in one write: no copy between the file and the socket, no
 * allocation per frame.
 *
 * Blocks are recycled through a small free list shared by every request,
 * so a reader does not fault in fresh memory for each block (fresh pages
 * cost far more than reused ones on a VM that hands freed pages back).
 */
import { Band, LARGE_PACKET_MAX, SIDEBAND_64K_MAX, putHeader } from './codec.js';

/**
 * frames per block: 32 x 65520 bytes, a little under 2 MiB per read and
 * write. A whole pack sent as it is costs the server less the fewer the
 * blocks: per block a thread-pool read (a handoff each way), a write, a
 * response chunk and their callbacks. With 8 (512 KiB) an HTTP clone of a
 * 126 MB pack took 180-210 ms of serve's CPU, with 32 140-155 (alternating
 * runs, load 6-8; 10 clones at once 180 -> 136 per clone). A request holds
 * at most two blocks (one read ahead while the other is written).
 */
export const FRAMES_PER_BLOCK = 32;
/**
 * frames per block once BIG_BUDGET bytes of big blocks are out (8: 512 KiB,
 * what every block was before): a hundred clones at once hold 100 MiB of
 * blocks, not 400.
 */
export const FRAMES_PER_SMALL_BLOCK = 8;
/** bytes of big blocks out at once, every request together (16 clones' worth) */
const BIG_BUDGET = 64 * 1024 * 1024;
/** free blocks kept for reuse, of each size (16 + 4 MiB) */
const FREE_MAX = 8;
const freeBig: FrameBlock[] = [];
const freeSmall: FrameBlock[] = [];
let bigOut = 0;

export class FrameBlock {
  readonly buf: Buffer;
  /** the payload areas, the first one whole (no byte carried in) */
  private readonly whole: Buffer[];
  /** the same, the first one a byte shorter (a byte carried in sits ahead of it) */
  private readonly carried: Buffer[];
  /** taken and not given back yet */
  private out = false;

  private constructor(readonly frames: number) {
    this.buf = Buffer.allocUnsafe(frames * LARGE_PACKET_MAX);
    this.whole = [];
    for (let i = 0; i < frames; i++) this.whole.push(this.buf.subarray(i * LARGE_PACKET_MAX + 5, (i + 1) * LARGE_PACKET_MAX));
    this.carried = [this.buf.subarray(6, LARGE_PACKET_MAX), ...this.whole.slice(1)];
  }

  /** payload bytes this block holds */
  get capacity(): number { return this.frames * SIDEBAND_64K_MAX; }

  /** bytes of big blocks out now (for tests and metrics) */
  static get bigBytesOut(): number { return bigOut; }

  /** A big block while the budget allows, else a small one. */
  static take(): FrameBlock {
    const bytes = FRAMES_PER_BLOCK * LARGE_PACKET_MAX;
    let b: FrameBlock;
    if (bigOut + bytes <= BIG_BUDGET) {
      bigOut += bytes;
      b = freeBig.pop() ?? new FrameBlock(FRAMES_PER_BLOCK);
    } else b = freeSmall.pop() ?? new FrameBlock(FRAMES_PER_SMALL_BLOCK);
    b.out = true;
    return b;
  }

  /** Back to the free list (the caller no longer reads or writes it); a second give is nothing. */
  give(): void {
    if (!this.out) return;
    this.out = false;
    if (this.frames === FRAMES_PER_BLOCK) {
      bigOut -= this.buf.length;
      if (freeBig.length < FREE_MAX) freeBig.push(this);
    } else if (freeSmall.length < FREE_MAX) freeSmall.push(this);
  }

  /**
   * The areas to read into: all payload areas, or, when `carry` is a byte
   * (0-255), that byte placed first and the areas after it.
   */
  views(carry: number): Buffer[] {
    if (carry < 0) return this.whole;
    this.buf[5] = carry;
    return this.carried;
  }

  /** The payload byte at `i` (0-based over the block's payload areas). */
  payloadByte(i: number): number {
    return this.buf[Math.floor(i / SIDEBAND_64K_MAX) * LARGE_PACKET_MAX + 5 + (i % SIDEBAND_64K_MAX)]!;
  }

  /**
   * Write the headers of band-`band` frames holding the first `payload`
   * bytes of the payload areas; returns the length of the framed bytes
   * (buf[0..length) is ready to send) and the frame count.
   */
  frame(payload: number, band: Band = Band.Data): { length: number; frames: number } {
    const full = Math.floor(payload / SIDEBAND_64K_MAX);
    const rest = payload - full * SIDEBAND_64K_MAX;
    for (let i = 0; i < full; i++) {
      putHeader(this.buf, i * LARGE_PACKET_MAX, LARGE_PACKET_MAX);
      this.buf[i * LARGE_PACKET_MAX + 4] = band;
    }
    if (rest === 0) return { length: full * LARGE_PACKET_MAX, frames: full };
    putHeader(this.buf, full * LARGE_PACKET_MAX, rest + 5);
    this.buf[full * LARGE_PACKET_MAX + 4] = band;
    return { length: full * LARGE_PACKET_MAX + rest + 5, frames: full + 1 };
  }
}
