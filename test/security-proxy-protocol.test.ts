/**
 * --proxy-protocol attacked as a stranger would (docs/cluster.md, ATTACK.md):
 * a header sent from an address that is not a balancer, headers in many
 * pieces, slow and bad headers from the balancer while another client is
 * served, and the address the limits and the log then see. One client is
 * one address however its balancer spells it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { createDaemonServer } from '../src/transport/daemon.js';
import { createSshServer } from '../src/transport/ssh/server.js';
import type { RequestLog } from '../src/transport/http.js';
import { PROXY_MAX_PENDING, ProxyTrust, V2_MAX, parseProxyHeader } from '../src/transport/proxy-protocol.js';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(cmd: number, fam: number, body: Buffer, ver = 2): Buffer {
  const h = Buffer.alloc(16);
  SIG.copy(h);
  h[12] = (ver << 4) | cmd;
  h[13] = fam;
  h.writeUInt16BE(body.length, 14);
  return Buffer.concat([h, body]);
}

function v2ipv4(src: string, sp = 40000, tlvs = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(12);
  src.split('.').forEach((o, i) => { b[i] = Number(o); });
  [127, 0, 0, 1].forEach((o, i) => { b[4 + i] = o; });
  b.writeUInt16BE(sp, 8);
  b.writeUInt16BE(9418, 10);
  return v2(1, 0x11, Buffer.concat([b, tlvs]));
}

/** a v2 TCP over IPv6 header from the 16 raw bytes of `src` */
function v2ipv6(src: Buffer): Buffer {
  const b = Buffer.alloc(36);
  src.copy(b, 0);
  b[31] = 1; // ::1
  b.writeUInt16BE(40000, 32);
  b.writeUInt16BE(9418, 34);
  return v2(1, 0x21, b);
}

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
const request = () => Buffer.from(pkt('git-upload-pack /repo.git\0host=localhost\0'));

let t: { dir: string; cleanup: () => void };
let root: string;
let head: string;

