/**
 * The event loop's delay behind `nodejs_eventloop_lag_{min,max,mean,
 * stddev,p50,p90,p99}_seconds` (prom-client's names and help), sampled
 * only while the process has work in flight: an HTTP request being
 * answered, or a connection of another server (git://, SSH) open. Idle,
 * nothing ticks; prom-client's own histogram ticked every 100 ms whatever
 * the server did, each tick a wake-up of the process (0.6-0.9 ms of CPU a
 * second idle), and a bundle clone's seconds of unbundling, when its
 * server waits, were charged that. Work is seen through node:diagnostics_channel
 * (`http.server.request.start`, `net.server.socket`), so every server of
 * the process counts, whoever made it. A scrape between two pieces of
 * work reads zeros: no delay was seen.
 */
import { subscribe } from 'node:diagnostics_channel';
import { Server as HttpServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

/**
 * What samples the delay (one per process): a timer every `resolutionMs`
 * while work is in flight, recording the time between its runs (the
 * interval and the delay, as Node's monitorEventLoopDelay does). Not that
 * histogram itself: re-enabled after a pause, its first sample is the
 * whole pause.
 */
export class BusyLoopDelay {
  readonly histogram: RecordableHistogram = createHistogram();
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private last = 0n;

  constructor(readonly resolutionMs: number) {}

  /** work in flight now: the delay is sampled until it (and all other work) is done; returns the end, once-only */
  begin(): () => void {
    if (this.inFlight++ === 0) this.start();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.inFlight === 0) this.stop();
    };
  }

  get busy(): boolean { return this.inFlight > 0; }

  private start(): void {
    this.last = process.hrtime.bigint();
    this.timer = setInterval(() => {
      const now = process.hrtime.bigint();
      if (now > this.last) this.histogram.record(now - this.last);
      this.last = now;
    }, this.resolutionMs);
    // never what keeps the process up
    this.timer.unref();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

let shared: BusyLoopDelay | undefined;
/** servers whose requests are not work: the metrics listener (a scrape is the observer, not what it observes) */
const ignored = new WeakSet<object>();

/** Requests to `server` neither start nor keep the sampling. */
export function ignoreServer(server: object): void { ignored.add(server); }

/** The process's monitor, watching every server's work from the first call on. */
export function busyLoopDelay(resolutionMs: number): BusyLoopDelay {
  if (shared) return shared;
  const m = new BusyLoopDelay(resolutionMs);
  shared = m;
  subscribe('http.server.request.start', (msg) => {
    const { response: res, server } = msg as { response?: ServerResponse; server?: object };
    if (!res || (server && ignored.has(server))) return;
    // 'close' ends every answer: finished, or its connection gone
    res.once('close', m.begin());
  });
  subscribe('net.server.socket', (msg) => {
    const socket = (msg as { socket?: Socket & { server?: unknown } }).socket;
    // an HTTP connection is work only while a request on it is answered (above): a kept-alive one waits for its client
    if (!socket || socket.server instanceof HttpServer || (socket.server && ignored.has(socket.server as object)) || socket.destroyed) return;
    socket.once('close', m.begin());
  });
  return m;
}
