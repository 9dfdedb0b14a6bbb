/**
 * Ref names are bytes: git checks their format, never that they are
 * UTF-8 (`refs/heads/\xff\xfe` is a valid name). gitwire keeps them in
 * JavaScript strings, decoded so that nothing is lost: UTF-8 where the
 * bytes are UTF-8, and each byte that is not part of a valid sequence as
 * a lone surrogate U+DC80..U+DCFF (Python's "surrogateescape"). A valid
 * UTF-8 name is then the same string it always was, and `encodeName`
 * gives back exactly the bytes that were read.
 *
 * Every place a name crosses into bytes (the wire, a file name, a hook's
 * stdin) goes through `encodeName` or `fsPath`; `Buffer.from(name)` would
 * turn the escapes into U+FFFD and fold distinct names onto one.
 */

const fatal = new TextDecoder('utf-8', { fatal: true });
const ESCAPED = /[\udc80-\udcff]/;

/** Bytes `b[start..end)` as a name string (lossless). */
export function decodeName(b: Buffer, start = 0, end = b.length): string {
  let ascii = true;
  for (let i = start; i < end; i++) if (b[i]! >= 0x80) { ascii = false; break; }
  if (ascii) return b.toString('latin1', start, end);
  const v = b.subarray(start, end);
  try { return fatal.decode(v); } catch { return escapeDecode(v); }
}

/** The bytes of a name string (the inverse of decodeName). */
export function encodeName(s: string): Buffer {
  if (!ESCAPED.test(s)) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc80 || c > 0xdcff) continue;
    // an escape stands alone only when it is not the low half of a surrogate pair
    const prev = i > 0 ? s.charCodeAt(i - 1) : 0;
    if (prev >= 0xd800 && prev <= 0xdbff) continue;
    if (i > from) parts.push(Buffer.from(s.slice(from, i), 'utf8'));
    parts.push(Buffer.of(c - 0xdc00));
    from = i + 1;
  }
  if (from < s.length) parts.push(Buffer.from(s.slice(from), 'utf8'));
  return Buffer.concat(parts);
}

/** Does the string hold an escaped byte (a name that is not UTF-8)? */
export function hasEscapedBytes(s: string): boolean { return ESCAPED.test(s); }

/** A path for node:fs: the string itself, or its bytes when it holds a name that is not UTF-8. */
export function fsPath(p: string): string | Buffer {
  return ESCAPED.test(p) ? encodeName(p) : p;
}

/** UTF-8 decoding where valid, each other byte escaped to U+DC00 + byte. */
function escapeDecode(b: Buffer): string {
  let out = '';
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    let n = 0, cp = 0, min = 0;
    if (c < 0x80) { out += String.fromCharCode(c); i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; min = 0x10000; }
    let ok = n > 0 && i + n < b.length;
    if (ok) {
      for (let k = 1; k <= n; k++) {
        const d = b[i + k];
        if (d === undefined || (d & 0xc0) !== 0x80) { ok = false; break; }
        cp = (cp << 6) | (d & 0x3f);
      }
    }
    if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))) ok = false;
    if (!ok) { out += String.fromCharCode(0xdc00 + c); i++; continue; }
    out += String.fromCodePoint(cp);
    i += n + 1;
  }
  return out;
}
