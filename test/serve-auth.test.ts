/**
 * What `gitwire serve --htpasswd` tells a client about repositories it may
 * not see (issue #24): credentials are asked for before anything about the
 * path, a repository the user may not see answers exactly as a missing
 * one, rules match the resolved repository whatever the URL's spelling,
 * and a failing `authorize` hook says nothing of its failure to the client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { gitAsync } from './helpers/push-net.js';
import { startServe } from './helpers/server-process.js';
import { createHttpHandler, type RequestLog } from '../src/transport/http.js';
import { createDaemonServer } from '../src/transport/daemon.js';

let t: ReturnType<typeof tmp>;
let root: string;
let src: string;
let htpasswd: string;
let rules: string;

before(() => {
  t = tmp('gitwire-serveauth-');
  src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  root = join(t.dir, 'root');
  mkdirSync(root);
  for (const n of ['alpha.git', 'other.git']) git(['clone', '-q', '--bare', src, join(root, n)]);
  git(['clone', '-q', src, join(root, 'wt')]);
  // another name for alpha.git, inside the root: the same repository to the rules
  symlinkSync(join(root, 'alpha.git'), join(root, 'alias.git'));
  commit(src, 'next', { 'b.txt': 'b\n' });
  const hash = (pw: string) => bcrypt.hashSync(pw, 4);
  htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${hash('pw-a')}\nbob:${hash('pw-b')}\n`);
  rules = join(t.dir, 'rules');
});
after(() => t.cleanup());

const basic = (user: string, pw: string) => `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}`;
const ALICE = basic('alice', 'pw-a');
const BOB = basic('bob', 'pw-b');

/** One raw HTTP exchange; the Date header blanked (the clock, not the answer). */
function raw(port: number, method: string, path: string, auth?: string, body = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      const ctype = /git-(upload|receive)-pack$/.exec(path);
      s.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${auth ? `Authorization: ${auth}\r\n` : ''}`
        + `${ctype ? `Content-Type: application/x-git-${ctype[1]}-pack-request\r\n` : ''}Content-Length: ${body.length}\r\n\r\n${body}`);
    });
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('end', () => resolve(Buffer.concat(chunks).toString('latin1').replace(/\r\nDate: [^\r]*\r\n/i, '\r\nDate: -\r\n')));
    s.on('error', reject);
  });
}
const status = (r: string) => Number(/^HTTP\/1\.1 (\d+)/.exec(r)?.[1]);

/** Every endpoint http.ts serves, for repository path `p`. */
const endpoints = (p: string): Array<[string, string]> => [
  ['GET', `${p}/info/refs?service=git-upload-pack`],
  ['HEAD', `${p}/info/refs?service=git-upload-pack`],
  ['GET', `${p}/info/refs?service=git-receive-pack`],
  ['POST', `${p}/git-upload-pack`],
  ['POST', `${p}/git-receive-pack`],
];

test('--auth all: anonymous, and users no rule lets see a repository, cannot tell it from a missing one (HTTP and git://)', { timeout: 90_000 }, async () => {
  writeFileSync(rules, 'push alpha alice\nfetch wt alice\n');
  const s = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--enable=receive-pack', '--quiet', '--htpasswd', htpasswd, '--auth', 'all', '--auth-rules', rules]);
  try {
    const port = s.httpPort!;
    // anonymous: the challenge, byte for byte, for an existing repository (any spelling) and a missing one
    for (const [i, [m, missing]] of endpoints('/nope.git').entries()) {
      const expected = await raw(port, m, missing);
      assert.equal(status(expected), 401, `${m} ${missing}`);
      for (const repo of ['/alpha.git', '/alpha', '/wt', '/other.git']) assert.equal(await raw(port, m, endpoints(repo)[i]![1]), expected, `${m} ${repo}`);
    }
    // and for what is no repository route at all
    assert.equal(status(await raw(port, 'GET', '/alpha.git/objects/info/packs')), 401);
    // a user without any rule: 404 for all, byte for byte; alice (no rule for other.git) the same
    for (const [m, p] of endpoints('/nope.git')) {
      const expected = await raw(port, m, p, BOB);
      assert.equal(status(expected), 404, `${m} ${p}`);
      for (const repo of ['/alpha.git', '/alpha', '/wt', '/other.git']) assert.equal(await raw(port, m, p.replace('/nope.git', repo), BOB), expected, `bob ${m} ${repo}`);
      assert.equal(await raw(port, m, p.replace('/nope.git', '/other.git'), ALICE), await raw(port, m, p, ALICE), `alice ${m} other.git`);
    }
    // git:// cannot carry credentials: the same refusal for all, saying so
    const daemon = (line: string) => new Promise<string>((resolve, reject) => {
      const c = connect(s.gitPort!, '127.0.0.1', () => c.write(pkt([line])));
      const out: Buffer[] = [];
      c.on('data', (d: Buffer) => out.push(d));
      c.on('close', () => resolve(unpkt(Buffer.concat(out)).join('|')));
      c.on('error', reject);
    });
    for (const svc of ['upload-pack', 'receive-pack']) {
      for (const p of ['/alpha.git', '/nope.git']) {
        const access = svc === 'receive-pack' ? 'push' : 'fetch';
        assert.equal(await daemon(`git-${svc} ${p}\0host=x\0`), `ERR ${access} needs credentials, which git:// cannot carry (use HTTP or SSH): ${p}`, `${svc} ${p}`);
      }
    }
  } finally { await s.stop(); }
});

