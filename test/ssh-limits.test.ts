/**
 * The SSH server's limits, each on its own server with a small value, and
 * its robustness: stalls hold their own connection only, a client gone
 * mid-pack leaves no child and no object, 50 clients through --max-packs 2.
 * Clients: raw TCP for the phases before authentication, ssh2's client
 * for channel-level requests, the OpenSSH client for git.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { git, gitBuf, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { pkt, processesMentioning } from './helpers/push.js';
import { gitSshEnv, sshKit, sshRun, startSsh, type SshKit, type SshUser } from './helpers/ssh.js';
import type { ServerProc } from './helpers/server-process.js';

interface Fixture { t: ReturnType<typeof tmp>; kit: SshKit; alice: SshUser; srv: string; repo: string }

function fixture(): Fixture {
  const t = tmp('gitwire-ssh-limits-');
  const kit = sshKit(t.dir);
  const alice = kit.user('alice');
  const srv = join(t.dir, 'srv');
  mkdirSync(srv);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  const repo = join(srv, 'r.git');
  git(['clone', '-q', '--bare', w, repo]);
  return { t, kit, alice, srv, repo };
}

/** a raw TCP connection; resolves `closed` when the server closes it, with what it sent */
function raw(port: number): { sock: Socket; data: () => string; closed: Promise<string> } {
  const sock = connect(port, '127.0.0.1');
  let got = '';
  sock.on('data', (d) => { got += d.toString('latin1'); });
  sock.on('error', () => { /* reset */ });
  const closed = new Promise<string>((resolve) => sock.on('close', () => resolve(got)));
  return { sock, data: () => got, closed };
}

const until = async (cond: () => boolean, what: string, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** an authenticated ssh2 client */
function client(f: Fixture, port: number): Promise<ssh2.Client> {
  return new Promise((resolve, reject) => {
    const c = new ssh2.Client();
    c.on('ready', () => resolve(c)).on('error', reject);
    c.connect({ host: '127.0.0.1', port, username: 'git', privateKey: readFileSync(f.alice.key), hostVerifier: () => true });
  });
}

const lsRemote = (f: Fixture, port: number) => gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], f.t.dir, gitSshEnv(f.kit, f.alice, port));
const logged = (s: ServerProc, outcome: string) => s.logs.some((l) => l.includes(`"outcome":"${outcome}"`));

