/**
 * HTTP Basic credentials (RFC 7617) from an `Authorization` header, for
 * library users writing their own `authenticate`: the user and password,
 * or undefined for anything that is not exactly one well-formed Basic
 * credential. Refused: no header, another scheme, an empty or non-canonical
 * base64 token, bytes that are not UTF-8, no `:`, an empty user, control
 * characters in the user.
 */
export interface BasicCredentials { user: string; password: string }

const TOKEN = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i;

export function parseBasicAuth(header: string | string[] | undefined): BasicCredentials | undefined {
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  const m = TOKEN.exec(header);
  if (!m) return undefined;
  const token = m[1]!;
  if (token.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(token, 'base64');
  // a token that does not survive the round trip has stray bits or padding
  if (bytes.toString('base64') !== token) return undefined;
  let text: string;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { return undefined; }
  const i = text.indexOf(':');
  if (i <= 0) return undefined;
  const user = text.slice(0, i);
  if (/[\x00-\x1f\x7f]/.test(user)) return undefined;
  return { user, password: text.slice(i + 1) };
}
