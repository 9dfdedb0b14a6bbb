/**
 * The ref-storage interface (git's struct ref_storage_be): everything
 * above `repo/refs/` reads and writes refs through it, and never knows
 * which format holds them. Two backends implement it: the files backend
 * (`files/`: loose refs and packed-refs) and reftable (`reftable/`). A
 * third (a database for a cluster) implements the same two interfaces.
 *
 * A `RefStore` reads live; `snapshot()` gives the store one request
 * reads from, so that everything the request asks agrees with its
 * advertisement while refs are updated underneath. Transactions always
 * lock and verify against the live refs.
 */
import type { Slicer } from '../../util/budget.js';
import type { ReflogEntry } from '../reflog.js';
import type { HeadState, RawRef, Ref } from './ref.js';
import type { RefUpdate, TransactionOptions } from './transaction.js';

export type RefFormat = 'files' | 'reftable';

/** Point reads in a row (`RefStore.pointReader()`); `close()` when done. */
export interface PointReader {
  readRaw(name: string): RawRef | undefined;
  resolve(name: string): { hex?: Buffer; target: string } | undefined;
  close(): void;
}

export interface RefStore {
  readonly format: RefFormat;
  readonly gitDir: string;
  readonly commonDir: string;
  readonly hashLen: number;
  readonly hexLen: number;

  /** A ref's own value (symrefs not followed), wherever the backend keeps it; undefined when there is none. */
  readRaw(name: string): RawRef | undefined;
  /** Resolve a ref name to a hex id, following symrefs; a dangling symref gives its target without an id, a loop nothing. */
  resolve(name: string): { hex?: Buffer; target: string } | undefined;
  /** HEAD: its target when symbolic, and its id unless unborn. */
  head(): HeadState;
  /**
   * What storage knows about peeling `name` (after following symrefs):
   * the peeled hex, 'none' when it is known not to peel, undefined when
   * only the object can tell.
   */
  knownPeeled(name: string): Buffer | 'none' | undefined;
  /**
   * Every ref whose name starts with one of `prefixes`, in name order. The
   * record handed to `cb` may be reused for the next ref. `pause` may make
   * the scan wait (a backed-up socket, a slice used up); `scratch`, when
   * given, supplies memory refs may be read into (`Ref.memAt`).
   */
  scan(prefixes: string | readonly string[], cb: (r: Ref) => void, pause?: () => Promise<void> | undefined, scratch?: (n: number) => Buffer | undefined): Promise<void>;
  /** Every ref under `prefix` (default `refs/`), in name order; each record its own. */
  iterate(prefix?: string): Generator<Ref>;
  /** Read ahead what a request's first look at the refs reads, yielding on `slicer`. */
  prepare(slicer: Slicer): Promise<void>;

  /** A ref's reflog, oldest first (none: empty). */
  readReflog(name: string): ReflogEntry[];
  /** Does `name` have a reflog? */
  reflogExists(name: string): boolean;

  /** A transaction against the live refs. */
  transaction(opts?: TransactionOptions): RefUpdate;
  /** The reader one request uses: a consistent view until `close()`. */
  snapshot(): RefStore;
  /**
   * A reader for many point reads in a row (a push's per-command checks),
   * at the cost each backend reads one ref for: reftable pins one view of
   * the stack (its list looked at once, not per name), the files backend
   * reads live (a loose file, then packed-refs, per name, as git does).
   */
  pointReader(): PointReader;

  /** Bytes held in memory between requests. */
  readonly memoryBytes: number;
  /** Let go of what is held open (a snapshot: the request is over). */
  close(): void;
}
