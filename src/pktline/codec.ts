/**
 * Pure pkt-line codec (gitprotocol-common). No I/O.
 */
import { GitwireError, pktBadLength, pktBadLengthChar } from '../errors.js';

export const LARGE_PACKET_MAX = 65520;
export const LARGE_PACKET_DATA_MAX = 65516;
/** payload per sideband packet: one byte goes to the band designator */
export const SIDEBAND_64K_MAX = LARGE_PACKET_DATA_MAX - 1; // 65515
export const SIDEBAND_MAX = 1000 - 5; // 995

export const enum Band { Data = 1, Progress = 2, Error = 3 }

export type Packet =
  | { kind: 'data'; data: Buffer }
  | { kind: 'flush' }
  | { kind: 'delim' }
  | { kind: 'response-end' };

export const FLUSH = Buffer.from('0000');
export const DELIM = Buffer.from('0001');
export const RESPONSE_END = Buffer.from('0002');

const HEX = Buffer.from('0123456789abcdef');

/** Write the 4-byte hex length at `out[at..at+4]`. */
export function putHeader(out: Buffer, at: number, total: number): void {
  out[at] = HEX[(total >> 12) & 15]!;
  out[at + 1] = HEX[(total >> 8) & 15]!;
  out[at + 2] = HEX[(total >> 4) & 15]!;
  out[at + 3] = HEX[total & 15]!;
}

export function encode(data: Buffer | string): Buffer {
  const payload = typeof data === 'string' ? Buffer.from(data) : data;
  if (payload.length > LARGE_PACKET_DATA_MAX) {
    throw new GitwireError('GW_PKT_TOO_LONG', 'protocol error: impossibly long line');
  }
  const out = Buffer.allocUnsafe(payload.length + 4);
  putHeader(out, 0, payload.length + 4);
  payload.copy(out, 4);
  return out;
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** Parse a 4-byte length header; throws typed errors for malformed ones. */
export function parseLength(buf: Buffer, at = 0): number {
  let v = 0;
  for (let i = 0; i < 4; i++) {
    const h = hexVal(buf[at + i]!);
    if (h < 0) throw pktBadLengthChar(buf.subarray(at, at + 4).toString('latin1'));
    v = (v << 4) | h;
  }
  // git's packet_read: 0003 is bad, 0004 an empty packet (writers never send it, readers take it),
  // and the data may fill git's LARGE_PACKET_MAX-byte buffer but one byte (0xfff3 at most)
  if (v === 3) throw pktBadLength(v);
  if (v - 4 >= LARGE_PACKET_MAX) throw pktBadLength(v - 4);
  return v;
}

export type DecodeResult =
  | { status: 'complete'; packet: Packet; consumed: number }
  | { status: 'incomplete'; need: number };

/**
 * Decode one packet from the start of `buf`. "Need more bytes" is a result,
 * malformed input is a thrown GitwireError.
 */
export function decode(buf: Buffer): DecodeResult {
  if (buf.length < 4) return { status: 'incomplete', need: 4 - buf.length };
  const len = parseLength(buf, 0);
  if (len === 0) return { status: 'complete', packet: { kind: 'flush' }, consumed: 4 };
  if (len === 1) return { status: 'complete', packet: { kind: 'delim' }, consumed: 4 };
  if (len === 2) return { status: 'complete', packet: { kind: 'response-end' }, consumed: 4 };
  if (buf.length < len) return { status: 'incomplete', need: len - buf.length };
  return { status: 'complete', packet: { kind: 'data', data: buf.subarray(4, len) }, consumed: len };
}

/** Encode a packet of any kind. */
export function encodePacket(p: Packet): Buffer {
  switch (p.kind) {
    case 'flush': return FLUSH;
    case 'delim': return DELIM;
    case 'response-end': return RESPONSE_END;
    case 'data': return encode(p.data);
  }
}

/** Strip one trailing LF (a view, no copy). */
export function chomp(b: Buffer): Buffer {
  return b.length > 0 && b[b.length - 1] === 10 ? b.subarray(0, b.length - 1) : b;
}
