/**
 * A bundle file over HTTP: `GET`/`HEAD` with one `Range` (206; 416 past the
 * end), an `ETag` (the file's inode, size and time: a bundle replaced under
 * the same name gets a new one) and `If-None-Match` (304), `If-Range`.
 *
 * The body is read one large chunk at a time straight from the file into
 * one buffer per download, and the next read waits until the socket has
 * taken the chunk before it (the write's callback): a download holds one
 * chunk of memory however slow its client, makes no garbage per chunk,
 * and a client that leaves stops the reads. A file that ends early (truncated
 * while it was sent) cuts the response: with Content-Length, the client
 * sees an incomplete body, never a short one passed off as whole.
 *
 * Node has no sendfile: each byte is copied twice (page cache to the
 * chunk, chunk to the socket), and each chunk costs a thread-pool read (a
 * handoff each way), a write and their callbacks. So chunks are large
 * (2 MiB) while few downloads run, and 256 KiB once BIG_BUDGET bytes of big
 * ones are out (a hundred downloads at once hold 16 + 23 MiB, not 200).
 * Chunks go back to a small free list shared by every download: a download
 * does not fault in fresh memory for its chunk.
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseRange } from '../lfs/http.js';

/** bytes per read (and per write) while big chunks are within BIG_BUDGET: one syscall each way per chunk */
export const CHUNK_BYTES = 2 * 1024 * 1024;
/** bytes per read once they are not */
export const SMALL_CHUNK_BYTES = 256 * 1024;
/** bytes of big chunks out at once, every download together */
const BIG_BUDGET = 16 * 1024 * 1024;
/** free chunks kept for reuse, of each size (8 + 2 MiB) */
const FREE_MAX = 4;
const free: Record<number, Buffer[]> = { [CHUNK_BYTES]: [], [SMALL_CHUNK_BYTES]: [] };
let bigOut = 0;

/** A chunk for a download of `length` bytes: a big one while the budget allows; none bigger than the body. */
function takeChunk(length: number): Buffer {
  if (length <= SMALL_CHUNK_BYTES) return Buffer.allocUnsafe(length);
  if (bigOut + CHUNK_BYTES <= BIG_BUDGET) {
    bigOut += CHUNK_BYTES;
    return free[CHUNK_BYTES]!.pop() ?? Buffer.allocUnsafeSlow(CHUNK_BYTES);
  }
  return free[SMALL_CHUNK_BYTES]!.pop() ?? Buffer.allocUnsafeSlow(SMALL_CHUNK_BYTES);
}

/** Give a chunk back (nothing reads into it or writes from it any more). */
function giveChunk(buf: Buffer): void {
  if (buf.length === CHUNK_BYTES) bigOut -= CHUNK_BYTES;
  const list = free[buf.length];
  if (list && list.length < FREE_MAX) list.push(buf);
}

/** bytes of big chunks out now (tests) */
export function bigChunkBytesOut(): number { return bigOut; }

export interface FileAnswer {
  status: number;
  /** body bytes sent */
  bytesOut: number;
  outcome: 'ok' | 'not-modified' | 'bad-range' | 'client-gone' | 'truncated' | 'not-found';
}

function etagOf(st: { ino: number; size: number; mtimeMs: number }): string {
  return `"${st.ino.toString(16)}-${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
}

function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => { const v = t.trim(); return v === '*' || v === etag || v === `W/${etag}`; });
}

export async function sendBundleFile(req: IncomingMessage, res: ServerResponse, file: string): Promise<FileAnswer> {
  let fh: FileHandle;
  try { fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW); } catch { return { status: 404, bytesOut: 0, outcome: 'not-found' }; }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return { status: 404, bytesOut: 0, outcome: 'not-found' };
    const size = st.size;
    const etag = etagOf(st);
    const common: Record<string, string | number> = { ETag: etag, 'Accept-Ranges': 'bytes', 'Cache-Control': 'private, max-age=0, must-revalidate' };
    if (matches(req.headers['if-none-match'] as string | undefined, etag)) {
      res.writeHead(304, common);
      res.end();
      return { status: 304, bytesOut: 0, outcome: 'not-modified' };
    }
    const ifRange = req.headers['if-range'];
    const rangeHeader = typeof req.headers.range === 'string' && (ifRange === undefined || ifRange === etag) ? req.headers.range : undefined;
    const range = size === 0 ? undefined : parseRange(rangeHeader, size);
    if (range === 'bad') {
      res.writeHead(416, { ...common, 'Content-Range': `bytes */${size}`, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 32 });
      res.end('Requested range not satisfiable\n');
      return { status: 416, bytesOut: 0, outcome: 'bad-range' };
    }
    const [start, last] = range ?? [0, size - 1];
    const length = size === 0 ? 0 : last - start + 1;
    const status = range ? 206 : 200;
    const headers: Record<string, string | number> = { ...common, 'Content-Type': 'application/x-git-bundle', 'Content-Length': length };
    if (range) headers['Content-Range'] = `bytes ${start}-${last}/${size}`;
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || length === 0) { res.end(); return { status, bytesOut: 0, outcome: 'ok' }; }
    let pos = start;
    let sent = 0;
    let gone = res.destroyed;
    const onClose = () => { gone = true; wake?.(); };
    let wake: (() => void) | undefined;
    res.once('close', onClose);
    // one buffer for the whole download: written, and reused once the socket has taken it (the write's callback)
    const buf = takeChunk(length);
    // a write not called back yet still reads the chunk: it is not given back then (the garbage collector takes it)
    let writing = false;
    try {
      while (pos <= last) {
        if (gone) return { status, bytesOut: sent, outcome: 'client-gone' };
        const want = Math.min(buf.length, last - pos + 1);
        const { bytesRead } = await fh.read(buf, 0, want, pos);
        if (bytesRead === 0) { res.destroy(); return { status, bytesOut: sent, outcome: 'truncated' }; }
        pos += bytesRead;
        // the next read waits until this chunk is written (or the client is gone)
        writing = true;
        const written = new Promise<void>((resolve) => { wake = resolve; res.write(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead), () => { writing = false; resolve(); }); });
        await written;
        wake = undefined;
        if (gone) return { status, bytesOut: sent, outcome: 'client-gone' };
        sent += bytesRead;
      }
    } finally {
      res.off('close', onClose);
      if (!writing) giveChunk(buf);
      else if (buf.length === CHUNK_BYTES) bigOut -= CHUNK_BYTES;
    }
    res.end();
    return { status, bytesOut: sent, outcome: 'ok' };
  } finally {
    await fh.close().catch(() => undefined);
  }
}
