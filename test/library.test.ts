/**
 * The library surface of issue #27: the hook types exported, parseBasicAuth,
 * startServer with resolveRepository and refFilter, createHttpHandler with a
 * metrics registry, inside a real Express app (next() for other routes; a
 * body a parser already read is a clear 500), and without root an error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { spawnSync } from 'node:child_process';
import { ROOT, git, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { commit } from './helpers/fixtures.js';
import {
  createHttpHandler, createMetrics, parseBasicAuth, startServer,
  type Limits, type PushHookOptions, type PushHooks, type RequestLog, type ServePushInfo,
} from '../src/index.js';

function setup() {
  const t = tmp('gitwire-lib-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  git(['branch', 'private'], { cwd: w });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  git(['clone', '-q', '--bare', '--mirror', w, join(root, 'repo.git')]);
  return { t, root };
}

function listen(server: Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)));
}
const close = (server: Server) => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); });

test('the hook and log types are exported (a library hook written against them type-checks)', () => {
  const limits: Partial<Limits> = { maxHaves: 10 };
  const hookOptions: PushHookOptions = { run: false, env: { A: '1' } };
  const hooks: PushHooks = {
    authorizePush: (info: ServePushInfo) => (info.request.user === 'alice' ? undefined : { rejectAll: 'no' }),
    pushHookOptions: () => hookOptions,
  };
  const line: RequestLog = { transport: 'http', user: 'alice', bytesOut: 0, writes: 0, durationMs: 0, outcome: 'ok' };
  assert.equal(typeof hooks.authorizePush, 'function');
  assert.equal(limits.maxHaves, 10);
  assert.equal(line.user, 'alice');
});

test('parseBasicAuth takes one well-formed Basic credential and refuses the rest', () => {
  const b = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  assert.deepEqual(parseBasicAuth(b('alice:pw')), { user: 'alice', password: 'pw' });
  assert.deepEqual(parseBasicAuth(b('alice:')), { user: 'alice', password: '' });
  assert.deepEqual(parseBasicAuth(b('alice:a:b')), { user: 'alice', password: 'a:b' });
  assert.deepEqual(parseBasicAuth(`basic ${Buffer.from('ü:x').toString('base64')}`), { user: 'ü', password: 'x' });
  for (const bad of [undefined, '', 'Basic', 'Basic ', b(':pw'), b('nocolon'), 'Bearer abc', `Basic ${'YWxpY2U6cHc'}`, 'Basic YWxpY2U6cHc=x',
    'Basic YWxpY2U6cHd=', `Basic ${Buffer.from([0xff, 0x3a, 0x41]).toString('base64')}`, b('al\x01ice:pw'), `${b('a:b')} ${b('c:d')}`]) {
    assert.equal(parseBasicAuth(bad), undefined, JSON.stringify(bad));
  }
  assert.equal(parseBasicAuth(['Basic YTpi', 'Basic YTpi']), undefined, 'two headers');
});

test('createHttpHandler and startServer need root or resolveRepository', async () => {
  assert.throws(() => createHttpHandler({}), /createHttpHandler: `root` or `resolveRepository` is needed/);
  await assert.rejects(startServer({ http: 0, spawnHelper: false }), /startServer: `root` or `resolveRepository` is needed/);
  assert.equal(typeof createHttpHandler({ resolveRepository: () => undefined }), 'function');
});

test('startServer takes resolveRepository and refFilter, for HTTP and git://', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const s = await startServer({
    http: 0, git: 0, spawnHelper: false, exportAll: true,
    resolveRepository: (info) => (info.path.replace(/^\//, '') === 'alias' ? join(root, 'repo.git') : undefined),
    refFilter: () => (ref) => !ref.startsWith('refs/heads/private'),
  });
  try {
    for (const url of [`http://127.0.0.1:${s.httpPort}/alias`, `git://127.0.0.1:${s.gitPort}/alias`]) {
      const { stdout: refs } = await gitAsync(['ls-remote', url]);
      assert.match(refs, /refs\/heads\/main\n/, url);
      assert.doesNotMatch(refs, /private/, url);
    }
    const r = await gitAsync(['ls-remote', `http://127.0.0.1:${s.httpPort}/repo.git`]);
    assert.notEqual(r.code, 0, 'only what resolveRepository finds is served');
  } finally { await s.shutdown(100); t.cleanup(); }
});

test('in an Express app: clone through a mount, next() for other routes, metrics counted in a registry', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const metrics = createMetrics({ processMetrics: false });
  const logs: RequestLog[] = [];
  const handler = createHttpHandler({ root, metrics, log: (e) => logs.push(e) });
  const app = express();
  app.use('/git', (req, res, next) => { void handler(req, res, next); });
  app.get('/git/hello', (_req, res) => { res.type('text/plain').send('from express\n'); });
  const server = createServer(app);
  const port = await listen(server);
  try {
    assert.equal((await gitAsync(['clone', '-q', `http://127.0.0.1:${port}/git/repo.git`, join(t.dir, 'c')])).code, 0);
    assert.match(git(['log', '--oneline'], { cwd: join(t.dir, 'c') }), /base/);
    const hello = await fetch(`http://127.0.0.1:${port}/git/hello`);
    assert.equal(await hello.text(), 'from express\n');
    assert.equal(logs.length, 3, 'the clone logged (v2: info/refs, ls-refs, fetch); the other route not');
    const text = await metrics.registry.metrics();
    assert.match(text, /gitwire_requests_total\{service="upload-pack",transport="http",protocol="2",command="fetch",outcome="ok"\} 1\n/);
  } finally { await close(server); t.cleanup(); }
});

test("in a Fastify app, docs/library.md's recipe: git's content types are let through, clone and push work", { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const handler = createHttpHandler({ root, receivePack: true });
  const app = Fastify();
  // as docs/library.md says: without this line Fastify answers git's POSTs 415 before the route runs
  app.addContentTypeParser('*', (_request, _payload, done) => { done(null); });
  app.all('/*', (request, reply) => { void reply.hijack(); void handler(request.raw, reply.raw); });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  try {
    const c = join(t.dir, 'c');
    assert.equal((await gitAsync(['clone', '-q', `http://127.0.0.1:${port}/repo.git`, c])).code, 0);
    assert.match(git(['log', '--oneline'], { cwd: c }), /base/);
    git(['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'via fastify'], { cwd: c });
    const pushed = await gitAsync(['push', '-q', 'origin', 'HEAD:refs/heads/from-fastify'], c);
    assert.equal(pushed.code, 0, pushed.stderr);
    assert.match(git(['ls-remote', join(root, 'repo.git')]), /refs\/heads\/from-fastify/);
  } finally { await app.close(); t.cleanup(); }
});

test('behind express.raw({ type: "*/*" }): a clear 500 that says the body was read, not a broken clone', { timeout: 60_000 }, async () => {
  const { t, root } = setup();
  const logs: RequestLog[] = [];
  const handler = createHttpHandler({ root, log: (e) => logs.push(e) });
  const app = express();
  app.use(express.raw({ type: '*/*' }));
  app.use((req, res, next) => { void handler(req, res, next); });
  const server = createServer(app);
  const port = await listen(server);
  try {
    const info = await fetch(`http://127.0.0.1:${port}/repo.git/info/refs?service=git-upload-pack`);
    assert.equal(info.status, 200, 'a GET has no body to miss');
    await info.arrayBuffer();
    const r = await fetch(`http://127.0.0.1:${port}/repo.git/git-upload-pack`, { method: 'POST', headers: { 'Content-Type': 'application/x-git-upload-pack-request' }, body: '0000' });
    assert.equal(r.status, 500);
    assert.match(await r.text(), /request body was already read by another handler .*express\.raw\(\).*mount gitwire before any body parser/);
    const clone = await gitAsync(['clone', '-q', `http://127.0.0.1:${port}/repo.git`, join(t.dir, 'c')]);
    assert.notEqual(clone.code, 0);
    assert.match(clone.stderr, /500/);
    const failed = logs.filter((e) => e.status === 500);
    assert.ok(failed.length >= 2);
    assert.match(failed[0]!.error!, /already read/);
  } finally { await close(server); t.cleanup(); }
});

