/**
 * Where a delta search plugs into the writer (src/pack/produce/delta/).
 *
 * Once the layout is known, every object that would go out whole is
 * offered to the search (git's delta_list: whatever does not reuse a
 * delta): loose objects, packed deltas whose base is neither sent before
 * them nor held by the client, and packed whole entries outside a pack
 * sent as it is; none under 50 bytes (git tries no delta for those, nor
 * against them). For each the search may answer a delta: the delta's bytes
 * (git's delta format, uncompressed) against a base that is either another
 * entry of this pack (by entry number) or an object the client has (thin
 * packs, by id).
 *
 * The writer keeps every delta acyclic. A reused delta goes out only
 * against a base written earlier in this pack, or against an object that
 * is not in this pack and that the client has; anything else is written
 * whole. A searched delta's base is another candidate (or a client's
 * object): the search visits each base before its deltas, so its choices
 * form no cycle among candidates, and no reused delta is a candidate, so
 * none joins one. A base written earlier goes as an offset; a later one
 * by id (REF_DELTA), which index-pack resolves wherever it lies in the
 * pack.
 */
import type { ObjType } from '../../../repo/object-type.js';

/** An object the writer will send whole unless the search finds a delta for it. */
export interface WholeCandidate {
  /** its entry number in the pack being written */
  entry: number;
  oid: Buffer;
  type: ObjType;
  size: number;
  /** git's pack_name_hash() of its path (0: none) */
  name: number;
  /** its packed entry would go out as it is (a whole object): a delta for it only saves bytes */
  reused: boolean;
  /**
   * the pack it is read from (undefined: loose). As git's try_delta(), an
   * object stored whole is not tried against others of its own pack: the
   * repack that wrote them found no delta between them worth keeping.
   */
  pack?: object;
}

export interface SearchedDelta {
  /** the candidate's entry number */
  entry: number;
  /** the base: an entry of this pack (written before `entry`), or an id the client has */
  base: { entry: number } | { oid: Buffer };
  /** the delta, uncompressed */
  delta: Buffer;
}

/** An object the client has, offered as a delta base only (a thin pack's preferred base; never sent). */
export interface BaseCandidate {
  oid: Buffer;
  type: ObjType;
  size: number;
  /** git's pack_name_hash() of the path it sits at in the boundary commit's tree */
  name: number;
}

export interface DeltaSearchInput {
  candidates: WholeCandidate[];
  /** thin packs: objects the client has that may serve as bases (answered as `base: { oid }`) */
  bases?: BaseCandidate[];
  /** content of a preferred base */
  readBase?(oid: Buffer): Buffer;
  /** content of an entry of this pack (candidates and the objects the layout holds) */
  read(entry: number): Buffer;
  signal?: AbortSignal;
  /** progress: call with the number of candidates done (the writer shows "Compressing objects") */
  onProgress?(done: number): void;
}

/** A delta search: some of the candidates get a delta. */
export type DeltaSearch = (input: DeltaSearchInput) => Promise<SearchedDelta[]>;
