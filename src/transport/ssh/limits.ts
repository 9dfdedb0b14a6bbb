/**
 * The SSH server's own limits (separate from HTTP's and git://'s), each
 * with a default, and the address group every per-address count is kept
 * by (an IPv4 address, an IPv6 /64).
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface SshLimits {
  /** connections open at once, authenticated or not (0: unlimited) */
  maxConnections: number;
  /** connections from one address (IPv6: one /64) that have not authenticated yet (0: unlimited) */
  maxUnauthenticatedPerAddress: number;
  /** new connections a second from one address (IPv6: one /64), burst twice that (0: unlimited); see preauth.ts */
  handshakeRate: number;
  /** seconds from accept until the client has authenticated (OpenSSH's LoginGraceTime; 0: none) */
  loginGraceTime: number;
  /** failed authentication attempts on one connection before it is closed (MaxAuthTries) */
  maxAuthTries: number;
  /** session channels open at once on one connection (MaxSessions) */
  maxChannels: number;
  /** seconds a connection may go without channel data either way, or without a channel, before it is closed (0: never) */
  idleTimeout: number;
  /** seconds between keepalive requests to an authenticated client (0: none) */
  keepaliveInterval: number;
  /** keepalives left unanswered before the connection is dropped */
  keepaliveCountMax: number;
}

export const DEFAULT_SSH_LIMITS: Readonly<SshLimits> = Object.freeze({
  maxConnections: 256,
  maxUnauthenticatedPerAddress: 64,
  handshakeRate: 10,
  loginGraceTime: 30,
  maxAuthTries: 6,
  maxChannels: 10,
  idleTimeout: 120,
  keepaliveInterval: 15,
  keepaliveCountMax: 3,
});

/** The limits with defaults for what is not given; throws on a value that is not a number ≥ 0. */
export function sshLimits(given: Partial<SshLimits> = {}): SshLimits {
  const out = { ...DEFAULT_SSH_LIMITS };
  for (const [k, v] of Object.entries(given) as Array<[keyof SshLimits, number | undefined]>) {
    if (v === undefined) continue;
    if (!Object.hasOwn(DEFAULT_SSH_LIMITS, k)) throw new Error(`unknown ssh limit '${k}'`);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new Error(`ssh limit ${k}: not a number >= 0: ${String(v)}`);
    out[k] = v;
  }
  return out;
}

/**
 * The group an address is counted in: an IPv4 address as it is (an
 * IPv4-mapped IPv6 address as its IPv4 address), an IPv6 address by its
 * /64, the smallest block a site is given, so that one client cannot
 * become 2^64 clients. `a:b:c:d::/64`, lower case, no leading zeros.
 */
export function addressGroup(address: string): string {
  const a = address.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (isIPv4(a) || !isIPv6(a)) return a;
  // an embedded IPv4 tail is in the low 64 bits: it counts as two groups
  const tail = /\d+\.\d+\.\d+\.\d+$/.exec(a);
  const body = tail ? `${a.slice(0, tail.index)}0:0` : a;
  const dbl = body.indexOf('::');
  let groups: string[];
  if (dbl < 0) groups = body.split(':');
  else {
    const head = body.slice(0, dbl).split(':').filter(Boolean);
    const rest = body.slice(dbl + 2).split(':').filter(Boolean);
    groups = [...head, ...Array<string>(8 - head.length - rest.length).fill('0'), ...rest];
  }
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(':')}::/64`;
}
