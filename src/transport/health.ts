/**
 * `GET /healthz` (the process serves) and `GET /readyz` (it accepts work:
 * 503 from the moment a shutdown starts), answered on the HTTP listener and
 * on the metrics listener before anything else looks at the request: no
 * credentials, no repository lookup, no log line. Neither path can name a
 * git route (those end in `/info/refs`, `/git-upload-pack`, `/git-receive-pack`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export const HEALTH_PATHS = ['/healthz', '/readyz'] as const;

export class Health {
  /** set by the server's shutdown: /readyz answers 503 from then on */
  draining = false;
  /** when /readyz was last asked (performance.now() ms; -Infinity: never): whether anything routes by it */
  lastReadinessProbe = -Infinity;
  /** lines /readyz adds to its body while ready (e.g. whether Redis coordinates this node); undefined adds none */
  readonly notes: Array<() => string | undefined> = [];

  /** Answer a health probe; false when the request is not one (the caller serves it). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path !== '/healthz' && path !== '/readyz') return false;
    req.resume();
    const headers: Record<string, string> = { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...headers, Allow: 'GET, HEAD' });
      res.end('Method Not Allowed\n');
      return true;
    }
    if (path === '/readyz') this.lastReadinessProbe = performance.now();
    const notReady = path === '/readyz' && this.draining;
    let body = path === '/healthz' ? 'ok\n' : notReady ? 'shutting down\n' : 'ready\n';
    if (path === '/readyz' && !notReady) for (const n of this.notes) { const line = n(); if (line) body += `${line}\n`; }
    // a drained server also asks the prober to close its connection
    if (this.draining) headers.Connection = 'close';
    res.writeHead(notReady ? 503 : 200, { ...headers, 'Content-Length': String(Buffer.byteLength(body)) });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }
}
