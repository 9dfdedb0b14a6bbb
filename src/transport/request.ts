/**
 * The part of a request every transport does the same way once it knows
 * the service and the path: find the repository under the root (or ask
 * `resolveRepository`), ask `authorize`, apply `confineStorage`. The
 * transport then says "no" in its own words (HTTP status, git:// ERR,
 * SSH's `fatal:` on stderr) and passes the repository to the service.
 */
import { confinedStorage, locateUnderRoot, resolveUnderRoot } from './paths.js';
import { dubiousOwnership } from '../repo/ownership.js';
import { wirePath } from '../errors.js';
import { envView } from '../util/env-view.js';
import type { Deny, RequestInfo, ServeHooks } from './http.js';
import type { LimitRefusal, RequestWeight } from './limits/index.js';

export type Admission =
  | { ok: true; dir: string }
  | { ok: false; outcome: 'rate-limited'; refusal: LimitRefusal }
  | { ok: false; outcome: 'not-found' }
  | { ok: false; outcome: 'not-exported' }
  | { ok: false; outcome: 'denied'; deny: Deny }
  | { ok: false; outcome: 'storage-outside-root'; reason: string }
  /** another user's repository (CVE-2022-24765): `message` for the client, `reason` (git's whole text) for the log */
  | { ok: false; outcome: 'dubious-ownership'; reason: string; message: string };

/** What a transport adds to the shared steps. */
export interface AdmitSteps {
  /** false: the path is not looked up at all (git://'s base-path rule); answered as not found */
  resolvable?: boolean;
  /** between finding the repository and the gate: git://'s `git-daemon-export-ok` */
  exported?: (dir: string) => boolean;
  /** who may: `authorize` unless replaced (HTTP push adds `http.receivepack`) */
  gate?: (info: RequestInfo, dir: string) => true | Deny | Promise<true | Deny>;
  /** per-client limits (`clientLimits`): how heavy the request may be (default `work`) */
  weight?: RequestWeight;
  /**
   * per-client limits: `release` is to be called once the request has ended
   * (the response or channel closed). Without it the request is counted
   * against the rate only, not against the client's requests in progress.
   */
  until?: (release: () => void) => void;
}

/** The request's repository directory (resolveRepository, else under the root), or undefined. */
export async function resolveRequest(opts: Pick<ServeHooks, 'root' | 'resolveRepository'>, info: RequestInfo): Promise<string | undefined> {
  if (opts.resolveRepository) return opts.resolveRepository(info);
  return opts.root ? resolveUnderRoot(opts.root, info.path) : undefined;
}

/**
 * What the client is told of a repository another user owns: the first
 * line of git's text, with the path as the client spelled it (the log has
 * the server's path and git's advice).
 */
export const dubiousOwnershipMessage = (path: string) => `detected dubious ownership in repository at '${wirePath(path)}'`;

/**
 * Resolve, check ownership, authorize and confine one request, on every
 * transport. Ownership as git daemon and http-backend check it
 * (enter_repo): fetch, push and LFS alike, before anything of the
 * repository is read; so a repository another user owns skips the gate
 * (HTTP push's reads `http.receivepack` from the repository's config) and
 * is put only to `authorize`, which keeps what a user who may not see the
 * repository learns the same (nothing of its owner).
 *
 * Per-client limits come first of all: a refused client costs no lookup.
 * The client is `info.user` (set by `authenticate`, or SSH's key) else
 * `info.remoteAddress` (which a transport sets only from a trusted proxy's
 * word).
 */
export async function admitRequest(opts: Omit<ServeHooks, 'authenticate'>, info: RequestInfo, steps: AdmitSteps = {}): Promise<Admission> {
  if (opts.clientLimits) {
    const v = opts.clientLimits.check(info, steps.weight);
    if (!v.ok) return { ok: false, outcome: 'rate-limited', refusal: v };
    if (steps.until) steps.until(v.release); else v.release();
  }
  let dir: string | undefined;
  // reached through a `.git` file: enter_repo checks that file's owner too (die_upon_dubious_ownership(gitfile, NULL, used_path))
  let gitFileAt: string | undefined;
  const find = async () => {
    if (steps.resolvable === false) dir = undefined;
    else if (opts.resolveRepository || !opts.root) dir = await resolveRequest(opts, info);
    else ({ dir, gitFileAt } = locateUnderRoot(opts.root, info.path) ?? {});
  };
  await find();
  if (!dir && opts.createOnPush && info.service === 'receive-pack' && steps.resolvable !== false) {
    const authorize = opts.authorize;
    const made = await opts.createOnPush(info, async (d) => (authorize ? authorize(info, d) : true));
    if (typeof made === 'object') return { ok: false, outcome: 'denied', deny: made };
    if (made !== undefined) await find();
  }
  if (!dir) return { ok: false, outcome: 'not-found' };
  if (steps.exported && !steps.exported(dir)) return { ok: false, outcome: 'not-exported' };
  const warnings: string[] = [];
  const owned = gitFileAt !== undefined ? { path: gitFileAt, gitFile: dir } : { path: dir };
  const dubious = dubiousOwnership(owned, opts.env ?? process.env, (m) => warnings.push(`warning: ${m}\n`));
  const gate = dubious ? opts.authorize : steps.gate ?? opts.authorize;
  if (gate) {
    const a = await gate(info, dir);
    if (a !== true) return { ok: false, outcome: 'denied', deny: a };
  }
  if (dubious) return { ok: false, outcome: 'dubious-ownership', reason: warnings.join('') + dubious, message: dubiousOwnershipMessage(info.path) };
  const reason = confinedStorage(opts, dir);
  if (reason) return { ok: false, outcome: 'storage-outside-root', reason };
  return { ok: true, dir };
}

/**
 * The service's environment: the server's, with the client's GIT_PROTOCOL
 * (and only the client's). A view of the server's (util/env-view.ts), not
 * a copy: what reads it sees the server's variables as they are then.
 */
export function serviceEnv(base: NodeJS.ProcessEnv | undefined, gitProtocol: string | undefined): NodeJS.ProcessEnv {
  return envView(base ?? process.env, { GIT_PROTOCOL: gitProtocol || undefined });
}
