/**
 * Cheaper outgoing SSH packets for ssh2's ciphers.
 *
 * ssh2 builds every outgoing SSH packet in its cipher's `allocPacket`: a
 * buffer of its own (`Buffer.allocUnsafe`, a fresh backing store for a
 * 32 KiB packet) and one `randomFillSync` call for its 4-255 bytes of
 * padding. A clone of a 126 MB pack over OpenSSH's 32 KiB packets is ~3,900
 * of each: in serve's profile the padding calls alone were ~85 ms and the
 * backing stores most of the GC time, out of ~1.3 s.
 *
 * `adoptPackets(client)` gives the connection's current cipher an
 * `allocPacket` that lays out the very same packet (length, padding length,
 * padding, room for the MAC or tag) in a view of a 256 KiB slab of the
 * connection's own, with its
 * padding taken from a 64 KiB pool of `randomFillSync` output; no byte of
 * the pool is handed out twice. The layout is not assumed: on each cipher
 * (after every key exchange) the stock `allocPacket` is probed for payload
 * lengths 0..63 and a few large ones, and the replacement is installed only
 * if one (block size, aligned offset, MAC length) reproduces every probe's
 * length and header bytes. Anything else (another ssh2 version, a cipher
 * with other rules) keeps ssh2's own.
 */
import { randomFillSync } from 'node:crypto';

interface Cipher { allocPacket?: (payloadLen: number) => Buffer; [ADOPTED]?: true }
const ADOPTED = Symbol('gitwire.packets');
const SLABS = Symbol('gitwire.slabs');

/**
 * Each connection's data packets are cut from slabs of its own, so that a
 * slow client's queued packets keep only its own slabs alive (at most its
 * socket queue's worth plus one). Small packets (keepalives, window
 * adjusts, an idle connection's traffic) take no slab.
 */
const SLAB = 256 * 1024;
const SMALL = 1024;
class Slabs {
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;
  take(n: number): Buffer {
    if (n <= SMALL || n > SLAB / 2) return Buffer.allocUnsafe(n);
    if (this.used + n > this.slab.length) { this.slab = Buffer.allocUnsafeSlow(SLAB); this.used = 0; }
    const b = this.slab.subarray(this.used, this.used + n);
    this.used = (this.used + n + 7) & ~7;
    return b;
  }
  /** forget the current slab (its packets already queued keep it alive until they are written) */
  release(): void { this.slab = Buffer.allocUnsafeSlow(0); this.used = 0; }
}

/** CSPRNG output handed out once, in order, refilled 64 KiB at a time */
const POOL = Buffer.allocUnsafeSlow(64 * 1024);
let poolUsed = POOL.length;
function padding(into: Buffer, at: number, n: number): void {
  if (poolUsed + n > POOL.length) { randomFillSync(POOL); poolUsed = 0; }
  POOL.copy(into, at, poolUsed, poolUsed + n);
  poolUsed += n;
}

export interface PacketLayout { block: number; aligned: number; mac: number }

/** SSH padding for a payload: at least 4 bytes, up to a multiple of `block` (from byte `aligned` on) */
function padLength(block: number, aligned: number, payloadLen: number): number {
  const padLen = block - ((5 + payloadLen - aligned) & (block - 1));
  return padLen < 4 ? padLen + block : padLen;
}

/** lay out a packet of `payloadLen` bytes as ssh2 does for `layout` */
function alloc(layout: PacketLayout, slabs: Slabs, payloadLen: number): Buffer {
  const { block, aligned, mac } = layout;
  const padLen = padLength(block, aligned, payloadLen);
  const pktLen = 5 + payloadLen + padLen;
  const packet = slabs.take(pktLen + mac);
  packet.writeUInt32BE(pktLen - 4, 0);
  packet[4] = padLen;
  padding(packet, 5 + payloadLen, padLen);
  return packet;
}

const PROBES = [...Array.from({ length: 64 }, (_, i) => i), 1000, 16_384, 32_741, 32_768, 65_531];

/** the layout that reproduces every probe of `stock`, if exactly one does */
export function learnLayout(stock: (payloadLen: number) => Buffer): PacketLayout | undefined {
  const seen = PROBES.map((p) => { const b = stock(p); return { p, len: b.length, head: b.readUInt32BE(0), pad: b[4]! }; });
  const fits: PacketLayout[] = [];
  for (const block of [8, 16, 32]) {
    for (const aligned of [0, 4]) {
      const first = seen[0]!;
      const mac = first.len - (5 + first.p + padLength(block, aligned, first.p));
      if (mac < 0 || mac > 64) continue;
      const ok = seen.every(({ p, len, head, pad }) => {
        const padLen = padLength(block, aligned, p);
        const pktLen = 5 + p + padLen;
        return pad === padLen && head === pktLen - 4 && len === pktLen + mac;
      });
      if (ok) fits.push({ block, aligned, mac });
    }
  }
  // two layouts that agree on every probe are the same packets; take the first
  return fits[0];
}

/** Give `client`'s current outgoing cipher the cheaper packets, when it lays them out as we can. Idempotent. */
export function adoptPackets(client: object): boolean {
  const cipher = (client as { _protocol?: { _cipher?: Cipher } })._protocol?._cipher;
  if (!cipher || typeof cipher.allocPacket !== 'function') return false;
  if (cipher[ADOPTED]) return true;
  const stock = cipher.allocPacket.bind(cipher);
  let layout: PacketLayout | undefined;
  try { layout = learnLayout(stock); } catch { layout = undefined; }
  if (!layout) return false;
  const l = layout;
  const slabs = ((client as { [SLABS]?: Slabs })[SLABS] ??= new Slabs());
  cipher.allocPacket = (payloadLen: number) => alloc(l, slabs, payloadLen);
  cipher[ADOPTED] = true;
  return true;
}

/** The connection has no channel left: it keeps no slab while idle (the next data packet cuts a new one). */
export function releaseSlabs(client: object): void {
  (client as { [SLABS]?: Slabs })[SLABS]?.release();
}