test('--ssh-max-connections: a connection past the limit takes the slot of the oldest unauthenticated one (ssh-preauth has more)', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-max-connections', '2']);
  try {
    const a = raw(s.sshPort), b = raw(s.sshPort);
    await until(() => a.data().startsWith('SSH-2.0-gitwire') && b.data().startsWith('SSH-2.0-gitwire'), 'identification');
    const c = raw(s.sshPort);
    await until(() => c.data().startsWith('SSH-2.0-gitwire'), 'the newcomer served');
    assert.match(await a.closed, /^SSH-2.0-gitwire/);
    await until(() => logged(s, 'unauthenticated-evicted'), 'log line');
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    b.sock.destroy();
    c.sock.destroy();
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-max-unauthenticated: an address with that many unauthenticated connections gets no more; authenticated ones do not count', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-max-unauthenticated', '2']);
  try {
    const held = await client(f, s.sshPort); // authenticated: not counted
    const a = raw(s.sshPort), b = raw(s.sshPort);
    await until(() => a.data().length > 0 && b.data().length > 0, 'identification');
    const refused = await lsRemote(f, s.sshPort);
    assert.notEqual(refused.code, 0);
    await until(() => logged(s, 'too-many-unauthenticated'), 'log line');
    a.sock.destroy();
    await a.closed;
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    b.sock.destroy();
    held.end();
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-login-grace-time: a client stalled in the key exchange is cut; meanwhile others are served', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-login-grace-time', '1']);
  try {
    const silent = raw(s.sshPort); // never says anything
    const kex = raw(s.sshPort); // identification, then nothing: stalled in the key exchange
    kex.sock.write('SSH-2.0-OpenSSH_9.2\r\n');
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    await Promise.all([silent.closed, kex.closed]);
    await until(() => logged(s, 'login-grace-time'), 'log line');
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-max-auth-tries: after that many failed keys the connection is closed', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-max-auth-tries', '2']);
  try {
    const strangers = [1, 2, 3].map((i) => f.kit.user(`x${i}`, false));
    const args = ['-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${f.kit.knownHosts}`, '-p', String(s.sshPort), '-v',
      ...strangers.flatMap((u) => ['-i', u.key]), ...['-i', f.alice.key], 'git@127.0.0.1', "git-upload-pack '/r.git'"];
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync('ssh', args, { input: '', encoding: 'utf8' });
    assert.equal(r.status, 255, r.stderr);
    // alice's key, after the strangers', was never tried
    assert.doesNotMatch(r.stderr, /Offering public key: \S+id-alice/);
    assert.doesNotMatch(r.stderr, /Authenticated to/);
    await until(() => logged(s, 'too-many-auth-failures'), 'log line');
    // with the right key among the first two, it works
    const ok = await sshRun(f.kit, f.alice, s.sshPort, ['git@127.0.0.1', "git-upload-pack '/r.git'"]);
    assert.match(ok.stdout, /^[0-9a-f]{44} HEAD\0/, ok.stderr);
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-max-channels: sessions past the limit on one connection are refused; forwarding, pty and other env are refused', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-max-channels', '2']);
  try {
    const c = await client(f, s.sshPort);
    const exec = (cmd: string, o: ssh2.ExecOptions = {}) => new Promise<ssh2.ClientChannel>((resolve, reject) => c.exec(cmd, o, (e, ch) => (e ? reject(e) : resolve(ch))));
    const one = await exec("git-upload-pack '/r.git'");
    const two = await exec("git-upload-pack '/r.git'");
    await assert.rejects(exec("git-upload-pack '/r.git'"), /open failure|prohibited/i);
    await until(() => logged(s, 'too-many-channels'), 'log line');
    one.resume(); two.resume(); one.end(); two.end();
    await new Promise((r) => one.on('close', r));
    // a slot is free again; a pty is refused (ssh2's client then fails the exec)
    await assert.rejects(exec("git-upload-pack '/r.git'", { pty: true }));
    // only GIT_PROTOCOL is taken from env: another variable does not reach the service
    const three = await exec("git-upload-pack '/r.git'", { env: { GIT_PROTOCOL: 'version=2', GIT_DIR: '/etc' } });
    let out = '';
    three.on('data', (d: Buffer) => { out += d.toString('latin1'); });
    await until(() => out.includes('0000'), 'v2 capabilities');
    assert.match(out, /^000eversion 2\n/);
    three.end();
    await assert.rejects(new Promise((resolve, reject) => c.forwardOut('127.0.0.1', 1, '127.0.0.1', s.sshPort, (e, ch) => (e ? reject(e) : resolve(ch)))));
    await assert.rejects(new Promise((resolve, reject) => c.forwardIn('127.0.0.1', 0, (e, p) => (e ? reject(e) : resolve(p)))));
    c.end();
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-idle-timeout: an authenticated connection with no channel, and one stalled mid-request, are closed', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-idle-timeout', '1']);
  try {
    const idle = await client(f, s.sshPort);
    const stalled = await client(f, s.sshPort);
    const closed = (c: ssh2.Client) => new Promise<void>((r) => { c.on('close', () => r()); });
    const a = closed(idle), b = closed(stalled);
    stalled.exec("git-receive-pack '/r.git'", () => { /* advertised, then we say nothing */ });
    await Promise.all([a, b]);
    // the one with no channel idles out; the one stalled mid-request is cut by its channel's progress deadline
    await until(() => logged(s, 'idle-timeout') && logged(s, 'progress-timeout'), 'log lines');
    assert.deepEqual(processesMentioning(f.repo), []);
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
  } finally { await s.stop(); f.t.cleanup(); }
});

