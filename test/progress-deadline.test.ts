/**
 * Progress deadlines (issue #40, item 1), end to end on every transport:
 * two clients that ask for a pack larger than the socket buffers and never
 * read it, against `--max-packs 2`, cannot keep a third client from cloning
 * within the timeout plus 5 s; the stalled transfers are cut (logged as
 * `progress-timeout`) and no pack-objects is left below the server.
 * Before the deadlines, git:// and SSH kept such clients (and their
 * pack-objects and slots) for ever, and HTTP for twice its idle time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/push.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitSshEnv, sshArgs, sshKit, startSsh, type SshKit, type SshUser } from './helpers/ssh.js';

/** the deadline the servers run with, s (above the 2.5 s keepalive of a queued fetch: old servers cut a queued client at 2 s for idling) */
const TIMEOUT = 3;

interface Fixture { t: ReturnType<typeof tmp>; srv: string; tip: string; kit: SshKit; alice: SshUser }

/** a small repository to clone, and big.git: 24 MiB of incompressible blobs (far more than the socket buffers hold) */
function fixture(): Fixture {
  const t = tmp('gitwire-deadline-');
  const srv = join(t.dir, 'srv');
  mkdirSync(srv);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  git(['clone', '-q', '--bare', w, join(srv, 'r.git')]);
  const b = join(t.dir, 'b');
  git(['init', '-q', '-b', 'main', b]);
  const tip = commit(b, 'big', { 'b1.bin': randomBytes(8 << 20), 'b2.bin': randomBytes(8 << 20), 'b3.bin': randomBytes(8 << 20) });
  git(['clone', '-q', '--bare', b, join(srv, 'big.git')]);
  for (const r of ['r.git', 'big.git']) writeFileSync(join(srv, r, 'git-daemon-export-ok'), '');
  // a keepalive every second while pack-objects is quiet: written into a full socket, none of them may count as progress
  git(['config', 'uploadpack.keepAlive', '1'], { cwd: join(srv, 'big.git') });
  const kit = sshKit(t.dir);
  return { t, srv, tip, kit, alice: kit.user('alice') };
}

/** pids below `root` (from /proc), with their command lines */
function descendants(root: number): Array<{ pid: number; cmd: string }> {
  const parent = new Map<number, number>();
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, 'latin1');
      // the command may hold spaces and parentheses: the ppid is the second field after the last ')'
      parent.set(Number(n), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* gone */ }
  }
  const out: Array<{ pid: number; cmd: string }> = [];
  const below = (pid: number): boolean => {
    for (let p = parent.get(pid), hops = 0; p !== undefined && hops < 64; p = parent.get(p), hops++) if (p === root) return true;
    return false;
  };
  for (const pid of parent.keys()) {
    if (!below(pid)) continue;
    let cmd = '';
    try { cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1').replace(/\0/g, ' '); } catch { continue; }
    out.push({ pid, cmd });
  }
  return out;
}

const packObjects = (s: ServerProc) => descendants(s.child.pid!).filter((p) => p.cmd.includes('pack-objects'));

