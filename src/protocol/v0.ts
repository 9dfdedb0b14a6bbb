/**
 * upload-pack over protocol v0/v1: advertisement, wants, shallow,
 * multi_ack negotiation and the pack.
 */
import { pktEof, protocolError } from '../errors.js';
import type { PktReader } from '../pktline/reader.js';
import { advertiseRefs } from './advertise.js';
import { gotHave, negotiationState, okToGiveUp } from './negotiation.js';
import { sendShallowList } from './shallow.js';
import type { UploadPackConnection, UploadPackSession } from './session.js';
import { checkWants } from './wants.js';
import { checkVisible } from './visibility.js';
import { parseFetchLine, parseHave } from './request-args.js';

async function readLine(reader: PktReader): Promise<string | undefined> {
  const p = await reader.read();
  if (p.kind === 'eof') throw pktEof();
  if (p.kind !== 'data') return undefined;
  return p.data.toString('latin1');
}

/** receive_needs(): the want list with its capabilities, shallow and deepen lines, through the request table. */
async function receiveNeeds(s: UploadPackSession, reader: PktReader): Promise<void> {
  const slicer = negotiationState(s).slicer;
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const line = await readLine(reader);
    if (line === undefined) break;
    parseFetchLine(s, line);
  }
  await checkWants(s);
  await checkVisible(s);
  if (s.sideband === 'none' && s.opts.daemonMode) s.req.noProgress = true;
  if (s.req.depth === 0 && !s.req.deepenRevList && s.shallows.length === 0) return;
  if (await sendShallowList(s)) s.writer.flush();
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
      if (p.kind === 'eof') throw pktEof();
      roundHaves = 0;
      if (s.req.multiAck === 2 && gotCommon && !gotOther && await okToGiveUp(s)) {
        sentReady = true;
        w.data(`ACK ${lastHex} ready\n`);
      }
      if (s.haves.length === 0 || s.req.multiAck) w.data('NAK\n');
      if (s.req.noDone && sentReady) {
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
      const r = gotHave(s, parseHave(s, hex, ++roundHaves, limits.maxHaves));
      if (r === -1) {
        gotOther = true;
        if (s.req.multiAck && await okToGiveUp(s)) {
          if (s.req.multiAck === 2) { sentReady = true; w.data(`ACK ${hex} ready\n`); }
          else w.data(`ACK ${hex} continue\n`);
        }
      } else {
        gotCommon = true;
        lastHex = hex;
        if (s.req.multiAck === 2) w.data(`ACK ${lastHex} common\n`);
        else if (s.req.multiAck) w.data(`ACK ${lastHex} continue\n`);
        else if (s.haves.length === 1) w.data(`ACK ${lastHex}\n`);
      }
      continue;
    }
    if (line === 'done') {
      if (s.haves.length > 0) {
        if (s.req.multiAck) w.data(`ACK ${lastHex}\n`);
        return true;
      }
      w.data('NAK\n');
      return true;
    }
    throw protocolError(`git upload-pack: expected SHA1 list, got '${line}'`);
  }
}

export interface V0Options {
  advertiseRefs: boolean;
  statelessRpc: boolean;
  sessionId?: string;
}

export async function uploadPackV0(conn: UploadPackConnection, reader: PktReader, o: V0Options): Promise<void> {
  const s = conn.begin(0);
  if (o.advertiseRefs || !o.statelessRpc) {
    await advertiseRefs(s, { advertiseRefs: o.advertiseRefs, get sessionId() { return o.sessionId; } });
  }
  if (o.advertiseRefs) return;
  await receiveNeeds(s, reader);
  s.writer.push();
  if (s.wants.length === 0) return;
  const next = await reader.peek();
  if (next.kind === 'eof') {
    if (o.statelessRpc) return;
    throw pktEof();
  }
  // (no trace2 fetch-info here: git writes it for protocol v2's fetch only)
  if (!(await getCommonCommits(s, reader))) return;
  s.stats.wants += s.wants.length;
  s.stats.haves += s.haves.length;
  const { sendPack } = await import('../pack/create-pack.js'); // loaded only when a pack is made
  await sendPack(s);
}