test('--auth push: anonymous push gets the challenge whether the repository exists or not', { timeout: 60_000 }, async () => {
  const s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', htpasswd]);
  try {
    for (const [m, p] of endpoints('/nope.git').filter(([, x]) => x.includes('receive-pack'))) {
      const expected = await raw(s.httpPort!, m, p);
      assert.equal(status(expected), 401);
      assert.equal(await raw(s.httpPort!, m, p.replace('/nope.git', '/alpha.git')), expected, `${m} ${p}`);
    }
  } finally { await s.stop(); }
});

test('--auth-rules match the resolved repository, whatever the spelling; the 403 log line names the user', { timeout: 120_000 }, async () => {
  const s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd, '--auth', 'all', '--auth-rules', rules]);
  try {
    const port = s.httpPort!;
    const spellings = ['/alpha.git', '/alpha', '/alpha.git/', '/alpha/', '/%61lpha.git', '/%61lpha', '/alias.git', '/alias'];
    for (const rule of ['push alpha alice\nfetch wt alice\n', 'push alpha.git alice\nfetch wt/.git alice\n', 'push /alpha.git/ alice\nfetch wt.git alice\n']) {
      writeFileSync(rules, rule);
      for (const p of spellings) {
        for (const [m, e] of endpoints(p)) {
          assert.equal(status(await raw(port, m, e, ALICE, m === 'POST' ? '0000' : '')), 200, `rule ${JSON.stringify(rule)}: ${m} ${e}`);
        }
      }
      // the work tree and its .git: fetch yes, push 403 (alice may see it)
      for (const p of ['/wt', '/wt/.git']) {
        assert.equal(status(await raw(port, 'GET', `${p}/info/refs?service=git-upload-pack`, ALICE)), 200, p);
        assert.equal(status(await raw(port, 'GET', `${p}/info/refs?service=git-receive-pack`, ALICE)), 403, p);
      }
    }
    const denied = s.logs.map((l) => JSON.parse(l) as RequestLog).filter((e) => e.status === 403);
    assert.ok(denied.length >= 2);
    for (const e of denied) assert.equal(e.user, 'alice');
    // the real client, through both spellings
    const store = join(t.dir, 'creds');
    writeFileSync(store, `http://alice:pw-a@127.0.0.1%3a${port}\n`);
    for (const [i, p] of ['/alpha.git', '/alpha'].entries()) {
      const r = await gitAsync(['-c', `credential.helper=store --file=${store}`, 'push', `http://127.0.0.1:${port}${p}`, `main:refs/heads/via-${i}`], src);
      assert.equal(r.code, 0, `${p}: ${r.stderr}`);
    }
    assert.match(git(['for-each-ref', '--format=%(refname)'], { cwd: join(root, 'alpha.git') }), /refs\/heads\/via-0\nrefs\/heads\/via-1/);
  } finally { await s.stop(); }
});

