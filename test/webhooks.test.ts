/**
 * Webhooks (issue #38 item 7) and onPush (item 6), with the real git and
 * OpenSSH clients and receivers on loopback:
 *
 * - a receiver checks the HMAC-SHA256 signature and the event (repository,
 *   user, transport, refs, delivery id), from `gitwire serve --webhook`
 *   over SSH with `--webhook-secret`, and a glob that does not match gets
 *   nothing;
 * - receivers that hang, answer 10 MB slowly, redirect, or fail first: the
 *   push answers in normal time, the failures are retried (bounded),
 *   logged and counted in /metrics, a redirect is never followed, an
 *   answer is cut after its byte cap;
 * - a full queue drops its oldest delivery with a warning;
 * - onPush is not called when no ref moved.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { pkt } from './helpers/pkt.js';
import { gitSshEnv, sshKit, startSsh } from './helpers/ssh.js';
import { startServer, type RunningServer } from '../src/transport/server.js';
import { Webhooks } from '../src/admin/webhooks.js';

const SECRET = 'test webhook secret';
const ZERO = '0'.repeat(40);

interface Hit { headers: IncomingMessage['headers']; body: Buffer; at: number }
interface Receiver { url: string; hits: Hit[]; server: Server; sockets: Set<Socket>; wait(n: number, ms?: number): Promise<void>; close(): Promise<void> }

/** a loopback receiver; `answer` decides what each POST gets */
async function receiver(answer: (req: IncomingMessage, res: ServerResponse, n: number) => void, path = '/hook'): Promise<Receiver> {
  const hits: Hit[] = [];
  const sockets = new Set<Socket>();
  const waiters: Array<() => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      for (const w of waiters.splice(0)) w();
      answer(req, res, hits.length);
    });
  });
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return {
    url, hits, server, sockets,
    async wait(n, ms = 30_000) {
      const end = Date.now() + ms;
      while (hits.length < n) {
        if (Date.now() > end) throw new Error(`${url}: ${hits.length} of ${n} deliveries`);
        await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 100); });
      }
    },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

