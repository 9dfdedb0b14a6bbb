/**
 * Protocol v2 (gitprotocol-v2): the capability advertisement and the
 * command loop, driven by one table of capabilities as git's serve.c.
 */
import { pktEof, protocolError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { userAgent } from '../../version.js';
import type { UploadPackConnection, UploadPackSession } from '../session.js';
import { lsRefs, lsRefsConfig } from './ls-refs.js';
import { fetchV2 } from './fetch.js';
import { fetchFeatures } from '../request-args.js';
import { objectInfo } from './object-info.js';
import { bundleUri } from './bundle-uri.js';

export interface ServeV2Options { advertiseOnly: boolean; statelessRpc: boolean; sessionId?: string }

/** `s`: the state of the command being read (a fresh one per command) */
interface Ctx { s: UploadPackSession; o: ServeV2Options; clientFormat: string }

interface Capability {
  name: string;
  /** undefined: not advertised (and not accepted); '' : no value */
  advertise(c: Ctx): string | undefined;
  command?(c: Ctx, r: PktReader): Promise<void>;
  receive?(c: Ctx, value: string | undefined): void;
}

const CAPABILITIES: Capability[] = [
  { name: 'agent', advertise: (c) => userAgent(c.s.repo.env) },
  { name: 'ls-refs', advertise: (c) => (lsRefsConfig(c.s).advertise ? 'unborn' : ''), command: (c, r) => lsRefs(c.s, r) },
  {
    name: 'fetch',
    advertise: (c) => fetchFeatures(c.s), // from the request table, which also accepts them
    command: (c, r) => fetchV2(c.s, r),
  },
  { name: 'server-option', advertise: () => '' },
  {
    name: 'object-format',
    advertise: (c) => c.s.repo.format,
    receive: (c, v) => {
      if (v === undefined) throw protocolError('object-format capability requires an argument');
      if (v !== 'sha1' && v !== 'sha256') throw protocolError(`unknown object format '${v}'`);
      c.clientFormat = v;
    },
  },
  {
    name: 'session-id',
    advertise: (c) => (c.s.cfg.advertiseSid && c.o.sessionId ? c.o.sessionId : undefined),
    receive: (c, v) => c.s.opts.trace?.data('transfer', 'client-sid', v ?? ''),
  },
  {
    name: 'object-info',
    advertise: (c) => (c.s.repo.config.getBool('transfer.advertiseobjectinfo', false) ? '' : undefined),
    command: (c, r) => objectInfo(c.s, r),
  },
  {
    name: 'bundle-uri',
    // on by default when the server offers bundles it made; uploadpack.advertiseBundleURIs=false turns it off
    advertise: (c) => (c.s.repo.config.getBool('uploadpack.advertisebundleuris', c.s.opts.bundleOffer !== undefined) ? '' : undefined),
    command: (c, r) => bundleUri(c.s, r),
  },
];

export function advertiseCapabilities(s: UploadPackSession, o: ServeV2Options): void {
  const c: Ctx = { s, o, clientFormat: 'sha1' };
  const w = s.writer;
  w.data('version 2\n');
  for (const cap of CAPABILITIES) {
    const v = cap.advertise(c);
    if (v === undefined) continue;
    w.data(v ? `${cap.name}=${v}\n` : `${cap.name}\n`);
  }
  w.flush();
}

function getCapability(key: string): { cap: Capability; value: string | undefined } | undefined {
  for (const cap of CAPABILITIES) {
    if (!key.startsWith(cap.name)) continue;
    const rest = key.slice(cap.name.length);
    if (rest === '') return { cap, value: undefined };
    if (rest[0] === '=') return { cap, value: rest.slice(1) };
  }
  return undefined;
}

/** process_request(): false when the client is done (EOF or an empty flush). */
async function processRequest(c: Ctx, r: PktReader): Promise<boolean> {
  const first = await r.peek();
  if (first.kind === 'eof') return false;
  let command: Capability | undefined;
  let seen = false;
  for (;;) {
    const p = await r.peek();
    if (p.kind === 'eof') throw pktEof();
    if (p.kind === 'flush') {
      if (!seen) { await r.read(); return false; }
      break;
    }
    if (p.kind === 'delim') { await r.read(); break; }
    if (p.kind === 'response-end') throw protocolError('unexpected response end packet');
    const line = p.data.toString('latin1');
    if (line.startsWith('command=')) {
      const name = line.slice(8);
      const found = getCapability(name);
      if (command) throw protocolError(`command '${name}' requested after already requesting command '${command.name}'`);
      if (!found || found.cap.advertise(c) === undefined || !found.cap.command || found.value !== undefined) throw protocolError(`invalid command '${name}'`);
      command = found.cap;
      seen = true;
    } else {
      const found = getCapability(line);
      if (!found || found.cap.command || found.cap.advertise(c) === undefined) throw protocolError(`unknown capability '${line}'`);
      found.cap.receive?.(c, found.value);
      seen = true;
    }
    await r.read();
  }
  if (!command) throw protocolError('no command requested');
  if (c.clientFormat !== c.s.repo.format) throw protocolError(`mismatched object format: server ${c.s.repo.format}; client ${c.clientFormat}\n`); // git 2.39 prints the stray LF
  c.s.conn.command = command.name;
  await command.command!(c, r);
  return true;
}

export async function serveV2(conn: UploadPackConnection, r: PktReader, o: ServeV2Options): Promise<void> {
  if (o.advertiseOnly) { advertiseCapabilities(conn.begin(2), o); return; }
  if (!o.statelessRpc) advertiseCapabilities(conn.begin(2), o);
  if (o.statelessRpc) { await processRequest({ s: conn.begin(2), o, clientFormat: 'sha1' }, r); return; }
  // state per command, as upload_pack_v2() and serve()'s loop keep it
  while (await processRequest({ s: conn.begin(2), o, clientFormat: 'sha1' }, r)) { /* next command */ }
}
