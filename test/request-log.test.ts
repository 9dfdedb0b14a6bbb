/**
 * The request log an operator reads (issue #27): one id for the requests of
 * one clone, the client's session id where it sends one, service, protocol,
 * user and address (X-Forwarded-For only with --trust-proxy), the refs a
 * push moved, an error's message and detail, --log-level, and a transfer
 * cut at shutdown as its own outcome.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';
import { startServer } from '../src/transport/server.js';
import { clientSessionId, forwardedFor } from '../src/transport/request-id.js';
import type { RequestLog } from '../src/transport/http.js';

function setup() {
  const t = tmp('gitwire-reqlog-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  const head = commit(w, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  return { t, w, root, head };
}

const requests = (logs: string[]) => logs.filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l) as RequestLog & { level: string; time: string });

/** wait until n request lines are in (the server logs after it answered) */
async function lines(logs: string[], n: number): Promise<Array<RequestLog & { level: string; time: string }>> {
  for (let i = 0; i < 100 && requests(logs).length < n; i++) await new Promise((r) => setTimeout(r, 50));
  return requests(logs);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;

test('a clone over HTTP: its requests share one id; service, protocol and address on every line; the client session id where the repository advertises it', { timeout: 90_000 }, async () => {
  const { t, root } = setup();
  const s = await startServe(root, ['--http', '0']);
  try {
    const url = `http://127.0.0.1:${s.httpPort}/repo.git`;
    for (const [i, v] of [[0, '2'], [1, '0']] as const) {
      const before = requests(s.logs).length;
      git(['-c', `protocol.version=${v}`, 'clone', '-q', url, join(t.dir, `c${i}`)]);
      const mine = (await lines(s.logs, before + 2)).slice(before);
      assert.equal(mine.length, v === '2' ? 3 : 2, `protocol ${v}: info/refs, then ${v === '2' ? 'ls-refs and fetch' : 'one POST'}`);
      assert.equal(new Set(mine.map((e) => e.requestId)).size, 1, `one id for the clone: ${JSON.stringify(mine.map((e) => e.requestId))}`);
      assert.match(mine[0]!.requestId!, /^[0-9a-f-]{36}$/);
      for (const e of mine) {
        assert.equal(e.service, 'upload-pack');
        assert.equal(e.protocol, Number(v));
        assert.equal(e.remoteAddress, '127.0.0.1');
        assert.equal(e.outcome, 'ok');
        assert.equal(e.level, 'info', 'level names, not pino numbers');
        assert.match(e.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'an ISO time');
        assert.equal(e.sessionId, undefined, 'no session id unless the server advertises it');
      }
    }
    const ids = new Set(requests(s.logs).map((e) => e.requestId));
    assert.equal(ids.size, 2, 'two clones, two ids');

    git(['config', 'transfer.advertiseSID', 'true'], { cwd: join(root, 'repo.git') });
    const before = requests(s.logs).length;
    git(['-c', 'protocol.version=2', '-c', 'transfer.advertiseSID=true', 'clone', '-q', url, join(t.dir, 'sid')]);
    const mine = (await lines(s.logs, before + 3)).slice(before);
    const sids = mine.map((e) => e.sessionId);
    assert.equal(sids[0], undefined, 'info/refs carries none');
    // git 2.39 sends it with fetch (its trace2 session id), not with ls-refs
    assert.match(sids[2] ?? '', /^\S+-P[0-9a-f]+/, `fetch carries the client's: ${JSON.stringify(sids)}`);
    assert.equal(new Set(mine.map((e) => e.requestId)).size, 1);
  } finally { await s.stop(); t.cleanup(); }
});

test('X-Forwarded-For names the client only from a proxy --trust-proxy names', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  // no flag; a proxy elsewhere (the request comes from 127.0.0.1, which may not name its client); this peer
  for (const flag of [undefined, '10.0.0.0/8,192.0.2.1', '10.0.0.2,127.0.0.1']) {
    const trust = flag?.includes('127.0.0.1') ?? false;
    const s = await startServe(root, ['--http', '0', ...(flag ? ['--trust-proxy', flag] : [])]);
    try {
      const r = await fetch(`http://127.0.0.1:${s.httpPort}/repo.git/info/refs?service=git-upload-pack`, { headers: { 'X-Forwarded-For': '203.0.113.9, 198.51.100.7' } });
      assert.equal(r.status, 200);
      await r.arrayBuffer();
      const [e] = await lines(s.logs, 1);
      if (trust) {
        assert.equal(e!.remoteAddress, '198.51.100.7', "the entry the proxy appended, not what the client claimed");
        assert.equal(e!.proxyAddress, '127.0.0.1');
      } else {
        assert.equal(e!.remoteAddress, '127.0.0.1');
        assert.equal(e!.proxyAddress, undefined);
      }
    } finally { await s.stop(); }
  }
  t.cleanup();
});

test('a push line names the user and the refs that moved', { timeout: 90_000 }, async () => {
  const { t, w, root, head } = setup();
  const htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw', 4)}\n`);
  const s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd]);
  try {
    const next = commit(w, 'second', { 'b.txt': 'b\n' });
    const before = requests(s.logs).length;
    git(['push', '-q', `http://alice:pw@127.0.0.1:${s.httpPort}/repo.git`, 'main', 'main:refs/heads/topic'], { cwd: w });
    const all = (await lines(s.logs, before + 2)).slice(before);
    const push = all.find((e) => e.push && e.command !== 'advertise' && e.push.moved);
    assert.ok(push, JSON.stringify(all));
    assert.equal(push.user, 'alice');
    assert.equal(push.service, 'receive-pack');
    assert.deepEqual(push.push!.moved, [
      { ref: 'refs/heads/main', old: head, new: next },
      { ref: 'refs/heads/topic', old: '0'.repeat(40), new: next },
    ]);
    assert.equal(new Set(all.filter((e) => e.user === 'alice').map((e) => e.requestId)).size, 1, 'the push requests share an id');
  } finally { await s.stop(); t.cleanup(); }
});