/** a gauge from the server's /metrics (started with --metrics 0) */
async function gauge(s: ServerProc, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  const m = new RegExp(`^${name} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : -1;
}

/** stop the server; what it left below it (a pack-objects an old server never stopped) is killed, so the test ends */
async function stop(s: ServerProc): Promise<void> {
  const below = descendants(s.child.pid!);
  const kill = setTimeout(() => s.child.kill('SIGKILL'), 20_000);
  await s.stop();
  clearTimeout(kill);
  for (const p of below) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
}

const until = async (cond: () => boolean | Promise<boolean>, what: string, ms = 30_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** v0 want/done for the big repository's tip, with a sideband (keepalives allowed) */
const wants = (tip: string) => Buffer.concat([pkt(`want ${tip} side-band-64k ofs-delta\n`), Buffer.from('0000'), pkt('done\n')]);

/** git clone, killed after `ms`; ends when git exits (over SSH, its ssh child may hold the pipes open longer) */
function cloneWithin(url: string, dest: string, env: NodeJS.ProcessEnv, ms: number): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn('git', ['clone', '-q', '--bare', url, dest], { env: { ...gitEnv, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    c.stderr!.on('data', (b: Buffer) => { stderr += b.toString(); });
    const timer = setTimeout(() => c.kill('SIGKILL'), ms);
    c.on('exit', (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stderr }); });
  });
}

/** A client that asks for the pack and never reads it. */
interface Staller { close(): void }

/** git:// from a raw socket: the request, the wants, then no read at all */
function gitStaller(port: number, tip: string): Staller {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => { /* cut */ });
  s.write(pkt('git-upload-pack /big.git\0host=127.0.0.1\0'));
  s.write(wants(tip));
  s.pause();
  return { close: () => s.destroy() };
}

/** HTTP from a raw socket: a POST of the wants, then no read at all */
function httpStaller(port: number, tip: string): Staller {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => { /* cut */ });
  const body = wants(tip);
  s.write(`POST /big.git/git-upload-pack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: ${body.length}\r\n\r\n`);
  s.write(body);
  s.pause();
  return { close: () => s.destroy() };
}

/** OpenSSH running upload-pack, its stdout a pipe nobody reads: the channel's window stays shut */
function opensshStaller(f: Fixture, port: number): Staller {
  const c: ChildProcess = spawn('ssh', [...sshArgs(f.kit, f.alice, port), 'git@127.0.0.1', "git-upload-pack '/big.git'"], { env: gitEnv, stdio: ['pipe', 'pipe', 'ignore'] });
  c.stdin!.on('error', () => undefined);
  c.stdin!.write(wants(f.tip));
  c.stdout!.pause();
  return { close: () => c.kill('SIGKILL') };
}

/** ssh2's client that opens a 1 GiB window and stops reading its socket: the connection's queue fills, not the window */
async function socketStaller(f: Fixture, port: number): Promise<Staller> {
  const c = new ssh2.Client();
  c.on('error', () => { /* cut */ });
  await new Promise<void>((resolve, reject) => {
    c.on('ready', () => resolve()).on('error', reject);
    c.connect({ host: '127.0.0.1', port, username: 'git', privateKey: readFileSync(f.alice.key), hostVerifier: () => true });
  });
  const proto = (c as unknown as { _protocol: { session: (chan: number, win: number, max: number) => void } })._protocol;
  const orig = proto.session.bind(proto);
  proto.session = (chan, _win, max) => orig(chan, 2 ** 30, max);
  const ch = await new Promise<ssh2.ClientChannel>((resolve, reject) => c.exec("git-upload-pack '/big.git'", (e, x) => (e ? reject(e) : resolve(x))));
  ch.write(wants(f.tip));
  (c as unknown as { _sock: Socket })._sock.pause();
  return { close: () => c.destroy() };
}

/**
 * The scenario: two stallers hold both pack slots (their pack-objects
 * block on the client); a clone of another repository then finishes
 * within the timeout plus 5 s, the stalled ones are logged as cut, and no
 * pack-objects is left.
 */
async function scenario(f: Fixture, s: ServerProc, stall: () => Promise<Staller> | Staller, url: string, env: NodeJS.ProcessEnv = {}, producer: 'git' | 'native' = 'git'): Promise<void> {
  // what holds a slot: a pack-objects below the server, or (native) a pack made in the server, seen in its metrics
  const held = producer === 'git' ? async () => packObjects(s).length : () => gauge(s, 'gitwire_pack_objects_in_progress');
  const stallers = [await stall(), await stall()];
  try {
    await until(async () => (await held()) === 2, 'two packs held by the stallers');
    // both are blocked on their clients (the packs do not fit in the buffers)
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await held(), 2, `the stallers hold both slots\nserver log:\n${s.logs.slice(-8).join('\n')}`);
    const t0 = Date.now();
    const dest = join(f.t.dir, `clone-${Math.random().toString(36).slice(2)}`);
    const r = await cloneWithin(url, dest, env, (TIMEOUT + 5) * 1000);
    const took = Date.now() - t0;
    assert.equal(r.code, 0, `the clone failed or was still waiting after ${TIMEOUT + 5} s (${took} ms): ${r.stderr}\nserver log:\n${s.logs.slice(-8).join('\n')}`);
    assert.ok(took < (TIMEOUT + 5) * 1000, `the clone took ${took} ms`);
    assert.equal(git(['--git-dir', dest, 'rev-parse', 'main']).trim(), git(['--git-dir', join(f.srv, 'r.git'), 'rev-parse', 'main']).trim());
    // the stallers' packs (and pack-objects) went with them
    await until(async () => (await held()) === 0 && packObjects(s).length === 0, 'no pack left in progress', 10_000);
    await until(() => s.logs.filter((l) => l.includes('"outcome":"progress-timeout"')).length >= 2, 'two progress-timeout log lines', 10_000);
  } finally {
    for (const x of stallers) x.close();
  }
}

test('git://: two clients that never read cannot hold --max-packs 2 past --timeout; their pack-objects go', { timeout: 180_000 }, async () => {
  const f = fixture();
  const s = await startServe(f.srv, ['--git', '0', '--timeout', String(TIMEOUT), '--max-packs', '2', '--pack-objects', 'git']);
  try {
    await scenario(f, s, () => gitStaller(s.gitPort!, f.tip), `git://127.0.0.1:${s.gitPort}/r.git`);
  } finally { await stop(s); f.t.cleanup(); }
});

