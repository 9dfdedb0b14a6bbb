/**
 * v2 `bundle-uri`: the bundle list (gitprotocol-v2, Documentation/config/bundle.adoc).
 *
 * - `bundle.*` configuration the operator wrote is sent as key=value lines,
 *   as git's upload-pack does; when there is any, it is the whole list.
 * - Otherwise the list of the bundle gitwire made itself (bundle/), when
 *   the server offers bundles (`serve --bundles`), and only to a request
 *   that sees what an anonymous fetch sees: a request with a ref filter
 *   (refFilter, --auth-rules) or in a namespace gets an empty list, since
 *   the bundle holds the anonymous view's refs.
 */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import type { Repository } from '../../repo/repository.js';
import type { UploadPackSession } from '../session.js';
import { commandArgs } from './args.js';

/** What a server offers a request by way of bundles (bundle/service.ts makes one per request). */
export interface BundleOffer {
  /** the list's key=value lines for `repo` (empty: no bundle) */
  list(repo: Repository): string[] | Promise<string[]>;
  /**
   * A fetch about to be answered: `taken` when a have is a tip of the
   * offered bundle (the client unbundled it and fetches what is newer),
   * `not-taken` for a clone (no haves) while a bundle was on offer,
   * undefined otherwise.
   */
  started?(repo: Repository, haves: readonly Buffer[]): 'taken' | 'not-taken' | undefined;
}

/** Whether the request sees the anonymous view the bundle was made of. */
export function seesAnonymousView(s: UploadPackSession): boolean {
  return s.opts.refFilter === undefined && s.repo.namespace === '';
}

export async function bundleUri(s: UploadPackSession, r: PktReader): Promise<void> {
  for await (const arg of commandArgs(r, 'bundle-uri')) {
    throw new GitwireError('GW_PROTOCOL', `bundle-uri: unexpected argument: '${arg}'`);
  }
  const w = s.writer;
  let configured = false;
  for (const e of s.repo.config.each()) {
    if (!e.key.startsWith('bundle.')) continue;
    if (e.value) { w.data(`${e.key}=${e.value}`); configured = true; }
  }
  const offer = s.opts.bundleOffer;
  if (!configured && offer && seesAnonymousView(s)) {
    for (const line of await offer.list(s.repo)) w.data(line);
  }
  w.flush();
}
