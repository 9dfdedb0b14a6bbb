/**
 * Git LFS over SSH: `git-lfs-authenticate <path> <operation>` (a token for
 * the HTTP API) and `git-lfs-transfer <path> <operation>`, the pure-SSH
 * protocol of git-lfs ≥ 3.0 (git-lfs's docs/proposals/ssh_adapter.md, as
 * its client speaks it): pkt-lines, a capability advertisement, `version
 * 1`, then `batch`, `get-object`, `put-object`, `verify-object`, `lock`,
 * `list-lock`, `list-locks`, `unlock` and `quit`, each answered with a
 * `status <http-code>` line, arguments, and data or an error message.
 */
import { PktReader } from '../pktline/reader.js';
import { DELIM, encode, FLUSH, LARGE_PACKET_DATA_MAX } from '../pktline/codec.js';
import type { LfsGate } from './exchange.js';
import { isOid, isSize } from './oid.js';
import { noteBytesMoved } from '../util/reclaim.js';
import { GitwireError } from '../errors.js';
import { LfsService, MAX_JSON_BYTES } from './service.js';
import type { LfsOperation } from './token.js';
import { isLockId, isLockPath, MAX_LOCK_PAGE, DEFAULT_LOCK_PAGE, type Lock } from './locks.js';

export type LfsSshCommand = 'git-lfs-authenticate' | 'git-lfs-transfer';
export type LfsSshOperation = LfsOperation | 'lock';

export type LfsExec =
  | { kind: 'lfs'; command: LfsSshCommand; path: string; operation: LfsSshOperation }
  | { kind: 'lfs-bad'; command: LfsSshCommand; message: string };

/**
 * `git-lfs-transfer <path> <operation>` as git-lfs sends it: the path as is,
 * or single-quoted; undefined for any other command.
 */
export function parseLfsExec(command: string, dequote: (s: string) => string | undefined): LfsExec | undefined {
  const m = /^(git-lfs-authenticate|git-lfs-transfer) (.+)$/s.exec(command);
  if (!m) return undefined;
  const cmd = m[1] as LfsSshCommand;
  const rest = m[2]!;
  const sp = rest.lastIndexOf(' ');
  if (sp < 0) return { kind: 'lfs-bad', command: cmd, message: `usage: ${cmd} <path> <upload|download>` };
  const op = rest.slice(sp + 1);
  let path = rest.slice(0, sp).trim();
  if (path.startsWith("'")) {
    const d = dequote(path);
    if (d === undefined) return { kind: 'lfs-bad', command: cmd, message: 'bad argument' };
    path = d;
  }
  if (op !== 'upload' && op !== 'download' && !(cmd === 'git-lfs-transfer' && op === 'lock')) {
    return { kind: 'lfs-bad', command: cmd, message: `unknown operation '${op.replace(/[^\x20-\x7e]/g, '?').slice(0, 40)}' (upload or download)` };
  }
  if (!path || path.startsWith('-') || /[\x00-\x1f\x7f]/.test(path)) return { kind: 'lfs-bad', command: cmd, message: 'bad argument' };
  return { kind: 'lfs', command: cmd, path, operation: op };
}

/** The JSON git-lfs-authenticate prints: where the HTTP API is and the token to send it. */
export function authenticateAnswer(lfs: LfsService, path: string, dir: string, operation: LfsOperation, user: string | undefined): string | undefined {
  if (!lfs.publicUrl) return undefined;
  const { token, expiresAt } = lfs.signer.sign({ repository: dir, operation, user }, lfs.tokenTtl);
  const p = path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
  return `${JSON.stringify({
    href: `${lfs.publicUrl}/${p}${p ? '/' : ''}info/lfs`,
    header: { Authorization: `Bearer ${token}` },
    expires_in: lfs.tokenTtl,
    expires_at: new Date(expiresAt * 1000).toISOString(),
  })}\n`;
}

/** Where git-lfs-transfer writes: each write resolves when the channel can take more (backpressure). */
export interface LfsChannel {
  input: AsyncIterable<Buffer>;
  write(b: Buffer): Promise<void>;
}

/** a command's arguments, its lines after a delim, as the client sent them */
interface Request { command: string; args: Map<string, string>; lines: string[]; delim: boolean }

class ProtocolError extends Error {}

const text = (s: string) => encode(`${s}\n`);

export interface TransferLog { command?: string; objects: number; bytesIn: number; bytesOut: number }

/**
 * Serve one git-lfs-transfer session on an admitted repository until
 * `quit` or the end of input. Throws on a protocol error (the caller
 * says `fatal:` and ends the channel).
 */
