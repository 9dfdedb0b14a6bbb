/**
 * The PROXY protocol reader on its own: v1 and v2 headers as haproxy
 * writes them, fed whole and a byte at a time; bounds (v1 107 bytes, v2
 * length-checked); bad and random input refused cleanly; the trusted
 * addresses; a real socket, with what follows the header put back, a
 * timeout and an early end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import { ProxyTrust, V1_MAX, V2_MAX, clientAddress, parseProxyHeader, readProxyHeader } from '../src/transport/proxy-protocol.js';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(cmd: number, fam: number, body: Buffer): Buffer {
  const h = Buffer.alloc(16);
  SIG.copy(h);
  h[12] = 0x20 | cmd;
  h[13] = fam;
  h.writeUInt16BE(body.length, 14);
  return Buffer.concat([h, body]);
}

function v2ipv4(src: string, dst: string, sp: number, dp: number, tlvs = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(12);
  src.split('.').forEach((o, i) => { b[i] = Number(o); });
  dst.split('.').forEach((o, i) => { b[4 + i] = Number(o); });
  b.writeUInt16BE(sp, 8);
  b.writeUInt16BE(dp, 10);
  return v2(1, 0x11, Buffer.concat([b, tlvs]));
}

test('v1: TCP4, TCP6 and UNKNOWN, whole and a byte at a time', () => {
  const cases: Array<[string, string | undefined, number | undefined]> = [
    ['PROXY TCP4 192.0.2.7 10.0.0.11 51234 9418\r\n', '192.0.2.7', 51234],
    ['PROXY TCP6 2001:db8::7 2001:db8::11 40000 22\r\n', '2001:db8::7', 40000],
    ['PROXY UNKNOWN\r\n', undefined, undefined],
    ['PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n', undefined, undefined],
  ];
  for (const [line, addr, port] of cases) {
    const b = Buffer.concat([Buffer.from(line, 'latin1'), Buffer.from('0032git-upload-pack')]);
    const r = parseProxyHeader(b);
    assert.equal(r.kind, 'header', line);
    if (r.kind !== 'header') continue;
    assert.equal(r.length, line.length);
    assert.equal(r.header.version, 1);
    assert.equal(r.header.source?.address, addr);
    assert.equal(r.header.source?.port, port);
    for (let i = 0; i < line.length; i++) assert.equal(parseProxyHeader(b.subarray(0, i)).kind, 'more', `${JSON.stringify(line)} cut at ${i}`);
  }
});

test('v1: bounds and bad lines are refused', () => {
  const longest = `PROXY UNKNOWN ${'ffff:'.repeat(7)}ffff ${'ffff:'.repeat(7)}ffff 65535 65535\r\n`;
  assert.equal(longest.length, V1_MAX);
  assert.equal(parseProxyHeader(Buffer.from(longest)).kind, 'header');
  assert.equal(parseProxyHeader(Buffer.from(`PROXY UNKNOWN ${'x'.repeat(200)}`)).kind, 'bad', 'no CRLF within 107 bytes');
  assert.equal(parseProxyHeader(Buffer.from(`PROXY UNKNOWN ${'x'.repeat(100)}\r\n`)).kind, 'bad', 'CRLF past 107 bytes');
  for (const bad of [
    'PROXY TCP4 192.0.2.7 10.0.0.11 51234\r\n', 'PROXY TCP4 192.0.2.700 10.0.0.11 1 2\r\n', 'PROXY TCP4 ::1 ::1 1 2\r\n',
    'PROXY TCP6 192.0.2.7 10.0.0.11 1 2\r\n', 'PROXY TCP4 192.0.2.7 10.0.0.11 65536 2\r\n', 'PROXY TCP4 192.0.2.7 10.0.0.11 01 2\r\n',
    'PROXY UDP4 192.0.2.7 10.0.0.11 1 2\r\n', 'PROXY  TCP4 192.0.2.7 10.0.0.11 1 2\r\n', 'proxy TCP4 192.0.2.7 10.0.0.11 1 2\r\n',
    '0032git-upload-pack /repo.git\0host=x\0', 'SSH-2.0-OpenSSH_9.2\r\n', 'GET / HTTP/1.1\r\n',
  ]) assert.equal(parseProxyHeader(Buffer.from(bad, 'latin1')).kind, 'bad', JSON.stringify(bad));
});

test('v2: IPv4, IPv6 with TLVs, LOCAL, UNSPEC and unix; a byte at a time; bounds', () => {
  const tlv = Buffer.from([0x05, 0x00, 0x04, 1, 2, 3, 4]); // PP2_TYPE_UNIQUE_ID
  const a = v2ipv4('198.51.100.9', '10.0.0.11', 40001, 9418, tlv);
  const r = parseProxyHeader(Buffer.concat([a, Buffer.from('SSH-2.0-x\r\n')]));
  assert.deepEqual(r, { kind: 'header', length: a.length, header: { version: 2, source: { address: '198.51.100.9', port: 40001 }, destination: { address: '10.0.0.11', port: 9418 } } });
  for (let i = 0; i < a.length; i++) assert.equal(parseProxyHeader(a.subarray(0, i)).kind, 'more', `cut at ${i}`);

  const six = Buffer.alloc(36);
  Buffer.from('20010db8000000000000000000000007', 'hex').copy(six, 0);
  Buffer.from('fd000000000000000000000000000011', 'hex').copy(six, 16);
  six.writeUInt16BE(50000, 32);
  six.writeUInt16BE(22, 34);
  const r6 = parseProxyHeader(v2(1, 0x21, six));
  assert.equal(r6.kind, 'header');
  if (r6.kind === 'header') {
    assert.deepEqual(r6.header.source, { address: '2001:db8::7', port: 50000 });
    assert.deepEqual(r6.header.destination, { address: 'fd00::11', port: 22 });
  }
  // LOCAL (a health check) and UNSPEC name no client, whatever follows
  for (const h of [v2(0, 0x11, Buffer.alloc(12)), v2(0, 0x00, Buffer.alloc(0)), v2(1, 0x00, Buffer.alloc(3)), v2(1, 0x31, Buffer.alloc(216))]) {
    const x = parseProxyHeader(h);
    assert.equal(x.kind, 'header');
    if (x.kind === 'header') { assert.equal(x.header.source, undefined); assert.equal(x.length, h.length); }
  }
  // bounds and nonsense
  assert.equal(parseProxyHeader(v2(1, 0x11, Buffer.alloc(V2_MAX))).kind, 'bad', 'longer than V2_MAX');
  const huge = v2(1, 0x11, Buffer.alloc(0));
  huge.writeUInt16BE(65535, 14);
  assert.equal(parseProxyHeader(huge).kind, 'bad', 'a length past the bound is refused before its bytes arrive');
  for (const bad of [
    v2(1, 0x11, Buffer.alloc(11)), v2(1, 0x21, Buffer.alloc(35)), v2(1, 0x31, Buffer.alloc(100)), v2(2, 0x11, Buffer.alloc(12)),
    v2(1, 0x41, Buffer.alloc(12)), v2(1, 0x13, Buffer.alloc(12)),
    Buffer.concat([Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0b]), Buffer.alloc(8)]),
  ]) assert.equal(parseProxyHeader(bad).kind, 'bad', bad.toString('hex'));
  const v1ver = v2(1, 0x11, Buffer.alloc(12));
  v1ver[12] = 0x11;
  assert.equal(parseProxyHeader(v1ver).kind, 'bad', 'version 1 in the binary form');
});

test('fuzz: random bytes and mutated headers never throw; a header found is within its bounds', () => {
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed; };
  const seeds = [v2ipv4('192.0.2.1', '192.0.2.2', 1, 2), Buffer.from('PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n')];
  for (let i = 0; i < 20_000; i++) {
    let b: Buffer;
    if (i % 2) {
      b = Buffer.alloc(rnd() % 200);
      for (let j = 0; j < b.length; j++) b[j] = rnd() & 255;
      if (i % 4 === 1) SIG.copy(b, 0, 0, Math.min(12, b.length));
    } else {
      b = Buffer.from(seeds[(i >> 1) % 2]!);
      for (let k = rnd() % 4; k >= 0; k--) b[rnd() % b.length] = rnd() & 255;
      b = b.subarray(0, rnd() % (b.length + 1));
    }
    const r = parseProxyHeader(b);
    assert.ok(r.kind === 'more' || r.kind === 'bad' || r.kind === 'header');
    if (r.kind === 'header') assert.ok(r.length <= b.length && r.length <= V2_MAX);
    if (r.kind === 'more') assert.ok(b.length < V2_MAX);
  }
});

test('trusted addresses: addresses and CIDR blocks, IPv4 peers on a dual-stack listener; bad specs refused', () => {
  const t = ProxyTrust.parse('127.0.0.1, 10.1.0.0/16,fd00::/8');
  for (const a of ['127.0.0.1', '::ffff:127.0.0.1', '10.1.200.3', 'fd00::5']) assert.equal(t.trusts(a), true, a);
  for (const a of ['127.0.0.2', '10.2.0.1', '::1', 'fe80::1', '', undefined]) assert.equal(t.trusts(a), false, String(a));
  for (const bad of ['', ' , ', 'localhost', '10.0.0.0/33', '::/129', '10.0.0.1/x', '10.0.0.1/']) assert.throws(() => ProxyTrust.parse(bad), /--proxy-protocol/, bad);
});

/** A connected socket pair on loopback: the server side, and the client side. */
async function pair(): Promise<{ server: Socket; client: Socket; close(): void }> {
  const srv = createServer({ pauseOnConnect: true });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  const got = new Promise<Socket>((r) => srv.once('connection', r));
  const client = connect(port, '127.0.0.1');
  const server = await got;
  return { server, client, close: () => { client.destroy(); server.destroy(); srv.close(); } };
}

