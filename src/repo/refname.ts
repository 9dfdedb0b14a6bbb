/**
 * git's check_refname_format(): whether a name may be a ref. Every ref name
 * that comes from the wire (want-ref, deepen-not, ls-refs prefixes, push
 * commands) passes through here before it touches the filesystem.
 *
 * Rules (git-check-ref-format(1)): components are separated by `/`; none is
 * empty, starts with `.` or ends with `.lock`; no `..`, `@{`, control
 * characters, space, `~ ^ : ? [ \` or `*`; the name does not end with `/` or
 * `.` and is not `@`; it has two components unless one level is allowed.
 */
import { encodeName } from '../util/byte-name.js';

export interface RefnameFlags {
  /** allow a single component (`HEAD`, `FETCH_HEAD`) */
  allowOnelevel?: boolean;
  /** allow one `*` (refspec patterns) */
  refspecPattern?: boolean;
}

const SLASH = 0x2f, DOT = 0x2e, BRACE = 0x7b, AT = 0x40, STAR = 0x2a;

/** 1: bad anywhere; 0: fine (decided per byte below) */
const BAD = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) BAD[c] = 1;
BAD[0x7f] = 1;
for (const ch of ' ~^:?[\\') BAD[ch.charCodeAt(0)] = 1;

const LOCK = Buffer.from('.lock');

/** git's check_refname_format(refname, flags) === 0 */
export function checkRefnameFormat(name: string | Uint8Array, flags: RefnameFlags = {}): boolean {
  const b = typeof name === 'string' ? encodeName(name) : name;
  const n = b.length;
  if (n === 0) return false;
  if (n === 1 && b[0] === AT) return false;
  let stars = flags.refspecPattern ? 1 : 0;
  let components = 0;
  let start = 0;
  while (start <= n) {
    // one component: [start, end)
    let end = start;
    let last = 0;
    for (; end < n; end++) {
      const c = b[end]!;
      if (c === SLASH) break;
      if (BAD[c]) return false;
      if (c === DOT && last === DOT) return false;
      if (c === BRACE && last === AT) return false;
      if (c === STAR) { if (stars === 0) return false; stars--; }
      last = c;
    }
    const len = end - start;
    if (len === 0) return false;                       // leading, trailing or doubled slash
    if (b[start] === DOT) return false;                // component starts with '.'
    if (len >= LOCK.length && Buffer.compare(b.subarray(end - LOCK.length, end), LOCK) === 0) return false;
    components++;
    if (end === n) break;
    start = end + 1;
    if (start === n) return false;                     // ends with '/'
  }
  if (b[n - 1] === DOT) return false;
  if (components < 2 && !flags.allowOnelevel) return false;
  return true;
}
