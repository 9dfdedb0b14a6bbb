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
  readExact(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    let got = 0;
    while (got < n) {
      let r: number;
      try {
        r = readSync(this.fd, out, got, n - got, null);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') { Atomics.wait(sleeper, 0, 0, 1); continue; }
        if (code === 'EOF') r = 0;
        else { this.ended = true; break; }
      }
      if (r === 0) { this.ended = true; break; }
      got += r;
    }
    return got === n ? out : out.subarray(0, got);
  }

  /** One pkt-line per chunk (header and payload); raw bytes if the header is not one. */
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const h = this.readExact(4);
      if (h.length === 0) return;
      if (h.length < 4) { yield h; return; }
      const len = parseInt(h.toString('latin1'), 16);
      if (!/^[0-9a-fA-F]{4}$/.test(h.toString('latin1')) || len < 4) { yield h; continue; }
      const body = this.readExact(len - 4);
      yield body.length ? Buffer.concat([h, body]) : h;
      if (body.length < len - 4) return;
    }
  }
}
