/**
 * Prometheus metrics on their own listener (issue #24): never on the git
 * port, loopback unless told otherwise, GET (and HEAD) only, and label
 * values from a fixed set whatever an error said.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';
import { startServer } from '../src/transport/server.js';
import { createMetrics } from '../src/transport/metrics.js';
import { PackLimiter } from '../src/transport/admission.js';
import type { RequestLog } from '../src/transport/http.js';

function setup() {
  const t = tmp('gitwire-metrics-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  return { t, root };
}

test('serve --metrics PORT: its own listener, GET and HEAD only; the git port has no /metrics, with --auth all it asks for credentials', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw', 4)}\n`);
  const s = await startServe(root, ['--http', '0', '--quiet', '--metrics', '0', '--htpasswd', htpasswd, '--auth', 'all']);
  try {
    assert.ok(s.metricsPort && s.metricsPort !== s.httpPort);
    assert.ok(s.logs.some((l) => l.includes(`"metrics":"http://127.0.0.1:${s.metricsPort}/metrics"`)), 'loopback by default');
    const git = `http://127.0.0.1:${s.httpPort}`;
    for (const method of ['GET', 'POST']) assert.equal((await fetch(`${git}/metrics`, { method })).status, 401, `git port ${method}`);
    const auth = { Authorization: `Basic ${Buffer.from('alice:pw').toString('base64')}` };
    assert.equal((await fetch(`${git}/metrics`, { headers: auth })).status, 404, 'the git port serves no metrics');
    assert.equal((await fetch(`${git}/repo.git/info/refs?service=git-upload-pack`, { headers: auth })).status, 200);

    const m = `http://127.0.0.1:${s.metricsPort}/metrics`;
    const got = await fetch(m);
    assert.equal(got.status, 200);
    assert.match(await got.text(), /gitwire_requests_total\{service="upload-pack",transport="http",protocol="0",command="advertise",outcome="ok"\} 1\n/);
    const head = await fetch(m, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await fetch(m, { method, body: method === 'DELETE' ? undefined : 'x' });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.get('allow'), 'GET, HEAD');
    }
    assert.equal((await fetch(`http://127.0.0.1:${s.metricsPort}/other`)).status, 404);
  } finally { await s.stop(); t.cleanup(); }
});

test('startServer({ metrics }): loopback unless an address is given, whatever host the git ports use', { timeout: 30_000 }, async () => {
  const { t, root } = setup();
  const a = await startServer({ root, http: 0, host: '0.0.0.0', metrics: { port: 0 }, spawnHelper: false });
  const b = await startServer({ root, http: 0, metrics: { port: 0, host: '0.0.0.0' }, spawnHelper: false });
  try {
    assert.equal((a.metrics!.address() as { address: string }).address, '127.0.0.1');
    assert.equal((a.http!.address() as { address: string }).address, '0.0.0.0');
    assert.equal((b.metrics!.address() as { address: string }).address, '0.0.0.0');
  } finally { await a.shutdown(100); await b.shutdown(100); t.cleanup(); }
});

test('an invalid --metrics value is a start-up error', () => {
  for (const bad of ['abc', '70000', 'host:', ':', '1.2.3.4:x', '[::1]', 'a:b:9100']) {
    const r = spawnSync(BIN, ['serve', '.', '--http', '0', '--metrics', bad], { env: gitEnv, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 129, `${bad}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^error: --metrics: expected \\[<addr>:\\]<port>, not '${bad.replace(/[[\]]/g, '\\$&')}'\n`), bad);
  }
  const none = spawnSync(BIN, ['serve', '.', '--http', '0', '--metrics'], { env: gitEnv, encoding: 'utf8', timeout: 20_000 });
  assert.equal(none.status, 129);
  assert.match(none.stderr, /--metrics/);
});

test('label values come from a fixed set: an outcome outside it is counted as other', async () => {
  const metrics = createMetrics(new PackLimiter(0));
  const entry = (outcome: string): RequestLog => ({ transport: 'http', bytesOut: 0, writes: 0, durationMs: 1, outcome: outcome as RequestLog['outcome'], command: 'fetch' });
  for (const o of ['ok', 'GW_PROTOCOL', 'error: db down at 10.0.0.7', 'server error: listen EADDRINUSE']) metrics.observe(entry(o));
  let body = '';
  await metrics.handle(
    Object.assign(Object.create(null) as object, { url: '/metrics', method: 'GET', resume() { /* nothing to read */ } }) as never,
    { writeHead() { return this; }, end(b?: string) { body = b ?? ''; } } as never,
  );
  const outcomes = [...body.matchAll(/gitwire_requests_total\{[^}]*outcome="([^"]*)"\}/g)].map((x) => x[1]).sort();
  assert.deepEqual(outcomes, ['GW_PROTOCOL', 'ok', 'other']);
});
