/**
 * The PROXY protocol (haproxy's `send-proxy` and `send-proxy-v2`), for
 * git:// and SSH behind a balancer in TCP mode: the balancer opens each
 * connection with a header naming the client's address, which per-client
 * limits, logs and metrics then use instead of the balancer's.
 *
 * - Only connections from trusted addresses (`--proxy-protocol ADDR,...`:
 *   addresses or CIDR blocks) are read for a header, and for them it is
 *   required: one without a valid header within PROXY_HEADER_TIMEOUT_MS is
 *   refused (closed). A connection from anywhere else is served as it is,
 *   its bytes never read as a header, so no client can claim an address.
 *   At most PROXY_MAX_PENDING of them wait for their header at once: a new
 *   one closes the one that has waited longest.
 * - v1: one text line, `PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n`
 *   or `PROXY UNKNOWN...\r\n`, at most 107 bytes. v2: the 12-byte
 *   signature, version and command, family, a length and the addresses,
 *   TLVs after them skipped; at most V2_MAX bytes in all.
 * - `LOCAL` (v2, a balancer's own health check) and `UNKNOWN` (v1) carry no
 *   client: the connection's own address stands.
 *
 * Bytes after the header are the client's and are put back on the socket.
 */
import { BlockList, SocketAddress, isIPv4, isIPv6, type Socket } from 'node:net';
import { GitwireError } from '../errors.js';

/** the longest v1 header, CRLF included (the specification's bound) */
export const V1_MAX = 107;
/** the longest v2 header accepted: 16 bytes, then addresses and TLVs */
export const V2_MAX = 16 + 1024;
/** how long a trusted peer has to send its header */
export const PROXY_HEADER_TIMEOUT_MS = 5000;
/**
 * connections from trusted peers that may wait for their header at once; a
 * new one closes the one that has waited longest (a balancer sends its
 * header as it connects, so only a stalled or hostile peer is ever the
 * oldest), and no flood from a trusted block holds more sockets than this
 */
export const PROXY_MAX_PENDING = 128;

const V2_SIG = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_SIG = Buffer.from('PROXY ', 'latin1');

export interface ProxyHeader {
  version: 1 | 2;
  /** the client as the balancer saw it; undefined for LOCAL and UNKNOWN (use the connection's address) */
  source?: { address: string; port: number };
  destination?: { address: string; port: number };
}

export type ProxyParse =
  | { kind: 'more' }
  | { kind: 'header'; header: ProxyHeader; length: number }
  | { kind: 'bad'; reason: string };

const isPrefixOf = (b: Buffer, sig: Buffer) => b.length < sig.length && sig.subarray(0, b.length).equals(b);

function port(s: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(s)) return undefined;
  const n = Number(s);
  return n <= 65535 ? n : undefined;
}

function parseV1(b: Buffer): ProxyParse {
  const end = b.indexOf('\r\n', 0, 'latin1');
  if (end < 0) return b.length >= V1_MAX ? { kind: 'bad', reason: 'v1 header longer than 107 bytes' } : { kind: 'more' };
  if (end + 2 > V1_MAX) return { kind: 'bad', reason: 'v1 header longer than 107 bytes' };
  const line = b.toString('latin1', 0, end);
  const f = line.split(' ');
  if (f[1] === 'UNKNOWN') return { kind: 'header', header: { version: 1 }, length: end + 2 };
  if (f.length !== 6 || (f[1] !== 'TCP4' && f[1] !== 'TCP6')) return { kind: 'bad', reason: 'v1 header is not PROXY TCP4|TCP6|UNKNOWN' };
  const family = f[1] === 'TCP4' ? 'ipv4' : 'ipv6';
  const src = canonical(f[2]!, family), dst = canonical(f[3]!, family);
  const sp = port(f[4]!), dp = port(f[5]!);
  if (src === undefined || dst === undefined || sp === undefined || dp === undefined) return { kind: 'bad', reason: 'v1 header has a bad address or port' };
  return { kind: 'header', header: { version: 1, source: { address: src, port: sp }, destination: { address: dst, port: dp } }, length: end + 2 };
}

/**
 * An address as a socket's remoteAddress spells it (RFC 5952: lower case,
 * the longest zero run as ::, an IPv4-mapped one as ::ffff:a.b.c.d), so
 * that one client is one key for the limits and the log however its
 * balancer wrote it; undefined when it is not an address.
 */
