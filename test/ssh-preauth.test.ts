/**
 * The SSH server before authentication (issue #40 item 6), attacked as a
 * stranger would: silent connections from several loopback addresses
 * (127.0.0.2…, bound with localAddress) never keep a known key out, the
 * unauthenticated connection of the address holding the most goes to
 * make room, an authenticated one never does, one address's handshakes
 * are rate-limited without touching another's, IPv6 addresses count per
 * /64, and the key exchange offered by default is the cheap one (read
 * from the server's KEXINIT on a raw socket). The known user is the
 * OpenSSH client.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { gitSshEnv, sshArgs, sshKit, startSsh, type SshKit, type SshUser } from './helpers/ssh.js';
import type { ServerProc } from './helpers/server-process.js';
import { createSshServer } from '../src/transport/ssh/server.js';
import { addressGroup, DEFAULT_KEX, HandshakeRate, kexList, SUPPORTED_KEX, UnauthenticatedPool } from '../src/transport/ssh/index.js';
import { ProxyTrust } from '../src/transport/proxy-protocol.js';
import type { RequestLog } from '../src/transport/http.js';

interface Fixture { t: ReturnType<typeof tmp>; kit: SshKit; alice: SshUser; srv: string }

function fixture(): Fixture {
  const t = tmp('gitwire-ssh-preauth-');
  const kit = sshKit(t.dir);
  const alice = kit.user('alice');
  const srv = join(t.dir, 'srv');
  mkdirSync(srv);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  git(['clone', '-q', '--bare', w, join(srv, 'r.git')]);
  return { t, kit, alice, srv };
}

/** A raw TCP connection from `from` (a loopback address) that never sends a byte unless told. */
interface Raw { sock: Socket; data: () => Buffer; closed: Promise<Buffer>; isClosed: () => boolean; identAt?: number }
function raw(port: number, from = '127.0.0.1'): Raw {
  const sock = connect({ port, host: '127.0.0.1', localAddress: from });
  const parts: Buffer[] = [];
  let done = false;
  const r: Raw = {
    sock, data: () => Buffer.concat(parts), isClosed: () => done,
    closed: new Promise<Buffer>((resolve) => sock.on('close', () => { done = true; resolve(Buffer.concat(parts)); })),
  };
  sock.on('data', (d: Buffer) => { if (!parts.length) r.identAt = Date.now(); parts.push(d); });
  sock.on('error', () => { /* reset */ });
  return r;
}
const hasIdent = (r: Raw) => r.data().toString('latin1').startsWith('SSH-2.0-gitwire');

const until = async (cond: () => boolean, what: string, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
const count = (s: ServerProc, outcome: string) => s.logs.filter((l) => l.includes(`"outcome":"${outcome}"`)).length;
/** gitwire_requests_total of SSH with this outcome, from /metrics */
async function counted(s: ServerProc, outcome: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^gitwire_requests_total\{([^}]*)\} (\d+)$/gm)) {
    if (m[1]!.includes('transport="ssh"') && m[1]!.includes(`outcome="${outcome}"`)) n += Number(m[2]);
  }
  return n;
}
const lsRemote = (f: Fixture, port: number) => gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], f.t.dir, gitSshEnv(f.kit, f.alice, port), 30_000);

/** an authenticated ssh2 client */
function client(f: Fixture, port: number): Promise<ssh2.Client> {
  return new Promise((resolve, reject) => {
    const c = new ssh2.Client();
    c.on('ready', () => resolve(c)).on('error', reject);
    c.connect({ host: '127.0.0.1', port, username: 'git', privateKey: readFileSync(f.alice.key), hostVerifier: () => true });
  });
}
const execOk = (c: ssh2.Client) => new Promise<string>((resolve, reject) => c.exec("git-upload-pack '/r.git'", (e, ch) => {
  if (e) return reject(e);
  let out = '';
  ch.on('data', (d: Buffer) => { out += d.toString('latin1'); if (out.endsWith('0000')) { ch.end(); resolve(out); } });
  ch.on('close', () => resolve(out));
}));

