/** Opt-in Prometheus metrics (prom-client), loaded only when enabled. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import client from 'prom-client';
import type { RequestLog } from './http.js';
import type { PackLimiter } from './admission.js';

export function createMetrics(limiter: PackLimiter) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const requests = new client.Counter({ name: 'gitwire_requests_total', help: 'Requests served', labelNames: ['transport', 'command', 'outcome'], registers: [registry] });
  const bytes = new client.Counter({ name: 'gitwire_bytes_sent_total', help: 'Bytes sent to clients', labelNames: ['transport'], registers: [registry] });
  const writes = new client.Counter({ name: 'gitwire_write_calls_total', help: 'Write calls made to client sockets', labelNames: ['transport'], registers: [registry] });
  const duration = new client.Histogram({ name: 'gitwire_request_duration_seconds', help: 'Request duration', labelNames: ['transport', 'command'], buckets: [0.005, 0.02, 0.1, 0.5, 2, 10, 60, 300], registers: [registry] });
  new client.Gauge({ name: 'gitwire_pack_objects_active', help: 'Running pack-objects', registers: [registry], collect() { this.set(limiter.active); } });
  new client.Gauge({ name: 'gitwire_pack_objects_waiting', help: 'Fetches queued for a pack-objects slot', registers: [registry], collect() { this.set(limiter.waiting); } });
  return {
    observe(e: RequestLog) {
      const command = e.command ?? 'none';
      requests.inc({ transport: e.transport, command, outcome: e.outcome });
      bytes.inc({ transport: e.transport }, e.bytesOut);
      writes.inc({ transport: e.transport }, e.writes);
      duration.observe({ transport: e.transport, command }, e.durationMs / 1000);
    },
    async handle(_req: IncomingMessage, res: ServerResponse) {
      res.writeHead(200, { 'Content-Type': registry.contentType });
      res.end(await registry.metrics());
    },
  };
}
