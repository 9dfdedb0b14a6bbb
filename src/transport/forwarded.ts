/**
 * Where the client reached us, as a reverse proxy in front says it: the
 * scheme and host of RFC 7239's `Forwarded` (its last element, the one the
 * proxy next to us added), else `X-Forwarded-Proto` and `X-Forwarded-Host`
 * (their last values). Read only from peers `--trust-proxy` names: anyone
 * else could send them. URLs handed back to the client (LFS actions) are
 * built on this, so a TLS proxy that talks plain HTTP to gitwire still
 * gets `https://` links to its own name.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** a host and optional port, as the Host header may carry them */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

const lastOf = (h: string | string[] | undefined): string | undefined => {
  const v = Array.isArray(h) ? h.join(',') : h;
  return v?.split(',').map((s) => s.trim()).filter(Boolean).pop();
};

/** The parameters of a `Forwarded` header's last element (`proto`, `host`, …), names in lower case. */
export function lastForwardedElement(header: string | string[] | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const el = lastOf(header);
  if (!el || el.length > 1024) return out;
  for (const pair of el.split(';')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    let v = pair.slice(eq + 1).trim();
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    out.set(pair.slice(0, eq).trim().toLowerCase(), v);
  }
  return out;
}

/**
 * `https://git.example.com` (or with a port) from a trusted proxy's headers;
 * undefined when it sent none that say where the client came in. A value
 * that is not a scheme or a host is ignored, never passed on.
 */
export function forwardedOrigin(headers: IncomingHttpHeaders, ownHost: string | undefined, ownEncrypted: boolean): string | undefined {
  const fwd = lastForwardedElement(headers.forwarded);
  let proto = fwd.get('proto')?.toLowerCase();
  let host = fwd.get('host');
  if (proto === undefined && host === undefined) {
    proto = lastOf(headers['x-forwarded-proto'])?.toLowerCase();
    host = lastOf(headers['x-forwarded-host']);
  }
  if (proto !== undefined && proto !== 'http' && proto !== 'https') proto = undefined;
  if (host !== undefined && !HOST.test(host)) host = undefined;
  if (proto === undefined && host === undefined) return undefined;
  const h = host ?? (ownHost !== undefined && HOST.test(ownHost) ? ownHost : undefined);
  if (h === undefined) return undefined;
  return `${proto ?? (ownEncrypted ? 'https' : 'http')}://${h}`;
}

/**
 * `--public-url`: `http(s)://host[:port][/path]`, without a trailing slash;
 * undefined when it is not such a URL.
 */
export function parsePublicUrl(s: string): string | undefined {
  let u: URL;
  try { u = new URL(s); } catch { return undefined; }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username || u.password || u.search || u.hash || !u.host) return undefined;
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}
