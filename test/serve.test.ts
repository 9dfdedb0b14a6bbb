/** What can go wrong around `gitwire serve` and the embeddable handler. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request, createServer, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { chmodSync, existsSync, mkdirSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { createHttpHandler } from '../src/transport/http.js';

let t: ReturnType<typeof tmp>;
let root: string;
let srv: ServerProc;
let main: string;

before(async () => {
  t = tmp();
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  for (let i = 0; i < 5; i++) commit(w, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(1000) });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  git(['clone', '-q', '--bare', w, join(root, 'hidden.git')]);
  writeFileSync(join(root, 'repo.git', 'git-daemon-export-ok'), '');
  mkdirSync(join(root, 'group'));
  git(['clone', '-q', '--bare', w, join(root, 'group', 'project.git')]);
  writeFileSync(join(root, 'group', 'project.git', 'git-daemon-export-ok'), '');
  const outside = join(t.dir, 'outside.git');
  git(['clone', '-q', '--bare', w, outside]);
  writeFileSync(join(outside, 'git-daemon-export-ok'), '');
  symlinkSync(outside, join(root, 'escape.git'));
  main = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']).trim();
  srv = await startServe(root, ['--http', '0', '--git', '0', '--max-request-buffer', '4096']);
});
after(async () => { await srv.stop(); t.cleanup(); });

function http(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer, port = srv.httpPort): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function daemon(line: Buffer, port = srv.gitPort!): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => { s.write(line); s.end(); });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => { chunks.push(c); });
    s.on('end', () => resolve(Buffer.concat(chunks)));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

const RPC = { 'Content-Type': 'application/x-git-upload-pack-request' };

test('info/refs: content type, no-cache headers, preamble (v0) and v2 advertisement', async () => {
  const r = await http('GET', '/repo.git/info/refs?service=git-upload-pack');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/x-git-upload-pack-advertisement');
  assert.equal(r.headers['cache-control'], 'no-cache, max-age=0, must-revalidate');
  assert.equal(r.headers.pragma, 'no-cache');
  assert.equal(r.headers.expires, 'Fri, 01 Jan 1980 00:00:00 GMT');
  const lines = unpkt(r.body);
  assert.equal(lines[0], '# service=git-upload-pack\n');
  assert.equal(lines[1], '0000');
  const v2 = await http('GET', '/repo/info/refs?service=git-upload-pack', { 'Git-Protocol': 'version=2' });
  assert.equal(unpkt(v2.body)[0], 'version 2\n', '/repo finds repo.git, v2 has no preamble');
  assert.equal((await http('GET', '/group/project.git/info/refs?service=git-upload-pack')).status, 200, 'nested paths');
});

test('receive-pack is refused with 403; unknown services too', async () => {
  assert.equal((await http('GET', '/repo.git/info/refs?service=git-receive-pack')).status, 403);
  assert.equal((await http('POST', '/repo.git/git-receive-pack', { 'Content-Type': 'application/x-git-receive-pack-request' }, Buffer.from('0000'))).status, 403);
  assert.equal((await http('GET', '/repo.git/info/refs?service=git-bogus')).status, 403);
});

test('a gzip request body is inflated', async () => {
  const body = pkt(['command=ls-refs\n', '0001', 'ref-prefix refs/heads/\n', '0000']);
  const r = await http('POST', '/repo.git/git-upload-pack', { ...RPC, 'Git-Protocol': 'version=2', 'Content-Encoding': 'gzip' }, gzipSync(body));
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-type'], 'application/x-git-upload-pack-result');
  assert.deepEqual(unpkt(r.body), [`${main} refs/heads/main\n`, '0000']);
  const x = await http('POST', '/repo.git/git-upload-pack', { ...RPC, 'Git-Protocol': 'version=2', 'Content-Encoding': 'x-gzip' }, gzipSync(body));
  assert.equal(x.status, 200);
});

test('a body over the cap gets a clear 413', async () => {
  const big = pkt(['command=ls-refs\n', '0001', ...Array.from({ length: 200 }, (_, i) => `ref-prefix refs/heads/${i}\n`), '0000']);
  const r = await http('POST', '/repo.git/git-upload-pack', { ...RPC, 'Git-Protocol': 'version=2', 'Content-Encoding': 'gzip' }, gzipSync(big));
  assert.equal(r.status, 413);
  assert.match(r.body.toString(), /request was larger than our maximum size \(4096\)/);
});

test('the wrong content type gets 415 with git\'s message', async () => {
  const r = await http('POST', '/repo.git/git-upload-pack', { 'Content-Type': 'text/plain' }, Buffer.from('0000'));
  assert.equal(r.status, 415);
  assert.equal(r.body.toString(), "Expected POST with Content-Type 'application/x-git-upload-pack-request', but received 'text/plain' instead.\n");
});

/** The raw bytes of a GET, with the Date header's value blanked (it is the clock, not the answer). */
function rawGet(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(srv.httpPort!, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*\r\n/i, '\r\nDate: -\r\n')));
    s.on('error', reject);
  });
}

