/**
 * The push request (read_head_info): `<old> <new> <ref>` commands, the
 * client's capabilities after a NUL on the first, `shallow` lines, and
 * push options when negotiated.
 */
import { pktEof, protocolError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { hasFeature, featureValue } from '../request.js';
import { isHex, parseHex } from '../../repo/oid.js';
import { Slicer } from '../../util/budget.js';
import { decodeName } from '../../util/byte-name.js';

export interface Command {
  old: Buffer;
  new: Buffer;
  /** ref name as the client sent it (no namespace) */
  ref: string;
  /** error_string: the `ng` reason */
  error?: string;
  skipUpdate?: boolean;
  didNotExist?: boolean;
  /** proc-receive's PROC_SCHEDULED / PROC_RETURNED bits (0 or absent: receive-pack writes the ref) */
  procReceive?: number;
  /** what proc-receive reported for this command: one entry per `ok` it answered with options */
  reports?: RefReport[];
}

/** One ref the proc-receive hook reports (git's struct ref_push_report). */
export interface RefReport {
  refname?: string;
  oldOid?: Buffer;
  newOid?: Buffer;
  forcedUpdate?: boolean;
}

export interface ClientCaps {
  reportStatus: boolean;
  reportStatusV2: boolean;
  sideband: boolean;
  quiet: boolean;
  atomic: boolean;
  pushOptions: boolean;
  sessionId?: string;
}

export interface PushRequest {
  commands: Command[];
  shallow: Buffer[];
  caps: ClientCaps;
}


export function isNullOid(b: Buffer): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

export async function readPushRequest(reader: PktReader, o: { hexLen: number; format: string; advertiseAtomic: boolean; advertisePushOptions: boolean }): Promise<PushRequest> {
  const caps: ClientCaps = { reportStatus: false, reportStatusV2: false, sideband: false, quiet: false, atomic: false, pushOptions: false };
  const commands: Command[] = [];
  const shallow: Buffer[] = [];
  const hexLen = o.hexLen;
  // a request already buffered is read without waiting on I/O: 190,000 lines in slices
  const slicer = new Slicer();
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const p = await reader.read();
    if (p.kind === 'eof') throw pktEof();
    if (p.kind !== 'data') break;
    const raw = p.data;
    if (raw.length > 8 && raw.toString('latin1', 0, 8) === 'shallow ') {
      const hex = raw.toString('latin1', 8);
      if (hex.length < hexLen || !isHex(hex.slice(0, hexLen), hexLen)) throw protocolError(`protocol error: expected shallow sha, got '${hex}'`);
      shallow.push(Buffer.from(hex.slice(0, hexLen), 'hex'));
      continue;
    }
    const nul = raw.indexOf(0);
    // the ref name's bytes kept whole, UTF-8 or not (util/byte-name)
    const line = decodeName(raw, 0, nul < 0 ? raw.length : nul);
    if (nul >= 0) {
      const f = raw.toString('latin1', nul + 1);
      if (hasFeature(f, 'report-status')) caps.reportStatus = true;
      if (hasFeature(f, 'report-status-v2')) caps.reportStatusV2 = true;
      if (hasFeature(f, 'side-band-64k')) caps.sideband = true;
      if (hasFeature(f, 'quiet')) caps.quiet = true;
      if (o.advertiseAtomic && hasFeature(f, 'atomic')) caps.atomic = true;
      if (o.advertisePushOptions && hasFeature(f, 'push-options')) caps.pushOptions = true;
      const fmt = featureValue(f, 'object-format') ?? 'sha1';
      if (fmt !== o.format) throw protocolError(`error: unsupported object format '${fmt}'`);
      const sid = featureValue(f, 'session-id');
      if (sid) caps.sessionId = sid;
    }
    if (line === 'push-cert') {
      // push certificates are not supported (push-cert is never advertised)
      throw protocolError(`protocol error: expected old/new/ref, got '${line}'`);
    }
    const oldHex = line.slice(0, hexLen), newHex = line.slice(hexLen + 1, 2 * hexLen + 1);
    // parse_oid_hex(): either case
    if (!isHex(oldHex, hexLen, true) || line[hexLen] !== ' ' || !isHex(newHex, hexLen, true) || line[2 * hexLen + 1] !== ' ') {
      throw protocolError(`protocol error: expected old/new/ref, got '${line}'`);
    }
    commands.push({ old: parseHex(oldHex.toLowerCase()), new: parseHex(newHex.toLowerCase()), ref: line.slice(2 * hexLen + 2) });
  }
  return { commands, shallow, caps };
}

/** read_push_options(): data lines until a flush */
export async function readPushOptions(reader: PktReader): Promise<string[]> {
  const out: string[] = [];
  const slicer = new Slicer();
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const p = await reader.read();
    if (p.kind === 'eof') throw pktEof();
    if (p.kind !== 'data') break;
    out.push(p.data.toString('utf8'));
  }
  return out;
}
