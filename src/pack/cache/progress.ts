/** What a cache reader tells its client on band 2: sizes in git's words, lines through a small queue. */

/** Human sizes as git's strbuf_humanise_bytes. */
export function humanBytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(2)} MiB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toFixed(2)} KiB`;
  return `${n} byte${n === 1 ? '' : 's'}`;
}

/** A small async queue (progress lines for one reader). */
export class Queue implements AsyncIterable<Buffer> {
  private items: Buffer[] = [];
  private ended = false;
  private wake?: () => void;
  push(b: Buffer): void { if (this.ended) return; this.items.push(b); this.wake?.(); }
  end(): void { this.ended = true; this.wake?.(); }
  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    for (;;) {
      const b = this.items.shift();
      if (b) { yield b; continue; }
      if (this.ended) return;
      await new Promise<void>((r) => { this.wake = r; });
      this.wake = undefined;
    }
  }
}
