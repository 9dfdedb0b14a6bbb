/**
 * A pack-objects that goes quiet mid-pack: what the relay holds must reach
 * the client after the quiet time, not when the next frame fills or the
 * pack ends (a peer waiting for bytes gets them now).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { relayPack } from '../src/pack/relay.js';
import { PacketWriter } from '../src/pktline/writer.js';
import { MemorySink } from '../src/pktline/sink.js';

test('relay: a partial frame goes out once pack-objects has been quiet, before it exits', async () => {
  // 1000 bytes, then 1.5 s of silence, then 10 more bytes
  const child = spawn('/bin/sh', ['-c', 'head -c 1000 /dev/zero; sleep 1.5; head -c 10 /dev/zero'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const sink = new MemorySink();
  const writer = new PacketWriter(sink);
  writer.sideband = 'side-band-64k';
  const done = relayPack(child, writer, { keepalive: -1, quietMs: 100 });
  await new Promise((r) => setTimeout(r, 900));
  // everything but the held-back last byte is out while pack-objects is still quiet
  assert.equal(sink.stats.bytes, 5 + 999, `bytes out during the quiet time: ${sink.stats.bytes}`);
  await done;
  assert.equal(sink.data.length, (5 + 999) + (5 + 10) + (5 + 1) + 4);
});