test('path traversal over HTTP: nothing outside the root; not found and not allowed are byte-identical, headers included', async () => {
  const paths = ['/../outside.git', '/%2e%2e/outside.git', '/..%2Foutside.git', '/repo.git%00', '/escape.git', '//etc', '/nope.git', `/${encodeURIComponent(join(t.dir, 'outside.git'))}`];
  const expected = await rawGet('/nope.git/info/refs?service=git-upload-pack');
  assert.match(expected, /^HTTP\/1\.1 404 /);
  for (const p of paths) {
    const r = await http('GET', `${p}/info/refs?service=git-upload-pack`);
    assert.equal(r.status, 404, p);
    assert.equal(await rawGet(`${p}/info/refs?service=git-upload-pack`), expected, p);
  }
  // not a repository route at all: the same answer
  assert.equal(await rawGet('/nope.git/objects/info/packs'), expected);
});

test('git://: traversal, non-exported and unknown repositories are refused with git\'s message', async () => {
  for (const p of ['/../outside.git', '/escape.git', '/hidden.git', '/nope.git', 'repo.git']) {
    const out = await daemon(pkt([`git-upload-pack ${p}\0host=localhost\0`]));
    assert.deepEqual(unpkt(out), [`ERR access denied or repository not exported: ${p}`], p);
  }
  const ok = await daemon(pkt(['git-upload-pack /repo.git\0host=localhost\0\0version=2\0']));
  assert.equal(unpkt(ok)[0], 'version 2\n');
  const real = spawn('git', ['ls-remote', `git://127.0.0.1:${srv.gitPort}/hidden.git`], { env: gitEnv });
  let err = '';
  real.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const code = await new Promise((r) => real.on('exit', r));
  assert.notEqual(code, 0);
  assert.match(err, /access denied or repository not exported: \/hidden.git/);
});

test('the embeddable handler: authorize denies, ref filter hides refs and makes them unfetchable', async () => {
  git(['--git-dir', join(root, 'repo.git'), 'update-ref', 'refs/heads/private', 'main~2']);
  const secret = git(['--git-dir', join(root, 'repo.git'), 'commit-tree', '-m', 'secret', 'main^{tree}']).trim();
  git(['--git-dir', join(root, 'repo.git'), 'update-ref', 'refs/heads/private-secret', secret]);
  const handler = createHttpHandler({
    root,
    authorize: (info) => info.req?.headers.authorization === 'Bearer good' ? true : { status: 401, message: 'authentication required', headers: { 'WWW-Authenticate': 'Bearer' } },
    refFilter: () => (name) => !name.startsWith('refs/heads/private'),
  });
  const server = createServer((req, res) => { void handler(req, res); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const denied = await http('GET', '/repo.git/info/refs?service=git-upload-pack', {}, undefined, port);
    assert.equal(denied.status, 401);
    assert.equal(denied.headers['www-authenticate'], 'Bearer');
    const ok = await http('GET', '/repo.git/info/refs?service=git-upload-pack', { Authorization: 'Bearer good' }, undefined, port);
    assert.equal(ok.status, 200);
    assert.doesNotMatch(ok.body.toString(), /private/);
    const v2 = await http('POST', '/repo.git/git-upload-pack', { ...RPC, Authorization: 'Bearer good', 'Git-Protocol': 'version=2' }, pkt(['command=ls-refs\n', '0000']), port);
    assert.doesNotMatch(v2.body.toString(), /private/);
    const fetch = await http('POST', '/repo.git/git-upload-pack', { ...RPC, Authorization: 'Bearer good', 'Git-Protocol': 'version=2' }, pkt(['command=fetch\n', '0001', `want ${secret}\n`, 'done\n', '0000']), port);
    assert.match(fetch.body.toString(), /ERR upload-pack: not our ref/);
  } finally {
    server.close();
  }
});

test('8 concurrent clones with a pack-objects limit of 2: all succeed, queued ones are told they wait', async () => {
  const hook = join(t.dir, 'slow-hook.sh');
  writeFileSync(hook, '#!/bin/sh\nsleep 0.7\nexec "$@"\n');
  chmodSync(hook, 0o755);
  const s = await startServe(root, ['--http', '0', '--max-packs', '2', '--quiet'], { GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` });
  try {
    const runs = Array.from({ length: 8 }, (_, i) => new Promise<{ code: number | null; err: string }>((resolve) => {
      const dest = join(t.dir, `conc-${i}`);
      const p = spawn('git', ['clone', '--progress', `http://127.0.0.1:${s.httpPort}/repo.git`, dest], { env: gitEnv });
      let err = '';
      p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
      p.on('exit', (code) => resolve({ code, err }));
    }));
    const results = await Promise.all(runs);
    for (const r of results) assert.equal(r.code, 0, r.err);
    const waited = results.filter((r) => /waiting for a pack-objects slot/.test(r.err)).length;
    assert.ok(waited >= 4, `${waited} clones saw the waiting message`);
    for (let i = 0; i < 8; i++) git(['fsck'], { cwd: join(t.dir, `conc-${i}`) });
  } finally {
    await s.stop();
  }
});

