/**
 * gitwire's own Redis client (src/cluster/resp.ts): the RESP2 reader at every
 * split of its input, the URL forms, and the client against a real
 * redis-server (AUTH with a password and with an ACL user, SELECT, a restart,
 * subscriptions) and against a fake server that never answers (timeouts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createServer, type Socket } from 'node:net';
import fc from 'fast-check';
import { RespClient, RespReader, RedisReplyError, encodeCommand, parseRedisUrl, type RespValue } from '../src/cluster/resp.js';
import { HAVE_REDIS, startRedis } from './helpers/cluster.js';
import { freePort } from './helpers/push-net.js';
import { tmp } from './helpers/git.js';

function readAll(chunks: Buffer[]): RespValue[] {
  const r = new RespReader();
  const out: RespValue[] = [];
  for (const c of chunks) {
    r.feed(c);
    for (let v = r.next(); v !== undefined; v = r.next()) out.push(v);
  }
  return out;
}

const SAMPLE = Buffer.from('+OK\r\n-ERR no such key\r\n:42\r\n:-7\r\n$4\r\nhé!\r\n$-1\r\n*-1\r\n*0\r\n*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n*2\r\n*1\r\n:1\r\n-WRONGTYPE x\r\n', 'utf8');

function plain(v: RespValue): unknown {
  if (v instanceof Error) return { error: v.message };
  return Array.isArray(v) ? v.map(plain) : v;
}

test('RespReader: every reply type, the same values however the bytes are split', () => {
  const want = [
    'OK', { error: 'ERR no such key' }, 42, -7, 'hé!', null, null, [], ['message', 'ch', ''], [[1], { error: 'WRONGTYPE x' }],
  ];
  assert.deepEqual(readAll([SAMPLE]).map(plain), want);
  for (let i = 1; i < SAMPLE.length; i++) assert.deepEqual(readAll([SAMPLE.subarray(0, i), SAMPLE.subarray(i)]).map(plain), want, `split at ${i}`);
  assert.deepEqual(readAll([...SAMPLE].map((b) => Buffer.from([b]))).map(plain), want, 'a byte at a time');
  assert.ok(readAll([SAMPLE])[1] instanceof RedisReplyError);
});

test('RespReader: what encodeCommand writes reads back as its arguments, for any strings and splits', () => {
  fc.assert(fc.property(fc.array(fc.string({ unit: 'grapheme' }), { minLength: 1, maxLength: 8 }), fc.nat(), (args, cut) => {
    const b = encodeCommand(args);
    const at = cut % (b.length + 1);
    assert.deepEqual(readAll([b.subarray(0, at), b.subarray(at)]), [args]);
  }));
});

test('RespReader: a broken stream throws a protocol error, never hangs or allocates what a length claims', () => {
  for (const bad of ['?x\r\n', '$abc\r\n', '$-2\r\n', '*99999999999\r\n', '$600000000\r\n', ':1x\r\n', '+OK\rX', '$2\r\nabc\r\n']) {
    assert.throws(() => readAll([Buffer.from(bad)]), /Redis protocol error/, bad);
  }
  // bounds: a bulk string or array longer than coordination ever needs, nesting, a line without end, too much unparsed
  assert.throws(() => readAll([Buffer.from(`$${1024 * 1024}\r\n`)]), /out of range/);
  assert.throws(() => readAll([Buffer.from('*5000\r\n')]), /out of range/);
  assert.throws(() => readAll([Buffer.from('*1\r\n'.repeat(100_000))]), /nested too deep/);
  assert.throws(() => readAll([Buffer.from('+' + 'x'.repeat(70_000))]), /line too long/);
  const item = Buffer.from(`$300\r\n${'x'.repeat(300)}\r\n`);
  const chunks = [Buffer.from('*4000\r\n'), ...Array.from({ length: 3999 }, () => item)];
  assert.throws(() => readAll(chunks), /reply too large/);
  // incomplete is not an error: nothing yet
  assert.deepEqual(readAll([Buffer.from('$10\r\nabc')]), []);
});

test('parseRedisUrl: redis:// and rediss://, user and password, database; anything else refused', () => {
  assert.deepEqual(parseRedisUrl('redis://127.0.0.1:7000'), { tls: false, host: '127.0.0.1', port: 7000, db: 0, user: undefined, password: undefined });
  assert.deepEqual(parseRedisUrl('rediss://bob:s%40cret@redis.example/3'), { tls: true, host: 'redis.example', port: 6379, db: 3, user: 'bob', password: 's@cret' });
  assert.deepEqual(parseRedisUrl('redis://:pw@[::1]:6380'), { tls: false, host: '::1', port: 6380, db: 0, user: undefined, password: 'pw' });
  assert.throws(() => parseRedisUrl('http://x'), /not a Redis URL/);
  assert.throws(() => parseRedisUrl('redis://x/abc'), /bad database number/);
  assert.throws(() => parseRedisUrl('nonsense'), /not a Redis URL/);
});

async function until(f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('RespClient against redis-server: commands, MULTI, AUTH (password, ACL user), SELECT, a restart, subscriptions', { skip: HAVE_REDIS ? false : 'redis-server not installed' }, async () => {
  const t = tmp('gitwire-resp-');
  const port = await freePort();
  let redis = await startRedis(t.dir, port, ['--requirepass', 'pw1']);
  const clients: RespClient[] = [];
  const client = (url: string): RespClient => { const c = new RespClient(url, { retryDelay: () => 50 }); clients.push(c); return c; };
  try {
    const c = client(`redis://:pw1@127.0.0.1:${port}/2`);
    await until(() => c.isReady);
    assert.equal(await c.call('SET', 'k', 'v€'), 'OK');
    assert.equal(await c.call('GET', 'k'), 'v€');
    assert.equal(await c.call('GET', 'missing'), null);
    assert.deepEqual(await c.multi([['INCR', 'n'], ['PEXPIRE', 'n', '60000'], ['INCR', 'k']]).then((v) => v.map(plain)), [1, 1, { error: 'ERR value is not an integer or out of range' }]);
    assert.equal(await c.call('EVAL', "return redis.call('GET', KEYS[1])", '1', 'k'), 'v€');
    await assert.rejects(c.call('NOSUCHCOMMAND'), (e: Error) => e instanceof RedisReplyError && /unknown command/.test(e.message));
    // pipelined: answers in order
    const many = await Promise.all(Array.from({ length: 200 }, (_, i) => c.call('ECHO', String(i))));
    assert.deepEqual(many, Array.from({ length: 200 }, (_, i) => String(i)));
    // SELECT took effect: database 0 does not have the key
    const d0 = client(`redis://:pw1@127.0.0.1:${port}`);
    await until(() => d0.isReady);
    assert.equal(await d0.call('GET', 'k'), null);
    // an ACL user
    assert.equal(await d0.call('ACL', 'SETUSER', 'bob', 'on', '>pw2', '~*', '&*', '+@all'), 'OK');
    const bob = client(`redis://bob:pw2@127.0.0.1:${port}`);
    await until(() => bob.isReady);
    assert.equal(await bob.call('ACL', 'WHOAMI'), 'bob');
    // a wrong password: never ready, the reply's error reported
    const wrong = client(`redis://:nope@127.0.0.1:${port}`);
    const errors: string[] = [];
    wrong.on('error', (e: Error) => errors.push(e.message));
    await until(() => errors.length > 0);
    assert.equal(wrong.isReady, false);
    assert.match(errors[0]!, /WRONGPASS|invalid password/);
    // a subscriber
    const sub = client(`redis://:pw1@127.0.0.1:${port}`);
    await until(() => sub.isReady);
    const heard: string[] = [];
    sub.on('message', (ch: string, msg: string) => heard.push(`${ch}=${msg}`));
    await sub.subscribe('a', 'b');
    assert.equal(await d0.call('PUBLISH', 'b', 'hello'), 1);
    await until(() => heard.length === 1);
    assert.deepEqual(heard, ['b=hello']);
    await assert.rejects(sub.call('GET', 'k'), /subscriber mode/);
    // Redis goes away: commands fail at once, and it comes back by itself
    let closes = 0;
    c.on('close', () => closes++);
    await redis.stop('SIGKILL');
    await until(() => !c.isReady);
    assert.ok(closes >= 1);
    const t0 = Date.now();
    await assert.rejects(c.call('GET', 'k'), /not ready/);
    assert.ok(Date.now() - t0 < 100, 'no offline queue');
    redis = await startRedis(t.dir, port, ['--requirepass', 'pw1']);
    await until(() => c.isReady && sub.isReady);
    assert.equal(await c.call('SET', 'k', 'again'), 'OK');
    assert.equal(await c.call('GET', 'k'), 'again', 'SELECT again after the reconnect');
    // the subscriber is a plain connection again until subscribed again
    assert.equal(await sub.call('PING'), 'PONG');
  } finally {
    for (const c of clients) c.disconnect();
    await redis.stop();
    t.cleanup();
  }
});

test('RespClient: a command unanswered within the timeout fails, its late answer is dropped, the next gets its own', async () => {
  const socks: Socket[] = [];
  let answers = 0;
  const server = createServer((s) => {
    socks.push(s);
    s.on('error', () => undefined);
    // answers the first command after 300 ms, the rest at once
    s.on('data', (d) => {
      for (const line of d.toString().split('\r\n')) {
        if (!line.startsWith('*')) continue;
        const n = ++answers;
        if (n === 1) setTimeout(() => s.write('$4\r\nlate\r\n'), 300);
        else s.write(`$${String(n).length}\r\n${n}\r\n`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const c = new RespClient(`redis://127.0.0.1:${port}`, { commandTimeoutMs: 100 });
  try {
    await until(() => c.isReady);
    const t0 = Date.now();
    await assert.rejects(c.call('GET', 'a'), /timed out/);
    assert.ok(Date.now() - t0 < 280);
    await new Promise((r) => setTimeout(r, 300));
    // the second command was sent after the first's late answer came: it gets its own
    assert.equal(await c.call('GET', 'b'), '2');
  } finally {
    c.disconnect();
    for (const s of socks) s.destroy();
    server.close();
  }
});

test('RespClient: a server that accepts and says nothing past the connect timeout, or garbage, is left and tried again', async () => {
  let conns = 0;
  // the client resets what it gives up on: the fake's side of that is no error of the test's
  const server = createServer((s) => { conns++; s.on('error', () => undefined); s.write('?garbage\r\n'); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const c = new RespClient(`redis://127.0.0.1:${port}`, { retryDelay: () => 20 });
  const errors: string[] = [];
  c.on('error', (e: Error) => errors.push(e.message));
  try {
    await until(() => conns >= 3);
    assert.ok(errors.some((e) => /protocol error/.test(e)));
  } finally {
    c.disconnect();
    server.close();
  }
  // a port where nothing listens: errors, never ready, no crash; disconnect stops the retries
  const dead = await freePort();
  const d = new RespClient(`redis://127.0.0.1:${dead}`, { retryDelay: () => 20 });
  const derr: string[] = [];
  d.on('error', (e: Error) => derr.push(e.message));
  await until(() => derr.length >= 2);
  d.disconnect();
  const n = derr.length;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(derr.length, n, 'no retries after disconnect');
  assert.match(derr[0]!, /ECONNREFUSED/);
});

const HAVE_OPENSSL = spawnSync('openssl', ['version']).status === 0;

test('RespClient over rediss://: TLS to redis-server, its certificate checked against NODE_EXTRA_CA_CERTS (which bin/gitwire keeps from node itself)', { skip: !HAVE_REDIS ? 'redis-server not installed' : !HAVE_OPENSSL ? 'openssl not installed' : false }, async () => {
  const t = tmp('gitwire-resp-tls-');
  const key = join(t.dir, 'key.pem');
  const cert = join(t.dir, 'cert.pem');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const port = await freePort();
  const redis = await startRedis(t.dir, port, ['--port', '0', '--tls-port', String(port), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-auth-clients', 'no']);
  const was = process.env.NODE_EXTRA_CA_CERTS;
  try {
    // without the CA: refused, and said why
    delete process.env.NODE_EXTRA_CA_CERTS;
    const other = new RespClient(`rediss://localhost:${port}`, { retryDelay: () => 1000 });
    const errs: string[] = [];
    other.on('error', (e: Error) => errs.push(e.message));
    await until(() => errs.length > 0);
    other.disconnect();
    assert.equal(other.isReady, false);
    assert.match(errs[0]!, /self-signed|unable to verify|certificate/);
    // with it, by name (checked against the certificate's DNS name) and by address
    process.env.NODE_EXTRA_CA_CERTS = cert;
    for (const host of ['localhost', '127.0.0.1']) {
      const c = new RespClient(`rediss://${host}:${port}/1`);
      try {
        await until(() => c.isReady);
        assert.equal(await c.call('SET', 'k', host), 'OK');
        assert.equal(await c.call('GET', 'k'), host);
      } finally {
        c.disconnect();
      }
    }
    // plain RESP to a TLS port never becomes ready
    const plainC = new RespClient(`redis://127.0.0.1:${port}`, { commandTimeoutMs: 200, retryDelay: () => 1000 });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(plainC.isReady, true, 'TCP connects (no handshake without a password)');
    await assert.rejects(plainC.call('PING'));
    plainC.disconnect();
  } finally {
    if (was === undefined) delete process.env.NODE_EXTRA_CA_CERTS; else process.env.NODE_EXTRA_CA_CERTS = was;
    await redis.stop();
    t.cleanup();
  }
});