test('an error line carries the message and the detail, not only the code', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const s = await startServe(root, ['--http', '0']);
  try {
    const bad = 'f'.repeat(40);
    const body = `${pkt(`want ${bad} side-band-64k\n`)}0000${pkt('done\n')}`;
    const r = await fetch(`http://127.0.0.1:${s.httpPort}/repo.git/git-upload-pack`, { method: 'POST', headers: { 'Content-Type': 'application/x-git-upload-pack-request' }, body });
    assert.match(await r.text(), /not our ref/);
    const [e] = await lines(s.logs, 1);
    assert.equal(e!.outcome, 'GW_NOT_OUR_REF');
    assert.equal(e!.error, `git upload-pack: not our ref ${bad}`);
    assert.deepEqual(e!.detail, { oid: bad });
  } finally { await s.stop(); t.cleanup(); }
});

test('--log-level: warn drops request lines; an unknown level is a usage error', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  // at warn the server does not say where it listens: the metrics listener's port is chosen here
  const port = await freePort();
  const child = spawn(BIN, ['serve', root, '--http', String(port), '--log-level', 'warn'], { env: gitEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  try {
    let r: Response | undefined;
    for (let i = 0; i < 100 && !r; i++) r = await fetch(`http://127.0.0.1:${port}/repo.git/info/refs?service=git-upload-pack`).catch(() => new Promise((res) => setTimeout(() => res(undefined), 100)));
    assert.equal(r?.status, 200);
    await r.arrayBuffer();
    await new Promise((res) => setTimeout(res, 300));
  } finally {
    await new Promise((res) => { child.once('exit', res); child.kill('SIGTERM'); });
  }
  assert.equal(out, '', 'no info lines at warn');
  const r = spawnSync(BIN, ['serve', root, '--http', '0', '--log-level', 'loud'], { env: gitEnv, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 129);
  assert.match(r.stderr, /^error: --log-level: expected one of trace, debug, info, warn, error, fatal, silent, not 'loud'\n/);
  t.cleanup();
});

test('a transfer still running when the grace period ends is logged as shutdown', { timeout: 30_000 }, async () => {
  const { t, root } = setup();
  const seen: RequestLog[] = [];
  const s = await startServer({ root, git: 0, spawnHelper: false, log: (e) => seen.push(e) });
  const held = connect(s.gitPort!, '127.0.0.1');
  await new Promise<void>((r) => held.once('connect', () => r()));
  held.on('error', () => { /* cut */ });
  await s.shutdown(100);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.outcome, 'shutdown');
  assert.ok(seen[0]!.requestId);
  t.cleanup();
});

test('clientSessionId and forwardedFor parse what they may and refuse the rest', () => {
  assert.equal(clientSessionId(Buffer.from(`${pkt('command=fetch\n')}${pkt('agent=git/2\n')}${pkt('session-id=git/2.39-abc\n')}0001${pkt('done\n')}0000`)), 'git/2.39-abc');
  assert.equal(clientSessionId(Buffer.from(`${pkt(`want ${'a'.repeat(40)} ofs-delta session-id=s1 agent=x\n`)}0000`)), 's1');
  assert.equal(clientSessionId(Buffer.from(`${pkt(`want ${'a'.repeat(40)} ofs-delta\n`)}${pkt('session-id=late\n')}0000`)), undefined, 'v0: only on the first want');
  assert.equal(clientSessionId(Buffer.from(`${pkt('command=fetch\n')}0001${pkt('session-id=after-delim\n')}0000`)), undefined);
  assert.equal(clientSessionId(Buffer.from(`${pkt('session-id=\n')}0000`)), undefined);
  assert.equal(clientSessionId(Buffer.from(`${pkt('session-id=a b\n')}0000`)), undefined);
  assert.equal(clientSessionId(Buffer.from(`zzzz`)), undefined);
  assert.equal(clientSessionId(Buffer.from(`00ff${'x'.repeat(10)}`)), undefined);
  assert.equal(forwardedFor('1.2.3.4, 5.6.7.8'), '5.6.7.8');
  assert.equal(forwardedFor(['1.2.3.4', '::1']), '::1');
  assert.equal(forwardedFor('evil<script>'), undefined);
  assert.equal(forwardedFor(''), undefined);
  assert.equal(forwardedFor(undefined), undefined);
});

// a balancer's TCP health check on git:// (connect, close) is not a bad request an operator must read
test('git://: a connection closed without a byte is logged at debug level; one that sends garbage stays info', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const s = await startServe(root, ['--git', '0', '--log-level', 'debug']);
  try {
    const probe = (bytes?: string) => new Promise<void>((resolve) => {
      const c = connect(s.gitPort!, '127.0.0.1', () => { if (bytes) c.write(bytes); c.end(); });
      c.on('error', () => resolve());
      c.on('close', () => resolve());
    });
    // one at a time: each line is in before the next probe
    await probe();
    const [check] = await lines(s.logs, 1);
    await probe('zzzz');
    const garbage = (await lines(s.logs, 2))[1];
    assert.equal(check!.outcome, 'protocol-error');
    assert.equal(check!.reason, 'closed before sending a request');
    assert.equal(check!.level, 'debug');
    assert.equal(garbage!.outcome, 'bad-request');
    assert.equal(garbage!.level, 'info');
  } finally { await s.stop(); t.cleanup(); }
});
