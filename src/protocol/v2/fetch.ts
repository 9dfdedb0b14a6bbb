/**
 * v2 `fetch`: git's state machine (process args, send acks, send pack)
 * on the shared fetch core. Each response section leaves in one write.
 */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { DELIM } from '../../pktline/codec.js';
import { parseFilter } from '../filter.js';
import { gotHave, negotiationState, okToGiveUp } from '../negotiation.js';
import { tooManyHaves } from '../limits.js';
import { deepen, isHex, processShallow, repoShallow, sendShallowList } from '../shallow.js';
import { INFINITE_DEPTH, type UploadPackSession } from '../session.js';
import { checkWants, notOurRef } from '../wants.js';
import { checkVisible } from '../visibility.js';
import { parseDeepenLine } from '../deepen.js';
import { traceFetchInfo } from '../v0.js';
import { commandArgs } from './args.js';

const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);

/** `seenHaves`: the request had have lines; their effect is in the session (got_oid while parsing, as git) */
interface FetchArgs { seenHaves: number; done: boolean; waitForDone: boolean }

async function processArgs(s: UploadPackSession, r: PktReader): Promise<FetchArgs> {
  const a: FetchArgs = { seenHaves: 0, done: false, waitForDone: false };
  const hexLen = s.repo.hexLen;
  const { slicer, limits } = negotiationState(s);
  for await (const line of commandArgs(r, 'fetch')) {
    const tick = slicer.tick();
    if (tick) await tick;
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
      const oid = resolveWantRef(s, name);
      if (s.wantedRefs.some((w) => w.name === name)) {
        s.writer.error(`duplicate want-ref ${name}`);
        throw die(`duplicate want-ref ${name}`);
      }
      s.wantedRefs.push({ name, oid });
      s.addWant(oid);
      continue;
    }
    if (line.startsWith('have ')) {
      const hex = line.slice(5);
      if (!isHex(hex, hexLen)) throw die(`git upload-pack: expected SHA1 object, got '${hex}'`);
      if (++a.seenHaves > limits.maxHaves) throw tooManyHaves(limits.maxHaves); // ERR sent by uploadPack
      // only new haves we have are kept (s.haves, git's have_obj): memory does not grow with unknown ones
      gotHave(s, Buffer.from(hex, 'hex'));
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

/**
 * parse_want_ref(): the name is checked (check_refname_format, inside
 * RefStore.resolve) before anything is read, then hidden refs and the
 * per-request refFilter decide on the name asked for and on the ref a
 * symref leads to. Anything else is git's `unknown ref <name>`.
 */
function resolveWantRef(s: UploadPackSession, name: string): Buffer {
  const full = s.repo.namespace + name;
  const unknown = () => { s.writer.error(`unknown ref ${name}`); return die(`unknown ref ${name}`); };
  if (s.isHidden(Buffer.from(name), Buffer.from(full))) throw unknown();
  const res = s.repo.refs.resolve(full);
  if (!res?.hex) throw unknown();
  if (res.target !== full && s.opts.refFilter) {
    const ns = s.repo.namespace;
    const stripped = ns ? (res.target.startsWith(ns) ? res.target.slice(ns.length) : undefined) : res.target;
    if (stripped === undefined || s.isHidden(Buffer.from(stripped), Buffer.from(res.target))) throw unknown();
  }
  return Buffer.from(res.hex.toString('latin1'), 'hex');
}

/** Hidden refs and per-request filters must not be fetchable by id. */
function enforceWantPolicy(s: UploadPackSession): void {
  if (s.cfg.hideRefs.empty && !s.opts.refFilter) return;
  checkWants(s, true); // v2 requests are independent: reachability decides, as for stateless v0
}

/** send_acks(): every new have we have (have_obj), once each */
async function sendAcks(s: UploadPackSession, waitForDone: boolean): Promise<boolean> {
  const w = s.writer;
  w.data('acknowledgments\n');
  if (s.haves.length === 0) w.data('NAK\n');
  for (const o of s.haves) w.data(`ACK ${o.toString('hex')}\n`);
  if (!waitForDone && await okToGiveUp(s)) {
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
  await checkVisible(s);
  const w = s.writer;
  if (a.seenHaves) {
    if (!a.done) {
      if (await sendAcks(s, a.waitForDone)) {
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