test('320 silent connections from 5 addresses, default limits: a known key still logs in at once (OpenSSH), the silent ones make room', { timeout: 120_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv);
  const silent: Raw[] = [];
  try {
    for (let a = 2; a <= 6; a++) for (let i = 0; i < 64; i++) silent.push(raw(s.sshPort, `127.0.0.${a}`));
    // each address's 64 are let in at the handshake rate (20 at once, then 10 a second): all are in within ~5 s
    await until(() => silent.every((r) => hasIdent(r) || r.isClosed()), 'every silent connection to be answered or closed', 30_000);
    const t0 = Date.now();
    const r = await lsRemote(f, s.sshPort);
    const ms = Date.now() - t0;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /refs\/heads\/main/);
    // a loose bound: the old code refused it outright; this only fails if the login had to wait for a slot
    assert.ok(ms < 15_000, `ls-remote took ${ms} ms`);
    const alive = silent.filter((r) => !r.isClosed()).length;
    assert.ok(alive <= 256, `no more than --ssh-max-connections held: ${alive}`);
    assert.ok(count(s, 'unauthenticated-evicted') >= 320 - 256, 'the silent ones made room for each other');
    assert.equal(count(s, 'too-many-connections'), 0, 'nobody was refused for want of a slot');
    // the evicted were the silent ones, never the known user; the address holding the most lost one each time
    const perAddress = [2, 3, 4, 5, 6].map((a) => silent.slice((a - 2) * 64, (a - 1) * 64).filter((x) => !x.isClosed()).length);
    assert.ok(Math.max(...perAddress) - Math.min(...perAddress) <= 2, `the silent addresses were evened out: ${perAddress.join(' ')}`);
  } finally { for (const r of silent) r.sock.destroy(); await s.stop(); f.t.cleanup(); }
});

test('when full, the unauthenticated connection of the address holding the most goes (the oldest), not the newcomer; an authenticated one never', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv, ['--ssh-max-connections', '4', '--metrics', '0']);
  try {
    const known = await client(f, s.sshPort);
    const u = [raw(s.sshPort, '127.0.0.2'), raw(s.sshPort, '127.0.0.2'), raw(s.sshPort, '127.0.0.2')];
    for (const [i, x] of u.entries()) { await until(() => hasIdent(x), `u${i}'s identification`); }
    // full (1 authenticated, 3 not): a newcomer from another address takes the oldest's slot
    const n1 = raw(s.sshPort, '127.0.0.3');
    await until(() => hasIdent(n1), 'the newcomer served');
    await u[0]!.closed;
    assert.equal(u[1]!.isClosed() || u[2]!.isClosed(), false, 'only the oldest went');
    // 127.0.0.2 holds 2, 127.0.0.3 would hold 2: the older one goes
    const n2 = raw(s.sshPort, '127.0.0.3');
    await until(() => hasIdent(n2), 'the second newcomer served');
    await u[1]!.closed;
    // 127.0.0.3 would hold 3 against 127.0.0.2's 1: its own oldest goes, not 127.0.0.2's older one
    const n3 = raw(s.sshPort, '127.0.0.3');
    await until(() => hasIdent(n3), 'the third newcomer served');
    await n1.closed;
    assert.equal(u[2]!.isClosed(), false, "127.0.0.2's last connection is kept");
    await until(() => count(s, 'unauthenticated-evicted') === 3, 'three evictions logged');
    // the authenticated connection was never touched
    assert.match(await execOk(known), /refs\/heads\/main/);
    // the known key logs in past them (OpenSSH)
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    // logged and counted
    await until(() => count(s, 'unauthenticated-evicted') === 4, 'the fourth eviction (for the OpenSSH login) logged');
    assert.equal(await counted(s, 'unauthenticated-evicted'), 4);
    for (const x of [u[2]!, n2, n3]) x.sock.destroy();
    known.end();
  } finally { await s.stop(); f.t.cleanup(); }
  // every slot authenticated: the newcomer is refused, before any byte
  const g = fixture();
  const s2 = await startSsh(g.kit, g.srv, ['--ssh-max-connections', '2']);
  try {
    const a = await client(g, s2.sshPort), b = await client(g, s2.sshPort);
    const n = raw(s2.sshPort, '127.0.0.2');
    assert.equal((await n.closed).length, 0);
    await until(() => count(s2, 'too-many-connections') === 1, 'the refusal logged');
    assert.equal(count(s2, 'unauthenticated-evicted'), 0);
    assert.match(await execOk(a), /refs\/heads\/main/);
    assert.match(await execOk(b), /refs\/heads\/main/);
    a.end(); b.end();
  } finally { await s2.stop(); g.t.cleanup(); }
});

