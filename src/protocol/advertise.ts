/**
 * The v0/v1 ref advertisement, streamed through the packet writer: it
 * leaves in as few writes as its size allows.
 */
import { type UploadPackSession } from './session.js';
import { visibleRefs } from './wants.js';
import { repoShallow } from './shallow.js';
import { slicerOf } from './negotiation.js';
import { userAgent } from '../version.js';
import { Peel } from '../repo/refs/index.js';

const CAPS = 'multi_ack thin-pack side-band side-band-64k ofs-delta shallow deepen-since deepen-not deepen-relative no-progress include-tag multi_ack_detailed';
const SP = Buffer.from(' ');
const LF = Buffer.from('\n');
const PEELED_LF = Buffer.from('^{}\n');

export interface AdvertiseOptions {
  advertiseRefs: boolean;
  sessionId?: string;
}

function symrefInfo(s: UploadPackSession): string {
  const ns = s.repo.namespace;
  if (ns) {
    const r = s.repo.refs.readRaw(`${ns}HEAD`);
    if (!r?.symref) return '';
    const t = s.repo.refs.resolve(r.symref);
    if (!t?.hex) return '';
    return ` symref=HEAD:${r.symref.startsWith(ns) ? r.symref.slice(ns.length) : r.symref}`;
  }
  const h = s.repo.refs.head();
  return h.symref && h.hex ? ` symref=HEAD:${h.symref}` : '';
}

export function capabilityString(s: UploadPackSession, o: AdvertiseOptions): string {
  const a = s.cfg.allowUor;
  return CAPS +
    (a & 1 ? ' allow-tip-sha1-in-want' : '') +
    (a & 2 ? ' allow-reachable-sha1-in-want' : '') +
    (o.advertiseRefs ? ' no-done' : '') +
    symrefInfo(s) +
    (s.cfg.allowFilter ? ' filter' : '') +
    (s.cfg.advertiseSid && o.sessionId ? ` session-id=${o.sessionId}` : '') +
    ` object-format=${s.repo.format} agent=${userAgent(s.repo.env)}`;
}

/** Write the advertisement and its flush; returns after the final write. */
export async function advertiseRefs(s: UploadPackSession, o: AdvertiseOptions): Promise<void> {
  const w = s.writer;
  const repo = s.repo;
  const slicer = slicerOf(s);
  // (100,000 loose refs: seconds of reading, in slices)
  await repo.refs.prepare(slicer);
  const hexLen = repo.hexLen;
  const ns = repo.namespace;
  let caps: Buffer | undefined = Buffer.from(`\0${capabilityString(s, o)}\n`);
  const line = (b: Buffer, hexAt: number, nameAt: number, nameEnd: number) => {
    const tail = caps ?? LF;
    caps = undefined;
    if (nameAt === hexAt + hexLen + 1) w.dataRegion(b, hexAt, nameEnd, tail);
    else w.dataParts(b.subarray(hexAt, hexAt + hexLen), SP, b.subarray(nameAt, nameEnd), tail);
  };
  const peeledLine = (peeled: Buffer | string, b: Buffer, nameAt: number, nameEnd: number) => {
    w.dataParts(peeled, SP, b.subarray(nameAt, nameEnd), PEELED_LF);
  };
  // HEAD first (head_ref_namespaced)
  for (const r of visibleRefs(s, false, true)) {
    if (r.hidden) continue;
    const b = Buffer.concat([r.hex, SP, r.stripped]);
    line(b, 0, hexLen + 1, b.length);
    const known = repo.refs.knownPeeled(`${ns}HEAD`);
    if (known === 'none') continue;
    if (known) { peeledLine(known, b, hexLen + 1, b.length); continue; }
    const p = peelHex(s, r);
    if (p) peeledLine(p, b, hexLen + 1, b.length);
  }
  const hide = s.cfg.hideRefs;
  const filter = s.opts.refFilter;
  const nsLen = ns.length;
  // a backed-up client holds the scan; a fast one gets it in slices, so other requests run between them
  const pause = () => (w.backedUp ? w.waitDrained() : slicer.due());
  await repo.refs.scan(ns ? `${ns}refs/` : 'refs/', (r) => {
    const b = r.buf, hexAt = r.hexAt, nameAt = r.nameAt, nameEnd = r.nameEnd;
    const stripped = nameAt + nsLen;
    if (!hide.empty && hide.isHiddenRegion(b, stripped, nameAt, nameEnd)) return;
    if (filter && !filter(b.toString('utf8', stripped, nameEnd))) return;
    if (r.memAt >= 0 && !caps && !nsLen) w.dataScratch(r.memAt + hexAt, r.memAt + nameEnd, 10);
    else line(b, hexAt, stripped, nameEnd);
    if (r.peel === Peel.Peeled) peeledLine(r.peelBuf.subarray(r.peeledAt, r.peeledAt + hexLen), b, stripped, nameEnd);
    else if (r.peel === Peel.Unknown) {
      const p = repo.peel(r.oidTemp());
      if (p) peeledLine(p.toString('hex'), b, stripped, nameEnd);
    }
  }, pause, (n) => w.scratch(n));
  if (caps) {
    w.dataParts('0'.repeat(hexLen), ' capabilities^{}', caps);
  }
  const shallow = [...repoShallow(s)].map((k) => Buffer.from(k, 'latin1')).sort(Buffer.compare);
  for (const sh of shallow) w.data(`shallow ${sh.toString('hex')}\n`);
  w.flush();
}

function peelHex(s: UploadPackSession, r: { hex: Buffer; peeled?: Buffer; peel?: Peel }): Buffer | string | undefined {
  if (r.peel === Peel.Peeled) return r.peeled;
  if (r.peel === Peel.None) return undefined;
  const p = s.repo.peel(Buffer.from(r.hex.toString('latin1'), 'hex'));
  return p ? p.toString('hex') : undefined;
}
