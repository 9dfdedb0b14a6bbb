/** Opt-in Prometheus metrics (prom-client), loaded only when enabled. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import client from 'prom-client';
import { ERROR_CODES } from '../errors.js';
import { OUTCOMES, type RequestLog } from './http.js';
import { PackLimiter as PackLimiterClass, type PackLimiter } from './admission.js';
import type { PackCache } from '../pack/cache.js';
import type { Health } from './health.js';
import type { Coordinator } from '../cluster/coordinator.js';
import type { ClientLimits } from './limits/index.js';
import type { Webhooks } from '../admin/webhooks.js';
import { busyLoopDelay, ignoreServer } from './loop-lag.js';

/** A counter that reports a number kept elsewhere (the pack cache counts for itself). */
function mirror(registry: client.Registry, name: string, help: string, read: () => number): void {
  new client.Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(read()); } });
}

/** receive-pack's own rejection reasons; anything else (authorizePush's words) is counted as `policy`, so labels stay bounded */
const GIT_REASONS = new Set([
  'non-fast-forward', 'hook declined', 'pre-receive hook declined', 'atomic push failure', 'atomic transaction failed',
  'incorrect old value provided', 'reference already exists', 'failed to update refs', 'unpacker error', 'missing necessary objects',
  'deletion prohibited', 'deletion of the current branch prohibited', 'branch is currently checked out', 'funny refname',
  'deny updating a hidden ref', 'deny deleting a hidden ref', 'shallow update not allowed', 'fail to run proc-receive hook',
  'inconsistent aliased update', 'broken symref', 'bad pack', 'bad ref', 'shallow error', 'unable to migrate objects to permanent storage',
  // gitwire's own: a `protect` rule (receive/protect.ts)
  'protected ref',
]);

const KNOWN_OUTCOMES = new Set<string>([...OUTCOMES, ...Object.keys(ERROR_CODES)]);
/** A label value from the fixed set: anything else (which the types do not allow) is counted as `other`. */
const outcomeLabel = (o: string) => (KNOWN_OUTCOMES.has(o) ? o : 'other');

/** What createMetrics reports on: the server's limiters and cache, or a registry of the embedder's own. */
export interface MetricsOptions {
  /** pack-objects admission (gauges in progress / queued, the wait histogram) */
  limiter?: PackLimiter;
  /** pack ingest admission for pushes */
  ingest?: PackLimiter;
  cache?: PackCache;
  /** register into this prom-client registry (default: a new one) */
  registry?: client.Registry;
  /** with several nodes: a gauge of whether Redis coordinates this one */
  coordinator?: Coordinator;
  /** Node's process metrics (prom-client's default set) in the registry too (default true) */
  processMetrics?: boolean;
  /** per-client limits: decisions by class and result, clients tracked, saturation */
  clientLimits?: ClientLimits;
  /** webhook deliveries by outcome, attempts by result, the queue */
  webhooks?: Webhooks;
  /** bundles made, downloaded, and whether clones took them (bundle/service.ts) */
  bundles?: { stats: import('../bundle/service.js').BundleStats };
}

/** the event-loop delay histogram's resolution while work is in flight (./loop-lag.ts), in ms */
export const EVENT_LOOP_PRECISION_MS = 100;
/**
 * prom-client's own histogram is made with this resolution, so that its
 * timer never fires (its gauges are replaced by ./loop-lag.ts's): once in
 * 24 days, the longest a timer may wait.
 */