test('--ssh-handshake-rate: one address over the rate waits its turn, then is refused; another address is not', { timeout: 60_000 }, async () => {
  const f = fixture();
  // 2 a second, 4 at once, a turn at most 5 s away: 14 of 40 let in, in turns
  const s = await startSsh(f.kit, f.srv, ['--ssh-handshake-rate', '2', '--metrics', '0']);
  const flood: Raw[] = [];
  try {
    const t0 = Date.now();
    for (let i = 0; i < 40; i++) flood.push(raw(s.sshPort, '127.0.0.2'));
    await until(() => count(s, 'handshake-rate') >= 20, 'refusals');
    // another address meanwhile: served at once
    const other = raw(s.sshPort, '127.0.0.3');
    await until(() => hasIdent(other), 'the other address served', 2_000);
    const r = await lsRemote(f, s.sshPort);
    assert.equal(r.code, 0, r.stderr);
    await until(() => flood.every((x) => hasIdent(x) || x.isClosed()), 'the flood answered or closed', 15_000);
    const admitted = flood.filter(hasIdent);
    const refused = flood.filter((x) => !hasIdent(x));
    assert.ok(admitted.length >= 12 && admitted.length <= 18, `admitted ${admitted.length} of 40`);
    for (const x of refused) assert.equal(x.data().length, 0, 'a refused connection gets no byte');
    assert.equal(count(s, 'handshake-rate'), refused.length);
    assert.equal(await counted(s, 'handshake-rate'), refused.length);
    // the ones over the burst waited their turn: the last was let in seconds after the first
    const at = admitted.map((x) => x.identAt! - t0).sort((a, b) => a - b);
    assert.ok(at[at.length - 1]! - at[0]! >= 3_000, `turns spread over ${at[at.length - 1]! - at[0]!} ms`);
    other.sock.destroy();
  } finally { for (const x of flood) x.sock.destroy(); await s.stop(); f.t.cleanup(); }
});

/** The server's KEXINIT name-lists, read from a raw socket after sending an identification. */
async function serverKexInit(port: number): Promise<{ kex: string[]; hostKey: string[] }> {
  const r = raw(port);
  r.sock.write('SSH-2.0-OpenSSH_9.2\r\n');
  let buf: Buffer = Buffer.alloc(0);
  await until(() => {
    buf = r.data();
    const nl = buf.indexOf('\r\n');
    return nl >= 0 && buf.length >= nl + 2 + 4 && buf.length >= nl + 2 + 4 + buf.readUInt32BE(nl + 2);
  }, 'the server KEXINIT', 5_000);
  r.sock.destroy();
  const p = buf.subarray(buf.indexOf('\r\n') + 2);
  const payload = p.subarray(5, 4 + p.readUInt32BE(0) - p[4]!);
  assert.equal(payload[0], 20, 'SSH_MSG_KEXINIT');
  let off = 17;
  const list = () => { const n = payload.readUInt32BE(off); const s = payload.toString('latin1', off + 4, off + 4 + n); off += 4 + n; return s.split(','); };
  const kex = list();
  return { kex, hostKey: list() };
}

const logLevel = (args: string[], level: string) => args.map((a) => (a.startsWith('LogLevel=') ? `LogLevel=${level}` : a));

