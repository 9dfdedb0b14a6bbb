/** v2 `ls-refs`: symrefs, peel, ref-prefix, unborn. */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { hexOfBytes, rawFromHexBytes, toHex } from '../../repo/oid.js';
import type { UploadPackSession } from '../session.js';
import { commandArgs } from './args.js';
import { slicerOf } from '../negotiation.js';
import { Peel } from '../../repo/refs/index.js';
import { decodeName } from '../../util/byte-name.js';

const TOO_MANY_PREFIXES = 65536;
const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);
const SP = Buffer.from(' ');
const LF = Buffer.from('\n');
const PEELED = Buffer.from(' peeled:');

/** lsrefs.unborn: advertise (default), allow, or ignore. */
export function lsRefsConfig(s: UploadPackSession): { advertise: boolean; allow: boolean } {
  const v = s.repo.config.get('lsrefs.unborn');
  if (v === undefined || v === 'advertise') return { advertise: true, allow: true };
  if (v === 'allow') return { advertise: false, allow: true };
  if (v === 'ignore') return { advertise: false, allow: false };
  throw die(`invalid value for 'lsrefs.unborn': '${v}'`);
}

export async function lsRefs(s: UploadPackSession, r: PktReader): Promise<void> {
  let peel = false, symrefs = false, unborn = false;
  const prefixes: string[] = [];
  let tooMany = false;
  for await (const arg of commandArgs(r, 'ls-refs')) {
    if (arg === 'peel') peel = true;
    else if (arg === 'symrefs') symrefs = true;
    else if (arg.startsWith('ref-prefix ')) {
      // the prefix's bytes as a name string (util/byte-name), as the refs it is matched with
      if (prefixes.length < TOO_MANY_PREFIXES) prefixes.push(decodeName(Buffer.from(arg, 'latin1'), 11)); else tooMany = true;
    } else if (arg === 'unborn') unborn = lsRefsConfig(s).allow;
    else throw die(`unexpected line: '${arg}'`);
  }
  if (tooMany || prefixes.length >= TOO_MANY_PREFIXES) prefixes.length = 0;
  const matchHead = () => prefixes.length === 0 || prefixes.some((q) => 'HEAD'.startsWith(q));
  const w = s.writer;
  const ns = s.repo.namespace;
  const refs = s.repo.refs;
  // a backed-up client holds the scan below; a fast one gets it in slices, so other requests run between them
  const slicer = slicerOf(s);
  await refs.prepare(slicer);
  const stripNs = (name: string) => (ns && name.startsWith(ns) ? name.slice(ns.length) : name);

  // HEAD, possibly unborn
  const headName = `${ns}HEAD`;
  const raw = refs.readRaw(headName);
  let headHex: Buffer | undefined, headTarget: string | undefined;
  if (raw?.symref) { headTarget = raw.symref; headHex = refs.resolve(raw.symref)?.hex; }
  else if (raw?.hex) headHex = raw.hex;
  const HEAD = Buffer.from('HEAD');
  if ((headHex || (unborn && symrefs && headTarget)) && !s.isHidden(HEAD, Buffer.from(headName)) && matchHead()) {
    let line = headHex ? `${headHex.toString('latin1')} HEAD` : 'unborn HEAD';
    if (symrefs && headTarget) line += ` symref-target:${stripNs(headTarget)}`;
    if (peel && headHex) {
      const known = refs.knownPeeled(headName);
      const raw = known === undefined ? s.repo.peel(rawFromHexBytes(headHex)) : undefined; // packed-refs knows it as hex, peeling gives raw
      const pe = known === 'none' ? undefined : known ? hexOfBytes(known) : raw && toHex(raw);
      if (pe) line += ` peeled:${pe}`;
    }
    w.data(`${line}\n`);
  }

  const hexLen = s.repo.hexLen;
  const hide = s.cfg.hideRefs;
  const filter = s.opts.refFilter;
  const nsLen = ns.length;
  const plain = !symrefs && !peel;
  // each prefix is a seek into the sorted refs, not a test of every ref (git's for_each_fullref_in_prefixes)
  const scanned = prefixes.length ? prefixes.map((p) => ns + p) : [ns || 'refs/'];
  await refs.scan(scanned, (r) => {
    const b = r.buf, hexAt = r.hexAt, nameAt = r.nameAt, nameEnd = r.nameEnd, symref = r.symref;
    const stripped = nameAt + nsLen;
    if (!hide.empty && hide.isHiddenRegion(b, stripped, nameAt, nameEnd)) return;
    if (filter && !filter(b.toString('utf8', stripped, nameEnd))) return;
    // only the object can tell (a ref stored without its peeled value): looked up once, here
    const peeledOid = peel && r.peel === Peel.Unknown ? s.repo.peel(r.oidTemp()) : undefined;
    // most refs carry no attribute: keep them on the copy-only path (within the writer's memory when read into it)
    if (!nsLen && (plain || (!(symrefs && symref) && !(peel && (r.peel === Peel.Peeled || peeledOid))))) {
      if (r.memAt >= 0) w.dataScratch(r.memAt + hexAt, r.memAt + nameEnd, 10);
      else w.dataRegion(b, hexAt, nameEnd, LF);
      return;
    }
    if (!nsLen && !(symrefs && symref) && r.peel === Peel.Peeled && nameAt === hexAt + hexLen + 1) {
      // a tag with its peeled id in packed-refs (2,000 of refs-11k's 11,000): regions only, no string built
      w.dataParts(b.subarray(hexAt, nameEnd), PEELED, r.peelBuf.subarray(r.peeledAt, r.peeledAt + hexLen), LF);
      return;
    }
    let tail = '';
    if (symrefs && symref) tail += ` symref-target:${stripNs(symref)}`;
    if (peel) {
      if (r.peel === Peel.Peeled) tail += ` peeled:${r.peelBuf.toString('latin1', r.peeledAt, r.peeledAt + hexLen)}`;
      else if (peeledOid) tail += ` peeled:${peeledOid.toString('hex')}`;
    }
    w.dataParts(b.subarray(hexAt, hexAt + hexLen), SP, b.subarray(stripped, nameEnd), tail, LF);
  }, () => (w.backedUp ? w.waitDrained() : slicer.due()), (n) => w.scratch(n));
  w.flush();
}