test('a throwing authenticate or authorize: a generic 500 for the client, the message in the log (HTTP and git://)', { timeout: 60_000 }, async () => {
  const logs: RequestLog[] = [];
  const hooks = {
    root,
    authorize: (): true => { throw new Error('db down'); },
    log: (e: RequestLog) => { logs.push(e); },
  };
  const server = createServer((req, res) => { void createHttpHandler(hooks)(req, res); });
  const daemon = createDaemonServer({ ...hooks, exportAll: true });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => daemon.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    for (const [m, p] of endpoints('/alpha.git').filter(([mm]) => mm !== 'HEAD')) {
      const r = await raw(port, m, p, undefined, m === 'POST' ? '0000' : '');
      assert.equal(status(r), 500, `${m} ${p}`);
      assert.doesNotMatch(r, /db down/);
      assert.match(r, /\r\nInternal Server Error\n/);
      const e = logs.at(-1)!;
      assert.equal(e.outcome, 'error');
      assert.equal(e.error, 'db down');
    }
    // authenticate runs first, for any path: its failure is answered the same way
    const failing = createServer((req, res) => { void createHttpHandler({ ...hooks, authenticate: () => { throw new Error('ldap down'); } })(req, res); });
    await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
    try {
      for (const p of ['/alpha.git/info/refs?service=git-upload-pack', '/nope.git/info/refs?service=git-receive-pack', '/favicon.ico']) {
        const r = await raw((failing.address() as { port: number }).port, 'GET', p);
        assert.equal(status(r), 500, p);
        assert.doesNotMatch(r, /ldap down/);
        assert.equal(logs.at(-1)!.error, 'ldap down');
      }
    } finally { failing.close(); }
    const ls = await gitAsync(['ls-remote', `http://127.0.0.1:${port}/alpha.git`]);
    assert.notEqual(ls.code, 0);
    assert.doesNotMatch(ls.stderr, /db down/);
    const g = await gitAsync(['ls-remote', `git://127.0.0.1:${(daemon.address() as { port: number }).port}/alpha.git`]);
    assert.notEqual(g.code, 0);
    assert.doesNotMatch(g.stderr, /db down/);
    assert.equal(logs.at(-1)!.transport, 'git');
    assert.equal(logs.at(-1)!.error, 'db down');
  } finally { server.close(); daemon.close(); }
});

test('--auth push: credentials sent on a fetch are checked (a wrong password gets 401, not the anonymous view); the log tells a failed login from the challenge before every push', { timeout: 60_000 }, async () => {
  const s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd]);
  try {
    const refs = '/alpha.git/info/refs?service=git-upload-pack';
    assert.equal(status(await raw(s.httpPort!, 'GET', refs)), 200, 'anonymous fetch: no credentials needed');
    assert.equal(status(await raw(s.httpPort!, 'GET', refs, ALICE)), 200, 'right credentials');
    const wrong = await raw(s.httpPort!, 'GET', refs, basic('alice', 'typo'));
    assert.equal(status(wrong), 401, 'a wrong password is refused, as GitHub and Gitea do');
    assert.match(wrong, /\r\nWWW-Authenticate: Basic realm="gitwire"\r\n/i, 'with the challenge, so git asks again');
    assert.equal(status(await raw(s.httpPort!, 'GET', refs, 'Basic !!!')), 401, 'unreadable Basic credentials');
    assert.equal(status(await raw(s.httpPort!, 'GET', '/alpha.git/info/refs?service=git-receive-pack')), 401, 'a push asks for credentials');
    // git-lfs sends stored credentials with its first batch (git itself only when asked, or with
    // git 2.46's http.proactiveAuth): a wrong one is refused there too
    const batch = JSON.stringify({ operation: 'download', objects: [{ oid: 'a'.repeat(64), size: 1 }] });
    assert.equal(status(await raw(s.httpPort!, 'POST', '/alpha.git/info/lfs/objects/batch', basic('alice', 'typo'), batch)), 401);
    for (let i = 0; i < 50 && s.logs.filter((l) => l.includes('"msg":"request"')).length < 6; i++) await new Promise((res) => setTimeout(res, 50));
    const lines = s.logs.filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l) as RequestLog);
    const failed = lines.filter((e) => e.outcome === 'login-failed');
    assert.ok(failed.length >= 2, JSON.stringify(lines.map((e) => e.outcome)));
    for (const e of failed) {
      assert.equal(e.status, 401);
      assert.equal(e.triedUser, 'alice', 'a failed login names the user tried');
      assert.equal(e.remoteAddress, '127.0.0.1', 'and the address');
      assert.equal(e.user, undefined, 'who is not signed in');
    }
    const challenges = lines.filter((e) => e.outcome === 'challenge');
    assert.ok(challenges.length >= 2, 'a 401 asking for credentials none were sent is a challenge, not a denial');
    assert.ok(challenges.every((e) => e.triedUser === undefined));
    assert.equal(lines.filter((e) => e.outcome === 'denied').length, 0);
  } finally { await s.stop(); }
});