test("the published types need no ssh2 types: a strict project compiles `hostKeys: [loadHostKey(file)]`, and a wrong key is a compile error", { timeout: 120_000 }, () => {
  const dts = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? dts(join(dir, e.name)) : e.name.endsWith('.d.ts') ? [join(dir, e.name)] : []));
  for (const f of dts(join(ROOT, 'dist'))) assert.doesNotMatch(readFileSync(f, 'utf8'), /from 'ssh2'|import\('ssh2'\)/, f);
  const t = tmp('gitwire-types-');
  try {
    const tsc = (body: string) => {
      writeFileSync(join(t.dir, 'app.mts'), `import { createSshServer, loadHostKey, startServer } from '${join(ROOT, 'dist', 'index.js')}';\n${body}\n`);
      return spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '--strict', '--skipLibCheck', 'false', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), join(t.dir, 'app.mts')], { encoding: 'utf8' });
    };
    const good = tsc("const hostKeys = [loadHostKey('/etc/gitwire/ssh_host_ed25519_key')];\nvoid startServer({ root: '/srv/git', ssh: 2222, sshOptions: { hostKeys, authenticate: () => false } });\nvoid createSshServer({ root: '/srv/git', hostKeys: [loadHostKey('k').key, 'PEM text'], authenticate: () => 'alice' });");
    assert.equal(good.status, 0, good.stdout + good.stderr);
    // docs/library.md's SSH example type-checks as written (the import line aside)
    const example = /```js\n(import \{ startServer, loadHostKey[\s\S]*?)```/.exec(readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8'))?.[1];
    assert.ok(example, "docs/library.md's SSH example");
    const doc = tsc(`import { KeyDir, keyDirAuthenticate } from '${join(ROOT, 'dist', 'index.js')}';\nexport {};\n${example.split('\n').slice(1).join('\n')}`);
    assert.equal(doc.status, 0, doc.stdout + doc.stderr);
    const bad = tsc("void createSshServer({ root: '/srv/git', hostKeys: [{ file: 'k' }], authenticate: () => false });");
    assert.notEqual(bad.status, 0);
    assert.match(bad.stdout, /error TS2322/);
  } finally { t.cleanup(); }
});
