/**
 * HTTP connection lifetime in `serve`: a silent connection is closed after
 * httpIdleTimeout, while a request body that keeps moving is never cut,
 * however long it takes (Node's own 300 s requestTimeout is off: it would
 * answer a slow push of a large pack with 408).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { git, gitEnv, tmp } from './helpers/git.js';

const run = promisify(execFile);
import { commit } from './helpers/fixtures.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { startServer, type RunningServer } from '../src/transport/server.js';

let t: ReturnType<typeof tmp>;
let server: RunningServer;
let main: string;

before(async () => {
  t = tmp('gitwire-idle-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { a: '1\n' });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  main = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']).trim();
  server = await startServer({ root, http: 0, exportAll: true, httpIdleTimeout: 1 });
});
after(async () => { await server.shutdown(100); t.cleanup(); });

test('a connection that says nothing is closed once it has been idle for httpIdleTimeout', async () => {
  const s = connect(server.httpPort!, '127.0.0.1');
  const closed = await new Promise<boolean>((resolve) => {
    const guard = setTimeout(() => resolve(false), 20_000);
    s.on('close', () => { clearTimeout(guard); resolve(true); });
    s.on('error', () => undefined);
  });
  s.destroy();
  assert.equal(closed, true, 'closed by the server (Node alone would keep it for its 60 s headers timeout)');
});

test('a request body that keeps moving is served even when it takes many idle timeouts', async () => {
  assert.equal(server.http!.requestTimeout, 0);
  const body = pkt(['command=ls-refs\n', 'object-format=sha1\n', '0001', 'peel\n', 'symrefs\n', 'ref-prefix refs/heads/\n', '0000']);
  const s = connect(server.httpPort!, '127.0.0.1');
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  const done = new Promise<void>((resolve) => s.on('close', () => resolve()));
  s.write('POST /repo.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\n' +
    'Git-Protocol: version=2\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n');
  // an eighth of the body every 400 ms: over 3 s in all, three times the idle timeout
  const start = Date.now();
  for (let i = 0; i < body.length; i += Math.ceil(body.length / 8)) {
    const part = body.subarray(i, i + Math.ceil(body.length / 8));
    s.write(`${part.length.toString(16)}\r\n`); s.write(part); s.write('\r\n');
    await new Promise((r) => setTimeout(r, 400));
  }
  s.write('0\r\n\r\n');
  await done;
  const res = Buffer.concat(chunks).toString('latin1');
  assert.ok(Date.now() - start > 2500);
  assert.match(res, /^HTTP\/1\.1 200 /);
  assert.deepEqual(unpkt(dechunk(res.slice(res.indexOf('\r\n\r\n') + 4))), [`${main} refs/heads/main\n`, '0000']);
});

/** The body of a chunked HTTP response. */
function dechunk(s: string): Buffer {
  const parts: Buffer[] = [];
  for (let p = 0; ;) {
    const eol = s.indexOf('\r\n', p);
    const n = parseInt(s.slice(p, eol), 16);
    if (!(n > 0)) return Buffer.concat(parts);
    parts.push(Buffer.from(s.slice(eol + 2, eol + 2 + n), 'latin1'));
    p = eol + 2 + n + 2;
  }
}

test('the server still answers a real git ls-remote', async () => {
  // asynchronously: the server runs in this process
  const { stdout: out } = await run('git', ['-c', 'protocol.version=2', 'ls-remote', `http://127.0.0.1:${server.httpPort}/repo.git`], { env: gitEnv });
  assert.match(out, new RegExp(`^${main}\\tHEAD\\n${main}\\trefs/heads/main\\n$`));
});
