/**
 * One reusable zlib deflate stream writing into the caller's buffer (the
 * counterpart of repo/inflate.ts's Inflater): reset between objects, fed
 * in pieces, so a big object is compressed as it is read and a small one
 * costs no allocation. Falls back to deflateSync over the whole input when
 * Node's synchronous handle is not there.
 */
import zlib, { constants as zc, deflateSync } from 'node:zlib';

interface RawHandle {
  reset(): void;
  writeSync(flush: number, inBuf: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  close(): void;
  onerror: (message: string, errno: number) => void;
}

export class Deflater {
  private readonly handle: RawHandle | undefined;
  private readonly state: Uint32Array | undefined;
  private error: string | undefined;
  /** fallback: input gathered until finish */
  private pending: Buffer[] = [];
  /** bytes of input the last step consumed, and of output it wrote */
  used = 0;
  out = 0;
  /** the stream ended (after a Z_FINISH step that left output room) */
  ended = false;

  constructor(readonly level: number) {
    try {
      const d = zlib.createDeflate({ level }) as unknown as { _handle?: RawHandle; _writeState?: Uint32Array };
      if (d._handle && typeof d._handle.writeSync === 'function' && d._writeState instanceof Uint32Array) {
        this.handle = d._handle;
        this.state = d._writeState;
        this.handle.onerror = (m: string) => { this.error = m; };
      }
    } catch { /* fallback below */ }
  }

  get native(): boolean { return this.handle !== undefined; }

  reset(): void {
    this.error = undefined;
    this.ended = false;
    this.pending = [];
    this.handle?.reset();
  }

  /**
   * Compress src[srcOff, srcEnd) into dst[dstOff, dstEnd); with `finish`,
   * end the stream once the input is used. Sets `used` and `out`; call
   * again while input is left or (finishing) until `ended`.
   */
  step(src: Uint8Array, srcOff: number, srcEnd: number, dst: Uint8Array, dstOff: number, dstEnd: number, finish: boolean): void {
    const inLen = srcEnd - srcOff, outLen = dstEnd - dstOff;
    if (!this.handle) { this.fallbackStep(src, srcOff, srcEnd, dst, dstOff, dstEnd, finish); return; }
    this.handle.writeSync(finish ? zc.Z_FINISH : zc.Z_NO_FLUSH, src, srcOff, inLen, dst, dstOff, outLen);
    if (this.error !== undefined) { const e = this.error; this.reset(); throw new Error(`deflate failed: ${e}`); }
    const st = this.state!;
    this.used = inLen - st[1]!;
    this.out = outLen - st[0]!;
    if (finish && this.used === inLen && st[0]! > 0) this.ended = true;
  }

  private fallbackOut?: Buffer;
  private fallbackAt = 0;
  private fallbackStep(src: Uint8Array, srcOff: number, srcEnd: number, dst: Uint8Array, dstOff: number, dstEnd: number, finish: boolean): void {
    if (srcEnd > srcOff) this.pending.push(Buffer.from(src.subarray(srcOff, srcEnd)));
    this.used = srcEnd - srcOff;
    this.out = 0;
    if (!finish) return;
    if (!this.fallbackOut) { this.fallbackOut = deflateSync(Buffer.concat(this.pending), { level: this.level }); this.fallbackAt = 0; this.pending = []; }
    const n = Math.min(dstEnd - dstOff, this.fallbackOut.length - this.fallbackAt);
    this.fallbackOut.copy(dst, dstOff, this.fallbackAt, this.fallbackAt + n);
    this.fallbackAt += n;
    this.out = n;
    if (this.fallbackAt === this.fallbackOut.length) { this.ended = true; this.fallbackOut = undefined; }
  }

  close(): void {
    try { this.handle?.close(); } catch { /* closed */ }
  }
}

/** git's pack.compression, defaulting to core.compression, then zlib's default (-1, level 6). */
export function packCompressionLevel(get: (key: string) => number | undefined): number {
  const valid = (n: number | undefined) => (n !== undefined && n >= -1 && n <= 9 ? n : undefined);
  return valid(get('pack.compression')) ?? valid(get('core.compression')) ?? zc.Z_DEFAULT_COMPRESSION;
}
