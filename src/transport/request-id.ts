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
 * packets and never copies the body.
 */
export function clientSessionId(body: Buffer): string | undefined {
  let off = 0;
  for (let n = 0; n < SCAN_PACKETS && off + 4 <= body.length; n++) {
    const len = Number.parseInt(body.toString('latin1', off, off + 4), 16);
    if (!Number.isInteger(len) || !/^[0-9a-f]{4}$/i.test(body.toString('latin1', off, off + 4))) return undefined;
    if (len < 4) return undefined; // flush, delim or response-end: past the capabilities
    if (off + len > body.length) return undefined;
    const line = body.toString('latin1', off + 4, off + len).replace(/\n$/, '');
    off += len;
    let v: string | undefined;
    if (line.startsWith('session-id=')) v = line.slice('session-id='.length);
    else if (line.startsWith('want ')) {
      const m = / session-id=(\S+)/.exec(line);
      if (!m) return undefined;
      v = m[1];
    }
    if (v !== undefined) return v.length > 0 && v.length <= MAX_SID && /^[\x21-\x7e]+$/.test(v) ? v : undefined;
  }
  return undefined;
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
