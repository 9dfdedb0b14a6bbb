/**
 * The part of a request every transport does the same way once it knows
 * the service and the path: find the repository under the root (or ask
 * `resolveRepository`), ask `authorize`, apply `confineStorage`. The
 * transport then says "no" in its own words (HTTP status, git:// ERR,
 * SSH's `fatal:` on stderr) and passes the repository to the service.
 */
import { confinedStorage, resolveUnderRoot } from './paths.js';
import type { Deny, RequestInfo, ServeHooks } from './http.js';

export type Admission =
  | { ok: true; dir: string }
  | { ok: false; outcome: 'not-found' }
  | { ok: false; outcome: 'denied'; deny: Deny }
  | { ok: false; outcome: 'storage-outside-root'; reason: string };

/** Resolve, authorize and confine one request. */
export async function admitRequest(opts: Omit<ServeHooks, 'authenticate'>, info: RequestInfo): Promise<Admission> {
  const dir = opts.resolveRepository ? await opts.resolveRepository(info) : opts.root ? resolveUnderRoot(opts.root, info.path) : undefined;
  if (!dir) return { ok: false, outcome: 'not-found' };
  if (opts.authorize) {
    const a = await opts.authorize(info, dir);
    if (a !== true) return { ok: false, outcome: 'denied', deny: a };
  }
  const reason = confinedStorage(opts, dir);
  if (reason) return { ok: false, outcome: 'storage-outside-root', reason };
  return { ok: true, dir };
}

/** The service's environment: the server's, with the client's GIT_PROTOCOL (and only the client's). */
export function serviceEnv(base: NodeJS.ProcessEnv | undefined, gitProtocol: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...(base ?? process.env) };
  delete env.GIT_PROTOCOL;
  if (gitProtocol) env.GIT_PROTOCOL = gitProtocol;
  return env;
}
