/**
 * A byte source over a file descriptor that never reads past what the
 * conversation asked for: pkt-lines are read one at a time (length, then
 * payload), raw bytes exactly. So once the commands and the pack header are
 * read, the descriptor itself can be handed to `git index-pack` as its
 * stdin, as git's receive-pack does — the pack never passes through this
 * process. For one conversation per process (the stdio CLI): reads block.
 */
import { readSync } from 'node:fs';

const sleeper = new Int32Array(new SharedArrayBuffer(4));

export class FdPktSource implements AsyncIterable<Buffer> {
  /** true once the descriptor reached its end */
  ended = false;
  constructor(readonly fd: number) {}

  /** Read exactly `n` bytes, fewer only at the end of input. */
  readExact(n: number): Buffer;
  /** Read exactly `n` bytes into out[at..], fewer only at the end of input; the count read. */
  readExact(n: number, out: Buffer, at: number): number;
  readExact(n: number, into?: Buffer, at = 0): Buffer | number {
    const out = into ?? Buffer.allocUnsafe(n);
    let got = 0;
    // (a header read ahead is never left when the conversation reads raw bytes, but it would come first)
    const a = this.ahead;
    if (a && !into) {
      this.ahead = undefined;
      got = Math.min(a.length, n);
      a.copy(out, at, 0, got);
      if (got < a.length) this.ahead = a.subarray(got);
    }
    while (got < n) {
      let r: number;
      try {
        r = readSync(this.fd, out, at + got, n - got, null);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') { Atomics.wait(sleeper, 0, 0, 1); continue; }
        if (code === 'EOF') r = 0;
        else { this.ended = true; break; }
      }
      if (r === 0) { this.ended = true; break; }
      got += r;
    }
    if (into) return got;
    return got === n ? out : out.subarray(0, got);
  }

  /** a packet header read with the payload before it */
  private ahead: Buffer | undefined;

  /**
   * One pkt-line per chunk (header and payload); raw bytes if the header is
   * not one. A data packet's payload is read together with the header of
   * the packet after it (one read(2) per packet, where git makes two): in a
   * push, a data packet is always followed by another packet (the commands,
   * shallow lines and push options each end with a flush), so this never
   * waits for bytes the client is not sending, and never reads into the
   * pack, which only follows a flush.
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      let h: Buffer;
      if (this.ahead) { h = this.ahead; this.ahead = undefined; } else h = this.readExact(4);
      if (h.length === 0) return;
      if (h.length < 4) { yield h; return; }
      const len = hex4(h);
      if (len < 4) { yield h; continue; }
      const whole = Buffer.allocUnsafe(len + 4);
      h.copy(whole, 0, 0, 4);
      const rest = this.readExact(len, whole, 4);
      if (rest < len - 4) { yield whole.subarray(0, 4 + rest); return; }
      if (rest > len - 4) this.ahead = whole.subarray(len, 4 + rest);
      yield whole.subarray(0, len);
    }
  }
}

/** A pkt-line header's length: four hex digits (either case), -1 when they are not. */
function hex4(h: Buffer): number {
  let v = 0;
  for (let i = 0; i < 4; i++) {
    const c = h[i]!;
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}
