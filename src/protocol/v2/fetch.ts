/**
 * v2 `fetch`: git's state machine (upload_pack_v2: process args, send acks,
 * send pack, done) on the shared fetch core. The arguments are parsed into
 * the command's FetchRequest through the request table; each response
 * section leaves in one write.
 */
import type { PktReader } from '../../pktline/reader.js';
import { DELIM } from '../../pktline/codec.js';
import { negotiationState, okToGiveUp } from '../negotiation.js';
import { deepen, repoShallow, sendShallowList } from '../shallow.js';
import { INFINITE_DEPTH, type UploadPackSession } from '../session.js';
import { checkWants } from '../wants.js';
import { checkVisible } from '../visibility.js';
import { parseFetchLine } from '../request-args.js';
import { commandArgs } from './args.js';
import { toHex } from '../../repo/oid.js';

/** git's enum fetch_state */
export const enum FetchState { ProcessArgs, SendAcks, SendPack, Done }

/** process_args(): every argument line into the request, in order (haves reach the negotiation as they come). */
async function processArgs(s: UploadPackSession, r: PktReader): Promise<void> {
  const { slicer } = negotiationState(s);
  for await (const line of commandArgs(r, 'fetch')) {
    const tick = slicer.tick();
    if (tick) await tick;
    parseFetchLine(s, line);
  }
}

/** Hidden refs and per-request filters must not be fetchable by id. */
async function enforceWantPolicy(s: UploadPackSession): Promise<void> {
  if (s.cfg.hideRefs.empty && !s.opts.refFilter) return;
  await checkWants(s, true); // v2 requests are independent: reachability decides, as for stateless v0
}

/** send_acks(): every new have we have (have_obj), once each */
async function sendAcks(s: UploadPackSession): Promise<boolean> {
  const w = s.writer;
  w.data('acknowledgments\n');
  if (s.haves.length === 0) w.data('NAK\n');
  for (const o of s.haves) w.data(`ACK ${toHex(o)}\n`);
  if (!s.req.waitForDone && await okToGiveUp(s)) {
    w.data('ready\n');
    return true;
  }
  return false;
}

/** process_haves_and_send_acks(): true when the pack follows */
async function processHavesAndSendAcks(s: UploadPackSession): Promise<boolean> {
  if (s.req.done) return true;
  if (await sendAcks(s)) {
    s.writer.delim();
    s.writer.push();
    return true;
  }
  s.writer.flush();
  return false;
}

function sendWantedRefInfo(s: UploadPackSession): void {
  if (!s.req.wantedRefs.length) return;
  const w = s.writer;
  w.data('wanted-refs\n');
  for (const wr of s.req.wantedRefs) w.data(`${toHex(wr.oid)} ${wr.name}\n`);
  w.delim();
  w.push();
}

async function sendShallowInfo(s: UploadPackSession): Promise<void> {
  const repoIsShallow = repoShallow(s).size > 0;
  if (!s.req.depth && !s.req.deepenRevList && !s.shallows.length && !repoIsShallow) return;
  s.writer.data('shallow-info\n');
  if (!(await sendShallowList(s)) && repoIsShallow) await deepen(s, INFINITE_DEPTH);
  s.writer.raw(DELIM);
  s.writer.push();
}

export async function fetchV2(s: UploadPackSession, r: PktReader): Promise<void> {
  s.sideband = 'side-band-64k'; // git's use_sideband = LARGE_PACKET_MAX for every v2 fetch
  let state = FetchState.ProcessArgs;
  while (state !== FetchState.Done) {
    switch (state) {
      case FetchState.ProcessArgs:
        await processArgs(s, r);
        if (s.wants.length === 0 && !s.req.waitForDone) {
          state = FetchState.Done; // no wants: they did not want anything
          break;
        }
        await enforceWantPolicy(s);
        await checkVisible(s);
        state = s.req.haveLines ? FetchState.SendAcks : FetchState.SendPack;
        break;
      case FetchState.SendAcks:
        state = (await processHavesAndSendAcks(s)) ? FetchState.SendPack : FetchState.Done;
        break;
      case FetchState.SendPack: {
        sendWantedRefInfo(s);
        await sendShallowInfo(s);
        s.writer.data('packfile\n');
        s.traceFetchInfo();
        const offer = s.opts.bundleOffer;
        if (offer?.started && s.opts.refFilter === undefined && s.repo.namespace === '') {
          const b = offer.started(s.repo, s.haves);
          if (b) s.stats.bundle = b;
        }
        const { sendPack } = await import('../../pack/create-pack.js');
        await sendPack(s);
        state = FetchState.Done;
        break;
      }
    }
  }
}