const signed = (body: Buffer) => `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;

const t = tmp('gitwire-webhooks-');
after(() => t.cleanup());

/** a work repository and a bare copy of it under a root */
function setup(name: string): { root: string; work: string; dir: string } {
  const root = join(t.dir, name);
  mkdirSync(root);
  const work = join(root, '..', `${name}-work`);
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'a\n' });
  const dir = join(root, 'r.git');
  git(['clone', '-q', '--bare', work, dir]);
  return { root, work, dir };
}

async function metricsText(s: RunningServer): Promise<string> {
  return (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
}

test('gitwire serve --webhook over SSH: a signed event names the repository, user, transport and refs; a glob elsewhere gets nothing', { timeout: 90_000 }, async () => {
  const { root, work, dir } = setup('cli');
  mkdirSync(join(root, 'group'));
  const good = await receiver((_req, res) => { res.writeHead(204); res.end(); });
  const elsewhere = await receiver((_req, res) => { res.writeHead(204); res.end(); });
  const secretFile = join(t.dir, 'secret');
  writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
  const kit = sshKit(join(t.dir, 'kit'));
  const alice = kit.user('alice');
  const s = await startSsh(kit, root, ['--webhook', `${good.url} r *.git`, '--webhook', `${elsewhere.url} group/**`, '--webhook-secret', secretFile]);
  try {
    const before = git(['rev-parse', 'main'], { cwd: dir }).trim();
    const after = commit(work, 'two', { 'b.txt': 'b\n' });
    const p = await gitAsync(['push', `ssh://git@127.0.0.1:${s.sshPort}/r.git`, 'main', 'main:refs/heads/copy'], work, gitSshEnv(kit, alice, s.sshPort));
    assert.equal(p.code, 0, p.stderr);
    await good.wait(1);
    const h = good.hits[0]!;
    assert.equal(h.headers['x-gitwire-signature'], signed(h.body), 'the signature is the HMAC of the body with the secret file (less its newline)');
    assert.equal(h.headers['content-type'], 'application/json');
    assert.equal(h.headers['x-gitwire-event'], 'push');
    const ev = JSON.parse(h.body.toString()) as Record<string, unknown>;
    assert.equal(h.headers['x-gitwire-delivery'], ev.id);
    assert.match(String(ev.id), /^[0-9a-f-]{36}$/);
    assert.equal(ev.repository, 'r');
    assert.equal(ev.user, 'alice');
    assert.equal(ev.transport, 'ssh');
    assert.deepEqual(ev.refs, [{ ref: 'refs/heads/main', old: before, new: after }, { ref: 'refs/heads/copy', old: ZERO, new: after }]);
    // a push that moves nothing sends nothing
    const same = await gitAsync(['push', `ssh://git@127.0.0.1:${s.sshPort}/r.git`, 'main'], work, gitSshEnv(kit, alice, s.sshPort));
    assert.equal(same.code, 0, same.stderr);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(good.hits.length, 1);
    assert.equal(elsewhere.hits.length, 0, 'group/** does not match r');
  } finally { await s.stop(); await good.close(); await elsewhere.close(); }
});

test('receivers that hang, answer 10 MB slowly, redirect or fail: pushes answer in normal time; retries, logs and metrics', { timeout: 120_000 }, async () => {
  const { root, work } = setup('lib');
  const good = await receiver((_req, res) => { res.writeHead(200); res.end('ok'); });
  const hang = await receiver(() => { /* never answers */ });
  let slowSent = 0;
  const slow = await receiver((_req, res) => {
    // 10 MB, 64 KiB every 50 ms: 8 s if read whole
    res.writeHead(200, { 'Content-Length': 10 << 20 });
    const chunk = Buffer.alloc(64 << 10, 'x');
    const tick = setInterval(() => {
      if (res.destroyed || slowSent >= 10 << 20) { clearInterval(tick); res.end(); return; }
      slowSent += chunk.length;
      res.write(chunk);
    }, 50);
    res.on('close', () => clearInterval(tick));
  });
  const redirect = await receiver((_req, res) => { res.writeHead(307, { Location: good.url }); res.end(); });
  const flaky = await receiver((_req, res, n) => { res.writeHead(n < 3 ? 503 : 200); res.end(n < 3 ? 'busy' : 'ok'); });
  const logs: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const s = await startServer({
    root, http: 0, receivePack: true, metrics: { port: 0 }, spawnHelper: false,
    authenticate: (info) => { info.user = 'carol'; return true; },
    webhooks: {
      targets: [good, hang, slow, redirect, flaky].map((r) => ({ url: r.url })),
      secret: SECRET, attemptTimeoutMs: 3000, backoffMs: 100, maxAttempts: 3, deadlineMs: 60_000,
      log: (level, msg, fields) => logs.push({ level, msg, fields }),
    },
  });
  try {
    const started = Date.now();
    commit(work, 'two', { 'b.txt': 'b\n' });
    const p = await gitAsync(['push', `http://127.0.0.1:${s.httpPort}/r.git`, 'main'], work);
    const pushMs = Date.now() - started;
    assert.equal(p.code, 0, p.stderr);
    // the hanging receiver alone would hold a push that waited for 3 attempts of 3 s
    assert.ok(pushMs < 8000, `the push took ${pushMs} ms`);
    await good.wait(1);
    const ev = JSON.parse(good.hits[0]!.body.toString()) as Record<string, unknown>;
    assert.equal(ev.user, 'carol');
    assert.equal(ev.transport, 'http');
    await flaky.wait(3);
    assert.ok(flaky.hits[1]!.at - flaky.hits[0]!.at >= 50, 'a retry waits its backoff');
    assert.equal(flaky.hits[0]!.headers['x-gitwire-delivery'], flaky.hits[2]!.headers['x-gitwire-delivery'], 'one delivery id across retries');
    await hang.wait(3);
    // every attempt of the hanging receiver ends at its timeout; the last one is given up
    const until = Date.now() + 20_000;
    while (s.webhooks!.stats.failed < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    const st = s.webhooks!.stats;
    assert.equal(redirect.hits.length, 1, 'a redirect is final: not retried');
    assert.equal(good.hits.length, 1, "the redirect's Location is never followed");
    assert.ok(slowSent < 4 << 20, `the slow answer was cut (${slowSent} bytes sent)`);
    assert.equal(slow.hits.length, 1);
    assert.deepEqual({ delivered: st.delivered, failed: st.failed, dropped: st.dropped }, { delivered: 3, failed: 2, dropped: 0 });
    assert.deepEqual(st.attempts, { ok: 3, 'http-error': 2, redirect: 1, timeout: 3, 'network-error': 0 });
    const text = await metricsText(s);
    assert.match(text, /gitwire_webhook_deliveries_total\{outcome="failed"\} 2\n/);
    assert.match(text, /gitwire_webhook_deliveries_total\{outcome="delivered"\} 3\n/);
    assert.match(text, /gitwire_webhook_attempts_total\{result="timeout"\} 3\n/);
    assert.match(text, /gitwire_webhook_attempts_total\{result="redirect"\} 1\n/);
    assert.match(text, /gitwire_webhook_queued 0\n/);
    const failed = logs.filter((l) => l.msg === 'webhook delivery failed').map((l) => l.fields.webhook);
    assert.deepEqual(failed.sort(), [hang.url, redirect.url].sort());
    assert.ok(logs.some((l) => l.msg === 'webhook attempt failed, will retry' && l.fields.webhook === flaky.url && l.fields.status === 503));
    assert.match(String(logs.find((l) => l.fields.webhook === redirect.url)?.fields.error), /redirects are not followed/);
  } finally {
    await s.shutdown(0);
    for (const r of [good, hang, slow, redirect, flaky]) await r.close();
  }
});

