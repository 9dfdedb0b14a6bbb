import { createHash, type Hash } from 'node:crypto';

/** Hashes all but the last `len` bytes and compares them with those: a pack's trailer check. */
export class TrailerCheck {
  private readonly h: Hash;
  private tail = Buffer.alloc(0);
  private readonly len: number;
  constructor(format: 'sha1' | 'sha256') {
    this.h = createHash(format === 'sha256' ? 'sha256' : 'sha1');
    this.len = format === 'sha256' ? 32 : 20;
  }
  update(chunk: Buffer): void {
    const L = this.len;
    const all = this.tail.length + chunk.length;
    if (all <= L) { this.tail = Buffer.concat([this.tail, chunk]); return; }
    const feed = all - L;
    if (feed <= this.tail.length) {
      this.h.update(this.tail.subarray(0, feed));
      this.tail = Buffer.concat([this.tail.subarray(feed), chunk]);
    } else {
      if (this.tail.length) this.h.update(this.tail);
      this.h.update(chunk.subarray(0, feed - this.tail.length));
      this.tail = Buffer.from(chunk.subarray(feed - this.tail.length));
    }
  }
  /** the last bytes fed: the trailer, once the pack is complete */
  get trailer(): Buffer { return this.tail; }
  /** true when what was fed is a pack whose trailer matches, and matches `recorded` if given (consumes the hash) */
  ok(recorded?: Buffer): boolean {
    return this.tail.length === this.len && this.h.digest().equals(this.tail) && (!recorded || recorded.equals(this.tail));
  }
}
