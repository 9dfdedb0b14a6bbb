/**
 * Serving faults (issue #11): aborted request bodies, the admission
 * queue, and the request log of aborted requests.
 */
import { test, before, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/pkt.js';
import { startServer, type RunningServer } from '../src/transport/server.js';
import { PackLimiter, QUEUE_KEEPALIVE_MS } from '../src/transport/admission.js';
import { PacketWriter } from '../src/pktline/writer.js';
import type { Sink } from '../src/pktline/sink.js';
import type { RequestLog } from '../src/transport/http.js';

let t: ReturnType<typeof tmp>;
let root: string;
let main: string;

before(() => {
  t = tmp('gitwire-serving-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  for (let i = 0; i < 4; i++) commit(w, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(20000) });
  // incompressible, so the pack is large enough to be cut in the middle
  commit(w, 'random', { 'r.bin': randomBytes(1 << 20) });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  main = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']).trim();
});
after(() => t.cleanup());

/** A sink that records writes and can be closed like a socket. */
class TestSink implements Sink {
  readonly stats = { writes: 0, bytes: 0 };
  readonly retains = false;
  readonly backedUp = false;
  closed = false;
  readonly chunks: Buffer[] = [];
  private cbs: Array<() => void> = [];
  write(b: Buffer): void { this.stats.writes++; this.stats.bytes += b.length; this.chunks.push(Buffer.from(b)); }
  drained(): Promise<void> { return Promise.resolve(); }
  onClose(cb: () => void): void { if (this.closed) cb(); else this.cbs.push(cb); }
  close(): void { this.closed = true; for (const cb of this.cbs) cb(); }
  keepalives(): number { return this.chunks.filter((c) => c.toString('latin1') === '0005\x01').length; }
}

test('admission: a queued client that goes away leaves the queue at once and never takes a turn', async () => {
  const lim = new PackLimiter(1);
  const first = await lim.acquire(new PacketWriter(new TestSink()), true);
  const gone = new TestSink();
  const queued = lim.acquire(new PacketWriter(gone), true);
  const staying = new TestSink();
  const later = lim.acquire(new PacketWriter(staying), true);
  assert.equal(lim.waiting, 2);
  gone.close();
  await assert.rejects(queued, { code: 'GW_CLIENT_GONE' });
  assert.equal(lim.waiting, 1, 'dropped the moment its connection closed');
  first();
  const release = await later;
  assert.equal(lim.active, 1, 'the slot went to the client still waiting');
  release();
  assert.equal(lim.active, 0);
  // a client already gone is not queued at all
  const hold = await lim.acquire(new PacketWriter(new TestSink()), true);
  const dead = new TestSink();
  dead.close();
  await assert.rejects(lim.acquire(new PacketWriter(dead), true), { code: 'GW_CLIENT_GONE' });
  assert.equal(lim.waiting, 0);
  hold();
});

test('admission: queue keepalives follow uploadpack.keepAlive, and default to under 3 s', async () => {
  assert.ok(QUEUE_KEEPALIVE_MS <= 3000);
  mock.timers.enable({ apis: ['setInterval'] });
  try {
    const lim = new PackLimiter(1);
    const hold = await lim.acquire(new PacketWriter(new TestSink()), true);
    const dflt = new TestSink(), one = new TestSink(), off = new TestSink();
    const waits = [
      lim.acquire(new PacketWriter(dflt), true),
      lim.acquire(new PacketWriter(one), true, { keepalive: 1 }),
      lim.acquire(new PacketWriter(off), true, { keepalive: -1 }),
    ];
    mock.timers.tick(3000);
    assert.equal(dflt.keepalives(), 1, 'one keepalive within 3 s by default');
    assert.equal(one.keepalives(), 3, 'uploadpack.keepAlive=1: one a second');
    assert.equal(off.keepalives(), 0, 'uploadpack.keepAlive=0: none');
    mock.timers.tick(2000);
    assert.equal(dflt.keepalives(), 2);
    assert.equal(one.keepalives(), 5);
    hold();
    for (const w of waits) (await w)();
    const n = one.keepalives();
    mock.timers.tick(5000);
    assert.equal(one.keepalives(), n, 'no keepalive after the slot is granted');
  } finally {
    mock.timers.reset();
  }
});

async function serve(extra: NodeJS.ProcessEnv = {}, maxPacks = 0): Promise<{ s: RunningServer; logs: RequestLog[] }> {
  const logs: RequestLog[] = [];
  const s = await startServer({ root, http: 0, exportAll: true, maxPacks, log: (e) => logs.push(e), env: { ...gitEnv, ...extra } });
  return { s, logs };
}

async function until<T>(f: () => T | undefined, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A raw HTTP POST: headers and `body` sent, then whatever `then` does with the socket. */
function post(port: number, path: string, headers: Record<string, string>, body: Buffer, then: (s: Socket, received: () => Buffer) => void): Socket {
  const s = connect(port, '127.0.0.1');
  const got: Buffer[] = [];
  s.on('data', (d: Buffer) => got.push(d));
  s.on('error', () => { /* we abort it */ });
  s.on('connect', () => {
    const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
    s.write(head);
    s.write(body, () => then(s, () => Buffer.concat(got)));
  });
  return s;
}

const RPC = { 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' };

test('a POST aborted mid-body (plain and gzip) is logged and does not hold up shutdown', { timeout: 60_000 }, async () => {
  const { s, logs } = await serve();
  const body = pkt(['command=fetch\n', '0001', `want ${main}\n`, 'done\n', '0000']);
  const gz = gzipSync(body);
  // half of each body, then the client goes away
  post(s.httpPort!, '/repo.git/git-upload-pack', { ...RPC, 'Content-Length': String(body.length) }, body.subarray(0, body.length >> 1), (c) => c.destroy());
  post(s.httpPort!, '/repo.git/git-upload-pack', { ...RPC, 'Content-Encoding': 'gzip', 'Content-Length': String(gz.length) }, gz.subarray(0, gz.length >> 1), (c) => c.destroy());
  // chunked gzip, cut inside a chunk
  post(s.httpPort!, '/repo.git/git-upload-pack', { ...RPC, 'Content-Encoding': 'gzip', 'Transfer-Encoding': 'chunked' },
    Buffer.concat([Buffer.from(`${gz.length.toString(16)}\r\n`), gz.subarray(0, 20)]), (c) => c.destroy());
  const aborted = await until(() => (logs.length >= 3 ? logs : undefined), 'three log lines');
  for (const e of aborted) {
    assert.equal(e.outcome, 'GW_CLIENT_GONE');
    assert.equal(e.transport, 'http');
    assert.equal(e.repository, '/repo.git');
    assert.equal(e.protocol, 2);
    assert.equal(e.status, undefined, 'no response was sent');
  }
  // nothing is left in the server's active set: shutdown with a long grace returns at once
  const t0 = Date.now();
  await s.shutdown(60_000);
  assert.ok(Date.now() - t0 < 10_000, 'shutdown did not wait for the aborted requests');
});

test('a fetch aborted mid-pack is logged with what it did (protocol, command, wants, bytes, writes)', { timeout: 60_000 }, async () => {
  const hook = join(t.dir, 'slow-pack.sh');
  // pack-objects' output trickles, so the client can leave in the middle
  writeFileSync(hook, '#!/bin/sh\n"$@" | (head -c 300000; sleep 3; cat)\n');
  chmodSync(hook, 0o755);
  const { s, logs } = await serve({ GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` });
  try {
    for (const [proto, body] of [
      [2, pkt(['command=fetch\n', '0001', `want ${main}\n`, 'ofs-delta\n', 'done\n', '0000'])],
      [0, pkt([`want ${main} side-band-64k ofs-delta\n`, '0000', 'done\n'])],
    ] as const) {
      const n = logs.length;
      const headers = { 'Content-Type': RPC['Content-Type'], 'Content-Length': String(body.length), ...(proto === 2 ? { 'Git-Protocol': 'version=2' } : {}) };
      await new Promise<void>((resolve) => {
        post(s.httpPort!, '/repo.git/git-upload-pack', headers, body, (c, received) => {
          // leave once the first pack bytes have arrived
          const check = setInterval(() => { if (received().includes('PACK')) { clearInterval(check); c.destroy(); resolve(); } }, 10);
        });
      });
      const e = await until(() => logs[n], `log line for v${proto}`);
      assert.equal(e.outcome, 'GW_CLIENT_GONE', JSON.stringify(e));
      assert.equal(e.protocol, proto);
      assert.equal(e.command, proto === 2 ? 'fetch' : 'upload-pack');
      assert.equal(e.wants, 1);
      assert.equal(e.status, 200);
      assert.ok(e.bytesOut > 4, `bytesOut ${e.bytesOut}`);
      assert.ok(e.writes >= 1, `writes ${e.writes}`);
    }
  } finally {
    await s.shutdown(1000);
  }
});

test('a queued HTTP fetch whose client leaves starts no pack-objects', { timeout: 60_000 }, async () => {
  const count = join(t.dir, 'hook-count');
  writeFileSync(count, '');
  const hook = join(t.dir, 'count-hook.sh');
  writeFileSync(hook, `#!/bin/sh\necho run >> ${count}\nsleep 2\nexec "$@"\n`);
  chmodSync(hook, 0o755);
  const { s, logs } = await serve({ GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` }, 1);
  try {
    const body = pkt(['command=fetch\n', '0001', `want ${main}\n`, 'done\n', '0000']);
    const headers = { ...RPC, 'Content-Length': String(body.length) };
    let holderDone!: () => void;
    const holder = new Promise<void>((r) => { holderDone = r; });
    const h = post(s.httpPort!, '/repo.git/git-upload-pack', headers, body, () => undefined);
    h.on('close', () => holderDone());
    h.on('data', () => { /* read it all */ });
    await until(() => s.limiter.active === 1, 'the holder to take the slot');
    await new Promise<void>((resolve) => {
      post(s.httpPort!, '/repo.git/git-upload-pack', headers, body, (c, received) => {
        const check = setInterval(() => { if (received().includes('waiting for a pack-objects slot')) { clearInterval(check); c.destroy(); resolve(); } }, 10);
      });
    });
    await until(() => s.limiter.waiting === 0, 'the queue to drop the client', 1000);
    assert.equal(s.limiter.active, 1, 'the holder still runs');
    const e = await until(() => logs.find((l) => l.outcome === 'GW_CLIENT_GONE'), 'the log line of the queued client');
    assert.equal(e.command, 'fetch');
    await until(() => logs.length >= 1 && s.limiter.active === 0 ? true : undefined, 'the holder to finish');
    h.destroy();
    await holder;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(readFileSync(count, 'utf8'), 'run\n', 'pack-objects ran for the holder only');
  } finally {
    await s.shutdown(1000);
  }
});

test('a git:// fetch aborted mid-pack is logged with what it did (protocol, command, wants)', { timeout: 60_000 }, async () => {
  const hook = join(t.dir, 'slow-pack-daemon.sh');
  writeFileSync(hook, '#!/bin/sh\n"$@" | (head -c 300000; sleep 3; cat)\n');
  chmodSync(hook, 0o755);
  const logs: RequestLog[] = [];
  const s = await startServer({ root, git: 0, exportAll: true, log: (e) => logs.push(e), env: { ...gitEnv, GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` } });
  try {
    await new Promise<void>((resolve, reject) => {
      const c = connect(s.gitPort!, '127.0.0.1');
      let got = Buffer.alloc(0);
      let asked = false;
      c.on('error', reject);
      c.write(pkt(['git-upload-pack /repo.git\0host=localhost\0']));
      c.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        // the advertisement ends with a flush: then ask for the pack, and leave once it starts
        if (!asked && got.includes('0000')) { asked = true; c.write(pkt([`want ${main} side-band-64k ofs-delta\n`, '0000', 'done\n'])); }
        if (asked && got.includes('PACK')) { c.destroy(); resolve(); }
      });
    });
    const e = await until(() => logs[0], 'log line');
    assert.equal(e.transport, 'git');
    assert.equal(e.outcome, 'GW_CLIENT_GONE', JSON.stringify(e));
    assert.equal(e.protocol, 0);
    assert.equal(e.command, 'upload-pack');
    assert.equal(e.wants, 1);
    assert.ok(e.bytesOut > 4 && e.writes >= 1, JSON.stringify(e));
  } finally {
    await s.shutdown(1000);
  }
});