test('SIGTERM sent as soon as a listener line is out finds the handlers: the server exits 0, not killed by the signal', async () => {
  // (the handlers were set after the start-up summary, which waits for `git --version`: a supervisor or a test
  // signalling on the first listener line, or a process preempted there, met the default action)
  for (let i = 0; i < 5; i++) {
    const child = spawn(BIN, ['serve', root, '--http', '0', '--git', '0'], { env: gitEnv, stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let sent = false;
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      if (!sent && /"url":"(http|git):/.test(buf)) { sent = true; child.kill('SIGTERM'); }
    });
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, sig) => r([c, sig])));
    assert.ok(sent, 'a listener line was printed');
    assert.deepEqual([code, signal], [0, null], `run ${i}: exit ${code}, signal ${signal}; ${buf.slice(-300)}`);
  }
});

test('SIGTERM during a clone: the transfer finishes, then the server exits 0; a short grace cuts it', async () => {
  // the hook marks that the fetch has reached pack-objects: the signal then
  // lands mid-transfer whatever the machine's load (no guessed sleep)
  const hook = join(t.dir, 'slow2.sh');
  const marker = join(t.dir, 'slow2.started');
  writeFileSync(hook, `#!/bin/sh\ntouch '${marker}'\nsleep 1.5\nexec "$@"\n`);
  chmodSync(hook, 0o755);
  const started = async () => {
    for (let i = 0; i < 600 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(existsSync(marker), 'the clone reached pack-objects');
    rmSync(marker);
  };
  const env = { GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` };
  const s = await startServe(root, ['--http', '0', '--quiet'], env);
  const dest = join(t.dir, 'term-clone');
  const clone = spawn('git', ['clone', `http://127.0.0.1:${s.httpPort}/repo.git`, dest], { env: gitEnv });
  await started();
  const code = await s.stop('SIGTERM');
  const cloneCode = await new Promise((r) => clone.exitCode !== null ? r(clone.exitCode) : clone.on('exit', r));
  assert.equal(code, 0, 'server exits 0');
  assert.equal(cloneCode, 0, 'the running clone finished');
  // new connections are refused after the signal
  const s2 = await startServe(root, ['--http', '0', '--quiet', '--shutdown-grace', '0.2'], env);
  const dest2 = join(t.dir, 'term-clone-2');
  const clone2 = spawn('git', ['clone', `http://127.0.0.1:${s2.httpPort}/repo.git`, dest2], { env: gitEnv });
  await started();
  const code2 = await s2.stop('SIGTERM');
  const clone2Code = await new Promise((r) => clone2.exitCode !== null ? r(clone2.exitCode) : clone2.on('exit', r));
  assert.equal(code2, 0);
  assert.notEqual(clone2Code, 0, 'cut after the grace period');
  rmSync(dest2, { recursive: true, force: true });
});
