/**
 * Who may push over HTTP: http-backend's rule (off unless authenticated),
 * `gitwire serve --htpasswd` with a bcrypt user and git's credential
 * helper, wrong passwords, per-repository rules; and the library's
 * `authorizePush` / `onPush` seen from the real git client.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { serverState, objectFiles } from './helpers/push.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitAsync } from './helpers/push-net.js';
import { createHttpHandler } from '../src/transport/http.js';
import type { ServePushInfo } from '../src/transport/http-push.js';
import type { PushRefResult, PushUpdate } from '../src/protocol/receive-pack.js';

function setup(t: { dir: string }, names = ['r.git']) {
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(join(root, 'group'), { recursive: true });
  for (const n of names) git(['clone', '-q', '--bare', src, join(root, n)]);
  commit(src, 'next', { 'b.txt': 'b\n' });
  return { src, root };
}

test('no http.receivepack and no authorize: 403 as http-backend, nothing moves', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-pushauth-');
  let s: ServerProc | undefined;
  try {
    const { src, root } = setup(t);
    const dir = join(root, 'r.git');
    const before = serverState(dir).refs;
    const objs = objectFiles(dir);
    s = await startServe(root, ['--http', '0', '--quiet']);
    const url = `http://127.0.0.1:${s.httpPort}/r.git`;
    const res = await fetch(`${url}/info/refs?service=git-receive-pack`);
    assert.equal(res.status, 403);
    assert.equal(await res.text(), "Service not enabled: 'receive-pack'\n");
    const r = await gitAsync(['push', url, 'main:refs/heads/x'], src);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /The requested URL returned error: 403/);
    // a POST straight to the service is refused too
    const post = await fetch(`${url}/git-receive-pack`, { method: 'POST', headers: { 'Content-Type': 'application/x-git-receive-pack-request' }, body: '0000' });
    assert.equal(post.status, 403);
    assert.equal(serverState(dir).refs, before);
    assert.deepEqual(objectFiles(dir), objs);
    // http.receivepack=true in the repository turns it on (http-backend's config)
    git(['config', 'http.receivepack', 'true'], { cwd: dir });
    const ok = await gitAsync(['push', url, 'main:refs/heads/x'], src);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(serverState(dir).refs, /refs\/heads\/x/);
  } finally { await s?.stop(); t.cleanup(); }
});

test('serve --htpasswd: a bcrypt user pushes through a credential helper; no or wrong credentials get 401 and nothing moves', { timeout: 90_000 }, async () => {
  const t = tmp('gitwire-pushauth-');
  let s: ServerProc | undefined;
  try {
    const { src, root } = setup(t, ['r.git', 'group/p.git', 'other.git']);
    // htpasswd -B writes $2y$
    const hash = bcrypt.hashSync('correct horse', 5).replace(/^\$2b\$/, '$2y$');
    writeFileSync(join(t.dir, 'htpasswd'), `# users\nalice:${hash}\nbob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n`);
    writeFileSync(join(t.dir, 'rules'), 'push group/* alice\npush r.git alice\n');
    git(['config', 'core.logAllRefUpdates', 'true'], { cwd: join(root, 'r.git') });
    // no committer in the server's environment: the authenticated user becomes it
    s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules')], { GIT_COMMITTER_NAME: undefined, GIT_COMMITTER_EMAIL: undefined });
    const base = `http://127.0.0.1:${s.httpPort}`;
    const dir = join(root, 'r.git');
    const before = serverState(dir).refs;

    // the challenge, for git's credential helpers
    const r0 = await fetch(`${base}/r.git/info/refs?service=git-receive-pack`);
    assert.equal(r0.status, 401);
    assert.equal(r0.headers.get('www-authenticate'), 'Basic realm="gitwire"');
    const bad = (u: string, p: string) => fetch(`${base}/r.git/info/refs?service=git-receive-pack`, { headers: { Authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` } });
    const wrongPw = await bad('alice', 'nope'), noUser = await bad('mallory', 'correct horse'), shaUser = await bad('bob', 'password');
    // the same answer whatever was wrong
    for (const r of [wrongPw, noUser, shaUser]) {
      assert.equal(r.status, 401);
      assert.equal(r.headers.get('www-authenticate'), 'Basic realm="gitwire"');
      assert.equal(await r.text(), 'Authentication required\n');
    }
    // fetch needs no credentials with --auth push
    assert.equal((await fetch(`${base}/r.git/info/refs?service=git-upload-pack`)).status, 200);

    // no credentials and no prompt
    const r1 = await gitAsync(['push', `${base}/r.git`, 'main:refs/heads/x'], src);
    assert.notEqual(r1.code, 0);
    assert.match(r1.stderr, /could not read Username/);
    // a wrong password from the credential store
    const store = join(t.dir, 'creds');
    writeFileSync(store, `http://alice:wrong@127.0.0.1%3a${s.httpPort}\n`);
    const helper = ['-c', `credential.helper=store --file=${store}`];
    const r2 = await gitAsync([...helper, 'push', `${base}/r.git`, 'main:refs/heads/x'], src);
    assert.notEqual(r2.code, 0);
    assert.match(r2.stderr, /Authentication failed/);
    assert.equal(serverState(dir).refs, before);

    // the right password: the push goes through
    writeFileSync(store, `http://alice:correct%20horse@127.0.0.1%3a${s.httpPort}\n`);
    const r3 = await gitAsync([...helper, 'push', `${base}/r.git`, 'main:refs/heads/x'], src);
    assert.equal(r3.code, 0, r3.stderr);
    assert.equal(git(['rev-parse', 'refs/heads/x'], { cwd: dir }).trim(), git(['rev-parse', 'main'], { cwd: src }).trim());
    // the reflog names the user, as http-backend does (GIT_COMMITTER_NAME from REMOTE_USER)
    const reflog = git(['reflog', 'show', '--format=%gn <%ge>', 'refs/heads/x'], { cwd: dir }).trim();
    assert.match(reflog, /^alice <alice@http\.127\.0\.0\.1>$/);

    // rules: group/* yes, other.git no (403: authenticated but not allowed)
    const r4 = await gitAsync([...helper, 'push', `${base}/group/p.git`, 'main:refs/heads/x'], src);
    assert.equal(r4.code, 0, r4.stderr);
    const r5 = await gitAsync([...helper, 'push', `${base}/other.git`, 'main:refs/heads/x'], src);
    assert.notEqual(r5.code, 0);
    assert.match(r5.stderr, /403/);
    assert.doesNotMatch(serverState(join(root, 'other.git')).refs, /refs\/heads\/x/);

    // the file is re-read when it changes: alice's password is replaced
    writeFileSync(join(t.dir, 'htpasswd'), `alice:${bcrypt.hashSync('new one', 5)}\n`);
    const r6 = await gitAsync([...helper, 'push', `${base}/r.git`, 'main:refs/heads/y'], src);
    assert.notEqual(r6.code, 0);
    assert.doesNotMatch(serverState(dir).refs, /refs\/heads\/y/);
  } finally { await s?.stop(); t.cleanup(); }
});

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

test('library: authorizePush rejects one ref of three with a reason the client shows; onPush sees exactly the refs that moved', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-pushlib-');
  const seen: { updates?: PushUpdate[]; results?: PushRefResult[]; info?: ServePushInfo; objType?: string } = {};
  const server = createServer();
  try {
    const { src, root } = setup(t);
    const dir = join(root, 'r.git');
    // an existing ref the push rewrites (force)
    git(['update-ref', 'refs/heads/rewrite', git(['rev-parse', 'main'], { cwd: dir }).trim()], { cwd: dir });
    const handler = createHttpHandler({
      root,
      authorize: (info) => { info.user = 'tester'; return true; },
      authorizePush: (info, updates) => {
        seen.updates = updates;
        seen.info = info;
        // the quarantined objects are readable
        const tip = updates.find((u) => u.ref === 'refs/heads/one')!;
        seen.objType = info.objects?.info(Buffer.from(tip.newHex, 'hex'))?.type;
        return { reject: { 'refs/heads/protected': 'protected branch: ask an admin' } };
      },
      onPush: (info, results) => { seen.results = results; },
      log: () => undefined,
    });
    server.on('request', (req, res) => { void handler(req, res); });
    const port = await listen(server);
    // not a descendant of what refs/heads/rewrite holds
    git(['checkout', '-q', '--orphan', 'side'], { cwd: src });
    commit(src, 'side', { 's.txt': 's\n' });
    const r = await gitAsync(['push', '--porcelain', '--force', `http://127.0.0.1:${port}/r.git`, 'main:refs/heads/one', 'main:refs/heads/protected', 'side:refs/heads/rewrite'], src);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout, /^!\trefs\/heads\/main:refs\/heads\/protected\t\[remote rejected\] \(protected branch: ask an admin\)$/m);
    assert.match(r.stdout, /^\*\trefs\/heads\/main:refs\/heads\/one\t\[new branch\]$/m);
    assert.match(r.stdout, /^\+\trefs\/heads\/side:refs\/heads\/rewrite\t/m);
    assert.deepEqual(seen.updates!.map((u) => [u.ref, u.kind]).sort(), [['refs/heads/one', 'create'], ['refs/heads/protected', 'create'], ['refs/heads/rewrite', 'force']]);
    assert.equal(seen.objType, 'commit');
    assert.equal(seen.info!.request.user, 'tester');
    assert.equal(seen.info!.repository, '/r.git');
    assert.deepEqual(seen.results!.map((x) => x.ref).sort(), ['refs/heads/one', 'refs/heads/rewrite']);
    const refs = serverState(dir).refs;
    assert.doesNotMatch(refs, /refs\/heads\/protected/);
    assert.match(refs, /refs\/heads\/one/);
  } finally { server.close(); t.cleanup(); }
});

test('library: a failing onPush is logged and does not fail the push; rejectAll refuses every ref', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-pushlib-');
  const logs: Array<{ outcome: string; push?: { onPushError?: string; updated: number } }> = [];
  let mode: 'throw' | 'reject' = 'throw';
  let calls = 0;
  const server = createServer();
  try {
    const { src, root } = setup(t);
    const dir = join(root, 'r.git');
    const handler = createHttpHandler({
      root,
      receivePack: true,
      authorizePush: () => (mode === 'reject' ? { rejectAll: 'pushes are closed today' } : undefined),
      onPush: () => { calls++; throw new Error('webhook down'); },
      log: (e) => { if (e.command === 'receive-pack') logs.push(e); },
    });
    server.on('request', (req, res) => { void handler(req, res); });
    const port = await listen(server);
    const r = await gitAsync(['push', `http://127.0.0.1:${port}/r.git`, 'main:refs/heads/x'], src);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(logs.at(-1)!.push!.onPushError, 'webhook down');
    assert.equal(logs.at(-1)!.push!.updated, 1);
    mode = 'reject';
    const r2 = await gitAsync(['push', `http://127.0.0.1:${port}/r.git`, 'main:refs/heads/y', 'main:refs/heads/z'], src);
    assert.notEqual(r2.code, 0);
    assert.match(r2.stderr, /! \[remote rejected\] main -> y \(pushes are closed today\)/);
    assert.match(r2.stderr, /! \[remote rejected\] main -> z \(pushes are closed today\)/);
    assert.doesNotMatch(serverState(dir).refs, /refs\/heads\/[yz]/);
    assert.equal(calls, 1, 'onPush is not called when every ref was refused (results: [])');
    assert.equal(logs.at(-1)!.push!.onPushError, undefined);
  } finally { server.close(); t.cleanup(); }
});
