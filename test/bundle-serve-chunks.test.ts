/**
 * The bundle route's body (bundle/serve-file.ts) is read in 2 MiB chunks
 * while few downloads run and 256 KiB ones past a shared budget, from a
 * free list: every byte and every range comes out right across the chunk
 * edges, the budget holds with many downloads at once, and the chunks go
 * back when downloads end, finished or left mid-way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { CHUNK_BYTES, SMALL_CHUNK_BYTES, bigChunkBytesOut, sendBundleFile } from '../src/bundle/serve-file.js';

const SIZE = 3 * CHUNK_BYTES + 12_345;

function serve(file: string): Promise<{ server: Server; port: number; peak: () => number }> {
  let peak = 0;
  const server = createServer((req, res) => {
    void sendBundleFile(req, res, file).then(() => { peak = Math.max(peak, bigChunkBytesOut()); });
    peak = Math.max(peak, bigChunkBytesOut());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, peak: () => peak })));
}

function download(port: number, headers: Record<string, string> = {}, leaveAfter?: number): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path: '/', headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      let n = 0;
      res.on('data', (d: Buffer) => {
        parts.push(d);
        n += d.length;
        if (leaveAfter !== undefined && n >= leaveAfter) { req.destroy(); resolve({ status: res.statusCode!, body: Buffer.concat(parts) }); }
      });
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts) }));
      res.on('error', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts) }));
    });
    req.on('error', (e) => (leaveAfter === undefined ? reject(e) : undefined));
  });
}

const settle = async () => { for (let i = 0; i < 100 && bigChunkBytesOut() !== 0; i++) await new Promise((r) => setTimeout(r, 20)); };

test('every byte and every range across the chunk edges; the big chunks held within the budget and given back, downloads left mid-way too', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-bundle-chunks-');
  const file = join(t.dir, 'b.bundle');
  const bytes = randomBytes(SIZE);
  writeFileSync(file, bytes);
  const { server, port, peak } = await serve(file);
  try {
    const whole = await download(port);
    assert.equal(whole.status, 200);
    assert.ok(whole.body.equals(bytes));
    await settle();
    assert.equal(bigChunkBytesOut(), 0);
    // ranges that start, end and straddle at the edges of big and small chunks
    const edges = [0, 1, SMALL_CHUNK_BYTES - 1, SMALL_CHUNK_BYTES, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 2 * CHUNK_BYTES, SIZE - 2, SIZE - 1];
    for (const a of edges) {
      for (const b of edges) {
        if (b < a) continue;
        const r = await download(port, { Range: `bytes=${a}-${b}` });
        assert.equal(r.status, 206, `${a}-${b}`);
        assert.ok(r.body.equals(bytes.subarray(a, b + 1)), `${a}-${b}: ${r.body.length} bytes`);
      }
    }
    const tail = await download(port, { Range: `bytes=-${CHUNK_BYTES + 7}` });
    assert.ok(tail.body.equals(bytes.subarray(SIZE - CHUNK_BYTES - 7)));
    // 24 at once, a third of them leaving after their first megabyte: all right, the budget (8 big chunks) held
    const all = await Promise.all(Array.from({ length: 24 }, (_, i) => download(port, {}, i % 3 === 0 ? 1 << 20 : undefined)));
    for (const [i, r] of all.entries()) {
      if (i % 3 === 0) assert.ok(r.body.equals(bytes.subarray(0, r.body.length)));
      else assert.ok(r.body.equals(bytes), `download ${i}: ${r.body.length} bytes`);
    }
    assert.ok(peak() > 0 && peak() <= 16 * 1024 * 1024, `big chunks out at most: ${peak()}`);
    await settle();
    assert.equal(bigChunkBytesOut(), 0, 'every big chunk given back');
  } finally {
    server.closeAllConnections();
    server.close();
    t.cleanup();
  }
});