test('a receiver that never answers does not hold a push, even with a minute per attempt', { timeout: 60_000 }, async () => {
  const { root, work } = setup('hang');
  const hang = await receiver(() => { /* never answers */ });
  const s = await startServer({ root, http: 0, receivePack: true, spawnHelper: false, webhooks: { targets: [{ url: hang.url }], attemptTimeoutMs: 60_000 } });
  try {
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      commit(work, `n${i}`, { 'n.txt': `${i}\n` });
      const p = await gitAsync(['push', `http://127.0.0.1:${s.httpPort}/r.git`, 'main'], work);
      assert.equal(p.code, 0, p.stderr);
      assert.ok(Date.now() - started < 20_000, `push ${i} took ${Date.now() - started} ms`);
    }
    await hang.wait(3);
    assert.equal(s.webhooks!.active, 3);
  } finally { await s.shutdown(0); await hang.close(); }
});

test('a full queue drops its oldest delivery, with a warning', { timeout: 30_000 }, async () => {
  const hang = await receiver(() => { /* never answers */ });
  const warnings: string[] = [];
  const w = new Webhooks({ targets: [{ url: hang.url }], concurrency: 1, maxQueue: 2, attemptTimeoutMs: 60_000, log: (level, msg) => { if (level === 'warn') warnings.push(msg); } });
  try {
    for (let i = 0; i < 5; i++) w.push({ repository: 'r', transport: 'http', refs: [{ ref: `refs/heads/b${i}`, old: ZERO, new: ZERO.replace(/0$/, '1') }] });
    assert.equal(w.active, 1);
    assert.equal(w.queued, 2);
    assert.equal(w.stats.dropped, 2);
    assert.deepEqual(warnings, ['webhook delivery dropped (queue full)', 'webhook delivery dropped (queue full)']);
    // a byte bound too: a body larger than the whole queue is never held
    const small = new Webhooks({ targets: [{ url: hang.url }], concurrency: 1, maxQueueBytes: 100, attemptTimeoutMs: 60_000 });
    small.push({ repository: 'r', transport: 'http', refs: [{ ref: 'refs/heads/x', old: ZERO, new: ZERO }] });
    assert.equal(small.stats.dropped, 1);
    await small.close();
  } finally { await w.close(); await hang.close(); }
});

