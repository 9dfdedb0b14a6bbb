/**
 * The pkt-line reader's read timeout (timeoutMs): one timer the reader
 * owns, re-armed on each wait. A peer that keeps sending is never cut off,
 * however long the whole conversation; silence longer than the timeout
 * fails the waiting read with GW_TIMEOUT; a reader done with its source
 * holds no timer that keeps the process alive.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { PktReader } from '../src/pktline/reader.js';
import { GitwireError } from '../src/errors.js';

const pkt = (s: string) => Buffer.from(`${(s.length + 4).toString(16).padStart(4, '0')}${s}`);

async function* paced(chunks: Buffer[], gapMs: number, thenWaitMs = 0): AsyncGenerator<Buffer> {
  for (const c of chunks) { await sleep(gapMs); yield c; }
  if (thenWaitMs) await sleep(thenWaitMs);
}

test('a peer that keeps sending within the timeout is served past the timeout in total', async () => {
  const n = 15;
  const r = new PktReader(paced(Array.from({ length: n }, (_, i) => pkt(`line ${i}\n`)), 100), { timeoutMs: 1000, chomp: true });
  for (let i = 0; i < n; i++) {
    const p = await r.read();
    assert.equal(p.kind, 'data');
    assert.equal(p.kind === 'data' && p.data.toString(), `line ${i}`);
  }
  assert.equal((await r.read()).kind, 'eof');
});

test('silence after some packets fails the waiting read with GW_TIMEOUT', async () => {
  const r = new PktReader(paced([pkt('a'), pkt('b')], 10, 5000), { timeoutMs: 300 });
  assert.equal((await r.read()).kind, 'data');
  assert.equal((await r.read()).kind, 'data');
  await assert.rejects(r.read(), (e: unknown) => e instanceof GitwireError && e.code === 'GW_TIMEOUT' && e.message === 'timeout reading from the client');
});

test('the first read times out too', async () => {
  const r = new PktReader(paced([pkt('a')], 5000), { timeoutMs: 200 });
  await assert.rejects(r.read(), (e: unknown) => e instanceof GitwireError && e.code === 'GW_TIMEOUT');
});

test('a reader between reads, or done, holds nothing that keeps the process alive', () => {
  const reader = fileURLToPath(new URL('../src/pktline/reader.js', import.meta.url));
  // a 10-minute timeout; the child reads two packets, leaves its source open and idle, and must exit on its own
  const script = `
    import { PktReader } from ${JSON.stringify(reader)};
    import { PassThrough } from 'node:stream';
    const src = new PassThrough();
    src.write(${JSON.stringify(pkt('a').toString())});
    setTimeout(() => src.write(${JSON.stringify(pkt('b').toString())}), 20);
    const r = new PktReader(src, { timeoutMs: 600000 });
    await r.read(); await r.read();
    process.stdout.write('read');
  `;
  const c = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 60000 });
  assert.equal(c.stderr.toString(), '');
  assert.equal(c.stdout.toString(), 'read');
  assert.equal(c.status, 0, 'the child exited by itself');
});
