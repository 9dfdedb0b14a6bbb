/** git_parse_ulong(), shared by the filter-spec parsers (upload-pack's and cat-file's). */

/** git_parse_ulong(): strtoumax base 0 (0x.., 0..), optional k/m/g, no '-' */
export function parseUlong(v: string): bigint | undefined {
  if (!v || v.includes('-')) return undefined;
  const m = /^[ \t\n\v\f\r]*\+?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(.*)$/s.exec(v);
  if (!m) return undefined;
  let digits = m[1]!;
  let tail = m[2]!;
  // "0x" with no hex digit after: strtoumax reads the "0" only
  if (/^0[xX]$/.test(digits)) { tail = digits.slice(1) + tail; digits = '0'; }
  const n = /^0[xX]/.test(digits) ? BigInt(digits) : digits.length > 1 && digits[0] === '0' ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
  const unit = tail.toLowerCase();
  const factor = unit === '' ? 1n : unit === 'k' ? 1024n : unit === 'm' ? 1024n * 1024n : unit === 'g' ? 1024n ** 3n : 0n;
  if (!factor) return undefined;
  const r = n * factor;
  return r > 0xffffffffffffffffn ? undefined : r;
}

const LONG_MAX = (1n << 63n) - 1n;
const UINTMAX_MAX = (1n << 64n) - 1n;

/**
 * C's strtol / strtoumax with base 0, as git calls them on protocol
 * arguments: leading blanks, a sign, 0x or 0 prefixes; out-of-range values
 * clamp (LONG_MAX/LONG_MIN, UINTMAX_MAX); a negative unsigned value wraps.
 * `rest` is what follows the number (the whole input when there is none).
 */
export function strtoC(s: string, unsigned: boolean): { value: bigint; rest: string } {
  let i = 0;
  while (i < s.length && ' \t\n\v\f\r'.includes(s[i]!)) i++;
  let neg = false;
  if (s[i] === '+' || s[i] === '-') { neg = s[i] === '-'; i++; }
  let base = 10;
  if (s[i] === '0' && (s[i + 1] === 'x' || s[i + 1] === 'X') && /[0-9a-fA-F]/.test(s[i + 2] ?? '')) { base = 16; i += 2; } else if (s[i] === '0') base = 8;
  const start = i;
  let v = 0n;
  for (; i < s.length; i++) {
    const d = parseInt(s[i]!, base);
    if (Number.isNaN(d)) break;
    v = v * BigInt(base) + BigInt(d);
  }
  if (i === start) return { value: 0n, rest: s };
  const rest = s.slice(i);
  if (unsigned) {
    if (v > UINTMAX_MAX) return { value: UINTMAX_MAX, rest };
    return { value: neg && v ? (UINTMAX_MAX + 1n - v) : v, rest };
  }
  if (!neg) return { value: v > LONG_MAX ? LONG_MAX : v, rest };
  return { value: v > LONG_MAX + 1n ? -(LONG_MAX + 1n) : -v, rest };
}

/** strtoumax's answer for a number too large, which git's parse_timestamp callers refuse */
export const STRTOUMAX_OVERFLOW = UINTMAX_MAX;
