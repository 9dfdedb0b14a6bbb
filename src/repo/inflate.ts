/**
 * A reusable zlib inflater that writes straight into the caller's buffer.
 *
 * `zlib.inflateSync` builds and tears down a zlib stream (and its 32 KiB
 * window) per call and collects output in chunks it then concatenates.
 * git keeps one z_stream and inflates into the object's final buffer;
 * this does the same on Node's zlib handle: `reset()` between objects,
 * input fed in pieces, output into a preallocated destination.
 *
 * Node does not document the synchronous handle, so it is feature-checked
 * once; without it every call falls back to `inflateSync` (same results,
 * more allocation, and large objects are no longer streamed in bounded
 * memory).
 */
import zlib, { constants as zc, inflateSync } from 'node:zlib';
import { noteBytesMoved } from '../util/reclaim.js';

interface RawHandle {
  reset(): void;
  writeSync(flush: number, inBuf: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  close(): void;
  onerror: (message: string, errno: number) => void;
}

export interface InflateStep {
  /** bytes written to the destination */
  out: number;
  /** bytes of input consumed */
  used: number;
}

/** Whether Node's synchronous zlib handle is usable here (checked once). */
export const nativeHandle: boolean = (() => {
  try {
    const inf = zlib.createInflate() as unknown as { _handle?: RawHandle; _writeState?: Uint32Array };
    const ok = !!inf._handle && typeof inf._handle.writeSync === 'function' && typeof inf._handle.reset === 'function' && inf._writeState instanceof Uint32Array;
    (inf as unknown as { close(): void }).close();
    return ok;
  } catch {
    return false;
  }
})();

export class InflateError extends Error {}

export class Inflater {
  private readonly handle: RawHandle | undefined;
  private readonly state: Uint32Array | undefined;
  private error: string | undefined;
  /** calls made (for tests and profiling) */
  calls = 0;

  constructor() {
    if (!nativeHandle) return;
    const inf = zlib.createInflate() as unknown as { _handle: RawHandle; _writeState: Uint32Array };
    this.handle = inf._handle;
    this.state = inf._writeState;
    // errors come back synchronously through onerror; keep the handle alive
    this.handle.onerror = (message: string) => { this.error = message; };
  }

  get native(): boolean { return this.handle !== undefined; }

  /** Start a new zlib stream. */
  reset(): void {
    this.error = undefined;
    this.handle?.reset();
  }

  /**
   * Continue the current stream with `src[srcOff, srcEnd)`, writing into
   * `dst[dstOff, dstEnd)`. Stops when the input is used up, the output is
   * full or the stream ends. Throws InflateError on corrupt data.
   */
  step(src: Uint8Array, srcOff: number, srcEnd: number, dst: Uint8Array, dstOff: number, dstEnd: number): InflateStep {
    const out = this.stepOut(src, srcOff, srcEnd, dst, dstOff, dstEnd);
    return { out, used: this.used };
  }

  /** bytes of input the last `stepOut` consumed */
  used = 0;

  /** `step` without a result object (for loops that run once per pack entry): returns the bytes written, sets `used`. */
  stepOut(src: Uint8Array, srcOff: number, srcEnd: number, dst: Uint8Array, dstOff: number, dstEnd: number): number {
    const h = this.handle!;
    this.calls++;
    const inLen = srcEnd - srcOff, outLen = dstEnd - dstOff;
    h.writeSync(zc.Z_SYNC_FLUSH, src, srcOff, inLen, dst, dstOff, outLen);
    if (this.error !== undefined) {
      const e = this.error;
      this.reset();
      throw new InflateError(e);
    }
    const st = this.state!;
    this.used = inLen - st[1]!;
    return outLen - st[0]!;
  }

