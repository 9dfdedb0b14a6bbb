/**
 * What a pack will hold: the result of enumeration (from reachability
 * bitmaps or from a walk), and the input of the pack writer.
 *
 * Enumeration answers "which objects" and "which ones the client already
 * has"; the writer answers "in what order and in what form" (verbatim
 * entries, rewritten deltas, whole objects). The two meet only here.
 *
 * The request it answers is the one git's upload-pack gives
 * `git pack-objects --revs` (PackObjectsRequest in ../pack-objects.ts):
 * wants, then `--not` haves and extra edges, `--shallow` grafts, `--thin`,
 * `--include-tag`, `--filter`. A plan holds exactly the objects that
 * pack-objects would pack for it.
 */
import type { ObjType } from '../../repo/object-type.js';
import type { PackFile } from '../../repo/pack.js';

/** Objects named by id; the writer locates them (packed or loose). */
export interface IdsPart {
  kind: 'ids';
  /** `count` ids of hashLen bytes, back to back */
  ids: Buffer;
  count: number;
  /** per object, its type when the enumerator knows it (a walk does) */
  types?: Uint8Array;
  /** per object, git's pack_name_hash() of the path it was reached by (0: none); orders delta search */
  names?: Uint32Array;
}

/** Objects of one pack, by rank in pack order (ascending): what bitmaps give without any id lookup. */
export interface RanksPart {
  kind: 'ranks';
  pack: PackFile;
  /** ascending ranks (place in pack order, see PackFile.rankOfOffset) */
  ranks: Uint32Array;
  /** per rank given, the name hash from the bitmap's name-hash cache, when present */
  names?: Uint32Array;
  /**
   * Whether git's pack reuse may send this part's objects as they stand
   * (pack-bitmap.c's reuse_partial_packfile_from_bitmap()): 'first' for the
   * pack at bit 0 (a single-pack bitmap's pack, or a multi-pack bitmap's
   * preferred pack), whose leading whole words of wanted bits go without a
   * look; 'more' for the other packs of a multi-pack bitmap under
   * pack.allowPackReuse=multi. Undefined: none of it is reused so.
   */
  reuse?: 'first' | 'more';
}

export type PlanPart = IdsPart | RanksPart;

export interface PackPlan {
  /** objects the pack will hold (the sum over parts; no object appears twice) */
  readonly count: number;
  readonly parts: PlanPart[];
  /**
   * For a thin pack: whether the client has this object, so the writer may
   * send a delta against it without sending it. Undefined when the request
   * is not thin (then every delta base must be in the pack).
   */
  readonly clientHas?: (oid: Buffer) => boolean;
  /**
   * For a thin pack: objects the client has that are good delta bases for
   * what is sent whole (pack-objects' preferred bases: the objects at the
   * same paths in the boundary commits' trees), with their types and name
   * hashes. The writer offers them to its delta search; they are never sent.
   */
  readonly preferredBases?: IdsPart;
  /**
   * How many objects enumeration met, duplicates counted (pack-objects'
   * nr_seen: its "Enumerating objects" count, one for each object it was
   * given, a thin pack's preferred bases met at several paths or shown
   * after they were listed included). Default: count and preferred bases.
   */
  readonly seen?: number;
  /** how the objects were found (logs, progress, stats) */
  readonly source: 'bitmap' | 'walk';
}

/** Types of objects as they appear in a plan (never a delta type). */
export type PlanType = ObjType;
