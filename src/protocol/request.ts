/**
 * A fetch request as a value: what the client asked for, in v0/v1 (features
 * on `want` lines, shallow/deepen/filter lines) or in v2 (`fetch` argument
 * lines). Both are parsed into this one type through one table of
 * arguments and features (./request-args.ts). The object lines (want,
 * have, shallow) hand their ids to the command's state (./session.ts),
 * which keeps the object flags, as git's upload_pack_data does. The
 * client's sideband choice is kept by the packet writer, which frames by it.
 */
import type { FilterSpec } from './filter.js';
import type { RawOid } from '../repo/oid.js';

/** none, multi_ack, multi_ack_detailed */
export type MultiAck = 0 | 1 | 2;
export type ProtocolVersion = 0 | 2;

export interface WantedRef { name: string; oid: RawOid }

export interface FetchRequest {
  /** the table this request was parsed with (v1 parses as v0) */
  readonly version: ProtocolVersion;
  // features (v0 capabilities; v2 flags)
  multiAck: MultiAck;
  noDone: boolean;
  thinPack: boolean;
  ofsDelta: boolean;
  noProgress: boolean;
  includeTag: boolean;
  deepenRelative: boolean;
  /** v0 `filter` capability: filter lines may follow */
  filterRequested: boolean;
  /** v2 `sideband-all` */
  sidebandAll: boolean;
  // arguments
  depth: number;
  /** seconds since the epoch, 0 when not asked */
  deepenSince: number;
  deepenNot: string[];
  /** deepen-since or deepen-not: the shallow boundary comes from a rev-list walk */
  deepenRevList: boolean;
  filter?: FilterSpec;
  /** v2 `want-ref` lines, resolved */
  wantedRefs: WantedRef[];
  /** v2 `have` lines seen (their ids went to the negotiation as they came) */
  haveLines: number;
  /** v2 `done` */
  done: boolean;
  /** v2 `wait-for-done` */
  waitForDone: boolean;
}

export function newFetchRequest(version: ProtocolVersion): FetchRequest {
  return {
    version,
    multiAck: 0, noDone: false, thinPack: false, ofsDelta: false,
    noProgress: false, includeTag: false, deepenRelative: false, filterRequested: false, sidebandAll: false,
    depth: 0, deepenSince: 0, deepenNot: [], deepenRevList: false, filter: undefined,
    wantedRefs: [], haveLines: 0, done: false, waitForDone: false,
  };
}

/** parse_feature_request(): is `name` a whole word in the feature list? */
export function hasFeature(features: string, name: string): boolean {
  let i = 0;
  while ((i = features.indexOf(name, i)) >= 0) {
    const before = i === 0 || features[i - 1] === ' ';
    const after = features[i + name.length];
    if (before && (after === undefined || after === ' ' || after === '=')) return true;
    i += name.length;
  }
  return false;
}

export function featureValue(features: string, name: string): string | undefined {
  for (const f of features.split(' ')) if (f.startsWith(`${name}=`)) return f.slice(name.length + 1);
  return undefined;
}