test('--ssh-keepalive: a client that stops answering keepalives is dropped', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-keepalive', '1', '--ssh-keepalive-count', '1', '--ssh-idle-timeout', '0']);
  try {
    const c = await client(f, s.sshPort);
    // the client's socket stops reading: keepalives go unanswered
    (c as unknown as { _sock: Socket })._sock.pause();
    await until(() => logged(s, 'keepalive-timeout'), 'keepalive timeout', 30_000);
    c.destroy();
  } finally { await s.stop(); f.t.cleanup(); }
});

/** a repository with an incompressible 16 MiB blob (a pack that takes a while to send) */
function bigRepo(f: Fixture): string {
  const w = join(f.t.dir, 'big');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'big', { 'big.bin': randomBytes(16 << 20) });
  const repo = join(f.srv, 'big.git');
  git(['clone', '-q', '--bare', w, repo]);
  return repo;
}

test('a client gone mid-pack (fetch and push) leaves no child, no quarantine and no object', { timeout: 120_000 }, async () => {
  const f = fixture();
  const big = bigRepo(f);
  const s = await startSsh(f.kit, f.srv);
  try {
    // fetch: want the tip, read some of the pack, vanish
    const tip = git(['--git-dir', big, 'rev-parse', 'main']).trim();
    const c = await client(f, s.sshPort);
    const ch = await new Promise<ssh2.ClientChannel>((resolve, reject) => c.exec("git-upload-pack '/big.git'", (e, x) => (e ? reject(e) : resolve(x))));
    let got = 0;
    let asked = false;
    ch.on('data', (d: Buffer) => {
      got += d.length;
      if (!asked && d.includes(Buffer.from('0000'))) {
        asked = true;
        ch.write(Buffer.concat([pkt(`want ${tip} side-band-64k\n`), Buffer.from('0000'), pkt('done\n')]));
      }
    });
    await until(() => got > 1 << 20, 'part of the pack');
    (c as unknown as { _sock: Socket })._sock.destroy();
    await until(() => processesMentioning(big).length === 0, 'pack-objects to go', 20_000);

    // push: commands and half a pack, then vanish
    const w = join(f.t.dir, 'big');
    commit(w, 'more', { 'more.bin': randomBytes(16 << 20) });
    const before = git(['--git-dir', big, 'count-objects', '-v']);
    const old = tip;
    const now = git(['rev-parse', 'HEAD'], { cwd: w }).trim();
    const pack = gitBuf(['pack-objects', '--revs', '--stdout', '-q'], { cwd: w, input: `${now}\n^${old}\n` });
    const p = await client(f, s.sshPort);
    const pch = await new Promise<ssh2.ClientChannel>((resolve, reject) => p.exec("git-receive-pack '/big.git'", (e, x) => (e ? reject(e) : resolve(x))));
    let adv = '';
    let sent = false;
    pch.on('data', (d: Buffer) => {
      adv += d.toString('latin1');
      if (!sent && adv.endsWith('0000')) {
        sent = true;
        pch.write(Buffer.concat([pkt(`${old} ${now} refs/heads/main\0report-status\n`), Buffer.from('0000')]));
        pch.write(pack.subarray(0, pack.length >> 1));
      }
    });
    await until(() => sent && readdirSync(join(big, 'objects')).some((n) => n.startsWith('tmp_objdir')), 'the quarantine');
    (p as unknown as { _sock: Socket })._sock.destroy();
    await until(() => processesMentioning(big).length === 0 && !readdirSync(join(big, 'objects')).some((n) => n.startsWith('tmp_objdir')), 'index-pack and the quarantine to go', 20_000);
    assert.equal(git(['--git-dir', big, 'rev-parse', 'main']).trim(), old);
    assert.equal(git(['--git-dir', big, 'count-objects', '-v']), before);
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
  } finally { await s.stop(); f.t.cleanup(); }
});

test('50 concurrent clones over ssh all succeed with --max-packs 2', { timeout: 300_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--max-packs', '2']);
  try {
    const want = git(['--git-dir', f.repo, 'rev-parse', 'main']).trim();
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) =>
      gitAsync(['clone', '-q', '--bare', 'ssh://git@127.0.0.1/r.git', join(f.t.dir, `c${i}`)], f.t.dir, gitSshEnv(f.kit, f.alice, s.sshPort), 240_000)));
    rs.forEach((r, i) => {
      assert.equal(r.code, 0, `clone ${i}: ${r.stderr}`);
      assert.equal(git(['--git-dir', join(f.t.dir, `c${i}`), 'rev-parse', 'main']).trim(), want);
    });
  } finally { await s.stop(); f.t.cleanup(); }
});


