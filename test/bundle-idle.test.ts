/**
 * An idle `gitwire serve` does not wake up. prom-client's event-loop lag
 * histogram ticked every 10 ms (100 runs of the main thread a second, 5-8
 * ms of CPU), then every 100 ms (10 runs, ~1 ms a second), charged to
 * whatever request was in progress: a bundle clone spends seconds
 * unbundling while its server waits. The histogram now samples only while
 * work is in flight (transport/loop-lag.ts). Counted in the main thread's
 * scheduler runs (schedstat's third field), not in time: a tick is a run
 * whatever the machine's load. The lag metrics still see the loop while a
 * request is being answered, and read zeros for a time with nothing to do.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { startServe } from './helpers/server-process.js';

const runs = (pid: number) => Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[2]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function scrape(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return new Map([...text.matchAll(/^(nodejs_eventloop_lag_\w+) (\S+)$/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** serve over one empty repository: HTTP, git://, metrics, bundles served */
async function serveOne(): Promise<{ t: ReturnType<typeof tmp>; s: Awaited<ReturnType<typeof startServe>> }> {
  const t = tmp('gitwire-bundle-idle-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['init', '-q', '--bare', join(root, 'r.git')]);
  return { t, s: await startServe(root, ['--http', '0', '--metrics', '0', '--git', '0', '--bundles', 'serve', '--quiet']) };
}

test('an idle server does not wake its main thread: no tick while nothing is in flight', { skip: existsSync('/proc/self/schedstat') ? false : 'no schedstat here' }, async () => {
  const { t, s } = await serveOne();
  try {
    const pid = s.child.pid!;
    // a request (an ls-remote) and a scrape, then nothing
    git(['ls-remote', `http://127.0.0.1:${s.httpPort}/r.git`]);
    await scrape(s.metricsPort!);
    // and work that ends badly: requests cut mid-body, git:// connections cut before a word (each must end the sampling it started)
    await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      const sock = connect(i % 3 ? s.httpPort! : s.gitPort!, '127.0.0.1');
      sock.on('error', () => undefined);
      await new Promise<void>((r) => sock.once('connect', () => r()));
      if (i % 3) sock.write('POST /r.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 100\r\n\r\n0014command=ls-r');
      await sleep(i % 7);
      sock.destroy();
    }));
    // the connections' own ends settle first (V8's memory reducer comes ~8 s after the last work: after the window)
    await sleep(3000);
    const r0 = runs(pid);
    await sleep(3000);
    const n = runs(pid) - r0;
    console.log(`idle main thread: ${n} runs in 3 s; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    // 100 ms ticks were 30 runs in 3 s and more (10 ms ticks 300); now none but the odd GC or Node's 30 s connection check
    assert.ok(n < 15, `${n} runs of the main thread in 3 s idle`);
  } finally {
    await s.stop();
    t.cleanup();
  }
});

test('the event-loop lag metrics: sampled while a request or a git:// connection is in flight, zeros for a time with none', async () => {
  const { t, s } = await serveOne();
  try {
    await sleep(300);
    await scrape(s.metricsPort!);
    await sleep(600);
    // nothing in flight since the last scrape: nothing seen
    const idle = await scrape(s.metricsPort!);
    assert.equal(idle.get('nodejs_eventloop_lag_p99_seconds'), 0, JSON.stringify([...idle]));
    assert.equal(idle.get('nodejs_eventloop_lag_max_seconds'), 0);
    assert.ok((idle.get('nodejs_eventloop_lag_seconds') ?? -1) >= 0);
    for (const hold of ['http', 'git'] as const) {
      // a request whose body never comes (HTTP), or a git:// connection that says nothing: in flight for 700 ms
      const sock = connect(hold === 'http' ? s.httpPort! : s.gitPort!, '127.0.0.1');
      await new Promise<void>((r) => sock.once('connect', () => r()));
      sock.on('error', () => undefined);
      if (hold === 'http') sock.write('POST /r.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 100\r\n\r\n');
      await sleep(700);
      const busy = await scrape(s.metricsPort!);
      sock.destroy();
      // the samples are the time between ticks: the 100 ms interval and the delay
      assert.ok(busy.get('nodejs_eventloop_lag_p50_seconds')! >= 0.09, `${hold}: ${JSON.stringify([...busy])}`);
      assert.ok(busy.get('nodejs_eventloop_lag_min_seconds')! >= 0.09 && busy.get('nodejs_eventloop_lag_max_seconds')! < 5, `${hold}: ${JSON.stringify([...busy])}`);
      await sleep(300);
      await scrape(s.metricsPort!);
      await sleep(600);
      const after = await scrape(s.metricsPort!);
      assert.equal(after.get('nodejs_eventloop_lag_p99_seconds'), 0, `${hold}: nothing sampled once the work ended: ${JSON.stringify([...after])}`);
    }
  } finally {
    await s.stop();
    t.cleanup();
  }
});