function canonical(address: string, family: 'ipv4' | 'ipv6'): string | undefined {
  // a zone index names an interface of the balancer, not a client
  if (!(family === 'ipv4' ? isIPv4 : isIPv6)(address) || address.includes('%')) return undefined;
  try { return new SocketAddress({ address, family }).address; } catch { return undefined; }
}

function ipv6(b: Buffer, at: number): string {
  const parts: string[] = [];
  for (let i = 0; i < 8; i++) parts.push(b.readUInt16BE(at + 2 * i).toString(16));
  return canonical(parts.join(':'), 'ipv6')!;
}

function parseV2(b: Buffer): ProxyParse {
  if (b.length < 16) return { kind: 'more' };
  const ver = b[12]! >> 4, cmd = b[12]! & 15;
  if (ver !== 2) return { kind: 'bad', reason: `v2 header of version ${ver}` };
  if (cmd > 1) return { kind: 'bad', reason: `v2 header with command ${cmd}` };
  const fam = b[13]! >> 4, proto = b[13]! & 15;
  const len = b.readUInt16BE(14);
  if (16 + len > V2_MAX) return { kind: 'bad', reason: `v2 header of ${16 + len} bytes (at most ${V2_MAX})` };
  if (b.length < 16 + len) return { kind: 'more' };
  const length = 16 + len;
  // LOCAL: the balancer speaking for itself (a health check); UNSPEC: no address to tell
  if (cmd === 0 || fam === 0) return { kind: 'header', header: { version: 2 }, length };
  if (proto > 2) return { kind: 'bad', reason: `v2 header with transport ${proto}` };
  if (fam === 1) {
    if (len < 12) return { kind: 'bad', reason: 'v2 IPv4 header too short for its addresses' };
    const a = (at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
    return { kind: 'header', header: { version: 2, source: { address: a(16), port: b.readUInt16BE(24) }, destination: { address: a(20), port: b.readUInt16BE(26) } }, length };
  }
  if (fam === 2) {
    if (len < 36) return { kind: 'bad', reason: 'v2 IPv6 header too short for its addresses' };
    return { kind: 'header', header: { version: 2, source: { address: ipv6(b, 16), port: b.readUInt16BE(48) }, destination: { address: ipv6(b, 32), port: b.readUInt16BE(50) } }, length };
  }
  if (fam === 3) {
    if (len < 216) return { kind: 'bad', reason: 'v2 unix header too short for its addresses' };
    // a unix socket on the balancer's side: no network address to count by
    return { kind: 'header', header: { version: 2 }, length };
  }
  return { kind: 'bad', reason: `v2 header with address family ${fam}` };
}

/** Parse a PROXY header at the start of `b`: complete, incomplete (`more`), or not one. */
export function parseProxyHeader(b: Buffer): ProxyParse {
  if (b.length === 0) return { kind: 'more' };
  if (b[0] === 0x0d) {
    if (isPrefixOf(b, V2_SIG)) return { kind: 'more' };
    if (!b.subarray(0, 12).equals(V2_SIG)) return { kind: 'bad', reason: 'not a PROXY protocol header' };
    return parseV2(b);
  }
  if (isPrefixOf(b, V1_SIG)) return { kind: 'more' };
  if (!b.subarray(0, 6).equals(V1_SIG)) return { kind: 'bad', reason: 'not a PROXY protocol header' };
  return parseV1(b);
}

/** The addresses whose connections must open with a PROXY header (`--proxy-protocol`). */
export class ProxyTrust {
  private readonly list = new BlockList();
  readonly spec: string[];
  /** connections still waiting for their header, oldest first */
  readonly waiting = new Set<Socket>();

  /** `spec`: addresses and CIDR blocks (`10.0.0.2`, `10.0.0.0/24`, `::1`, `fd00::/8`); throws on a bad one */
  constructor(spec: string[], flag = '--proxy-protocol') {
    this.spec = spec;
    for (const raw of spec) {
      const s = raw.trim();
      const slash = s.indexOf('/');
      const addr = slash < 0 ? s : s.slice(0, slash);
      const type = isIPv4(addr) ? 'ipv4' : isIPv6(addr) ? 'ipv6' : undefined;
      if (!type) throw new GitwireError('GW_USAGE', `${flag}: not an address or CIDR block: '${raw}'`);
      if (slash < 0) { this.list.addAddress(addr, type); continue; }
      const bits = s.slice(slash + 1);
      const n = /^[0-9]{1,3}$/.test(bits) ? Number(bits) : -1;
      if (n < 0 || n > (type === 'ipv4' ? 32 : 128)) throw new GitwireError('GW_USAGE', `${flag}: bad prefix length in '${raw}'`);
      this.list.addSubnet(addr, n, type);
    }
  }

  /** Parse a comma-separated list (the flag's value). */
  static parse(value: string, flag = '--proxy-protocol'): ProxyTrust {
    const parts = value.split(',').map((p) => p.trim()).filter(Boolean);
    if (!parts.length) throw new GitwireError('GW_USAGE', `${flag} needs the addresses of the balancers (e.g. 10.0.0.2,10.0.0.3 or 10.0.0.0/24)`);
    return new ProxyTrust(parts, flag);
  }

  /** Must a connection from `address` open with a PROXY header? */
  trusts(address: string | undefined): boolean {
    if (!address) return false;
    // an IPv4 peer on a dual-stack listener is ::ffff:a.b.c.d
    const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (m) return this.list.check(m[1]!, 'ipv4') || this.list.check(address, 'ipv6');
    return this.list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  }
}

/**
 * Read the PROXY header a trusted balancer opens `socket` with; what
 * follows it is put back on the socket, which is left paused. Rejects
 * (GW_PROTOCOL, or GW_TIMEOUT after `timeoutMs`) when there is none: the
 * caller closes the connection.
 */
export function readProxyHeader(socket: Socket, timeoutMs = PROXY_HEADER_TIMEOUT_MS): Promise<ProxyHeader> {
  return new Promise((resolve, reject) => {
    let got: Buffer = Buffer.alloc(0);
    const done = (f: () => void) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('error', onError);
      socket.pause();
      f();
    };
    const onData = (d: Buffer) => {
      got = got.length ? Buffer.concat([got, d]) : d;
      const r = parseProxyHeader(got);
      if (r.kind === 'more') {
        if (got.length < V2_MAX) return;
        return done(() => reject(new GitwireError('GW_PROTOCOL', 'PROXY protocol: header too long')));
      }
      if (r.kind === 'bad') return done(() => reject(new GitwireError('GW_PROTOCOL', `PROXY protocol: ${r.reason}`)));
      done(() => {
        if (got.length > r.length) socket.unshift(got.subarray(r.length));
        resolve(r.header);
      });
    };
    const onEnd = () => done(() => reject(new GitwireError('GW_PROTOCOL', 'PROXY protocol: the connection ended before its header')));
    const onError = (e: Error) => done(() => reject(new GitwireError('GW_PROTOCOL', `PROXY protocol: ${e.message}`)));
    const timer = setTimeout(() => done(() => reject(new GitwireError('GW_TIMEOUT', `PROXY protocol: no header within ${timeoutMs} ms`))), timeoutMs);
    timer.unref();
    socket.on('data', onData);
    socket.once('end', onEnd);
    socket.once('close', onEnd);
    socket.on('error', onError);
    socket.resume();
  });
}

/**
 * The address a connection's client has: its PROXY header's source when it
 * comes from a trusted balancer (the balancer's own when the header names
 * none), the peer's own otherwise; undefined when the connection was
 * refused (a trusted peer without a valid header: the socket is destroyed
 * and `refused` told why).
 */
export async function clientAddress(socket: Socket, trust: ProxyTrust | undefined, refused: (reason: string) => void, timeoutMs?: number): Promise<string | undefined> {
  const peer = socket.remoteAddress;
  if (!trust || !trust.trusts(peer)) return peer ?? '';
  if (trust.waiting.size >= PROXY_MAX_PENDING) {
    const oldest = trust.waiting.values().next().value!;
    trust.waiting.delete(oldest);
    oldest.destroy(new Error('too many connections waiting for their header'));
  }
  trust.waiting.add(socket);
  try {
    const h = await readProxyHeader(socket, timeoutMs);
    return h.source?.address ?? peer ?? '';
  } catch (e) {
    socket.destroy();
    refused((e as Error).message);
    return undefined;
  } finally {
    trust.waiting.delete(socket);
  }
}
