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

/** The score of an upload-pack request body (v0/v1 or v2 pkt-lines, already inflated). */
export function requestCost(body: Buffer): number {
  let fetch = false, haves = false;
  for (let i = 0; i + 4 <= body.length;) {
    const len = parseInt(body.toString('latin1', i, i + 4), 16);
    if (!Number.isFinite(len)) break;
    if (len < 4) { i += 4; continue; }
    const line = body.toString('latin1', i + 4, Math.min(i + len, i + 4 + 16));
    if (line.startsWith('command=fetch') || line.startsWith('want ')) fetch = true;
    else if (line.startsWith('have ')) { haves = true; break; }
    i += len;
  }
  if (!fetch) return COST.advertisement;
  return haves ? COST.incremental : COST.clone;
}
