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