test('HTTP: two clients that never read are cut after --http-idle-timeout, not twice it', { timeout: 180_000 }, async () => {
  const f = fixture();
  const s = await startServe(f.srv, ['--http', '0', '--http-idle-timeout', String(TIMEOUT), '--max-packs', '2', '--pack-objects', 'git']);
  try {
    await scenario(f, s, () => httpStaller(s.httpPort!, f.tip), `http://127.0.0.1:${s.httpPort}/r.git`);
  } finally { await stop(s); f.t.cleanup(); }
});

for (const via of ['git', 'http'] as const) {
  test(`native producer, ${via === 'git' ? 'git://' : 'HTTP'}: two clients that never read cannot hold --max-packs 2 past the timeout; their packs stop`, { timeout: 180_000 }, async () => {
    const f = fixture();
    const s = await startServe(f.srv, [via === 'git' ? '--git' : '--http', '0', via === 'git' ? '--timeout' : '--http-idle-timeout', String(TIMEOUT), '--max-packs', '2', '--metrics', '0']);
    try {
      const staller = () => via === 'git' ? gitStaller(s.gitPort!, f.tip) : httpStaller(s.httpPort!, f.tip);
      await scenario(f, s, staller, via === 'git' ? `git://127.0.0.1:${s.gitPort}/r.git` : `http://127.0.0.1:${s.httpPort}/r.git`, {}, 'native');
    } finally { await stop(s); f.t.cleanup(); }
  });
}

test('SSH: an OpenSSH client whose output is not read (the channel window shut) is cut after --ssh-idle-timeout', { timeout: 180_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-idle-timeout', String(TIMEOUT), '--max-packs', '2', '--pack-objects', 'git']);
  try {
    await scenario(f, s, () => opensshStaller(f, s.sshPort), 'ssh://git@127.0.0.1/r.git', gitSshEnv(f.kit, f.alice, s.sshPort));
  } finally { await stop(s); f.t.cleanup(); }
});

test('SSH: a client with a huge window that stops reading its socket is cut with its connection', { timeout: 180_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-idle-timeout', String(TIMEOUT), '--max-packs', '2', '--pack-objects', 'git']);
  try {
    await scenario(f, s, () => socketStaller(f, s.sshPort), 'ssh://git@127.0.0.1/r.git', gitSshEnv(f.kit, f.alice, s.sshPort));
    // the connection's own deadline cut it (its line names no repository), not only the channel's
    await until(() => s.logs.some((l) => l.includes('"outcome":"progress-timeout"') && !l.includes('"repository"')), 'a connection cut for its socket', 5000);
  } finally { await stop(s); f.t.cleanup(); }
});