const PROM_CLIENT_HISTOGRAM_MS = 2 ** 31 - 1;
const LAG = 'nodejs_eventloop_lag_seconds';
/** prom-client's histogram gauges: name, help, and what of the histogram each reports (ns) */
const LAG_GAUGES: Array<[string, string, (h: import('node:perf_hooks').RecordableHistogram) => number]> = [
  ['nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.', (h) => h.min],
  ['nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.', (h) => h.max],
  ['nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

/**
 * The event-loop lag metrics under prom-client's names, from a histogram
 * that samples only while work is in flight (./loop-lag.ts): read and
 * reset at each scrape, zeros when it saw nothing since the last one.
 */
function loopLagMetrics(registry: client.Registry): void {
  const monitor = busyLoopDelay(EVENT_LOOP_PRECISION_MS);
  const h = monitor.histogram;
  for (const name of [LAG, ...LAG_GAUGES.map(([n]) => n)]) registry.removeSingleMetric(name);
  const gauges: client.Gauge[] = [];
  // registered first: a scrape collects in registration order, and this one's collect sets the others
  new client.Gauge({
    name: LAG, help: 'Lag of event loop in seconds.', registers: [registry],
    collect() {
      const seen = h.count > 0;
      LAG_GAUGES.forEach(([, , read], i) => gauges[i]!.set(seen ? read(h) / 1e9 : 0));
      h.reset();
      // the time to the next turn of the loop, now
      const start = process.hrtime.bigint();
      return new Promise<void>((resolve) => setImmediate(() => { this.set(Number(process.hrtime.bigint() - start) / 1e9); resolve(); }));
    },
  });
  for (const [name, help] of LAG_GAUGES) gauges.push(new client.Gauge({ name, help, registers: [registry] }));
}

const CACHE_RESULTS = new Set(['hit', 'miss', 'join', 'bypass', 'retry']);

export function createMetrics(o: MetricsOptions | PackLimiter = {}, legacyCache?: PackCache, legacyIngest?: PackLimiter) {
  const opts: MetricsOptions = o instanceof PackLimiterClass ? { limiter: o, cache: legacyCache, ingest: legacyIngest } : o;
  const { limiter, cache, ingest } = opts;
  const registry = opts.registry ?? new client.Registry();
  // the event-loop lag histogram (nodejs_eventloop_lag_p50_seconds, …) ticks every 100 ms, and only while work is in flight
  // (./loop-lag.ts): prom-client's ticked whatever the server did (at its default 10 ms, 100 times a second: 5-8 ms of CPU a
  // second; at 100 ms, ~1 ms), charged to whatever request was in progress (a bundle clone's seconds of unbundling)
  if (opts.processMetrics !== false) {
    client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: PROM_CLIENT_HISTOGRAM_MS });
    loopLagMetrics(registry);
  }
  const registers = [registry];
  const requests = new client.Counter({ name: 'gitwire_requests_total', help: 'Requests served, by service, transport, protocol version, command and outcome', labelNames: ['service', 'transport', 'protocol', 'command', 'outcome'], registers });
  const bytes = new client.Counter({ name: 'gitwire_bytes_sent_total', help: 'Bytes sent to clients', labelNames: ['transport'], registers });
  const writes = new client.Counter({ name: 'gitwire_write_calls_total', help: 'Write calls made to client sockets', labelNames: ['transport'], registers });
  const duration = new client.Histogram({ name: 'gitwire_request_duration_seconds', help: 'Request duration', labelNames: ['service', 'transport', 'command'], buckets: [0.005, 0.02, 0.1, 0.5, 2, 10, 60, 300], registers });
  const coordinator = opts.coordinator;
  if (coordinator?.mode === 'redis') new client.Gauge({ name: 'gitwire_coordination_up', help: '1 while Redis coordinates this node with the others; 0: serving with local limits, no cross-node joins', registers, collect() { this.set(coordinator.status().up ? 1 : 0); } });
  if (limiter) {
    new client.Gauge({ name: 'gitwire_pack_objects_in_progress', help: 'Packs being made, native or by pack-objects (each holding a slot)', registers, collect() { this.set(limiter.active); } });
    new client.Gauge({ name: 'gitwire_pack_objects_queued', help: 'Fetches queued for a pack-objects slot', registers, collect() { this.set(limiter.waiting); } });
    const wait = new client.Histogram({ name: 'gitwire_pack_objects_queue_wait_seconds', help: 'Time a fetch waited for a pack-objects slot (0 when one was free)', buckets: [0, 0.01, 0.1, 0.5, 1, 5, 20, 60, 300], registers });
    limiter.onWait = (sec) => wait.observe(sec);
  }
  const cl = opts.clientLimits;
  if (cl) {
    new client.Counter({
      name: 'gitwire_client_limit_decisions_total', help: 'Per-client admission decisions, by class (anonymous, user) and result (admitted, rate, concurrency, saturated, busy)', labelNames: ['class', 'result'], registers,
      collect() { this.reset(); for (const [cls, counts] of Object.entries(cl.counts())) for (const [result, n] of Object.entries(counts)) this.inc({ class: cls, result }, n); },
    });
    new client.Gauge({ name: 'gitwire_client_limit_tracked_clients', help: 'Clients whose rate state is held (bounded)', registers, collect() { this.set(cl.trackedClients); } });
    const sat = cl.saturation;
    if (sat) {
      new client.Gauge({ name: 'gitwire_saturated', help: '1 while the server counts as saturated (new anonymous work refused)', registers, collect() { this.set(sat.saturated ? 1 : 0); } });
      new client.Gauge({ name: 'gitwire_event_loop_delay_seconds', help: "The last second's event-loop delay, 99th percentile (0 unless --saturation-delay is set)", registers, collect() { this.set(sat.delayP99Ms / 1000); } });
    }
  }
  const wh = opts.webhooks;
  if (wh) {
    new client.Counter({
      name: 'gitwire_webhook_deliveries_total', help: 'Webhook deliveries ended, by outcome (delivered, failed: attempts, deadline or a final answer; dropped: queue full or shutdown)', labelNames: ['outcome'], registers,
      collect() { this.reset(); for (const k of ['delivered', 'failed', 'dropped'] as const) this.inc({ outcome: k }, wh.stats[k]); },
    });
    new client.Counter({
      name: 'gitwire_webhook_attempts_total', help: 'Webhook POSTs made, by result (ok, http-error, redirect, timeout, network-error)', labelNames: ['result'], registers,
      collect() { this.reset(); for (const [result, n] of Object.entries(wh.stats.attempts)) this.inc({ result }, n); },
    });
    new client.Gauge({ name: 'gitwire_webhook_queued', help: 'Webhook deliveries waiting (queued or between retries)', registers, collect() { this.set(wh.queued); } });
    new client.Gauge({ name: 'gitwire_webhook_queued_bytes', help: 'Bytes of the webhook bodies waiting', registers, collect() { this.set(wh.queuedBytes); } });
  }
  const bs = opts.bundles?.stats;
  if (bs) {
    mirror(registry, 'gitwire_bundles_made_total', 'Bundles this node made (--bundles auto)', () => bs.made);
    mirror(registry, 'gitwire_bundle_made_bytes_total', 'Bytes of the bundles this node made', () => bs.madeBytes);
    mirror(registry, 'gitwire_bundle_make_failures_total', 'Bundles this node failed to make (the log says why)', () => bs.failed);
    mirror(registry, 'gitwire_bundle_downloads_total', 'Bundle downloads answered with 200 or 206', () => bs.downloads);
    mirror(registry, 'gitwire_bundle_download_bytes_total', 'Bundle bytes sent by this node', () => bs.downloadBytes);
    new client.Counter({
      name: 'gitwire_bundle_clones_total', help: 'v2 fetches while a bundle was offered: taken (a have is a tip of the bundle), not-taken (a clone with no haves)', labelNames: ['result'], registers,
      collect() { this.reset(); this.inc({ result: 'taken' }, bs.taken); this.inc({ result: 'not-taken' }, bs.notTaken); },
    });
    new client.Counter({
      name: 'gitwire_bundle_skipped_total', help: 'Bundle makes not done (--bundles auto): small (packs under --bundle-min-size), budget (the hour\'s --bundle-budget spent)', labelNames: ['reason'], registers,
      collect() { this.reset(); this.inc({ reason: 'small' }, bs.skippedSmall); this.inc({ reason: 'budget' }, bs.skippedBudget); },
    });
    new client.Gauge({ name: 'gitwire_bundle_newest_age_seconds', help: 'Age of the newest bundle this node made or offered (0: none yet)', registers, collect() { this.set(bs.newestMs ? Math.max(0, (Date.now() - bs.newestMs) / 1000) : 0); } });
  }
  const pushes = new client.Counter({ name: 'gitwire_pushes_total', help: 'Pushes (receive-pack requests with commands)', labelNames: ['transport', 'outcome'], registers });
  const pushBytes = new client.Counter({ name: 'gitwire_push_bytes_received_total', help: 'Request bytes received by receive-pack (commands and pack)', labelNames: ['transport'], registers });
  const pushRefs = new client.Counter({ name: 'gitwire_push_refs_total', help: 'Refs a push updated or rejected', labelNames: ['transport', 'result'], registers });
  const rejections = new client.Counter({ name: 'gitwire_push_rejections_total', help: 'Rejected ref updates, by reason', labelNames: ['reason'], registers });
  const ingestSeconds = new client.Histogram({ name: 'gitwire_push_ingest_seconds', help: 'Duration of a push (receive, index, update refs)', labelNames: ['transport'], buckets: [0.05, 0.2, 1, 5, 20, 60, 300], registers });
  const pushSize = new client.Histogram({ name: 'gitwire_push_bytes', help: 'Request bytes of one push', buckets: [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9], registers });
  if (ingest) {
    new client.Gauge({ name: 'gitwire_ingest_active', help: 'Running pack ingests (index-pack / unpack-objects)', registers, collect() { this.set(ingest.active); } });
    new client.Gauge({ name: 'gitwire_ingest_waiting', help: 'Pushes queued for an ingest slot', registers, collect() { this.set(ingest.waiting); } });
  }
  const lookups = cache ? new client.Counter({ name: 'gitwire_pack_cache_lookups_total', help: 'Fetches that asked the pack cache, by result (hit, miss, join, bypass, retry)', labelNames: ['result'], registers }) : undefined;
  if (cache) {
    const st = cache.stats;
    mirror(registry, 'gitwire_pack_cache_hits_total', 'Fetches served from a stored pack', () => st.hits);
    mirror(registry, 'gitwire_pack_cache_misses_total', 'Fetches that started pack-objects for the cache', () => st.misses);
    mirror(registry, 'gitwire_pack_cache_joins_total', 'Fetches that joined a pack-objects run in progress', () => st.joins);
    mirror(registry, 'gitwire_pack_cache_served_bytes_total', 'Pack bytes served from the cache (hits and joins)', () => st.bytesServed);
    mirror(registry, 'gitwire_pack_cache_generated_bytes_total', 'Pack bytes generated by pack-objects for the cache', () => st.bytesGenerated);
    mirror(registry, 'gitwire_pack_cache_spooled_bytes_total', 'Pack bytes written to the cache directory (stored or not)', () => st.bytesSpooled);
    mirror(registry, 'gitwire_pack_cache_stored_bytes_total', 'Pack bytes published to the cache store', () => st.bytesStored);
    mirror(registry, 'gitwire_pack_cache_evictions_total', 'Entries evicted to keep the size bound', () => st.evictions);
    mirror(registry, 'gitwire_pack_cache_expirations_total', 'Entries removed after max-age', () => st.expirations);
    mirror(registry, 'gitwire_pack_cache_abandoned_total', 'pack-objects runs killed because nobody needed them', () => st.abandoned);
    new client.Counter({
      name: 'gitwire_pack_cache_fallbacks_total', help: 'Cache failures, by reason (the fetch went on without the cache)', labelNames: ['reason'], registers,
      collect() { this.reset(); for (const [reason, n] of Object.entries(st.fallbacks)) this.inc({ reason }, n); },
    });
    new client.Gauge({ name: 'gitwire_pack_cache_bytes', help: 'Bytes held by stored entries', registers, collect() { this.set(cache.store.bytes); } });
    if (cache.store.entries !== undefined) {
      new client.Gauge({ name: 'gitwire_pack_cache_entries', help: 'Stored entries', registers, collect() { this.set(cache.store.entries ?? 0); } });
    }
    new client.Gauge({ name: 'gitwire_pack_cache_running', help: 'pack-objects runs feeding the cache now', registers, collect() { this.set(cache.running); } });
  }
  return {
    observe(e: RequestLog) {
      const command = e.command ?? 'none';
      const outcome = outcomeLabel(e.outcome);
      const service = e.service ?? 'none';
      const protocol = e.protocol === undefined ? 'none' : String(e.protocol);
      requests.inc({ service, transport: e.transport, protocol, command, outcome });
      bytes.inc({ transport: e.transport }, e.bytesOut);
      writes.inc({ transport: e.transport }, e.writes);
      duration.observe({ service, transport: e.transport, command }, e.durationMs / 1000);
      if (lookups && e.packCache !== undefined) lookups.inc({ result: CACHE_RESULTS.has(e.packCache) ? e.packCache : 'other' });
      const p = e.push;
      if (p && (p.updated || p.rejected || p.bytesIn)) {
        pushes.inc({ transport: e.transport, outcome });
        pushBytes.inc({ transport: e.transport }, p.bytesIn);
        pushRefs.inc({ transport: e.transport, result: 'updated' }, p.updated);
        pushRefs.inc({ transport: e.transport, result: 'rejected' }, p.rejected);
        for (const reason of p.reasons) rejections.inc({ reason: GIT_REASONS.has(reason) ? reason : 'policy' });
        ingestSeconds.observe({ transport: e.transport }, e.durationMs / 1000);
        pushSize.observe(p.bytesIn);
      }
    },
    registry,
    /** `GET /metrics` (and HEAD); other methods 405, other paths 404 */
    async handle(req: IncomingMessage, res: ServerResponse) {
      req.resume();
      const path = new URL(req.url ?? '/', 'http://localhost').pathname;
      if (path !== '/metrics') { res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }); res.end('Not Found\n'); return; }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { 'Content-Type': 'text/plain; charset=utf-8', Allow: 'GET, HEAD' });
        res.end('Method Not Allowed\n');
        return;
      }
      const body = await registry.metrics();
      res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** The metrics listener: its own server, never the git port's; with `health`, also `/healthz` and `/readyz`. */
export function createMetricsServer(metrics: Metrics, health: Health | undefined, onError: (e: unknown) => void): Server {
  const server = createServer((req, res) => {
    if (health?.handle(req, res)) return;
    metrics.handle(req, res).catch((e: unknown) => {
      onError(e);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  // a scrape does not start the event-loop sampling it reads (./loop-lag.ts)
  ignoreServer(server);
  return server;
}
