/**
 * Who a request counts against: the authenticated user, else the client's
 * address. The address is the one the transport established (the socket's,
 * or a trusted proxy's X-Forwarded-For / PROXY header: never a header from
 * an untrusted peer). IPv6 addresses are grouped per /64, the smallest
 * block an ISP hands a site, so that one client cannot become 2^64 clients;
 * an IPv4-mapped IPv6 address is its IPv4 address.
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface ClientId {
  /** `user:<name>`, `ip:<v4>` or `ip6:<first four groups>::/64` (never shown to clients; not a metrics label) */
  key: string;
  /** no authenticated user: the anonymous limits apply */
  anonymous: boolean;
}

/** The /64 an IPv6 address is in, as `a:b:c:d::/64` (lower case, no leading zeros). */
export function ipv6Prefix64(addr: string): string | undefined {
  const a = addr.replace(/%.*$/, '').toLowerCase();
  if (!isIPv6(a)) return undefined;
  let groups: string[];
  // an embedded IPv4 tail counts as its two groups (it is after the /64 anyway)
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  const body = tail ? `${a.slice(0, -tail[1]!.length)}0:0` : a;
  const dbl = body.indexOf('::');
  if (dbl >= 0) {
    const head = body.slice(0, dbl).split(':').filter(Boolean);
    const rest = body.slice(dbl + 2).split(':').filter(Boolean);
    groups = [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest];
  } else groups = body.split(':');
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}

/** The client key of one address: IPv4 as it is, IPv4-mapped IPv6 as IPv4, other IPv6 per /64. */
export function addressKey(address: string | undefined): string {
  if (!address) return 'ip:unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const v4 = mapped ? mapped[1]! : address;
  if (isIPv4(v4)) return `ip:${v4}`;
  const p = ipv6Prefix64(address);
  return p ? `ip6:${p}` : `ip:${address.slice(0, 64)}`;
}

/** The client a request counts against. */
export function clientId(info: { user?: string; remoteAddress?: string }): ClientId {
  if (info.user !== undefined) return { key: `user:${info.user}`, anonymous: false };
  return { key: addressKey(info.remoteAddress), anonymous: true };
}
