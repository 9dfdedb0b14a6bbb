/**
 * upload-pack over protocol v0/v1: advertisement, wants, shallow,
 * multi_ack negotiation and the pack.
 */
import { GitwireError } from '../errors.js';
import type { PktReader } from '../pktline/reader.js';
import { advertiseRefs } from './advertise.js';
import { parseFilter } from './filter.js';
import { gotHave, negotiationState, okToGiveUp } from './negotiation.js';
import { tooManyHaves } from './limits.js';
import { sendShallowList, processShallow, isHex } from './shallow.js';
import { UploadPackSession } from './session.js';
import { checkWants, notOurRef } from './wants.js';
import { checkVisible } from './visibility.js';
import { parseDeepenLine } from './deepen.js';

const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);

/** parse_feature_request(): is `name` a whole word in the feature list? */
export function hasFeature(features: string, name: string): boolean {
  let i = 0;
  while ((i = features.indexOf(name, i)) >= 0) {
    const before = i === 0 || features[i - 1] === ' ';
    const after = features[i + name.length];
    if (before && (after === undefined || after === ' ' || after === '=')) return true;
    i += name.length;
  }
  return false;
}

export function featureValue(features: string, name: string): string | undefined {
  for (const f of features.split(' ')) if (f.startsWith(`${name}=`)) return f.slice(name.length + 1);
  return undefined;
}

async function readLine(reader: PktReader): Promise<string | undefined> {
  const p = await reader.read();
  if (p.kind === 'eof') throw new GitwireError('GW_PKT_EOF', 'the remote end hung up unexpectedly');
  if (p.kind !== 'data') return undefined;
  return p.data.toString('latin1');
}

async function receiveNeeds(s: UploadPackSession, reader: PktReader): Promise<void> {
  const hexLen = s.repo.hexLen;
  const slicer = negotiationState(s).slicer;
  let first = true;
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const line = await readLine(reader);
    if (line === undefined) break;
    if (processShallow(s, line)) continue;
    if (parseDeepenLine(s, line)) continue;
    if (line.startsWith('filter ')) {
      if (!s.filterRequested) throw die('git upload-pack: filtering capability not negotiated');
      if (s.filter) throw die('multiple filter-specs cannot be combined');
      s.filter = parseFilter(line.slice(7));
      const banned = s.cfg.filterPolicy.check(s.filter);
      if (banned) { s.writer.error(banned); throw die(banned); }
      continue;
    }
    const hex = line.slice(5, 5 + hexLen);
    if (!line.startsWith('want ') || !isHex(hex, hexLen)) {
      throw die(`git upload-pack: protocol error, expected to get object ID, not '${line}'`);
    }
    const features = line.slice(5 + hexLen);
    if (first || features) {
      if (hasFeature(features, 'deepen-relative')) s.deepenRelative = true;
      if (hasFeature(features, 'multi_ack_detailed')) s.multiAck = 2;
      else if (hasFeature(features, 'multi_ack')) s.multiAck = 1;
      if (hasFeature(features, 'no-done')) s.noDone = true;
      if (hasFeature(features, 'thin-pack')) s.thinPack = true;
      if (hasFeature(features, 'ofs-delta')) s.ofsDelta = true;
      if (hasFeature(features, 'side-band-64k')) s.sideband = 'side-band-64k';
      else if (hasFeature(features, 'side-band')) s.sideband = 'side-band';
      if (hasFeature(features, 'no-progress')) s.noProgress = true;
      if (hasFeature(features, 'include-tag')) s.includeTag = true;
      if (s.cfg.allowFilter && hasFeature(features, 'filter')) s.filterRequested = true;
      const sid = featureValue(features, 'session-id');
      if (sid) s.opts.trace?.data('transfer', 'client-sid', sid);
    }
    first = false;
    const oid = Buffer.from(hex, 'hex');
    if (!s.repo.odb.has(oid)) throw notOurRef(s, oid);
    s.addWant(oid);
  }
  checkWants(s);
  await checkVisible(s);
  if (s.sideband === 'none' && s.opts.daemonMode) s.noProgress = true;
  if (s.depth === 0 && !s.deepenRevList && s.shallows.length === 0) return;
  if (sendShallowList(s)) s.writer.flush();
}

