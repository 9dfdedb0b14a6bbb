/**
 * `--filter=<spec>` for cat-file (git 2.48+): the spec parser with git's
 * messages (list-objects-filter-options.c) and the per-object test.
 * cat-file supports blob:none, blob:limit=<n> and object:type=<type>.
 */
import { ObjType, typeFromName } from '../repo/object-type.js';

export type ObjectFilter =
  | { choice: 'blob:none' }
  | { choice: 'blob:limit'; limit: bigint }
  | { choice: 'object:type'; type: ObjType }
  | { choice: 'tree' | 'sparse:oid' | 'combine' | 'auto' };

import { parseUlong } from '../util/ulong.js';

/** gently_parse_list_objects_filter(); throws with git's fatal message. */
export function parseFilterSpec(arg: string): ObjectFilter {
  if (arg === 'auto') throw new Error("'auto' filter not supported by this command");
  if (arg === 'blob:none') return { choice: 'blob:none' };
  if (arg.startsWith('blob:limit=')) {
    const n = parseUlong(arg.slice(11));
    if (n !== undefined) return { choice: 'blob:limit', limit: n };
  } else if (arg.startsWith('tree:')) {
    if (parseUlong(arg.slice(5)) === undefined) throw new Error("expected 'tree:<depth>'");
    return { choice: 'tree' };
  } else if (arg.startsWith('sparse:oid=')) {
    return { choice: 'sparse:oid' };
  } else if (arg.startsWith('sparse:path=')) {
    throw new Error('sparse:path filters support has been dropped');
  } else if (arg.startsWith('object:type=')) {
    const t = typeFromName(arg.slice(12));
    if (t === undefined) throw new Error(`'${arg.slice(12)}' for 'object:type=<type>' is not a valid object type`);
    return { choice: 'object:type', type: t };
  } else if (arg.startsWith('combine:')) {
    parseCombine(arg.slice(8));
    return { choice: 'combine' };
  }
  throw new Error(`invalid filter-spec '${arg}'`);
}

const RESERVED = '~`!@#$^&*()[]{}\\;\'",<>?';

function parseCombine(v: string): void {
  if (!v) throw new Error('expected something after combine:');
  for (const sub of v.split('+')) {
    if (!sub) continue;
    for (const c of sub) if (c <= ' ' || RESERVED.includes(c)) throw new Error(`must escape char in sub-filter-spec: '${c}'`);
    let decoded: string;
    try { decoded = decodeURIComponent(sub); } catch { decoded = sub; }
    const f = parseFilterSpec(decoded);
    if (f.choice === 'auto') throw new Error("an 'auto' filter cannot be combined");
  }
}

/** Does an object of this type and size pass the filter? */
export function filterAccepts(f: ObjectFilter | undefined, type: number, size: number): boolean {
  if (!f) return true;
  switch (f.choice) {
    case 'blob:none': return type !== ObjType.Blob;
    case 'blob:limit': return type !== ObjType.Blob || BigInt(size) < f.limit;
    case 'object:type': return type === f.type;
    default: return true;
  }
}
