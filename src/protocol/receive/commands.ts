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
import { signedPartEnd } from './push-cert.js';

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
  /** the push certificate as sent (lines up to `push-cert-end`), when the push is signed */
  pushCert?: string;
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
  let pushCert: string | undefined;
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
      // the certificate's lines keep their LF; it ends at `push-cert-end` or a flush
      const chomp = reader.options.chomp;
      reader.options.chomp = false;
      const parts: Buffer[] = [];
      let flushed = false;
      try {
        for (;;) {
          const q = await reader.read();
          if (q.kind === 'flush') { flushed = true; break; }
          if (q.kind !== 'data') throw protocolError('protocol error: got an unexpected packet');
          if (q.data.length === 14 && q.data.toString('latin1') === 'push-cert-end\n') break;
          const z = q.data.indexOf(0);
          parts.push(z < 0 ? q.data : q.data.subarray(0, z));
        }
      } finally { reader.options.chomp = chomp; }
      pushCert = (pushCert ?? '') + decodeName(Buffer.concat(parts), 0, Buffer.concat(parts).length);
      if (flushed) break;
      continue;
    }
    commands.push(parseCommand(line, hexLen));
  }
  if (pushCert !== undefined) queueCommandsFromCert(pushCert, commands, hexLen);
  return { commands, shallow, caps, pushCert };
}

/** queue_command() */
function parseCommand(line: string, hexLen: number): Command {
  const oldHex = line.slice(0, hexLen), newHex = line.slice(hexLen + 1, 2 * hexLen + 1);
  // parse_oid_hex(): either case
  if (!isHex(oldHex, hexLen, true) || line[hexLen] !== ' ' || !isHex(newHex, hexLen, true) || line[2 * hexLen + 1] !== ' ') {
    throw protocolError(`protocol error: expected old/new/ref, got '${line}'`);
  }
  return { old: parseHex(oldHex.toLowerCase()), new: parseHex(newHex.toLowerCase()), ref: line.slice(2 * hexLen + 2) };
}

/** queue_commands_from_cert(): the commands are the certificate's lines between its header and its signature */
function queueCommandsFromCert(cert: string, commands: Command[], hexLen: number): void {
  if (commands.length) throw protocolError('protocol error: got both push certificate and unsigned commands');
  const boc = cert.indexOf('\n\n');
  if (boc < 0) throw protocolError(`malformed push certificate ${cert.slice(0, 100)}`);
  const eoc = signedPartEnd(cert);
  for (let at = boc + 2; at < eoc;) {
    const eol = cert.indexOf('\n', at);
    const end = eol < 0 || eol > eoc ? eoc : eol;
    commands.push(parseCommand(cert.slice(at, end), hexLen));
    at = end + 1;
  }
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