test('readProxyHeader on a socket: a header in pieces, the bytes after it put back; a timeout and an early end refuse', async () => {
  const p = await pair();
  try {
    const h = readProxyHeader(p.server, 2000);
    const head = v2ipv4('203.0.113.50', '127.0.0.1', 5555, 9418);
    p.client.write(head.subarray(0, 5));
    await new Promise((r) => setTimeout(r, 20));
    p.client.write(Buffer.concat([head.subarray(5), Buffer.from('0032rest of the request')]));
    assert.deepEqual((await h).source, { address: '203.0.113.50', port: 5555 });
    const rest = await new Promise<Buffer>((r) => { p.server.once('data', r); p.server.resume(); });
    assert.equal(rest.toString(), '0032rest of the request');
  } finally { p.close(); }

  const q = await pair();
  try {
    await assert.rejects(readProxyHeader(q.server, 100), (e: Error & { code?: string }) => e.code === 'GW_TIMEOUT' && /no header within 100 ms/.test(e.message));
  } finally { q.close(); }

  const r = await pair();
  try {
    const h = readProxyHeader(r.server, 2000);
    r.client.end('PROXY TCP4 1.2.3.4');
    await assert.rejects(h, /ended before its header/);
  } finally { r.close(); }
});

test('clientAddress: a trusted peer must send a header (else it is closed and told why); others are not read', async () => {
  const p = await pair();
  try {
    const reasons: string[] = [];
    const a = clientAddress(p.server, ProxyTrust.parse('127.0.0.1'), (why) => reasons.push(why), 2000);
    p.client.write('GET / HTTP/1.1\r\n\r\n');
    assert.equal(await a, undefined);
    assert.match(reasons[0]!, /not a PROXY protocol header/);
    assert.equal(p.server.destroyed, true);
  } finally { p.close(); }
  const q = await pair();
  try {
    // not trusted: a header it sends is the client's own bytes, not an address
    assert.equal(await clientAddress(q.server, ProxyTrust.parse('10.0.0.0/8'), () => assert.fail('not refused')), '127.0.0.1');
    q.client.write('PROXY TCP4 6.6.6.6 127.0.0.1 1 2\r\n');
    const d = await new Promise<Buffer>((r) => { q.server.once('data', r); q.server.resume(); });
    assert.match(d.toString(), /^PROXY TCP4 6\.6\.6\.6/);
  } finally { q.close(); }
  const r = await pair();
  try {
    const a = clientAddress(r.server, ProxyTrust.parse('127.0.0.1'), () => assert.fail('not refused'), 2000);
    r.client.write(v2(0, 0x11, Buffer.alloc(12)));
    assert.equal(await a, '127.0.0.1', 'LOCAL: the balancer itself');
  } finally { r.close(); }
});
