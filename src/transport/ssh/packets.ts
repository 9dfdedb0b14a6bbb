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
 *
 * A full slab is used again once every packet cut from it has been written
 * (`written`, from the socket's write callback: its bytes are the
 * kernel's), and the connection keeps up to KEEP such slabs. Without that a
 * clone of a 126 MB pack made ~500 fresh 256 KiB backing stores: each one
 * page-faulted and zeroed by the kernel, and freed only by a collection of
 * their wrappers (the forced scavenges of util/reclaim.ts). A packet that
 * never reaches the socket (queued by ssh2 during a key exchange and copied
 * into a new cipher's packet, or dropped on a closed socket) keeps its slab
 * from coming back: that slab is left to the collector.
 */
const SLAB = 256 * 1024;
const SMALL = 1024;
const KEEP = 4;
interface Slab { readonly buf: Buffer; used: number; pending: number; full: boolean; gen: number }
export class Slabs {
  private cur: Slab | undefined;
  private readonly free: Slab[] = [];
  private readonly owners = new WeakMap<ArrayBuffer, Slab>();
  private gen = 0;
  /** slabs made, and slabs used again (for tests and the bench) */
  readonly stats = { made: 0, reused: 0 };
  take(n: number): Buffer {
    if (n <= SMALL || n > SLAB / 2) return Buffer.allocUnsafe(n);
    let s = this.cur;
    if (!s || s.used + n > SLAB) {
      if (s) { s.full = true; if (s.pending === 0) this.recycle(s); }
      s = this.cur = this.next();
    }
    const b = s.buf.subarray(s.used, s.used + n);
    s.used = (s.used + n + 7) & ~7;
    s.pending++;
    return b;
  }
  private next(): Slab {
    const r = this.free.pop();
    if (r) { r.used = 0; r.full = false; this.stats.reused++; return r; }
    const buf = Buffer.allocUnsafeSlow(SLAB);
    const s: Slab = { buf, used: 0, pending: 0, full: false, gen: this.gen };
    this.owners.set(buf.buffer as ArrayBuffer, s);
    this.stats.made++;
    return s;
  }
  /** the slab `b` was cut from, if it is one of this connection's */
  owner(b: Buffer): Slab | undefined { return this.owners.get(b.buffer as ArrayBuffer); }
  /** a packet cut from `s` has been written */
  written(s: Slab): void {
    s.pending--;
    if (s.full && s.pending === 0) this.recycle(s);
  }
  private recycle(s: Slab): void {
    if (s.gen === this.gen && this.free.length < KEEP) this.free.push(s);
  }
  /** forget the current slab and the spare ones (packets already queued keep theirs alive until they are written) */
  release(): void { this.cur = undefined; this.free.length = 0; this.gen++; }
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

/** Whether `client`'s current outgoing cipher cuts its packets from slabs. */
export function adoptedPackets(client: object | undefined): boolean {
  return !!(client as { _protocol?: { _cipher?: Cipher } } | undefined)?._protocol?._cipher?.[ADOPTED];
}

/** The slabs `client`'s packets are cut from, once a cipher has been adopted. */
export function slabsOf(client: object): Slabs | undefined {
  return (client as { [SLABS]?: Slabs })[SLABS];
}
