/**
 * Per-client limits end to end (`gitwire serve --anonymous-rate …`, real
 * git and OpenSSH): HTTP answers 429 with Retry-After to an anonymous
 * client over its rate while a user goes on; git:// says ERR and SSH
 * `fatal:` with the same hint; a client's requests in progress; spoofed
 * X-Forwarded-For and PROXY headers from peers that are not trusted change
 * nothing; every answer carries Gitwire-Cost; refusals are counted.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { sshKit, startSsh, gitSshEnv, type SshKit, type SshUser } from './helpers/ssh.js';

let t: ReturnType<typeof tmp>;
let root: string;
let htpasswd: string;
const AUTH = `Basic ${Buffer.from('alice:pw-a').toString('base64')}`;

before(() => {
  t = tmp('gitwire-client-limits-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  commit(w, 'two', { 'b.txt': 'b\n' });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw-a', 4)}\n`);
});
after(() => t?.cleanup());

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET', body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, method, headers, agent: false }, (res) => {
      let b = '';
      res.on('data', (d: Buffer) => { b += d.toString('latin1'); });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: b }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

const infoRefs = '/repo.git/info/refs?service=git-upload-pack';

async function serve(args: string[]): Promise<ServerProc> {
  return startServe(root, ['--http', '0', '--export-all', '--htpasswd', htpasswd, ...args]);
}

test('HTTP: an anonymous client over its rate gets 429 with Retry-After; a user does not; git reports the 429', async () => {
  const s = await serve(['--anonymous-rate', '0.2', '--anonymous-burst', '2', '--user-rate', '50', '--quiet']);
  try {
    const port = s.httpPort!;
    const a = [await get(port, infoRefs), await get(port, infoRefs), await get(port, infoRefs)];
    assert.deepEqual(a.map((x) => x.status), [200, 200, 429]);
    const no = a[2]!;
    assert.match(String(no.headers['retry-after']), /^[1-9]\d*$/, 'delay-seconds, as git http.c reads it');
    assert.ok(Number(no.headers['retry-after']) <= 5);
    assert.match(no.body, /^rate limited, please try again after \d+ seconds?\n$/);
    // a user (credentials sent up front, as http.extraHeader or http.proactiveAuth do) has its own limits
    for (let i = 0; i < 10; i++) assert.equal((await get(port, infoRefs, { Authorization: AUTH })).status, 200, `user request ${i}`);
    // a wrong password is not anonymous access
    assert.equal((await get(port, infoRefs, { Authorization: `Basic ${Buffer.from('alice:nope').toString('base64')}` })).status, 401);
    // real git, anonymous: refused with the 429
    const r = spawnSync('git', ['ls-remote', `http://127.0.0.1:${port}/repo.git`], { env: gitEnv, encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /429/);
    // and as the user, through http.extraHeader
    const u = spawnSync('git', ['-c', `http.extraHeader=Authorization: ${AUTH}`, 'ls-remote', `http://127.0.0.1:${port}/repo.git`], { env: gitEnv, encoding: 'utf8' });
    assert.equal(u.status, 0, u.stderr);
    assert.match(u.stdout, /refs\/heads\/main/);
  } finally { await s.stop(); }
});

test('HTTP: every answer carries Gitwire-Cost (1 for refs, 10 for a clone, 0 for a refusal)', async () => {
  const s = await serve(['--anonymous-rate', '0.1', '--anonymous-burst', '3', '--quiet']);
  try {
    const port = s.httpPort!;
    const refs = await get(port, infoRefs, { 'Git-Protocol': 'version=2' });
    assert.equal(refs.headers['gitwire-cost'], '1');
    const head = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']).trim();
    const pkt = (x: string) => `${(x.length + 4).toString(16).padStart(4, '0')}${x}`;
    const body = Buffer.from(`${pkt('command=fetch\n')}0001${pkt(`want ${head}\n`)}${pkt('deepen 1\n')}${pkt('done\n')}0000`);
    const clone = await get(port, '/repo.git/git-upload-pack', { 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' }, 'POST', body);
    assert.equal(clone.status, 200);
    assert.equal(clone.headers['gitwire-cost'], '10');
    assert.equal((await get(port, infoRefs)).status, 200);
    const refused = await get(port, infoRefs);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['gitwire-cost'], '0');
  } finally { await s.stop(); }
});

test('HTTP: X-Forwarded-For from a peer that is not a trusted proxy changes nothing; from the trusted proxy it names the client', async () => {
  const s = await serve(['--anonymous-rate', '0.1', '--anonymous-burst', '1', '--trust-proxy', '10.9.9.9', '--quiet']);
  try {
    const port = s.httpPort!;
    const st: number[] = [];
    for (let i = 1; i <= 4; i++) st.push((await get(port, infoRefs, { 'X-Forwarded-For': `203.0.113.${i}` })).status);
    assert.deepEqual(st, [200, 429, 429, 429], 'one client however it names itself');
  } finally { await s.stop(); }
  const s2 = await serve(['--anonymous-rate', '0.1', '--anonymous-burst', '1', '--trust-proxy', '127.0.0.1', '--quiet']);
  try {
    const st: number[] = [];
    for (let i = 1; i <= 3; i++) st.push((await get(s2.httpPort!, infoRefs, { 'X-Forwarded-For': `203.0.113.${i}` })).status);
    assert.deepEqual(st, [200, 200, 200], 'behind the trusted proxy, three clients');
    assert.equal((await get(s2.httpPort!, infoRefs, { 'X-Forwarded-For': '203.0.113.1' })).status, 429);
  } finally { await s2.stop(); }
});

test('HTTP: requests in progress per client: a second one while the first is still sending its body gets 429', async () => {
  const s = await serve(['--anonymous-rate', '100', '--anonymous-concurrency', '1', '--quiet']);
  try {
    const port = s.httpPort!;
    // a POST that announces 1000 bytes and sends 10: admitted, holding its share
    const held = connect(port, '127.0.0.1');
    await new Promise<void>((r) => held.once('connect', () => r()));
    held.on('error', () => undefined);
    held.write('POST /repo.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 1000\r\n\r\n0123456789');
    let status = 0;
    for (let i = 0; i < 50 && status !== 429; i++) {
      await new Promise((r) => setTimeout(r, 50));
      status = (await get(port, infoRefs)).status;
    }
    assert.equal(status, 429, 'refused while the first is in progress');
    held.destroy();
    let after = 0;
    for (let i = 0; i < 50 && after !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      after = (await get(port, infoRefs)).status;
    }
    assert.equal(after, 200, 'room again once the first is gone');
  } finally { await s.stop(); }
});

test('git://: over the rate, ERR with the hint (git: fatal: remote error: rate limited, …); a PROXY header from an untrusted peer is no new client', async () => {
  const s = await startServe(root, ['--git', '0', '--export-all', '--anonymous-rate', '0.1', '--anonymous-burst', '1', '--proxy-protocol', '10.9.9.9']);
  try {
    const url = `git://127.0.0.1:${s.gitPort}/repo.git`;
    const ok = spawnSync('git', ['ls-remote', url], { env: gitEnv, encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    // a PROXY header naming another address, from a peer that is not the balancer: read as a (bad) request, never as an address
    const c = connect(s.gitPort!, '127.0.0.1');
    c.on('error', () => undefined);
    c.end('PROXY TCP4 198.51.100.7 127.0.0.1 40000 9418\r\n');
    await new Promise((r) => c.once('close', r));
    const no = spawnSync('git', ['ls-remote', url], { env: gitEnv, encoding: 'utf8' });
    assert.equal(no.status, 128);
    assert.match(no.stderr, /fatal: remote error: rate limited, please try again after \d+ seconds?/);
    const logged = () => s.logs.some((l) => /"outcome":"rate-limited"/.test(l) && /"transport":"git"/.test(l));
    for (let i = 0; i < 40 && !logged(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(logged(), `logged with its outcome: ${s.logs.slice(-3).join('\n')}`);
  } finally { await s.stop(); }
});

test('SSH: a user over its rate gets fatal: with the hint, exit 128; requests are counted in the metrics by outcome', async () => {
  const kit: SshKit = sshKit(join(t.dir, 'ssh'));
  const u: SshUser = kit.user('alice');
  const s = await startSsh(kit, root, ['--user-rate', '0.1', '--user-burst', '1', '--metrics', '0']);
  try {
    const url = `ssh://git@127.0.0.1:${s.sshPort}/repo.git`;
    const env = { ...gitEnv, ...gitSshEnv(kit, u, s.sshPort) };
    const ok = spawnSync('git', ['ls-remote', url], { env, encoding: 'utf8' });
    assert.equal(ok.status, 0, ok.stderr);
    const no = spawnSync('git', ['ls-remote', url], { env, encoding: 'utf8' });
    assert.notEqual(no.status, 0);
    assert.match(no.stderr, /fatal: rate limited, please try again after \d+ seconds?/);
    const m = await get(s.metricsPort!, '/metrics');
    assert.match(m.body, /gitwire_client_limit_decisions_total\{class="user",result="rate"\} 1/);
    assert.match(m.body, /gitwire_client_limit_decisions_total\{class="user",result="admitted"\} 1/);
    assert.match(m.body, /gitwire_requests_total\{[^}]*transport="ssh"[^}]*outcome="rate-limited"\} 1/);
    assert.doesNotMatch(m.body, /127\.0\.0\.1|alice/, 'no address or user in a label');
  } finally { await s.stop(); }
});

test('pack queue: with the only slot taken, refs are still answered, and a user clone queued after an anonymous one runs first', { timeout: 60_000 }, async () => {
  const { startServer } = await import('../src/transport/server.js');
  const { PacketWriter } = await import('../src/pktline/writer.js');
  const { spawn } = await import('node:child_process');
  const s = await startServer({
    root, http: 0, maxPacks: 1, spawnHelper: false,
    authenticate: (info) => { if (info.req?.headers.authorization === AUTH) info.user = 'alice'; return true; },
  });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/repo.git`;
    const sink = { stats: { writes: 0, bytes: 0 }, retains: false, backedUp: false, closed: false, write() { /* dropped */ }, drained: () => Promise.resolve(), onClose() { /* never */ } };
    const hold = await s.limiter.acquire(new PacketWriter(sink), false);
    // who is given a slot, in order (the clones' exits may come in either order: the repository is tiny)
    const granted: string[] = [];
    const acquire = s.limiter.acquire;
    s.limiter.acquire = (w, sb, o) => acquire(w, sb, o).then((r) => { granted.push(o?.anonymous ? 'anonymous' : 'user'); return r; });
    const clone = (name: string, extra: string[]) => new Promise<number | null>((resolve) => {
      const c = spawn('git', [...extra, 'clone', '-q', '--bare', url, join(t.dir, `q-${name}`)], { env: gitEnv, stdio: 'ignore' });
      c.on('close', (code) => resolve(code));
    });
    const until = async (ok: () => boolean) => { for (let i = 0; i < 800 && !ok(); i++) await new Promise((r) => setTimeout(r, 25)); assert.ok(ok()); };
    const anon = clone('anonymous', []);
    await until(() => s.limiter.waiting === 1);
    const user = clone('user', ['-c', `http.extraHeader=Authorization: ${AUTH}`]);
    await until(() => s.limiter.waiting === 2);
    // ref advertisements never wait for a pack slot
    // (asynchronously: the server is in this process)
    const ls = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const c = spawn('git', ['-c', 'protocol.version=2', 'ls-remote', url], { env: gitEnv, stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      c.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      c.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(ls.code, 0);
    assert.match(ls.out, /refs\/heads\/main/);
    assert.equal(s.limiter.waiting, 2, 'both clones still waiting');
    hold();
    assert.deepEqual(await Promise.all([anon, user]), [0, 0]);
    assert.deepEqual(granted, ['user', 'anonymous']);
  } finally { await s.shutdown(1000); }
});

test('requests in progress: a client gone before its admission finished does not hold its share for ever', { timeout: 30_000 }, async () => {
  const { startServer } = await import('../src/transport/server.js');
  // a slow `authenticate` (a bcrypt check): the client leaves while it runs
  const s = await startServer({ root, http: 0, exportAll: true, spawnHelper: false, clientLimits: { anonymous: { concurrency: 1 } }, authenticate: () => new Promise((r) => setTimeout(() => r(true), 300)) });
  try {
    const port = s.httpPort!;
    for (let i = 0; i < 3; i++) {
      const c = connect(port, '127.0.0.1');
      c.on('error', () => undefined);
      await new Promise<void>((r) => c.once('connect', () => r()));
      c.write(`GET ${infoRefs} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 50));
      c.destroy();
    }
    await new Promise((r) => setTimeout(r, 700));
    assert.equal(s.clientLimits!.activeClients, 0, 'nothing left in progress');
    assert.equal((await get(port, infoRefs)).status, 200);
  } finally { await s.shutdown(1000); }
});