test('the key exchange offered by default is the cheap one (curve25519, nistp256): no finite-field group, no nistp384/521; --ssh-kex adds one; OpenSSH connects', { timeout: 60_000 }, async () => {
  const f = fixture();
  const s = await startSsh(f.kit, f.srv);
  try {
    const { kex } = await serverKexInit(s.sshPort);
    assert.deepEqual(kex, [...DEFAULT_KEX, 'kex-strict-s-v00@openssh.com']);
    assert.ok(!kex.some((k) => k.startsWith('diffie-hellman') || /nistp(384|521)/.test(k)), kex.join(','));
    // the installed OpenSSH negotiates with the default offer (curve25519)
    const v = spawnSync('ssh', [...logLevel(sshArgs(f.kit, f.alice, s.sshPort), 'DEBUG'), 'git@127.0.0.1', "git-upload-pack '/r.git'"], { input: '0000', encoding: 'utf8', env: gitEnv });
    assert.match(v.stdout, /refs\/heads\/main/, v.stderr);
    assert.match(v.stderr, /kex: algorithm: curve25519-sha256/);
    // a client that insists on group18 does not get it
    const g18 = spawnSync('ssh', [...logLevel(sshArgs(f.kit, f.alice, s.sshPort), 'INFO'), '-o', 'KexAlgorithms=diffie-hellman-group18-sha512', 'git@127.0.0.1', "git-upload-pack '/r.git'"], { input: '0000', encoding: 'utf8', env: gitEnv });
    assert.equal(g18.status, 255);
    assert.match(g18.stderr, /no matching key exchange method/);
  } finally { await s.stop(); }
  const s2 = await startSsh(f.kit, f.srv, ['--ssh-kex', '+diffie-hellman-group14-sha256']);
  try {
    const { kex } = await serverKexInit(s2.sshPort);
    assert.deepEqual(kex, [...DEFAULT_KEX, 'diffie-hellman-group14-sha256', 'kex-strict-s-v00@openssh.com']);
    const g14 = spawnSync('ssh', [...sshArgs(f.kit, f.alice, s2.sshPort), '-o', 'KexAlgorithms=diffie-hellman-group14-sha256', 'git@127.0.0.1', "git-upload-pack '/r.git'"], { input: '0000', encoding: 'utf8', env: gitEnv });
    assert.match(g14.stdout, /refs\/heads\/main/, g14.stderr);
  } finally { await s2.stop(); }
  // a method ssh2 does not have: a usage error naming it
  const bad = spawnSync(BIN, ['serve', f.srv, '--ssh', '0', '--ssh-keys', f.kit.keys, '--ssh-host-key', f.kit.hostKey, '--ssh-kex', 'sntrup761x25519-sha512@openssh.com'], { encoding: 'utf8', env: gitEnv, timeout: 20_000 });
  assert.equal(bad.status, 129, bad.stderr);
  assert.match(bad.stderr, /--ssh-kex: unknown key exchange method 'sntrup761x25519-sha512@openssh.com'/);
  f.t.cleanup();
});

test('kexList: the default, a list, +added, -removed; unknown methods and an empty offer refused; the supported list is ssh2\'s', () => {
  assert.deepEqual(kexList(undefined), [...DEFAULT_KEX]);
  assert.deepEqual(kexList('ecdh-sha2-nistp256,curve25519-sha256'), ['ecdh-sha2-nistp256', 'curve25519-sha256']);
  assert.deepEqual(kexList('+diffie-hellman-group18-sha512'), [...DEFAULT_KEX, 'diffie-hellman-group18-sha512']);
  assert.deepEqual(kexList('-curve25519-sha256@libssh.org,ecdh-sha2-nistp384'), ['curve25519-sha256', 'ecdh-sha2-nistp256']);
  assert.deepEqual(kexList('+ecdh-sha2-nistp521,curve25519-sha256'), [...DEFAULT_KEX, 'ecdh-sha2-nistp521']);
  assert.throws(() => kexList('curve25519-sha256,bogus'), /unknown key exchange method 'bogus'/);
  assert.throws(() => kexList('-' + DEFAULT_KEX.join(',')), /no key exchange method left/);
  assert.throws(() => kexList(''), /no key exchange method left/);
  const constants = createRequire(import.meta.url)('ssh2/lib/protocol/constants.js') as { SUPPORTED_KEX: string[]; DEFAULT_KEX: string[] };
  assert.deepEqual([...SUPPORTED_KEX].sort(), [...constants.SUPPORTED_KEX].sort());
});