/** one raw receive-pack POST; the answer's body */
function rawPush(port: number, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/r.git/git-receive-pack', headers: { 'Content-Type': 'application/x-git-receive-pack-request' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('onPush is not called when no ref moved: every ref refused, or the deletion of a ref that is not there', { timeout: 60_000 }, async () => {
  const { root, work, dir } = setup('onpush');
  const calls: string[][] = [];
  const s = await startServer({
    root, http: 0, receivePack: true, spawnHelper: false,
    protectedRefs: () => (ref) => ref === 'refs/heads/main',
    onPush: (_info, results) => { calls.push(results.map((r) => r.ref)); },
  });
  try {
    const main = git(['rev-parse', 'main'], { cwd: dir }).trim();
    // a deletion of a ref that does not exist (its old id no object either): `ok`, and nothing moved
    const gone = await rawPush(s.httpPort!, pkt([`${'de'.repeat(20)} ${ZERO} refs/heads/nope\0report-status`, '0000']));
    assert.match(gone, /ok refs\/heads\/nope/);
    // an update to the value the ref has: `ok`, and nothing moved (an empty pack follows the commands)
    const head = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
    const empty = Buffer.concat([head, createHash('sha1').update(head).digest()]);
    const same = await rawPush(s.httpPort!, Buffer.concat([pkt([`${main} ${main} refs/heads/main\0report-status`, '0000']), empty]));
    assert.match(same, /ok refs\/heads\/main/);
    // every ref refused
    const refused = await rawPush(s.httpPort!, pkt([`${main} ${ZERO} refs/heads/main\0report-status`, '0000']));
    assert.match(refused, /ng refs\/heads\/main protected ref/);
    assert.deepEqual(calls, []);
    // one moved: called with that one only
    commit(work, 'two', { 'b.txt': 'b\n' });
    const p = await gitAsync(['push', `http://127.0.0.1:${s.httpPort}/r.git`, 'main:refs/heads/new', `${main}:refs/heads/nope2`], work);
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(calls, [['refs/heads/new', 'refs/heads/nope2']]);
  } finally { await s.shutdown(0); }
});

test('bad --webhook settings are refused at start, naming what is wrong', { timeout: 30_000 }, () => {
  const root = join(t.dir, 'bad');
  mkdirSync(root);
  const run = (args: string[]) => spawnSync(BIN, ['serve', root, '--http', '0', ...args], { encoding: 'utf8', timeout: 20_000 });
  const ftp = run(['--webhook', 'ftp://example.com/hook']);
  assert.equal(ftp.status, 129);
  assert.match(ftp.stderr, /--webhook: expected an http:\/\/ or https:\/\/ URL, not 'ftp:\/\/example.com\/hook'/);
  const creds = run(['--webhook', 'https://u:p@example.com/hook']);
  assert.equal(creds.status, 129);
  assert.match(creds.stderr, /carries no credentials/);
  assert.doesNotMatch(creds.stderr, /u:p/, 'the password is not echoed');
  const lone = run(['--webhook-secret', '/nonexistent']);
  assert.equal(lone.status, 129);
  assert.match(lone.stderr, /--webhook-secret needs --webhook <url>/);
  const missing = run(['--webhook', 'http://127.0.0.1:9/', '--webhook-secret', join(t.dir, 'no-such-file')]);
  assert.equal(missing.status, 128);
  assert.match(missing.stderr, /--webhook-secret: cannot read .*no-such-file: ENOENT/);
});
