/**
 * gitwire's Redis client and coordinator against a Redis that misbehaves
 * (a fake one, a net server): replies past the reader's bounds, floods, bad
 * URLs. Whatever Redis sends, the process must not crash and the client
 * must recover by reconnecting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { RespClient } from '../src/cluster/resp.js';

async function until(f: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function fakeRedis(onConn: (s: Socket, n: number) => void): Promise<{ port: number; close(): void }> {
  const socks: Socket[] = [];
  let n = 0;
  const server = createServer((s) => { socks.push(s); s.on('error', () => undefined); onConn(s, ++n); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, close: () => { for (const s of socks) s.destroy(); server.close(); } };
}

test('RespClient: a reply past the reader\'s bound on what it holds (an array of large bulk strings) is a protocol error, not an uncaught exception', async () => {
  const big = 'x'.repeat(500_000);
  const fake = await fakeRedis((s, n) => {
    // the first connection: three bulk strings of 500 kB in one array (each under MAX_BULK, together over MAX_BUFFERED)
    if (n === 1) s.write(`*3\r\n$500000\r\n${big}\r\n$500000\r\n${big}\r\n$500000\r\n${big}\r\n`);
    s.on('data', () => s.write('+PONG\r\n'));
  });
  const uncaught: Error[] = [];
  const onUncaught = (e: Error) => { uncaught.push(e); };
  // the test runner would report it too; kept here so the assertion says what happened
  process.prependListener('uncaughtException', onUncaught);
  const c = new RespClient(`redis://127.0.0.1:${fake.port}`, { retryDelay: () => 20 });
  const errors: string[] = [];
  c.on('error', (e: Error) => errors.push(e.message));
  try {
    await until(() => errors.some((e) => /reply too large/.test(e)) || uncaught.length > 0);
    assert.deepEqual(uncaught.map((e) => e.message), [], 'thrown out of the socket\'s data handler');
    // the connection was dropped and made again: the next one answers
    await until(() => c.isReady);
    assert.equal(await c.call('PING'), 'PONG');
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    c.disconnect();
    fake.close();
  }
});

test('parseRedisUrl: a database number Redis cannot select is refused at start, not retried for ever', async () => {
  const { parseRedisUrl } = await import('../src/cluster/resp.js');
  // Number('99999999999999999999') is an integer to JavaScript, and SELECT of it fails on every connect
  for (const db of ['99999999999999999999', '1e3', '0x10', '2147483648']) {
    assert.throws(() => parseRedisUrl(`redis://127.0.0.1:6379/${db}`), /bad database number/, db);
  }
  assert.equal(parseRedisUrl('redis://127.0.0.1:6379/15').db, 15);
  assert.equal(parseRedisUrl('redis://127.0.0.1:6379/2147483647').db, 2147483647);
});

test('RedisCoordinator: a Redis that stops answering (SIGSTOP: connections still accepted, nothing read back) is taken for down, not paid a command timeout by every request for ever', async () => {
  const { RedisCoordinator } = await import('../src/cluster/redis.js');
  let stalled = false;
  const fake = await fakeRedis((s) => {
    s.on('data', (d) => {
      if (stalled) return;
      const t = d.toString('latin1');
      if (t.includes('SUBSCRIBE')) {
        for (const ch of ['gitwire:released', 'gitwire:invalidate']) s.write(`*3\r\n$9\r\nsubscribe\r\n$${ch.length}\r\n${ch}\r\n:1\r\n`);
      } else if (t.includes('EVAL')) s.write(':0\r\n');
      else s.write('+OK\r\n');
    });
  });
  const co = new RedisCoordinator({ url: `redis://127.0.0.1:${fake.port}`, root: '/tmp' });
  try {
    await until(() => co.status().up);
    const ok = await co.tryLeases([['repo:/tmp/a', 1]]);
    assert.ok('lease' in ok);
    stalled = true;
    // the first request after the stall waits out one timeout...
    const t0 = Date.now();
    await co.tryLeases([['repo:/tmp/b', 1]]);
    assert.ok(Date.now() - t0 >= 900);
    // ...and then the node knows Redis is not answering and acts alone
    await until(() => !co.status().up, 3000);
    const times: number[] = [];
    for (let i = 0; i < 6; i++) {
      // spread over the client's reconnects: a new connection to the stopped Redis must not count as up again
      await new Promise((r) => setTimeout(r, 300));
      const t1 = Date.now();
      const r = await co.tryLeases([[`repo:/tmp/c${i}`, 1]]);
      times.push(Date.now() - t1);
      if ('lease' in r) r.lease.release();
    }
    assert.ok(Math.max(...times) < 100, `requests after the stall still wait: ${times.join(', ')} ms`);
  } finally {
    await co.close();
    fake.close();
  }
});

test('RespClient: commands to a server that never answers do not pile up on the connection (they are dropped with it)', async () => {
  let conns = 0;
  const fake = await fakeRedis(() => { conns++; });
  const c = new RespClient(`redis://127.0.0.1:${fake.port}`, { commandTimeoutMs: 50, retryDelay: () => 20 });
  try {
    await until(() => c.isReady);
    await assert.rejects(c.call('GET', 'a'), /timed out/);
    // the connection that swallowed a command is given up and made again
    await until(() => conns >= 2, 1000);
    const q = (c as unknown as { queue: unknown[] }).queue;
    assert.ok(q.length <= 1, `${q.length} commands still queued on the connection`);
  } finally {
    c.disconnect();
    fake.close();
  }
});

test('RedisCoordinator: a claim lost while its run goes on (FLUSHALL, a Redis restarted empty) counts as followed, so the producer stores the entry its followers finish from', { skip: (await import('./helpers/cluster.js')).HAVE_REDIS ? false : 'redis-server not installed' }, async () => {
  const { RedisCoordinator } = await import('../src/cluster/redis.js');
  const { startRedis } = await import('./helpers/cluster.js');
  const { tmp } = await import('./helpers/git.js');
  const t = tmp('gitwire-resp-attack-');
  const redis = await startRedis(t.dir);
  const url = `redis://127.0.0.1:${redis.port}`;
  const producer = new RedisCoordinator({ url, root: '/srv/git' });
  const follower = new RedisCoordinator({ url, root: '/srv/git' });
  const raw = new RespClient(url);
  try {
    await until(() => producer.status().up && follower.status().up && raw.isReady);
    const key = 'a'.repeat(64);
    const won = await producer.claimPack(key, `${key}.spool-1`);
    assert.ok(won?.won);
    const lost = await follower.claimPack(key, `${key}.spool-2`);
    assert.ok(lost && !lost.won && lost.holder.state === 'running');
    assert.equal(await won.claim.followed(), false, 'nobody follows yet');
    await follower.followPack(key);
    assert.equal(await won.claim.followed(), true);
    // Redis loses everything while the run goes on: the follower's mark is gone with the claim
    assert.equal(await raw.call('FLUSHALL'), 'OK');
    assert.equal(await won.claim.followed(), true, 'a follower may be waiting for the stored entry: without it, its fetch fails');
  } finally {
    raw.disconnect();
    await producer.close();
    await follower.close();
    await redis.stop();
    t.cleanup();
  }
});
