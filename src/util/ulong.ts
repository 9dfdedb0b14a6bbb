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
