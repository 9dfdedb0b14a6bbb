/**
 * The filters git applies to a bitmap result (pack-bitmap.c's
 * filter_bitmap(), v2.55): `blob:none`, `blob:limit=<n>`, `tree:0`,
 * `object:type=<type>`, and `combine:` of those. Any other filter (a
 * deeper `tree:<n>`, `sparse:oid=`) makes git count objects by walking
 * instead, and so does this.
 */
import { ObjType, typeFromName } from '../../repo/object-type.js';
import { parseUlong } from '../../util/ulong.js';

export type BitmapFilter =
  | { kind: 'blob:none' }
  | { kind: 'blob:limit'; limit: bigint }
  | { kind: 'tree:0' }
  | { kind: 'object:type'; type: ObjType }
  | { kind: 'combine'; subs: BitmapFilter[] };

/**
 * The filter for a spec as pack-objects gets it (`--filter=<spec>`):
 * null for no filter, undefined when bitmaps cannot apply it.
 */
export function bitmapFilter(spec: string | undefined): BitmapFilter | null | undefined {
  if (spec === undefined || spec === '') return null;
  return parse(spec, 0);
}

function parse(s: string, depth: number): BitmapFilter | undefined {
  if (depth > 8) return undefined;
  if (s === 'blob:none') return { kind: 'blob:none' };
  if (s.startsWith('blob:limit=')) {
    const n = parseUlong(s.slice(11));
    return n === undefined ? undefined : { kind: 'blob:limit', limit: n };
  }
  if (s.startsWith('tree:')) {
    const n = parseUlong(s.slice(5));
    return n === 0n ? { kind: 'tree:0' } : undefined;
  }
  if (s.startsWith('object:type=')) {
    const t = typeFromName(s.slice(12));
    return t === undefined ? undefined : { kind: 'object:type', type: t };
  }
  if (s.startsWith('combine:')) {
    const rest = s.slice(8);
    if (!rest) return undefined;
    const subs: BitmapFilter[] = [];
    for (const part of rest.split('+')) {
      let decoded: string;
      try { decoded = decodeURIComponent(part); } catch { decoded = part; }
      const f = parse(decoded, depth + 1);
      if (!f) return undefined;
      subs.push(f);
    }
    return { kind: 'combine', subs };
  }
  return undefined;
}