export async function serveLfsTransfer(lfs: LfsService, ch: LfsChannel, repo: { dir: string; name: string }, operation: LfsSshOperation, gate: Pick<LfsGate, 'user'>, log: TransferLog): Promise<void> {
  const reader = new PktReader(ch.input, { maxBytesPerFlush: undefined });
  const store = lfs.repository(repo.dir, repo.name);
  const locks = lfs.locks(repo.dir);
  const user = gate.user() ?? 'anonymous';
  /** a put-object's data has been read up to its flush */
  let dataEnded = false;
  const out = async (...pkts: Buffer[]) => { await ch.write(pkts.length === 1 ? pkts[0]! : Buffer.concat(pkts)); };
  const status = (code: number, args: string[] = [], message?: string) => {
    const p = [text(`status ${code}`), ...args.map(text)];
    if (message !== undefined) p.push(DELIM, text(message));
    p.push(FLUSH);
    return out(...p);
  };

  /** Read a command up to its delim (args only) or flush (args and lines). */
  const readCommand = async (maxLines: number): Promise<Request | undefined> => {
    const first = await reader.read();
    if (first.kind === 'eof') return undefined;
    if (first.kind !== 'data') throw new ProtocolError('expected a command');
    const command = first.data.toString('utf8').replace(/\n$/, '');
    const args = new Map<string, string>();
    const lines: string[] = [];
    let delim = false;
    // a command's lines are small (an oid and a size each): all of them together at most what a JSON body may be
    let bytes = first.data.length;
    for (;;) {
      const p = await reader.read();
      if (p.kind === 'data' && (bytes += p.data.length) > MAX_JSON_BYTES) throw new ProtocolError(`command larger than ${MAX_JSON_BYTES} bytes`);
      if (p.kind === 'eof') throw new ProtocolError('the client hung up inside a command');
      if (p.kind === 'flush') return { command, args, lines, delim };
      if (p.kind === 'delim') {
        if (delim) throw new ProtocolError('unexpected delimiter packet');
        delim = true;
        // put-object: the data follows, read by the command itself
        if (command.startsWith('put-object ')) return { command, args, lines, delim };
        continue;
      }
      if (p.kind !== 'data') throw new ProtocolError('unexpected packet');
      const s = p.data.toString('utf8').replace(/\n$/, '');
      if (delim) {
        if (lines.length >= maxLines) throw new ProtocolError(`too many lines (at most ${maxLines})`);
        lines.push(s);
      } else {
        if (args.size >= 32) throw new ProtocolError('too many arguments');
        const eq = s.indexOf('=');
        args.set(eq < 0 ? s : s.slice(0, eq), eq < 0 ? '' : s.slice(eq + 1));
      }
    }
  };

  // the advertisement; then the client says which version it speaks
  await out(text('version=1'), text('locking'), FLUSH);
  const v = await readCommand(0);
  if (!v) return;
  if (v.command !== 'version 1') { await status(400, [], 'unknown version'); return; }
  await status(200);

  const canUpload = operation !== 'download';
  const lockArgs = (l: Lock) => [`id=${l.id}`, `path=${l.path}`, `locked-at=${l.locked_at}`, `ownername=${l.owner.name}`];
  for (;;) {
    const r = await readCommand(lfs.maxBatchObjects);
    if (!r) return;
    const [verb, arg] = splitVerb(r.command);
    log.command = verb;
    switch (verb) {
      case 'quit': await status(200); return;
      case 'batch': await batch(r); break;
      case 'get-object': await getObject(arg, r); break;
      case 'put-object': await putObject(arg, r); break;
      case 'verify-object': await verifyObject(arg, r); break;
      case 'lock': await lock(r); break;
      case 'list-lock': case 'list-locks': await listLocks(r, verb === 'list-locks'); break;
      case 'unlock': await unlock(arg, r); break;
      default: await status(400, [], `unknown command '${verb.replace(/[^\x20-\x7e]/g, '?').slice(0, 40)}'`);
    }
  }

  function splitVerb(c: string): [string, string] {
    const i = c.indexOf(' ');
    return i < 0 ? [c, ''] : [c.slice(0, i), c.slice(i + 1)];
  }

  async function batch(r: Request): Promise<void> {
    const op = operation === 'download' ? 'download' : 'upload';
    const hash = r.args.get('hash-algo');
    if (hash !== undefined && hash !== 'sha256') return status(409, [], `unsupported hash algorithm: ${hash.slice(0, 40)}`);
    const objects = r.lines.map((l) => {
      const [oid, size] = l.split(' ');
      return { oid, size: /^\d{1,16}$/.test(size ?? '') ? Number(size) : -1 };
    });
    log.objects += objects.length;
    const answers = await lfs.batch(store, op, objects);
    const lines: Buffer[] = [];
    for (const a of answers) {
      const size = a.size;
      // the pure-SSH batch has no per-object errors: an object with nothing to do is a noop, an error a whole-batch status
      if (a.kind === 'error' && !(op === 'download' && a.code === 404)) return status(a.code, [], `${a.oid}: ${a.message}`);
      if (a.kind === 'noop' || a.kind === 'error') lines.push(text(`${a.oid} ${size} noop`));
      else if (op === 'download') lines.push(text(`${a.oid} ${size} download`));
      else lines.push(text(`${a.oid} ${size} upload`), text(`${a.oid} ${size} verify`));
    }
    await out(text('status 200'), text('hash-algo=sha256'), DELIM, ...lines, FLUSH);
  }

  async function getObject(oid: string, _r: Request): Promise<void> {
    if (!isOid(oid)) return status(400, [], 'invalid object ID');
    const size = await store.size(oid);
    const stream = size === undefined ? undefined : await store.read?.(oid);
    if (size === undefined || !stream) return status(404, [], 'object does not exist');
    await out(text('status 200'), text(`size=${size}`), DELIM);
    let pending: Buffer[] = [];
    let n = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        for (let at = 0; at < chunk.length; at += LARGE_PACKET_DATA_MAX) {
          pending.push(encode(chunk.subarray(at, at + LARGE_PACKET_DATA_MAX)));
          n += Math.min(LARGE_PACKET_DATA_MAX, chunk.length - at);
        }
        noteBytesMoved(chunk.length);
        await ch.write(Buffer.concat(pending));
        pending = [];
      }
    } finally { stream.destroy(); }
    log.bytesOut += n;
    await out(FLUSH);
  }

  /** the data packets of a put-object, up to its flush (`dataEnded` once it was read) */
  async function* objectData(): AsyncGenerator<Buffer> {
    for (;;) {
      const p = await reader.read();
      if (p.kind === 'flush') { dataEnded = true; return; }
      if (p.kind !== 'data') throw new ProtocolError('expected object data');
      log.bytesIn += p.data.length;
      noteBytesMoved(p.data.length);
      yield p.data;
    }
  }

  async function putObject(oid: string, r: Request): Promise<void> {
    dataEnded = false;
    const data = objectData();
    // the rest of a refused object, up to its flush, read from the wire itself: a store that stopped early has closed `data`
    // (what is left of the object must never be read as commands)
    const drain = async () => {
      while (!dataEnded) {
        const p = await reader.read();
        if (p.kind === 'flush') dataEnded = true;
        else if (p.kind !== 'data') throw new ProtocolError('expected object data');
      }
    };
    const size = Number(r.args.get('size'));
    if (!r.delim) throw new ProtocolError('put-object without data');
    if (!canUpload) { await drain(); return status(403, [], 'this connection may only download'); }
    if (!isOid(oid)) { await drain(); return status(400, [], 'invalid object ID'); }
    if (!isSize(size) || r.args.get('size') === '') { await drain(); return status(400, [], 'put-object needs size=<bytes>'); }
    const max = lfs.options.maxObjectSize;
    if (max !== undefined && size > max) { await drain(); return status(413, [], `object size ${size} exceeds the maximum of ${max} bytes`); }
    if (!store.write) { await drain(); return status(501, [], 'this server takes LFS uploads over HTTP only'); }
    const w = await store.write(oid, data, { expectedSize: size, maxSize: max });
    await drain();
    if (w.ok) return status(200);
    if (w.kind === 'too-large') return status(413, [], `object size exceeds the maximum of ${w.limit} bytes`);
    if (w.kind === 'mismatch') return status(422, [], `object does not match its oid: ${w.message}`);
    return status(/space|quota/.test(w.message) ? 507 : 500, [], `the object could not be stored: ${w.message}`);
  }

  async function verifyObject(oidArg: string, r: Request): Promise<void> {
    const [oid, sizeWord] = oidArg.split(' ');
    const size = Number(r.args.get('size') ?? sizeWord);
    if (!isOid(oid) || !isSize(size)) return status(400, [], 'verify-object needs an oid and a size');
    const have = await lfs.storedGood(store, oid);
    if (have === undefined) return status(404, [], 'object does not exist');
    if (have !== size) return status(422, [], `object size ${have} does not match the expected ${size}`);
    return status(200);
  }

  async function lock(r: Request): Promise<void> {
    if (!canUpload) return status(403, [], 'this connection may only download');
    const path = r.args.get('path');
    if (!isLockPath(path)) return status(400, [], 'a lock needs a path');
    const c = await locks.create(path, user);
    if (c.ok) return status(201, lockArgs(c.lock));
    return status(409, lockArgs(c.existing), 'already created lock');
  }

  async function listLocks(r: Request, verify: boolean): Promise<void> {
    // listing is reading (git lfs locks opens a download connection); verifying is part of a push
    if (verify && !canUpload) return status(403, [], 'this connection may only download');
    const limitArg = r.args.get('limit');
    const limit = limitArg === undefined ? DEFAULT_LOCK_PAGE : /^\d{1,9}$/.test(limitArg) && Number(limitArg) > 0 ? Math.min(Number(limitArg), MAX_LOCK_PAGE) : 0;
    if (!limit) return status(400, [], 'limit must be a positive number');
    const path = r.args.get('path');
    const id = r.args.get('id');
    let found: Lock[];
    let next: string | undefined;
    if (!verify && (path !== undefined || id !== undefined)) {
      const l = id !== undefined ? await locks.byId(id) : await locks.byPath(path!);
      found = l && (path === undefined || l.path === path) ? [l] : [];
    } else {
      const cursor = r.args.get('cursor');
      ({ locks: found, next } = await locks.list(cursor && /^[0-9a-f-]{1,64}$/.test(cursor) ? cursor : undefined, limit));
    }
    const lines: Buffer[] = [];
    for (const l of found) {
      lines.push(text(`lock ${l.id}`), text(`path ${l.id} ${l.path}`), text(`locked-at ${l.id} ${l.locked_at}`), text(`ownername ${l.id} ${l.owner.name}`));
      if (verify) lines.push(text(`owner ${l.id} ${l.owner.name === user ? 'ours' : 'theirs'}`));
    }
    await out(text('status 200'), ...(next ? [text(`next-cursor=${next}`)] : []), DELIM, ...lines, FLUSH);
  }

  async function unlock(id: string, r: Request): Promise<void> {
    if (!canUpload) return status(403, [], 'this connection may only download');
    if (!isLockId(id)) return status(404, [], 'unable to find lock');
    const u = await locks.unlock(id, user, r.args.get('force') === 'true');
    if (u.ok) return status(200, lockArgs(u.lock));
    if (u.reason === 'not-found') return status(404, [], 'unable to find lock');
    return status(403, [], `lock ${u.lock.id} on ${u.lock.path} is owned by ${u.lock.owner.name}: unlock --force to remove it`);
  }
}

