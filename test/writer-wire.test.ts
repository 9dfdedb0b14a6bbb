/**
 * The writer owns the wire (issue #13 item 4): keepalives, the consumer
 * going away and backpressure go through the writer, and a server never
 * sends pack-objects' progress to its own stderr.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { request } from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PacketWriter } from '../src/pktline/writer.js';
import { MemorySink, StreamSink } from '../src/pktline/sink.js';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/pkt.js';
import { startServer } from '../src/transport/server.js';

test('writer.keepalive: an empty band-1 packet after what is buffered, in one write', () => {
  const sink = new MemorySink();
  const w = new PacketWriter(sink);
  w.sideband = 'side-band-64k';
  w.progress('x\n');
  w.keepalive();
  assert.equal(sink.stats.writes, 1);
  assert.equal(sink.data.toString('latin1'), '0007\x02x\n0005\x01');
  w.keepalive();
  assert.equal(sink.stats.writes, 2);
  assert.equal(sink.chunks[1]!.toString('latin1'), '0005\x01');
});

test('writer.announce: smart HTTP\'s service line and flush share a write with what follows', () => {
  const sink = new MemorySink();
  const w = new PacketWriter(sink);
  w.announce('git-upload-pack');
  assert.equal(sink.stats.writes, 0);
  w.data('version 1\n');
  w.flush();
  assert.equal(sink.stats.writes, 1);
  assert.equal(sink.data.toString('latin1'), '001e# service=git-upload-pack\n0000000eversion 1\n0000');
});

test('writer.onGone and waitDrained follow the stream under the sink', async () => {
  const out = new PassThrough({ highWaterMark: 16 });
  const w = new PacketWriter(new StreamSink(out, 0)); // backed up past the stream's own high-water mark
  w.data('a'.repeat(100));
  w.push();
  assert.equal(w.backedUp, true);
  let drained = false;
  const d = w.waitDrained().then(() => { drained = true; });
  await new Promise((r) => setImmediate(r));
  assert.equal(drained, false, 'still backed up');
  out.read();
  await d;
  assert.equal(w.backedUp, false);
  await w.waitDrained(); // at once when not backed up
  let gone = 0;
  w.onGone(() => gone++);
  out.destroy();
  await new Promise((r) => setImmediate(r));
  assert.equal(gone, 1);
  assert.equal(w.closed, true);
  w.onGone(() => gone++);
  assert.equal(gone, 2, 'a late listener is told at once');
});

test('serve: pack-objects progress for a fetch without sideband never reaches the server\'s stderr', async () => {
  const t = tmp('gitwire-writer-wire-');
  try {
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    for (let i = 0; i < 3; i++) commit(w, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(1000) });
    git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
    const tip = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']).trim();
    const s = await startServer({ root, http: 0, exportAll: true, env: { ...gitEnv } });
    const written: string[] = [];
    const orig = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      written.push(Buffer.from(chunk).toString());
      return (orig as (...a: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
    }) as typeof process.stderr.write;
    let body: Buffer;
    try {
      // v0 without side-band and without no-progress: pack-objects runs with --progress
      const req = Buffer.concat([pkt([`want ${tip} ofs-delta\n`, '0000']), Buffer.from('0009done\n')]);
      body = await new Promise<Buffer>((resolve, reject) => {
        const r = request({ port: s.httpPort, method: 'POST', path: '/repo.git/git-upload-pack', headers: { 'Content-Type': 'application/x-git-upload-pack-request' } }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () => resolve(Buffer.concat(parts)));
        });
        r.on('error', reject);
        r.end(req);
      });
    } finally {
      process.stderr.write = orig;
      await s.shutdown(0);
    }
    assert.ok(body.includes(Buffer.from('PACK')), 'the pack came');
    assert.deepEqual(written.filter((x) => /objects|Enumerating|Counting|Compressing|Total/.test(x)), [], 'no progress on the server\'s stderr');
  } finally {
    t.cleanup();
  }
});
