/**
 * The bundle download route under attack (../shared ATTACK.md): 100
 * concurrent downloads of a large bundle that do not read keep serve's
 * resident set flat (one chunk each, not the file) while other requests
 * are answered; clients that leave mid-download leave no open file behind;
 * one that stops reading is cut at the idle timeout; a bundle truncated
 * while it is sent ends the response short of its Content-Length (the
 * client sees a broken download, never a short file passed off as whole).
 * The bound is loose: it fails only when a download holds the file (16 MiB
 * each, 1.6 GiB for 100) or more than a few chunks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { request, type IncomingMessage, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { startServe } from './helpers/server-process.js';
import { Repository } from '../src/repo/repository.js';
import { bundleDir, makeBundle, parseBundleHeader, viewKey } from '../src/bundle/index.js';

const canMeasure = existsSync('/proc/self/status');
const SIZE = 16 * 1024 * 1024;

function peakRssKiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}
/** files of `dir` the process `pid` holds open */
const openFiles = (pid: number, dir: string) => readdirSync(`/proc/${pid}/fd`).filter((fd) => {
  try { return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(dir); } catch { return false; }
}).length;

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => resolve({ req, res }));
    req.on('error', reject);
    req.end();
  });
}

function drain(res: IncomingMessage): Promise<{ n: number; complete: boolean }> {
  return new Promise((resolve) => {
    let n = 0;
    res.on('data', (c: Buffer) => { n += c.length; });
    res.on('end', () => resolve({ n, complete: res.complete }));
    res.on('error', () => resolve({ n, complete: false }));
    res.on('aborted', () => resolve({ n, complete: false }));
    res.on('close', () => resolve({ n, complete: res.complete }));
    res.resume();
  });
}

test('100 downloads of a 16 MiB bundle at once: RSS flat, other requests answered; leavers leave no open file; a stalled one is cut', { skip: canMeasure ? false : 'no /proc here', timeout: 180_000 }, async () => {
  const t = tmp('gitwire-bundle-attack-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const repo = makeBitmapRepo(root, 'big.git', { commits: 12 });
  const r = Repository.open(repo);
  const real = await makeBundle(r);
  // a large file of the current view, newer than the real one: the real header and the start of a pack, then
  // random bytes (what is offered and served is a file that begins as a bundle; the rest is streamed as it is)
  const name = `${real.token + 10}-${viewKey(r)}.bundle`;
  const file = join(bundleDir(r), name);
  const header = readFileSync(real.file).subarray(0, parseBundleHeader(readFileSync(real.file)).length);
  writeFileSync(file, Buffer.concat([header, Buffer.from('PACK\0\0\0\x02\0\0\0\x01'), randomBytes(SIZE - header.length - 12)]));
  const s = await startServe(root, ['--http', '0', '--bundles', 'serve', '--quiet', '--http-idle-timeout', '3']);
  try {
    const pid = s.child.pid!;
    const path = `/big.git/info/bundles/${name}`;
    // warm up (the route's first use loads its modules), then the baseline
    await drain((await get(s.httpPort!, path, { Range: 'bytes=0-9' })).res);
    const idle = peakRssKiB(pid);
    const clients = await Promise.all(Array.from({ length: 100 }, () => get(s.httpPort!, path)));
    for (const c of clients) { assert.equal(c.res.statusCode, 200); c.res.pause(); }
    // while 100 downloads wait on their clients: another client is answered
    let slowest = 0;
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      const a = await fetch(`http://127.0.0.1:${s.httpPort}/big.git/info/refs?service=git-upload-pack`);
      await a.arrayBuffer();
      assert.equal(a.status, 200);
      slowest = Math.max(slowest, performance.now() - t0);
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.ok(slowest < 2000, `an advertisement took ${slowest.toFixed(0)} ms while 100 downloads waited`);
    // half read it all, half leave mid-way
    const done = await Promise.all(clients.map(async (c, i) => {
      if (i % 2) { c.req.destroy(); return undefined; }
      return drain(c.res);
    }));
    for (const d of done.filter((x) => x !== undefined)) assert.deepEqual(d, { n: SIZE, complete: true });
    const peak = peakRssKiB(pid);
    const mib = (k: number) => (k / 1024).toFixed(1);
    console.log(`serve peak RSS with 100 concurrent 16 MiB bundle downloads: ${mib(peak)} MiB (idle ${mib(idle)} MiB); slowest advertisement meanwhile ${slowest.toFixed(0)} ms; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    assert.ok(peak - idle < 100 * 1024, `peak RSS ${mib(peak)} MiB, idle ${mib(idle)} MiB`);
    // the leavers' files are closed
    for (let i = 0; i < 100 && openFiles(pid, bundleDir(r)) > 0; i++) await new Promise((res) => setTimeout(res, 20));
    assert.equal(openFiles(pid, bundleDir(r)), 0, 'no bundle file left open');

    // a client that stops reading is cut at the idle timeout: the server closes its file (the paused
    // client itself cannot see the close until it reads again)
    const stalled = await get(s.httpPort!, path);
    stalled.res.pause();
    await new Promise((res) => setTimeout(res, 300));
    assert.equal(openFiles(pid, bundleDir(r)), 1, 'the stalled download has its file open');
    const t0 = performance.now();
    while (openFiles(pid, bundleDir(r)) > 0 && performance.now() - t0 < 15_000) await new Promise((res) => setTimeout(res, 50));
    const cut = performance.now() - t0;
    assert.equal(openFiles(pid, bundleDir(r)), 0, 'the stalled download was cut');
    assert.ok(cut > 1000, `cut after ${cut.toFixed(0)} ms: not before the idle timeout`);
    stalled.req.destroy();

    // truncated while it is sent: the response ends short, not as a complete one
    const slow = await get(s.httpPort!, path);
    slow.res.pause();
    await new Promise((res) => setTimeout(res, 200));
    truncateSync(file, 1024 * 1024);
    const got = await drain(slow.res);
    assert.equal(got.complete, false, `a truncated bundle was passed off as whole (${got.n} bytes)`);
    assert.ok(got.n < SIZE);
  } finally {
    await s.stop();
    t.cleanup();
  }
});