export { ProtocolError as LfsProtocolError };

/** What the SSH server gives one LFS command. */
export interface LfsSshSession extends LfsChannel {
  gate: LfsGate;
  stderr(s: string): void;
}

/** How an LFS command ended, for the SSH server's exit status and log line. */
export interface LfsSshResult { code: number; outcome: string; log: TransferLog; reason?: string }

/** Run `git-lfs-authenticate` or `git-lfs-transfer` on an authenticated SSH channel. */
export async function serveLfsSsh(lfs: LfsService, req: LfsExec, s: LfsSshSession): Promise<LfsSshResult> {
  const log: TransferLog = { command: req.command, objects: 0, bytesIn: 0, bytesOut: 0 };
  const fatal = (msg: string, outcome: string, code = 128): LfsSshResult => { s.stderr(`fatal: ${msg}\n`); return { code, outcome, log }; };
  if (req.kind === 'lfs-bad') return fatal(req.message, 'bad-argument');
  const service = req.operation === 'download' ? 'lfs-download' : 'lfs-upload';
  const adm = await s.gate.admit(service);
  if (!adm.ok) {
    return fatal(adm.deny.status === 404 ? `'${req.path.replace(/[\x00-\x1f\x7f]/g, '?')}' does not appear to be a git repository` : adm.deny.message, adm.deny.status === 404 ? 'not-found' : 'denied');
  }
  if (req.command === 'git-lfs-authenticate') {
    if (req.operation === 'lock') return fatal('unknown operation', 'bad-argument');
    const answer = authenticateAnswer(lfs, req.path, adm.dir, req.operation, s.gate.user());
    if (!answer) return fatal('git-lfs-authenticate: Git LFS over HTTP is not served here (use git-lfs-transfer)', 'unsupported-service', 1);
    await s.write(Buffer.from(answer));
    return { code: 0, outcome: 'ok', log };
  }
  const store = lfs.repository(adm.dir, adm.name);
  // a store clients reach directly (S3) is used through HTTP: git-lfs falls back to git-lfs-authenticate
  if (lfs.options.sshTransfer === false || !lfs.relays(store)) return fatal('git-lfs-transfer: not served here (use git-lfs-authenticate)', 'unsupported-service', 1);
  try {
    await serveLfsTransfer(lfs, s, adm, req.operation, s.gate, log);
  } catch (e) {
    if (e instanceof ProtocolError || (e as { code?: string }).code?.startsWith('GW_PKT')) return { ...fatal(`protocol error: ${(e as Error).message}`, 'protocol-error'), reason: (e as Error).message };
    // a stored object that turned out damaged while it was sent: cut before its flush, so the client never takes it
    if (e instanceof GitwireError && e.code === 'GW_OBJECT_CORRUPT') return { ...fatal(e.message, e.code), reason: e.message };
    throw e;
  }
  return { code: 0, outcome: 'ok', log };
}
