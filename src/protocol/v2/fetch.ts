/**
 * v2 `fetch`: git's state machine (process args, send acks, send pack)
 * on the shared fetch core. Each response section leaves in one write.
 */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { DELIM } from '../../pktline/codec.js';
import { parseFilter } from '../filter.js';
import { gotHave, okToGiveUp } from '../negotiation.js';
import { deepen, isHex, processShallow, repoShallow, sendShallowList } from '../shallow.js';
import { INFINITE_DEPTH, type UploadPackSession } from '../session.js';
import { checkWants, notOurRef } from '../wants.js';
import { parseDeepenLine } from '../deepen.js';
import { traceFetchInfo } from '../v0.js';
import { commandArgs } from './args.js';

const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);

interface FetchArgs { haves: Buffer[]; done: boolean; waitForDone: boolean }

async function processArgs(s: UploadPackSession, r: PktReader): Promise<FetchArgs> {
  const a: FetchArgs = { haves: [], done: false, waitForDone: false };
  const hexLen = s.repo.hexLen;
  for await (const line of commandArgs(r, 'fetch')) {
    if (line.startsWith('want ')) {
      const hex = line.slice(5);
      if (!isHex(hex, hexLen)) throw die(`git upload-pack: protocol error, expected to get oid, not '${line}'`);
      const oid = Buffer.from(hex, 'hex');
      if (!s.repo.odb.has(oid)) throw notOurRef(s, oid);
      s.addWant(oid);
      continue;
    }
    if (s.cfg.allowRefInWant && line.startsWith('want-ref ')) {
      const name = line.slice(9);
      const full = s.repo.namespace + name;
      const res = s.isHidden(Buffer.from(name), Buffer.from(full)) ? undefined : s.repo.refs.resolve(full);
      if (!res?.hex) {
        s.writer.error(`unknown ref ${name}`);
        throw die(`unknown ref ${name}`);
      }
      const oid = Buffer.from(res.hex.toString('latin1'), 'hex');
      s.wantedRefs.push({ name, oid });
      s.addWant(oid);
      continue;
    }
    if (line.startsWith('have ')) {
      const hex = line.slice(5);
      if (!isHex(hex, hexLen)) throw die(`git upload-pack: expected SHA1 object, got '${hex}'`);
      a.haves.push(Buffer.from(hex, 'hex'));
      continue;
    }
    switch (line) {
      case 'thin-pack': s.thinPack = true; continue;
      case 'ofs-delta': s.ofsDelta = true; continue;
      case 'no-progress': s.noProgress = true; continue;
      case 'include-tag': s.includeTag = true; continue;
      case 'done': a.done = true; continue;
      case 'wait-for-done': a.waitForDone = true; continue;
      case 'deepen-relative': s.deepenRelative = true; continue;
    }
    if (processShallow(s, line)) continue;
    if (parseDeepenLine(s, line)) continue;
    if (s.cfg.allowFilter && line.startsWith('filter ')) {
      if (s.filter) throw die('multiple filter-specs cannot be combined');
      s.filter = parseFilter(line.slice(7));
      const banned = s.cfg.filterPolicy.check(s.filter);
      if (banned) { s.writer.error(banned); throw die(banned); }
      continue;
    }
    if (line === 'sideband-all' && (s.cfg.allowSidebandAll || /^(1|true|yes|on)$/i.test(s.repo.env.GIT_TEST_SIDEBAND_ALL ?? ''))) {
      s.writer.sidebandAll = true;
      continue;
    }
    if (line.startsWith('packfile-uris ')) continue; // not offered: ignored
    throw die(`unexpected line: '${line}'`);
  }
  return a;
}

/** Hidden refs and per-request filters must not be fetchable by id. */
function enforceWantPolicy(s: UploadPackSession): void {
  if (s.cfg.hideRefs.empty && !s.opts.refFilter) return;
  checkWants(s, true); // v2 requests are independent: reachability decides, as for stateless v0
}

function sendAcks(s: UploadPackSession, common: Buffer[], waitForDone: boolean): boolean {
  const w = s.writer;
  w.data('acknowledgments\n');
  if (common.length === 0) w.data('NAK\n');
  for (const o of common) w.data(`ACK ${o.toString('hex')}\n`);
  if (!waitForDone && okToGiveUp(s)) {
    w.data('ready\n');
    return true;
  }
  return false;
}

function sendShallowInfo(s: UploadPackSession): void {
  const repoIsShallow = repoShallow(s).size > 0;
  if (!s.depth && !s.deepenRevList && !s.shallows.length && !repoIsShallow) return;
  s.writer.data('shallow-info\n');
  if (!sendShallowList(s) && repoIsShallow) deepen(s, INFINITE_DEPTH);
  s.writer.raw(DELIM);
  s.writer.push();
}

export async function fetchV2(s: UploadPackSession, r: PktReader): Promise<void> {
  s.sideband = 'side-band-64k';
  const a = await processArgs(s, r);
  if (s.wants.length === 0 && !a.waitForDone) return;
  enforceWantPolicy(s);
  const w = s.writer;
  if (a.haves.length) {
    const common: Buffer[] = [];
    for (const h of a.haves) {
      if (!s.repo.odb.has(h)) continue;
      common.push(h);
      gotHave(s, h);
    }
    if (!a.done) {
      if (sendAcks(s, common, a.waitForDone)) {
        w.delim();
        w.push();
      } else {
        w.flush();
        return;
      }
    }
  }
  if (s.wantedRefs.length) {
    w.data('wanted-refs\n');
    for (const wr of s.wantedRefs) w.data(`${wr.oid.toString('hex')} ${wr.name}\n`);
    w.delim();
    w.push();
  }
  sendShallowInfo(s);
  w.data('packfile\n');
  traceFetchInfo(s);
  const { sendPack } = await import('../../pack/create-pack.js');
  await sendPack(s);
}
