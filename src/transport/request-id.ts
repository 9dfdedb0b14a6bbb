/**
 * Which log lines belong together. git's HTTP client makes two or three
 * requests for one clone or fetch (info/refs, then one POST per round, or
 * ls-refs and fetch under v2) on one kept-alive connection, and says
 * nothing that names them as one operation unless the server advertises
 * `transfer.advertiseSID`, in which case each POST carries the client's
 * `session-id`. So a request's id is its connection's (generated once per
 * connection), and the client's session id, where it sent one, is logged
 * beside it. git:// and SSH carry one operation per connection anyway.
 */
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';

const ids = new WeakMap<Socket, string>();

/** The id of this connection's requests (made on first use). */
export function connectionId(socket: Socket): string {
  let id = ids.get(socket);
  if (id === undefined) { id = randomUUID(); ids.set(socket, id); }
  return id;
}

/** packets looked at for a session id before giving up */
const SCAN_PACKETS = 64;
/** longest session id kept (git sends `git/<version>/<pid>-...`, well under this) */
const MAX_SID = 256;

/**
 * The client's `session-id` in an upload-pack request body: v2's
 * `session-id=<v>` capability line (before the command's delimiter), or
 * v0's `session-id=<v>` word on the first want line. Printable ASCII only;
 * undefined when absent or not well formed. Reads at most SCAN_PACKETS
 * packets and never copies the body; a packet is looked at as bytes,
 * only the id becomes a string.
 */
export function clientSessionId(body: Buffer): string | undefined {
  let off = 0;
  for (let n = 0; n < SCAN_PACKETS && off + 4 <= body.length; n++) {
    let len = 0;
    for (let k = 0; k < 4; k++) {
      const d = hexValue(body[off + k]!);
      if (d < 0) return undefined;
      len = len * 16 + d;
    }
    if (len < 4) return undefined; // flush, delim or response-end: past the capabilities
    if (off + len > body.length) return undefined;
    const start = off + 4;
    let end = off + len;
    if (end > start && body[end - 1] === 10) end--;
    off += len;
    let at = -1, stop = end;
    if (startsWith(body, start, end, SID)) at = start + SID.length;
    else if (startsWith(body, start, end, WANT)) {
      const i = body.indexOf(SP_SID, start);
      if (i < 0 || i + SP_SID.length > end) return undefined;
      at = i + SP_SID.length;
      // the value: up to the next whitespace (\S+)
      for (stop = at; stop < end && !isSpace(body[stop]!); stop++);
      if (stop === at) return undefined;
    }
    if (at < 0) continue;
    const v = body.toString('latin1', at, stop);
    return v.length > 0 && v.length <= MAX_SID && /^[\x21-\x7e]+$/.test(v) ? v : undefined;
  }
  return undefined;
}

const SID = Buffer.from('session-id=');
const SP_SID = Buffer.from(' session-id=');
const WANT = Buffer.from('want ');

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** what \s matches among single bytes */
function isSpace(c: number): boolean { return c === 32 || (c >= 9 && c <= 13) || c === 0xa0; }

function startsWith(b: Buffer, start: number, end: number, p: Buffer): boolean {
  if (end - start < p.length) return false;
  for (let k = 0; k < p.length; k++) if (b[start + k] !== p[k]) return false;
  return true;
}

/**
 * The client's address behind a trusted proxy: the last `X-Forwarded-For`
 * entry, the one the proxy in front of this server appended (entries to its
 * left are whatever the client claimed). Undefined without a usable header.
 */
export function forwardedFor(header: string | string[] | undefined): string | undefined {
  const h = Array.isArray(header) ? header.join(',') : header;
  if (!h) return undefined;
  const last = h.split(',').map((s) => s.trim()).filter(Boolean).pop();
  return last && last.length <= 64 && /^[0-9A-Fa-f.:[\]]+$/.test(last) ? last : undefined;
}
