/**
 * A ref transaction as every backend takes it (git's ref_transaction):
 * edits as values, each with the old value it expects, prepared (every
 * lock taken, every old value verified; any failure rolls back) and then
 * committed. The files backend and reftable implement `RefUpdate`.
 */
import { GitwireError } from '../../errors.js';
import type { Reflogs } from '../reflog.js';

export type Expected =
  | { kind: 'any' }
  | { kind: 'must-not-exist' }
  | { kind: 'must-exist-and-match'; oid: Buffer };

export type Change = { kind: 'update'; new: Buffer } | { kind: 'delete' };

export interface RefEdit {
  /** full ref name (namespace included) */
  name: string;
  change: Change;
  expected: Expected;
  /** reflog message */
  message: string;
}

/** git's enum ref_transaction_error */
export type TxErrorKind = 'generic' | 'name-conflict' | 'create-exists' | 'nonexistent-ref' | 'incorrect-old-value' | 'invalid-new-value';

/** ref_transaction_error_msg() */
export function txErrorReason(k: TxErrorKind): string {
  switch (k) {
    case 'name-conflict': return 'refname conflict';
    case 'create-exists': return 'reference already exists';
    case 'nonexistent-ref': return 'reference does not exist';
    case 'incorrect-old-value': return 'incorrect old value provided';
    case 'invalid-new-value': return 'invalid new value provided';
    default: return 'unknown failure';
  }
}

export class TxError extends GitwireError {
  constructor(readonly kind: TxErrorKind, message: string) {
    super('GW_REF_UPDATE', message);
  }
}

export interface TransactionOptions {
  allowFailure?: boolean;
  /** core.filesRefLockTimeout (ms, default 100) */
  lockTimeoutMs?: number;
  /** core.packedRefsTimeout (ms, default 1000) */
  packedLockTimeoutMs?: number;
  /** reflogs to write: the files backend appends to these files; reftable takes their mode (core.logAllRefUpdates) and bareness */
  reflogs?: Reflogs;
  /** committer ident with date, for reflog entries */
  ident?: string;
  /** object type name, to refuse a non-commit on a branch; undefined when missing */
  typeOf?: (oid: Buffer) => string | undefined;
  /** peel an object id (for rewriting a packed-refs without the fully-peeled trait) */
  peel?: (oid: Buffer) => Buffer | undefined;
  /** path component git shows between the repository and the ref in lock errors (receive-pack: `.`) */
  displayRoot?: string;
  /**
   * The reference-transaction hook: called with the state and the input
   * lines (hook.ts); a non-zero answer in "preparing" or "prepared"
   * aborts the transaction.
   */
  hook?: (state: 'preparing' | 'prepared' | 'committed' | 'aborted', input: string) => Promise<number>;
}

/** One transaction: prepare (locks, checks), then commit or abort. */
export interface RefUpdate {
  /** edits rejected in allowFailure mode: index → error */
  readonly rejected: Map<number, TxError>;
  /** Phase one. Throws TxError (after rolling back) unless the failure is per-ref and allowFailure is set. */
  prepare(edits: RefEdit[]): Promise<void>;
  /** Phase two: every prepared edit made visible. */
  commit(): Promise<void>;
  /** Release everything; nothing changes. */
  abort(): void;
  /** abort() after a successful prepare, telling the reference-transaction hook ("aborted"). */
  abortPrepared(): Promise<void>;
}
