/**
 * Limits on what one request may cost the shared server. The defaults stop
 * abuse and never bother a real git client:
 *
 * - `maxRequestBytes`: bytes a client may send between two flush packets
 *   (a v2 command with its arguments, a v0 want list, one v0 negotiation
 *   round, a whole stateless HTTP request). git's http-backend caps a
 *   request at 10 MiB (http.maxRequestBuffer); so does gitwire, on every
 *   transport.
 * - `maxHaves`: `have` lines in one request or round. git's fetch-pack
 *   sends at most a few tens of thousands per request; 10 MiB of request
 *   holds about 200,000.
 * - `negotiationBudgetMs`: time one request's negotiation walks
 *   (ok_to_give_up) may take in all. Past it the server stops looking for
 *   "ready" and simply keeps answering the client's haves, which is always
 *   correct: the client goes on or says `done`.
 * - `sliceMs`: the longest stretch of sliced request work (parsing haves,
 *   negotiation walks, object-info) in one turn of the event loop; requests
 *   slicing at the same time split it (util/budget.ts). Other clients' requests
 *   wait about one slice per turn of the loop they need, so it is short: 2 ms
 *   costs a heavy request well under 1% in yields, and at 10 ms another
 *   client's p99 doubled under one abusive request (npm run bench --
 *   http-fairness).
 */
import { limitError, type GitwireError } from '../errors.js';

export interface Limits {
  maxRequestBytes: number;
  maxHaves: number;
  negotiationBudgetMs: number;
  sliceMs: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxRequestBytes: 10 * 1024 * 1024,
  maxHaves: 256 * 1024,
  negotiationBudgetMs: 10_000,
  sliceMs: 2,
});

export function resolveLimits(l?: Partial<Limits>): Limits {
  const out: Limits = { ...DEFAULT_LIMITS };
  if (l) for (const k of Object.keys(out) as Array<keyof Limits>) if (l[k] !== undefined) out[k] = l[k]!;
  return out;
}

export function tooManyHaves(limit: number): GitwireError {
  return limitError(`upload-pack: too many haves in one request (limit ${limit})`, limit);
}

export function requestTooLarge(limit: number): GitwireError {
  return limitError(`request was larger than our maximum size (${limit})`, limit);
}
