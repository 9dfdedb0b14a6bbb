/**
 * What a transport gives the LFS entry points: who is asking and whether
 * they may, through the same users, rules and repository look-up as git's
 * own requests. LFS sits below the transports and never calls them; they
 * hand it these callbacks.
 */

/** An LFS service as `authenticate`/`authorize` see it: download needs fetch rights, upload and locks push rights. */
export type LfsServiceName = 'lfs-download' | 'lfs-upload';

/** A refusal (the transports' Deny). */
export interface LfsDeny { status: number; message: string; headers?: Record<string, string>; outcome?: 'challenge' | 'login-failed' | 'dubious-ownership' | 'storage-outside-root' }

export type LfsAdmission =
  | { ok: true; dir: string; name: string }
  | { ok: false; deny: LfsDeny };

export interface LfsGate {
  /** the server's `authenticate` for this service (true when there is none); may set the user */
  authenticate(service: LfsServiceName): Promise<true | LfsDeny>;
  /** find the repository and ask `authorize` for this service; a missing one and one not allowed alike (404) */
  admit(service: LfsServiceName): Promise<LfsAdmission>;
  /** the user the request is known as (authenticate, a token, the SSH key) */
  user(): string | undefined;
  setUser(user: string | undefined): void;
  /** does the server let anonymous clients push (http.receivepack)? Otherwise an upload needs a user */
  anonymousPush: boolean;
  /** can a client sign in at all (is there an `authenticate`)? Without, an upload is refused with 403, not a credential prompt */
  signIn: boolean;
}
