/**
 * /healthz and /readyz (issue #27): on the HTTP listener and on the metrics
 * listener, before credentials or repositories; /readyz is 503 from the
 * moment a shutdown starts, while transfers still finish.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/pkt.js';
import { startServe } from './helpers/server-process.js';
import { startServer } from '../src/transport/server.js';

function setup() {
  const t = tmp('gitwire-health-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  return { t, root };
}

async function probe(base: string, path: string, method = 'GET') {
  const r = await fetch(`${base}${path}`, { method });
  return { status: r.status, body: await r.text(), allow: r.headers.get('allow') };
}

test('healthz and readyz on the HTTP and metrics listeners; readyz 503 from the start of a shutdown until the end', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const s = await startServer({
    root, http: 0, git: 0, metrics: { port: 0 }, spawnHelper: false, exportAll: true,
    // everything else over HTTP needs credentials: the probes do not (git:// is open, for the held conversation below)
    authenticate: (info) => (info.transport === 'git' ? true : { status: 401, message: 'Authentication required' }),
  });
  try {
    const listeners = [`http://127.0.0.1:${s.httpPort}`, `http://127.0.0.1:${s.metricsPort}`];
    assert.equal((await probe(listeners[0]!, '/repo.git/info/refs?service=git-upload-pack')).status, 401);
    for (const base of listeners) {
      assert.deepEqual(await probe(base, '/healthz'), { status: 200, body: 'ok\n', allow: null }, base);
      assert.deepEqual(await probe(base, '/readyz'), { status: 200, body: 'ready\n', allow: null }, base);
      assert.deepEqual(await probe(base, '/readyz?verbose'), { status: 200, body: 'ready\n', allow: null }, base);
      assert.deepEqual(await probe(base, '/healthz', 'HEAD'), { status: 200, body: '', allow: null }, base);
      assert.deepEqual(await probe(base, '/readyz', 'POST'), { status: 405, body: 'Method Not Allowed\n', allow: 'GET, HEAD' }, base);
    }
    // a git:// conversation under way (the refs advertised, the client's wants awaited) keeps the
    // shutdown in its grace period; a connection that has sent no request does not (it is closed)
    const held = connect(s.gitPort!, '127.0.0.1');
    await new Promise<void>((r) => held.once('connect', () => r()));
    held.write(pkt(['git-upload-pack /repo.git\0host=127.0.0.1\0']));
    await new Promise<void>((r) => held.once('data', () => r()));
    let done = false;
    const stopping = s.shutdown(20_000).then(() => { done = true; });
    assert.equal(s.health.draining, true);
    const metrics = listeners[1]!;
    assert.deepEqual(await probe(metrics, '/readyz'), { status: 503, body: 'shutting down\n', allow: null });
    assert.deepEqual(await probe(metrics, '/healthz'), { status: 200, body: 'ok\n', allow: null });
    assert.equal(done, false, 'the transfer still holds the shutdown');
    held.destroy();
    await stopping;
    await assert.rejects(fetch(`${metrics}/readyz`), 'the metrics listener closes once the shutdown is over');
  } finally { await s.shutdown(100); t.cleanup(); }
});

test('serve --auth all: the probes answer without credentials', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw', 4)}\n`);
  const s = await startServe(root, ['--http', '0', '--quiet', '--metrics', '0', '--htpasswd', htpasswd, '--auth', 'all']);
  try {
    for (const port of [s.httpPort, s.metricsPort]) {
      assert.equal((await probe(`http://127.0.0.1:${port}`, '/healthz')).status, 200);
      assert.equal((await probe(`http://127.0.0.1:${port}`, '/readyz')).status, 200);
    }
    assert.equal((await probe(`http://127.0.0.1:${s.httpPort}`, '/repo.git/info/refs?service=git-upload-pack')).status, 401);
  } finally { await s.stop(); t.cleanup(); }
});
