/**
 * The v0/v1 ref advertisement, streamed through the packet writer: it
 * leaves in as few writes as its size allows.
 */
import { type UploadPackSession } from './session.js';
import { visibleRefs } from './wants.js';
import { repoShallow } from './shallow.js';
import { userAgent } from '../version.js';

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
    const r = s.repo.refs.readLoose(`${ns}HEAD`);
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
  let caps: Buffer | undefined = Buffer.from(`\0${capabilityString(s, o)}\n`);
  let n = 0;
  for (const r of visibleRefs(s)) {
    if (r.hidden) continue;
    if (caps) { w.dataParts(r.hex, SP, r.stripped, caps); caps = undefined; }
    else w.dataParts(r.hex, SP, r.stripped, LF);
    const peeled = peelHex(s, r);
    if (peeled) w.dataParts(peeled, SP, r.stripped, PEELED_LF);
    if ((++n & 1023) === 0 && w.sink.backedUp) await w.drained();
  }
  if (caps) {
    w.dataParts('0'.repeat(s.repo.hexLen), ' capabilities^{}', caps);
  }
  const shallow = [...repoShallow(s)].map((k) => Buffer.from(k, 'latin1')).sort(Buffer.compare);
  for (const sh of shallow) w.data(`shallow ${sh.toString('hex')}\n`);
  w.flush();
}

function peelHex(s: UploadPackSession, r: { hex: Buffer; peeled?: Buffer; peelState?: string }): Buffer | string | undefined {
  if (r.peelState === 'peeled') return r.peeled;
  if (r.peelState === 'none') return undefined;
  const p = s.repo.peel(Buffer.from(r.hex.toString('latin1'), 'hex'));
  return p ? p.toString('hex') : undefined;
}
