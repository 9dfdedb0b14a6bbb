/**
 * LFS for one server: the store, the limits, the token signer, and the
 * batch decision shared by HTTP (`http.ts`) and SSH (`ssh.ts`). What a
 * batch answers for each object is decided here once; each transport only
 * writes it in its own syntax.
 */
import { LocalStore } from './store/local.js';
import type { LfsStore, RepositoryStore } from './store/types.js';
import { TokenSigner, type LfsOperation } from './token.js';
import { LockStore } from './locks.js';
import { isOid, isSize } from './oid.js';
import { join } from 'node:path';
import { commonDirOf } from '../repo/discover.js';

export interface LfsOptions {
  /** where objects live (default: each repository's own `lfs/objects`) */
  store?: LfsStore;
  /** the largest object an upload may be (bytes; default: no limit) */
  maxObjectSize?: number;
  /** objects one batch request may name (default 10,000) */
  maxBatchObjects?: number;
  /** seconds the tokens in batch actions and from git-lfs-authenticate live (default 900) */
  tokenTtl?: number;
  /** the HMAC key tokens are signed with (default: random, made at start; it never leaves the process) */
  tokenKey?: Buffer;
  /** the HTTP base URL git-lfs-authenticate sends clients to (`http://host:port`); without it SSH clients use git-lfs-transfer only */
  publicUrl?: string;
  /** serve `git-lfs-transfer` over SSH (default true; a store that does not relay bytes never does) */
  sshTransfer?: boolean;
}

export const DEFAULT_MAX_BATCH_OBJECTS = 10_000;
export const DEFAULT_TOKEN_TTL = 900;
/** the largest JSON request body (batch, verify, locks) */
export const MAX_JSON_BYTES = 4 * 1024 * 1024;

/** One object of a batch request, as the client named it. */
export interface BatchObject { oid: unknown; size: unknown }

/** What the server says about one object. */
export type ObjectAnswer =
  | { oid: string; size: number; kind: 'error'; code: number; message: string }
  /** nothing to do: an upload of an object the store has */
  | { oid: string; size: number; kind: 'noop' }
  | { oid: string; size: number; kind: 'transfer' }
  | { oid: string; size: number; kind: 'presigned'; href: string; header?: Record<string, string>; expiresIn: number; verify: boolean };

/** how many store look-ups one batch has in flight */
const LOOKUPS_AT_ONCE = 32;

export class LfsService {
  readonly store: LfsStore;
  readonly signer: TokenSigner;
  readonly maxBatchObjects: number;
  readonly tokenTtl: number;
  /** where git-lfs-authenticate sends clients (options.publicUrl, else set by startServer to its HTTP listener) */
  publicUrl: string | undefined;
  constructor(readonly options: LfsOptions = {}) {
    this.publicUrl = options.publicUrl?.replace(/\/+$/, '');
    this.store = options.store ?? new LocalStore();
    this.signer = new TokenSigner(options.tokenKey);
    this.maxBatchObjects = options.maxBatchObjects ?? DEFAULT_MAX_BATCH_OBJECTS;
    this.tokenTtl = options.tokenTtl ?? DEFAULT_TOKEN_TTL;
  }

  repository(gitDir: string, name: string): RepositoryStore { return this.store.forRepository(gitDir, name); }

  locks(gitDir: string): LockStore { return new LockStore(join(commonDirOf(gitDir), 'lfs')); }

  /** The size of a stored object whose bytes are known to hash to its oid (the store's check when it has one). */
  storedGood(store: RepositoryStore, oid: string): Promise<number | undefined> {
    return store.verifiedSize ? store.verifiedSize(oid) : store.size(oid);
  }

  /** Does this server move bytes itself for this store (HTTP PUT/GET, git-lfs-transfer)? */
  relays(store: RepositoryStore): boolean { return !!store.read && !!store.write; }

  /** The answer for each object of a batch, in order (look-ups a few at a time). */
  async batch(store: RepositoryStore, operation: LfsOperation, objects: readonly BatchObject[]): Promise<ObjectAnswer[]> {
    const out: ObjectAnswer[] = new Array<ObjectAnswer>(objects.length);
    let next = 0;
    const worker = async () => {
      for (;;) {
        const i = next++;
        if (i >= objects.length) return;
        out[i] = await this.one(store, operation, objects[i]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(LOOKUPS_AT_ONCE, objects.length) }, worker));
    return out;
  }

  private async one(store: RepositoryStore, operation: LfsOperation, o: BatchObject): Promise<ObjectAnswer> {
    // echoed as given when it is text; anything else (an object, an array: String() may throw on those) by its type
    const v = o?.oid;
    const oid = typeof v === 'string' ? v : v === null || typeof v !== 'object' ? String(v) : Array.isArray(v) ? 'array' : 'object';
    const size = isSize(o?.size) ? o.size : 0;
    if (!isOid(o?.oid)) return { oid, size, kind: 'error', code: 422, message: 'Invalid object ID: expected 64 lowercase hexadecimal digits (SHA-256)' };
    if (!isSize(o?.size)) return { oid, size, kind: 'error', code: 422, message: 'Invalid object size' };
    const max = this.options.maxObjectSize;
    let have: number | undefined;
    // an upload is skipped only for an object known good (a damaged one must not block its repair);
    // a download's bytes are checked as they are sent (store.read)
    const lookup = operation === 'upload' ? this.storedGood(store, oid) : store.size(oid);
    try { have = await lookup; } catch { return { oid, size, kind: 'error', code: 500, message: 'The object store could not be read' }; }
    if (operation === 'download') {
      if (have === undefined) return { oid, size, kind: 'error', code: 404, message: 'Object does not exist' };
      if (!this.relays(store) && store.presign) return this.presigned(store, 'download', oid, have);
      return { oid, size: have, kind: 'transfer' };
    }
    if (max !== undefined && size > max) return { oid, size, kind: 'error', code: 422, message: `Object size ${size} exceeds the maximum of ${max} bytes` };
    if (have === size) return { oid, size, kind: 'noop' };
    if (!this.relays(store) && store.presign) return this.presigned(store, 'upload', oid, size);
    return { oid, size, kind: 'transfer' };
  }

  private async presigned(store: RepositoryStore, op: LfsOperation, oid: string, size: number): Promise<ObjectAnswer> {
    try {
      const s = await store.presign!(op, oid, size, this.tokenTtl);
      return { oid, size, kind: 'presigned', href: s.href, header: s.header, expiresIn: s.expiresIn, verify: op === 'upload' };
    } catch {
      return { oid, size, kind: 'error', code: 500, message: 'The object store could not sign a request' };
    }
  }
}
