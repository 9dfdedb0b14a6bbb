/**
 * What git says about a loose object it cannot read. gitwire's object
 * database reports such objects as corrupt; cat-file then looks at the
 * file again (only on that error path) to answer in git's words:
 * - a zlib stream that asks for a preset dictionary: git prints
 *   `error: inflate: needs dictionary (no message)` and
 *   `error: unable to unpack <oid> header`, then treats the object as
 *   missing (2.55);
 * - a header longer than git's 32-byte buffer (a long bogus type): git
 *   prints `error: header for <oid> too long, exceeds 32 bytes` and the
 *   object counts as unreadable;
 * - a header whose type is not one of commit/tree/blob/tag: git dies with
 *   `invalid object type` (2.50+: --allow-unknown-type is gone).
 */
import { readFileSync } from 'node:fs';
import { inflateSync, constants as zc } from 'node:zlib';
import { typeFromName } from '../repo/object-type.js';
import type { Location } from '../repo/odb.js';

export type Unreadable = { kind: 'dict' } | { kind: 'toolong' } | { kind: 'badtype' };

/** git's MAX_HEADER_LEN: a loose header (with its NUL) must fit in this many bytes */
const MAX_HEADER_LEN = 32;

export function diagnoseLoose(loc: Location | undefined): Unreadable | undefined {
  if (!loc || loc.kind !== 'loose') return undefined;
  let f: Buffer;
  try { f = readFileSync(loc.path); } catch { return undefined; }
  // zlib header: CM=8, FCHECK valid, FDICT (0x20) set
  if (f.length >= 2 && (f[0]! & 0x0f) === 8 && ((f[0]! << 8) | f[1]!) % 31 === 0 && (f[1]! & 0x20)) return { kind: 'dict' };
  try {
    const head = inflateSync(f.subarray(0, Math.min(f.length, 256)), { finishFlush: zc.Z_SYNC_FLUSH });
    const nul = head.indexOf(0);
    if ((nul < 0 || nul >= MAX_HEADER_LEN) && head.length >= MAX_HEADER_LEN) return { kind: 'toolong' };
    const sp = head.indexOf(0x20);
    if (sp > 0 && typeFromName(head.toString('latin1', 0, sp)) === undefined) return { kind: 'badtype' };
  } catch { /* another kind of corruption */ }
  return undefined;
}

/** git's two error lines for an object whose stream needs a dictionary */
export function dictLines(oid: Buffer): string[] {
  return ['error: inflate: needs dictionary (no message)', `error: unable to unpack ${oid.toString('hex')} header`];
}

/** unpack_loose_header()'s complaint about a header that does not fit */
export function headerTooLong(oid: Buffer): string {
  return `error: header for ${oid.toString('hex')} too long, exceeds ${MAX_HEADER_LEN} bytes`;
}