test('addressGroup: IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 per /64', () => {
  assert.equal(addressGroup('203.0.113.7'), '203.0.113.7');
  assert.equal(addressGroup('::ffff:203.0.113.7'), '203.0.113.7');
  assert.equal(addressGroup('::FFFF:203.0.113.7'), '203.0.113.7');
  assert.equal(addressGroup('2001:db8:0:1::1'), '2001:db8:0:1::/64');
  assert.equal(addressGroup('2001:0DB8:0000:0001:ffff:1:2:3'), '2001:db8:0:1::/64');
  assert.equal(addressGroup('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(addressGroup('::1'), '0:0:0:0::/64');
  assert.equal(addressGroup('64:ff9b::203.0.113.7'), '64:ff9b:0:0::/64');
  assert.notEqual(addressGroup('2001:db8:0:1::1'), addressGroup('2001:db8:0:2::1'));
  assert.equal(addressGroup(''), '');
});

test('UnauthenticatedPool.victim: the oldest of the group holding the most, the newcomer counted; ties to the older', () => {
  const p = new UnauthenticatedPool<string>();
  assert.equal(p.victim('a'), undefined);
  p.add('a', 'a1'); p.add('b', 'b1'); p.add('b', 'b2');
  assert.equal(p.victim('c'), 'b1');
  assert.equal(p.victim('a'), 'a1', 'a would hold 2 as b does: a1 is older');
  p.add('a', 'a2');
  assert.equal(p.victim('a'), 'a1');
  assert.equal(p.remove('a', 'a1'), true);
  assert.equal(p.remove('a', 'a1'), false);
  assert.equal(p.victim('x'), 'b1');
  assert.equal(p.size, 3);
  p.remove('a', 'a2');
  assert.equal(p.groupCount, 1);
});

test('HandshakeRate: a burst of twice the rate, then turns; refused past the longest wait; a refund; memory bounded', () => {
  let now = 0;
  const h = new HandshakeRate(2, 5_000, 100, () => now);
  const waits = Array.from({ length: 16 }, () => h.admit('a'));
  assert.deepEqual(waits.slice(0, 4), [0, 0, 0, 0]);
  assert.deepEqual(waits.slice(4, 14), [500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000]);
  assert.deepEqual(waits.slice(14), [-1, -1]);
  assert.equal(h.admit('b'), 0, 'another group has its own');
  h.refund('a');
  assert.equal(h.admit('a'), 5000);
  now = 10_000;
  assert.equal(h.admit('a'), 0);
  // a full bucket is forgotten; a million groups keep at most maxKeys
  now = 100_000;
  for (let i = 0; i < 1_000; i++) { h.admit(`g${i}`); now += 0.1; }
  assert.ok(h.size <= 100, `${h.size} groups remembered`);
  assert.throws(() => new HandshakeRate(0), /handshake rate/);
});

test('the unauthenticated limit counts an IPv6 client per /64, and an IPv4-mapped address as its IPv4 one (PROXY headers)', { timeout: 30_000 }, async () => {
  const key = join(tmp('gitwire-ssh-preauth-key-').dir, 'host_key');
  assert.equal(spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]).status, 0);
  const logs: RequestLog[] = [];
  const server = createSshServer({
    hostKeys: [readFileSync(key)], authenticate: () => false, proxyProtocol: ProxyTrust.parse('127.0.0.1'),
    sshLimits: { maxUnauthenticatedPerAddress: 2 }, log: (e) => { logs.push(e); },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const open: Socket[] = [];
  const dial = (family: 'TCP4' | 'TCP6', src: string) => {
    const s = connect(port, '127.0.0.1');
    open.push(s);
    s.on('error', () => { /* refused */ });
    s.write(`PROXY ${family} ${src} ${family === 'TCP6' ? '::1' : '127.0.0.1'} 40000 22\r\nSSH-2.0-attacker\r\n`);
    return new Promise<boolean>((r) => {
      s.once('data', (b: Buffer) => r(b.toString('latin1').startsWith('SSH-2.0-gitwire')));
      s.once('close', () => r(false));
    });
  };
  try {
    assert.equal(await dial('TCP6', '2001:db8:0:1::1'), true);
    assert.equal(await dial('TCP6', '2001:db8:0:1:ffff:ffff:ffff:fffe'), true);
    assert.equal(await dial('TCP6', '2001:db8:0:1::2'), false, 'a third from the same /64 is refused');
    assert.equal(await dial('TCP6', '2001:db8:0:2::1'), true, 'the next /64 is another client');
    assert.equal(await dial('TCP4', '203.0.113.1'), true);
    assert.equal(await dial('TCP6', '::ffff:203.0.113.1'), true);
    assert.equal(await dial('TCP6', '::ffff:203.0.113.1'), false, 'IPv4-mapped is the IPv4 client');
    assert.deepEqual(logs.filter((e) => e.outcome === 'too-many-unauthenticated').map((e) => e.remoteAddress), ['2001:db8:0:1::2', '::ffff:203.0.113.1']);
  } finally {
    for (const s of open) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