/** get_common_commits(): returns when the client said done (or no-done ready). */
async function getCommonCommits(s: UploadPackSession, reader: PktReader): Promise<boolean> {
  const w = s.writer;
  let lastHex = '';
  let gotCommon = false, gotOther = false, sentReady = false;
  const { slicer, limits } = negotiationState(s);
  let roundHaves = 0;
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const p = await reader.read();
    if (p.kind !== 'data') {
      if (p.kind === 'eof') throw new GitwireError('GW_PKT_EOF', 'the remote end hung up unexpectedly');
      roundHaves = 0;
      if (s.multiAck === 2 && gotCommon && !gotOther && await okToGiveUp(s)) {
        sentReady = true;
        w.data(`ACK ${lastHex} ready\n`);
      }
      if (s.haves.length === 0 || s.multiAck) w.data('NAK\n');
      if (s.noDone && sentReady) {
        w.data(`ACK ${lastHex}\n`);
        w.push();
        return true;
      }
      w.push();
      if (s.opts.statelessRpc) return false;
      gotCommon = false;
      gotOther = false;
      continue;
    }
    const line = p.data.toString('latin1');
    if (line.startsWith('have ')) {
      const hex = line.slice(5);
      if (!isHex(hex, s.repo.hexLen)) throw die(`git upload-pack: expected SHA1 object, got '${hex}'`);
      if (++roundHaves > limits.maxHaves) throw tooManyHaves(limits.maxHaves);
      const oid = Buffer.from(hex, 'hex');
      const r = gotHave(s, oid);
      if (r === -1) {
        gotOther = true;
        if (s.multiAck && await okToGiveUp(s)) {
          if (s.multiAck === 2) { sentReady = true; w.data(`ACK ${hex} ready\n`); }
          else w.data(`ACK ${hex} continue\n`);
        }
      } else {
        gotCommon = true;
        lastHex = hex;
        if (s.multiAck === 2) w.data(`ACK ${lastHex} common\n`);
        else if (s.multiAck) w.data(`ACK ${lastHex} continue\n`);
        else if (s.haves.length === 1) w.data(`ACK ${lastHex}\n`);
      }
      continue;
    }
    if (line === 'done') {
      if (s.haves.length > 0) {
        if (s.multiAck) w.data(`ACK ${lastHex}\n`);
        return true;
      }
      w.data('NAK\n');
      return true;
    }
    throw die(`git upload-pack: expected SHA1 list, got '${line}'`);
  }
}

export interface V0Options {
  advertiseRefs: boolean;
  statelessRpc: boolean;
  sessionId?: string;
}

export async function uploadPackV0(s: UploadPackSession, reader: PktReader, o: V0Options): Promise<void> {
  if (o.advertiseRefs || !o.statelessRpc) {
    await advertiseRefs(s, { advertiseRefs: o.advertiseRefs, sessionId: o.sessionId });
  }
  if (o.advertiseRefs) return;
  await receiveNeeds(s, reader);
  s.writer.push();
  if (s.wants.length === 0) return;
  const next = await reader.peek();
  if (next.kind === 'eof') {
    if (o.statelessRpc) return;
    throw new GitwireError('GW_PKT_EOF', 'the remote end hung up unexpectedly');
  }
  if (!(await getCommonCommits(s, reader))) return;
  traceFetchInfo(s);
  s.stats.wants += s.wants.length;
  s.stats.haves += s.haves.length;
  const { sendPack } = await import('../pack/create-pack.js'); // loaded only when a pack is made
  await sendPack(s);
}

export function traceFetchInfo(s: UploadPackSession): void {
  const t = s.opts.trace;
  if (!t?.enabled) return;
  t.dataJson('upload-pack', 'fetch-info', {
    haves: s.haves.length,
    wants: s.wants.length,
    'want-refs': s.wantedRefs.length,
    depth: s.depth,
    shallows: s.shallows.length,
    'deepen-since': s.deepenSince,
    'deepen-not': s.deepenNot.length,
    'deepen-relative': s.deepenRelative,
    'filter': s.filter?.spec ?? null,
  });
}