/** git pack-objects processes below serve (it forks through its spawn helper) */
function packObjectsOf(s: ServerProc): string[] {
  const out: string[] = [];
  const walk = (pid: number) => {
    const r = spawnSync('ps', ['--ppid', String(pid), '-o', 'pid=,args='], { encoding: 'utf8' });
    for (const l of r.stdout.split('\n').map((x) => x.trim()).filter(Boolean)) {
      if (l.includes('pack-objects')) out.push(l);
      walk(Number(l.split(' ')[0]));
    }
  };
  walk(s.child.pid!);
  return out;
}

for (const producer of ['git', 'native'] as const) test(`a client that stops reading mid-pack and closes its channel (the connection kept) or its connection ends the request: ${producer === 'git' ? 'no pack-objects left, ' : 'native producer: '}its slot free`, { timeout: 120_000 }, async () => {
  const f = fixture();
  const big = bigRepo(f);
  const s = await startSsh(f.kit, f.srv, ['--max-packs', '1', '--pack-objects', producer]);
  try {
    const tip = git(['--git-dir', big, 'rev-parse', 'main']).trim();
    for (const how of ['channel', 'connection'] as const) {
      const c = await client(f, s.sshPort);
      const ch = await new Promise<ssh2.ClientChannel>((resolve, reject) => c.exec("git-upload-pack '/big.git'", (e, x) => (e ? reject(e) : resolve(x))));
      let asked = false;
      let got = 0;
      ch.on('data', (d: Buffer) => {
        got += d.length;
        if (!asked && d.includes(Buffer.from('0000'))) {
          asked = true;
          ch.write(Buffer.concat([pkt(`want ${tip} side-band-64k\n`), Buffer.from('0000'), pkt('done\n')]));
        }
      });
      await until(() => got > 64 << 10, 'the pack to start');
      // stop reading: the window fills, pack-objects blocks on its pipe
      ch.pause();
      if (producer === 'git') {
        await until(() => packObjectsOf(s).length > 0, 'pack-objects');
        await new Promise((r) => setTimeout(r, 500));
        assert.equal(packObjectsOf(s).length, 1, 'pack-objects waits on the client');
      } else await new Promise((r) => setTimeout(r, 500));
      if (how === 'channel') ch.close(); else c.end();
      await until(() => packObjectsOf(s).length === 0, `pack-objects to go after the ${how} closed`, 20_000);
      // the one slot is free again
      const r = await lsRemote(f, s.sshPort);
      assert.equal(r.code, 0, r.stderr);
      const clone = await gitAsync(['clone', '-q', '--bare', 'ssh://git@127.0.0.1/r.git', join(f.t.dir, `c-${how}`)], f.t.dir, gitSshEnv(f.kit, f.alice, s.sshPort), 30_000);
      assert.equal(clone.code, 0, clone.stderr);
      c.end();
    }
  } finally { await s.stop(); f.t.cleanup(); }
});

test('a session channel asking for packets of 0 bytes is cut (ssh2 would spin on it, holding every client); others are served', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--http', '0']);
  try {
    const c = await client(f, s.sshPort);
    const proto = (c as unknown as { _protocol: { session: (chan: number, win: number, max: number) => void } })._protocol;
    const orig = proto.session.bind(proto);
    proto.session = (chan, win) => orig(chan, win, 0);
    const closed = new Promise<void>((resolve) => c.on('close', () => resolve()));
    c.exec('ls', () => { /* refused or cut */ });
    await closed;
    // the log line goes through serve's logger and stdout: it may arrive after the cut
    await until(() => logged(s, 'bad-request'), 'the bad-request log line');
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    const h = await fetch(`http://127.0.0.1:${s.httpPort}/r.git/info/refs?service=git-upload-pack`);
    assert.equal(h.status, 200);
  } finally { await s.stop(); f.t.cleanup(); }
});