test('stdio: upload-pack --timeout ends a transfer whose client stops reading its pipe (git\'s alarm); its pack-objects goes', { timeout: 120_000 }, async () => {
  const f = fixture();
  try {
    const big = join(f.srv, 'big.git');
    const input = join(f.t.dir, 'wants');
    writeFileSync(input, wants(f.tip));
    // stdout a pipe (as git's file:// and sshd give) into a reader that never reads
    const c = spawn('sh', ['-c', `"$0" upload-pack --timeout=${TIMEOUT} "$1" <"$2" | sleep 600`, BIN, big, input], { env: { ...gitEnv, GITWIRE_PACK_OBJECTS: 'git' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    c.stderr!.on('data', (b: Buffer) => { stderr += b.toString(); });
    const sh = c.pid!;
    try {
      const uploadPack = () => descendants(sh).find((p) => p.cmd.includes('upload-pack') && !p.cmd.startsWith('sh '));
      let held: number[] = [];
      await until(() => (held = descendants(sh).filter((p) => p.cmd.includes('pack-objects')).map((p) => p.pid)).length > 0, 'pack-objects');
      const up = uploadPack();
      assert.ok(up, 'upload-pack runs');
      const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
      const t0 = Date.now();
      await until(() => !alive(up.pid) || Date.now() - t0 > (TIMEOUT + 5) * 1000, 'upload-pack to end or the bound', 60_000);
      assert.ok(!alive(up.pid), `upload-pack still waiting on its client after ${TIMEOUT + 5} s`);
      await until(() => /timeout writing to the client/.test(stderr), 'its message', 5000);
      await until(() => held.every((pid) => !alive(pid)), 'pack-objects to go', 10_000);
    } finally {
      for (const p of descendants(sh)) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
      c.kill('SIGKILL');
    }
  } finally { f.t.cleanup(); }
});

test('git://: a push that stops sending mid-pack is cut after --timeout: its ingest slot frees for the next push, no unpack-objects left', { timeout: 180_000 }, async () => {
  const f = fixture();
  // the empty repository the stalled push goes to, and the one the next push goes to
  git(['init', '-q', '--bare', join(f.srv, 'in.git')]);
  git(['init', '-q', '--bare', join(f.srv, 'next.git')]);
  for (const r of ['in.git', 'next.git']) writeFileSync(join(f.srv, r, 'git-daemon-export-ok'), '');
  const s = await startServe(f.srv, ['--git', '0', '--timeout', String(TIMEOUT), '--enable', 'receive-pack', '--max-ingests', '1']);
  const sock = connect(s.gitPort!, '127.0.0.1');
  try {
    const pack = execFileSync('git', ['pack-objects', '--revs', '--stdout', '-q'], { cwd: join(f.srv, 'big.git'), input: `${f.tip}\n`, maxBuffer: 1 << 30, env: gitEnv });
    sock.on('error', () => { /* cut */ });
    sock.on('data', () => { /* the advertisement, read */ });
    sock.write(pkt('git-receive-pack /in.git\0host=127.0.0.1\0'));
    sock.write(Buffer.concat([pkt(`${'0'.repeat(40)} ${f.tip} refs/heads/main\0report-status\n`), Buffer.from('0000'), pack.subarray(0, pack.length >> 1)]));
    const ingest = () => descendants(s.child.pid!).filter((p) => /index-pack|unpack-objects/.test(p.cmd));
    await until(() => ingest().length > 0, 'the stalled push ingesting');
    const t0 = Date.now();
    const w = join(f.t.dir, 'w');
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = spawn('git', ['push', '-q', `git://127.0.0.1:${s.gitPort}/next.git`, 'main'], { cwd: w, env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      c.stderr!.on('data', (b: Buffer) => { stderr += b.toString(); });
      const timer = setTimeout(() => c.kill('SIGKILL'), (TIMEOUT + 5) * 1000);
      c.on('exit', (code) => { clearTimeout(timer); resolve({ code, stderr }); });
    });
    assert.equal(r.code, 0, `the next push failed or was still waiting after ${TIMEOUT + 5} s (${Date.now() - t0} ms): ${r.stderr}`);
    await until(() => ingest().length === 0, 'no unpack-objects left', 10_000);
    await until(() => s.logs.some((l) => l.includes('"outcome":"progress-timeout"') && l.includes('sent nothing')), 'the cut logged', 10_000);
    assert.throws(() => git(['--git-dir', join(f.srv, 'in.git'), 'rev-parse', '--verify', '-q', 'main']));
  } finally { sock.destroy(); await stop(s); f.t.cleanup(); }
});
