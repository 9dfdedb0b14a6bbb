/**
 * What both smart-HTTP services (http.ts, http-push.ts) answer with
 * before a conversation starts, and how a request body is read and,
 * after the answer, let go of.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import { createGunzip, createInflate, gunzipSync, inflateSync } from 'node:zlib';
import { clientGone } from '../errors.js';
import type { Deny } from './http.js';

export const NO_CACHE: Readonly<Record<string, string>> = {
  Expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
  Pragma: 'no-cache',
  'Cache-Control': 'no-cache, max-age=0, must-revalidate',
};

/** A short text answer (or, once a response has started, its end). */
export function plain(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) { res.end(); return; }
  res.writeHead(status, { ...NO_CACHE, 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(message.endsWith('\n') ? message : `${message}\n`);
}

/**
 * Every "no such repository here" answer: unroutable, undecodable, outside
 * the root, absent, or one the user may not see. One response, byte for
 * byte, so a client cannot tell them apart; the reason goes to the log.
 */
export function notFound(res: ServerResponse): void { plain(res, 404, 'Not Found'); }

/**
 * An `authenticate`/`authorize` refusal. A 404 is answered exactly as a
 * missing repository (its message and headers are not used): a repository
 * the user may not see looks absent.
 */
export function refuse(res: ServerResponse, d: Deny): void {
  if (d.status === 404) notFound(res);
  else plain(res, d.status, d.message, d.headers);
}

/** What the client gets when the server itself failed (the log has the error). */
export function internalError(res: ServerResponse): void { plain(res, 500, 'Internal Server Error'); }

/** The Content-Encodings a request body may have. */
export function knownEncoding(req: IncomingMessage): boolean {
  const enc = (req.headers['content-encoding'] ?? '').toLowerCase();
  return ['', 'identity', 'gzip', 'x-gzip', 'deflate'].includes(enc);
}

/** a compressed body of at most this many bytes (by Content-Length) is inflated in one call, not streamed */
export const SMALL_COMPRESSED = 16 * 1024;
/** what such a body may inflate to in that call; past it, the body is streamed through zlib after all */
export const SYNC_INFLATE_MAX = 1024 * 1024;

/**
 * The request body, inflated per Content-Encoding (check knownEncoding
 * first). Stopping early does not destroy the request: the caller
 * answers, then lets go of the rest with `drainRequest`. A client that
 * goes away mid-body ends the iteration with an error (GW_CLIENT_GONE,
 * or the stream's own), bad compressed bytes with zlib's error.
 */
export class RequestBody implements AsyncIterable<Buffer> {
  private readonly inflate: Transform | undefined;
  private readonly it: AsyncIterator<Buffer>;
  constructor(readonly req: IncomingMessage) {
    const enc = (req.headers['content-encoding'] ?? '').toLowerCase();
    const gzip = enc === 'gzip' || enc === 'x-gzip';
    const length = Number(req.headers['content-length'] ?? NaN);
    if ((gzip || enc === 'deflate') && length > 0 && length <= SMALL_COMPRESSED) {
      this.it = this.inflateSmall(gzip);
      return;
    }
    if (gzip) this.inflate = createGunzip();
    else if (enc === 'deflate') this.inflate = createInflate();
    const z = this.inflate;
    if (z) {
      // not pipeline(): letting go of the inflater must not destroy the request (a reset)
      req.pipe(z);
      const gone = () => { if (!req.complete) z.destroy(clientGone()); };
      req.once('error', gone);
      req.once('close', gone);
    }
    this.it = (z ?? req).iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
  }

  /**
   * A small compressed body (what git sends with every fetch: its haves
   * are gzipped past a few lines), taken whole and inflated at once: a
   * zlib stream costs a thread-pool round trip per chunk and its stream
   * machinery, ~0.1 ms a request for a body of 600 bytes. The output is
   * capped (SYNC_INFLATE_MAX: a short hold of the loop at most); a body
   * that inflates to more goes through the stream as a large one does.
   */
  private async *inflateSmall(gzip: boolean): AsyncGenerator<Buffer> {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of this.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      chunks.push(c);
      n += c.length;
      // (the parser keeps to Content-Length: more is never delivered as this body)
    }
    if (!this.req.complete) throw clientGone();
    const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, n);
    let out: Buffer;
    try {
      out = (gzip ? gunzipSync : inflateSync)(raw, { maxOutputLength: SYNC_INFLATE_MAX });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') throw e;
      const z = gzip ? createGunzip() : createInflate();
      z.end(raw);
      for await (const c of z as AsyncIterable<Buffer>) yield c;
      return;
    }
    if (out.length) yield out;
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return {
      next: async () => {
        const r = await this.it.next();
        // an aborted request can end the iteration quietly: a short body is not a request
        if (r.done && !this.req.complete) throw clientGone();
        return r;
      },
    };
  }

  /** Stop reading (the request stays open, its listeners are removed). */
  async release(): Promise<void> {
    if (this.inflate) { this.req.unpipe(this.inflate); this.inflate.destroy(); }
    try { await this.it.return?.(); } catch { /* already failed */ }
  }
}

/** what a client may still send, discarded, after its request was answered early */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
/** ms it may take to send it */
export const DRAIN_MAX_MS = 10_000;

/**
 * After an answer that did not read the whole request (a protocol error,
 * a refusal): end the response, then read and discard what the client
 * still sends, so that it reads the answer rather than a reset (a reset
 * makes its kernel drop what it had received but not read). Bounded:
 * past DRAIN_MAX_BYTES or DRAIN_MAX_MS the connection is closed.
 */
export async function drainRequest(req: IncomingMessage, res: ServerResponse, body?: RequestBody): Promise<void> {
  if (!res.writableEnded) res.end();
  await body?.release();
  if (req.complete || req.destroyed) return;
  let n = 0;
  const cut = () => { clearTimeout(timer); req.socket.destroy(); };
  const timer = setTimeout(cut, DRAIN_MAX_MS).unref();
  req.on('data', (c: Buffer) => { n += c.length; if (n > DRAIN_MAX_BYTES) cut(); });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}