before(() => {
  t = tmp('gitwire-sec-proxy-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  head = commit(work, 'one', { 'a.txt': 'a\n' });
  git(['clone', '-q', '--bare', work, join(root, 'repo.git')]);
});
after(() => t?.cleanup());

async function daemon(trust: string, extra: Record<string, unknown> = {}) {
  const logs: RequestLog[] = [];
  const server = createDaemonServer({ root, exportAll: true, proxyProtocol: ProxyTrust.parse(trust), log: (e) => { logs.push(e); }, ...extra });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { logs, port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Connect, write `chunks` (a pause between each), and collect what comes back until the server closes. */
async function exchange(port: number, chunks: Buffer[], gapMs = 0): Promise<{ data: Buffer; socket: Socket }> {
  const s = connect(port, '127.0.0.1');
  const got: Buffer[] = [];
  s.on('data', (d: Buffer) => {
    got.push(d);
    // the advertisement has come: end the conversation as git does (a flush)
    if (Buffer.concat(got).includes('0000')) s.end('0000');
  });
  s.on('error', () => { /* a refusal may be a reset */ });
  const closed = new Promise<void>((r) => s.once('close', () => r()));
  await new Promise<void>((r) => s.once('connect', () => r()));
  for (const c of chunks) {
    if (s.destroyed) break;
    s.write(c);
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
  }
  await closed;
  return { data: Buffer.concat(got), socket: s };
}

const until = async (f: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !f(); i++) await new Promise((r) => setTimeout(r, 25));
  assert.ok(f(), what);
};

test('one client, one address: an IPv4-mapped v2 INET6 source and other spellings of an address read as a socket says them', () => {
  const mapped = Buffer.alloc(16);
  mapped.writeUInt16BE(0xffff, 10);
  Buffer.from([203, 0, 113, 7]).copy(mapped, 12);
  const r = parseProxyHeader(v2ipv6(mapped));
  assert.equal(r.kind, 'header');
  // what a dual-stack listener's socket.remoteAddress says for the same client
  assert.equal(r.kind === 'header' && r.header.source?.address, '::ffff:203.0.113.7');
  for (const [spelled, canonical] of [
    ['::FFFF:203.0.113.7', '::ffff:203.0.113.7'],
    ['::ffff:cb00:7107', '::ffff:203.0.113.7'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8::0:1', '2001:db8::1'],
  ]) {
    const v = parseProxyHeader(Buffer.from(`PROXY TCP6 ${spelled} ::1 40000 9418\r\n`, 'latin1'));
    assert.equal(v.kind === 'header' && v.header.source?.address, canonical, spelled);
  }
  // a zone index names an interface of the balancer, not a client
  const z = parseProxyHeader(Buffer.from('PROXY TCP6 fe80::1%eth0 ::1 40000 9418\r\n', 'latin1'));
  assert.equal(z.kind, 'bad');
});

test('a header from an address that is not a balancer is the client\'s own bytes: refused as a bad request, logged under its real address', { timeout: 30_000 }, async () => {
  const d = await daemon('10.0.0.0/8');
  try {
    for (const claim of [Buffer.from('PROXY TCP4 6.6.6.6 127.0.0.1 1 9418\r\n'), v2ipv4('6.6.6.6')]) {
      const r = await exchange(d.port, [Buffer.concat([claim, request()])]);
      assert.doesNotMatch(r.data.toString('latin1'), new RegExp(head), 'nothing served');
    }
    await until(() => d.logs.length >= 2, 'both logged');
    for (const e of d.logs) {
      assert.equal(e.outcome, 'bad-request');
      assert.equal(e.remoteAddress, '127.0.0.1');
      assert.equal(e.proxyAddress, undefined);
    }
    assert.doesNotMatch(JSON.stringify(d.logs), /6\.6\.6\.6/);
  } finally { await d.close(); }
});

test('from the balancer: a header a byte at a time, then the request, is served under the header\'s client; LOCAL keeps the balancer\'s address', { timeout: 30_000 }, async () => {
  const d = await daemon('127.0.0.1');
  try {
    const h = v2ipv4('203.0.113.9', 51000, Buffer.from([0x04, 0x00, 0x03, 0x61, 0x62, 0x63])); // a NOOP TLV
    const bytes = [...h].map((b) => Buffer.from([b]));
    const r = await exchange(d.port, [...bytes, request()], 2);
    assert.match(r.data.toString('latin1'), new RegExp(`^[0-9a-f]{4}${head} HEAD\0`));
    const local = await exchange(d.port, [Buffer.concat([v2(0, 0x00, Buffer.alloc(0)), request()])]);
    assert.match(local.data.toString('latin1'), new RegExp(`${head} HEAD`));
    await until(() => d.logs.length >= 2, 'both logged');
    assert.equal(d.logs[0]!.outcome, 'ok');
    assert.equal(d.logs[0]!.remoteAddress, '203.0.113.9');
    assert.equal(d.logs[0]!.proxyAddress, '127.0.0.1');
    assert.equal(d.logs[1]!.remoteAddress, '127.0.0.1');
    assert.equal(d.logs[1]!.proxyAddress, undefined);
  } finally { await d.close(); }
});

test('from the balancer: slow, missing and bad headers are refused one by one and logged; meanwhile another client is served', { timeout: 60_000 }, async () => {
  const d = await daemon('127.0.0.1', { maxConnections: 4 });
  const slow: Socket[] = [];
  try {
    // slowloris before the header ends: more of them than --max-connections
    for (let i = 0; i < 40; i++) {
      const s = connect(d.port, '127.0.0.1');
      s.on('error', () => { /* refused later */ });
      s.write(v2ipv4(`198.51.100.${i}`).subarray(0, 10));
      slow.push(s);
    }
    const bad: Array<[string, Buffer]> = [
      ['no header at all', request()],
      ['v2 longer than its bound', v2(1, 0x11, Buffer.alloc(V2_MAX))],
      ['v2 version 3', v2(1, 0x11, Buffer.alloc(12), 3)],
      ['v2 command 2', v2(2, 0x11, Buffer.alloc(12))],
      ['v2 family 4', v2(1, 0x41, Buffer.alloc(12))],
      ['v2 IPv4 too short', v2(1, 0x11, Buffer.alloc(8))],
      ['v2 IPv6 too short', v2(1, 0x21, Buffer.alloc(20))],
      ['v1 without CRLF', Buffer.from(`PROXY TCP4 ${'1'.repeat(200)}`)],
      ['v1 bad address', Buffer.from('PROXY TCP4 999.1.1.1 127.0.0.1 1 9418\r\n')],
      ['v1 bad port', Buffer.from('PROXY TCP4 1.1.1.1 127.0.0.1 65536 9418\r\n')],
      ['v1 family mismatch', Buffer.from('PROXY TCP4 ::1 127.0.0.1 1 9418\r\n')],
      ['v1 lowercase', Buffer.from('proxy TCP4 1.1.1.1 127.0.0.1 1 9418\r\n')],
    ];
    for (const [what, b] of bad) {
      const r = await exchange(d.port, [Buffer.concat([b, request()])]);
      assert.doesNotMatch(r.data.toString('latin1'), new RegExp(head), what);
    }
    // a good one, with a TLV whose own length runs past the header (TLVs are the balancer's, skipped)
    const ok = await exchange(d.port, [Buffer.concat([v2ipv4('203.0.113.20', 1, Buffer.from([0x01, 0xff, 0xff, 0x00])), request()])]);
    assert.match(ok.data.toString('latin1'), new RegExp(`${head} HEAD`));
    await until(() => d.logs.length >= bad.length + 1, 'every refusal logged');
    const refusals = d.logs.filter((e) => e.outcome === 'bad-request');
    assert.equal(refusals.length, bad.length);
    for (const e of refusals) {
      assert.equal(e.remoteAddress, '127.0.0.1');
      assert.match(String(e.reason), /^PROXY protocol: /);
    }
    assert.equal(d.logs.find((e) => e.outcome === 'ok')?.remoteAddress, '203.0.113.20');
    // the slow ones still wait for their own header: none was served or evicted for another
    assert.equal(slow.filter((s) => s.destroyed).length, 0);
  } finally {
    for (const s of slow) s.destroy();
    await d.close();
  }
});

test('a flood of connections from the balancer that never finish their header: at most PROXY_MAX_PENDING wait, the oldest make room, a new client is served', { timeout: 60_000 }, async () => {
  const d = await daemon('127.0.0.1');
  const slow: Socket[] = [];
  const n = PROXY_MAX_PENDING + 50;
  try {
    for (let i = 0; i < n; i++) {
      const s = connect(d.port, '127.0.0.1');
      s.on('error', () => { /* evicted */ });
      s.write(v2ipv4(`198.51.${i >> 8}.${i & 255}`).subarray(0, 10));
      slow.push(s);
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 20));
    }
    await until(() => slow.filter((s) => s.destroyed).length >= n - PROXY_MAX_PENDING, 'the oldest waiting connections are closed');
    const ok = await exchange(d.port, [Buffer.concat([v2ipv4('203.0.113.30'), request()])]);
    assert.match(ok.data.toString('latin1'), new RegExp(`${head} HEAD`));
    // the oldest went first; the newest still wait
    assert.equal(slow[0]!.destroyed, true);
    assert.equal(slow[n - 1]!.destroyed, false);
    assert.ok(slow.filter((s) => s.destroyed).length <= n - PROXY_MAX_PENDING + 1, 'no more closed than needed');
    const why = d.logs.filter((e) => e.outcome === 'bad-request').map((e) => String(e.reason));
    assert.ok(why.length >= n - PROXY_MAX_PENDING);
    for (const w of why) assert.match(w, /PROXY protocol: too many connections waiting for their header/);
  } finally {
    for (const s of slow) s.destroy();
    await d.close();
  }
});

test('SSH: the unauthenticated limit per address counts the header\'s client, not the balancer', { timeout: 30_000 }, async () => {
  const key = join(t.dir, 'host_key');
  const k = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
  assert.equal(k.status, 0);
  const logs: RequestLog[] = [];
  const server = createSshServer({
    root, hostKeys: [readFileSync(key)], authenticate: () => false, proxyProtocol: ProxyTrust.parse('127.0.0.1'),
    sshLimits: { maxUnauthenticatedPerAddress: 2 }, log: (e) => { logs.push(e); },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const open: Array<{ s: Socket; ident: Promise<boolean> }> = [];
  const dial = (src: string) => {
    const s = connect(port, '127.0.0.1');
    s.on('error', () => { /* refused */ });
    s.write(Buffer.concat([v2ipv4(src), Buffer.from('SSH-2.0-attacker\r\n')]));
    const ident = new Promise<boolean>((r) => {
      s.once('data', (b: Buffer) => r(b.toString('latin1').startsWith('SSH-2.0-gitwire')));
      s.once('close', () => r(false));
    });
    open.push({ s, ident });
    return ident;
  };
  try {
    assert.equal(await dial('203.0.113.1'), true);
    assert.equal(await dial('203.0.113.1'), true);
    assert.equal(await dial('203.0.113.1'), false, 'a third unauthenticated connection of one client is refused');
    assert.equal(await dial('203.0.113.2'), true, 'another client behind the same balancer is not');
    const refused = logs.filter((e) => e.outcome === 'too-many-unauthenticated');
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.remoteAddress, '203.0.113.1');
  } finally {
    for (const o of open) o.s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
