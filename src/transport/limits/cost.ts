/**
 * What a response cost, as a score in the `Gitwire-Cost` header, so that a
 * CDN or reverse proxy in front can rate-limit on the sum per client
 * (nginx's `$upstream_http_gitwire_cost`, a CDN's response-header rules).
 *
 * The header leaves before the work is done (the answer is streamed), so it
 * carries a score taken from the request, not a measurement:
 *
 * | request | score |
 * |---|---:|
 * | ref advertisement (`info/refs`), `ls-refs`, `object-info` | 1 |
 * | fetch with `have` lines (an incremental fetch) | 4 |
 * | fetch without `have` lines (a clone, shallow or not) | 10 |
 * | refused before any work (429) | 0 |
 *
 * The scores are orders of magnitude, not measurements: what a request
 * asks for is known when the header leaves, what it cost is not (and a
 * pack cache hit costs a fraction of a miss).
 */

export const COST_HEADER = 'Gitwire-Cost';

export const COST = { advertisement: 1, incremental: 4, clone: 10, refused: 0 } as const;

/** `command=fetch`, the longest start a packet is told by */
const HEAD_MAX = 13;
const FETCH = Buffer.from('command=fetch');
const WANT = Buffer.from('want ');
const HAVE = Buffer.from('have ');

/** a byte's value as a hex digit, -1 for any other byte */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * The score of an upload-pack request body (v0/v1 or v2 pkt-lines,
 * already inflated), taken as the body arrives: `feed` each chunk, read
 * `cost` at the end. Each packet's first bytes are looked at, the rest
 * skipped, so a chunk costs a step per packet and no copy; the reading
 * stops at the first `have` (the answer is known then) or at bytes that
 * are no pkt-line. A 3 MB body read whole as strings held the event loop
 * 75-130 ms.
 */
export class CostScan {
  private fetch = false;
  private haves = false;
  private stopped = false;
  /** the length header read so far (value, digits) */
  private len = 0;
  private digits = 0;
  /** the current packet's payload bytes not yet consumed, and its first bytes */
  private left = 0;
  private readonly head = Buffer.alloc(HEAD_MAX);
  private headN = 0;
  private headWant = 0;

  feed(b: Buffer): void {
    let i = 0;
    while (i < b.length && !this.stopped) {
      if (this.left === 0) {
        // the 4 hex digits of a length
        const d = hexDigit(b[i++]!);
        if (d < 0) { this.stopped = true; return; }
        this.len = this.len * 16 + d;
        if (++this.digits < 4) continue;
        const len = this.len;
        this.len = 0; this.digits = 0;
        // flush, delim, response-end: no payload
        if (len < 4) continue;
        this.left = len - 4;
        this.headN = 0;
        this.headWant = Math.min(this.left, HEAD_MAX);
        if (this.left === 0) continue;
      }
      if (this.headN < this.headWant) {
        const n = Math.min(this.headWant - this.headN, b.length - i);
        b.copy(this.head, this.headN, i, i + n);
        this.headN += n; this.left -= n; i += n;
        if (this.headN < this.headWant) return;
        this.classify();
        continue;
      }
      const n = Math.min(this.left, b.length - i);
      this.left -= n; i += n;
    }
  }

  private classify(): void {
    if (this.starts(FETCH) || this.starts(WANT)) this.fetch = true;
    else if (this.starts(HAVE)) { this.haves = true; this.stopped = true; }
  }

  private starts(p: Buffer): boolean {
    if (this.headN < p.length) return false;
    for (let k = 0; k < p.length; k++) if (this.head[k] !== p[k]) return false;
    return true;
  }

  get cost(): number {
    if (!this.fetch) return COST.advertisement;
    return this.haves ? COST.incremental : COST.clone;
  }
}

/** The score of a whole upload-pack request body (see CostScan). */
export function requestCost(body: Buffer): number {
  const s = new CostScan();
  s.feed(body);
  return s.cost;
}
