/** Transcripts in pkt-line text form: one entry per packet, `0000`/`0001`/`0002` for specials. */
import { decode, encode } from '../../src/pktline/codec.js';

export function pkt(lines: string[]): Buffer {
  return Buffer.concat(lines.map((l) => (l === '0000' || l === '0001' || l === '0002' ? Buffer.from(l) : encode(l))));
}

/** Decode a byte stream into text packets (data as latin1), stopping at the first undecodable rest. */
export function unpkt(buf: Buffer): string[] {
  const out: string[] = [];
  let b = buf;
  while (b.length) {
    const r = decode(b);
    if (r.status !== 'complete') { out.push(`<rest ${b.length} bytes>`); break; }
    const p = r.packet;
    out.push(p.kind === 'flush' ? '0000' : p.kind === 'delim' ? '0001' : p.kind === 'response-end' ? '0002' : p.data.toString('latin1'));
    b = b.subarray(r.consumed);
  }
  return out;
}

/** Split a v2 fetch response into text sections up to `packfile`, then demux the pack bands. */
export function demux(buf: Buffer): { sections: string[]; pack: Buffer; progress: string; errors: string } {
  const sections: string[] = [];
  const pack: Buffer[] = [];
  let progress = '', errors = '';
  let b = buf;
  let inPack = false;
  while (b.length) {
    const r = decode(b);
    if (r.status !== 'complete') break;
    b = b.subarray(r.consumed);
    const p = r.packet;
    if (p.kind !== 'data') { sections.push(p.kind === 'flush' ? '0000' : p.kind === 'delim' ? '0001' : '0002'); continue; }
    if (!inPack) {
      const t = p.data.toString('latin1');
      sections.push(t);
      if (t === 'packfile\n') inPack = true;
      continue;
    }
    const band = p.data[0];
    if (band === 1) pack.push(p.data.subarray(1));
    else if (band === 2) progress += p.data.subarray(1).toString('latin1');
    else if (band === 3) errors += p.data.subarray(1).toString('latin1');
  }
  return { sections, pack: Buffer.concat(pack), progress, errors };
}
