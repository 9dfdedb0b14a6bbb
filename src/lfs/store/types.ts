/**
 * Where LFS objects live. A store is asked per repository (`forRepository`)
 * and answers for that repository's objects only. A store either moves
 * the bytes itself (`read`/`write`, the local store) or hands out URLs
 * the client moves them to and from directly (`presign`, object storage:
 * gitwire never relays those bytes).
 */
import type { Readable } from 'node:stream';

/** Why a write did not store its object. */
export type WriteFailure =
  /** the bytes do not hash to the oid, or their count is not the expected size */
  | { kind: 'mismatch'; message: string }
  /** more bytes than the store's limit */
  | { kind: 'too-large'; limit: number }
  /** the store could not keep them (disk full, I/O error): the log has `cause` */
  | { kind: 'store-failed'; message: string; cause?: unknown };

export type WriteResult = { ok: true; size: number } | ({ ok: false } & WriteFailure);

/** A URL and the headers to send with it (a pre-signed request). */
export interface SignedRequest { href: string; header?: Record<string, string>; expiresIn: number }

export interface RepositoryStore {
  /** the object's size, or undefined when it is not stored */
  size(oid: string): Promise<number | undefined>;
  /**
   * The object's size when its bytes are known to hash to `oid`; undefined
   * when it is not stored or is damaged (then an upload may replace it). The
   * batch's upload answer and the verify action use it; without it, `size`.
   */
  verifiedSize?(oid: string): Promise<number | undefined>;
  /**
   * The object's bytes from `start` to `end` inclusive (all of it without
   * them), or undefined when it is not stored. Only stores that relay bytes.
   * Bytes that do not hash to `oid` are never given as the object: the
   * stream fails (GW_OBJECT_CORRUPT) before its end instead.
   */
  read?(oid: string, start?: number, end?: number): Promise<Readable | undefined>;
  /**
   * Stream `body` into the store. Nothing is visible under `oid` unless
   * every byte arrived, their SHA-256 is the oid and (when given) their
   * count is `expectedSize`; a failure leaves nothing behind.
   */
  write?(oid: string, body: AsyncIterable<Buffer>, opts: { expectedSize?: number; maxSize?: number }): Promise<WriteResult>;
  /** A URL the client downloads from or uploads to directly (stores that do not relay bytes). */
  presign?(op: 'download' | 'upload', oid: string, size: number, expiresIn: number): Promise<SignedRequest>;
}

export interface LfsStore {
  /** `gitDir`: the repository's git directory; `name`: its name under the root (rules' name) */
  forRepository(gitDir: string, name: string): RepositoryStore;
}