  close(): void {
    try { this.handle?.close(); } catch { /* closed */ }
  }
}

/** The fallback for one whole stream: inflate `src` with output capped near `expect` bytes. */
export function inflateWhole(src: Buffer, expect: number): Buffer {
  try {
    return inflateSync(src, { finishFlush: zc.Z_SYNC_FLUSH, chunkSize: Math.max(64, Math.min(expect + 1, 1 << 20)) });
  } catch (e) {
    throw new InflateError((e as Error).message);
  }
}

/** One inflater for synchronous reads (JavaScript never runs two of them at once). */
export const sharedInflater = new Inflater();

/**
 * Input for a cursor: a view of the bytes at `pos` (any non-zero length),
 * or undefined at the end of the data.
 */
export type Feed = (pos: number) => Buffer | undefined;

const EOF_PROBE = Buffer.from([0]);
const SPARE = Buffer.allocUnsafe(1);

/**
 * One zlib stream read in order: exact-size fills, header-only prefixes,
 * chunks for streaming. `used` is the compressed length consumed so far.
 */
export class InflateCursor {
  used = 0;
  ended = false;

  constructor(private readonly inf: Inflater, private readonly feed: Feed, private readonly start: number, private readonly what: () => string) {
    inf.reset();
  }

  private corrupt(why: string): InflateError { return new InflateError(`${why} (${this.what()})`); }

  /**
   * Write up to `n` bytes into dst[off…]; fewer only when the stream ends.
   * With `spare`, dst has one more byte of room past off+n: a longer stream
   * is caught and the end of the stream is seen without another call.
   */
  read(dst: Uint8Array, off: number, n: number, spare = false): number {
    let out = 0;
    const room = n + (spare ? 1 : 0);
    while (out < n && !this.ended) {
      const src = this.feed(this.start + this.used);
      if (!src) { this.probeEnd(); break; }
      const r = this.inf.step(src, 0, src.length, dst, off + out, off + room);
      out += r.out;
      this.used += r.used;
      if (out > n) throw this.corrupt('inflated data longer than expected');
      // zlib stopped with input and output room left: the stream ended
      if (r.used < src.length && out < room) this.ended = true;
      else if (r.out === 0 && r.used === 0) throw this.corrupt('inflate made no progress');
    }
    return out;
  }

  /** Fill exactly n bytes; the stream must hold at least that many. */
  fill(dst: Uint8Array, off: number, n: number, spare = false): void {
    const got = this.read(dst, off, n, spare);
    if (got !== n) throw this.corrupt(`inflated ${got} of ${n} bytes`);
  }

  /** The stream must end here (no more output, a valid trailer). */
  finish(): void {
    while (!this.ended) {
      const src = this.feed(this.start + this.used);
      if (!src) { this.probeEnd(); break; }
      const r = this.inf.step(src, 0, src.length, SPARE, 0, 1);
      if (r.out > 0) throw this.corrupt('inflated data longer than expected');
      this.used += r.used;
      if (r.used < src.length) this.ended = true;
      else if (r.used === 0) throw this.corrupt('inflate made no progress');
    }
  }

  /** At the end of the input: the stream must already be complete. */
  private probeEnd(): void {
    const r = this.inf.step(EOF_PROBE, 0, 1, SPARE, 0, 1);
    if (r.used !== 0 || r.out !== 0) throw this.corrupt('truncated zlib stream');
    this.ended = true;
  }
}

/**
 * The next `size` bytes of a cursor's stream, in chunks of at most
 * `chunkSize`. With `reuse`, the chunks are views of two buffers taken in
 * turn: each stays valid until two more have been taken, enough for a
 * caller that writes each one out synchronously, or that holds one back
 * to join a short tail to it (cat-file --batch). Otherwise each chunk is a
 * buffer of its own, for a caller that may keep it; their memory is
 * handed back as they go (util/reclaim.ts), since Node 24's V8 lets
 * ~100 MiB of dead 1 MiB chunks pile up before it collects them (Node 20:
 * ~35 MiB).
 */
export function* cursorChunks(c: InflateCursor, size: number, chunkSize: number, reuse: boolean): Generator<Buffer> {
  const pair: Buffer[] = [];
  for (let done = 0, i = 0; done < size; i ^= 1) {
    const n = Math.min(chunkSize, size - done);
    let b: Buffer;
    if (reuse) b = (pair[i] ??= Buffer.allocUnsafe(Math.min(chunkSize, size))).subarray(0, n);
    else { b = Buffer.allocUnsafe(n); noteBytesMoved(n); }
    c.fill(b, 0, n);
    done += n;
    yield b;
  }
}
