import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decode, encode, encodePacket, PacketWriter, MemorySink, PktReader, Band, type Packet } from '../src/pktline/index.js';
import { GitwireError } from '../src/errors.js';

test('encode pins exact bytes', () => {
  assert.equal(encode('a\n').toString(), '0006a\n');
  assert.equal(encode('').toString(), '0004');
  assert.equal(encode(Buffer.alloc(65516, 0x61)).subarray(0, 4).toString(), 'fff0');
  assert.throws(() => encode(Buffer.alloc(65517)), (e: unknown) => e instanceof GitwireError && e.code === 'GW_PKT_TOO_LONG');
});

test('decode special packets and data', () => {
  assert.deepEqual(decode(Buffer.from('0000')), { status: 'complete', packet: { kind: 'flush' }, consumed: 4 });
  assert.deepEqual(decode(Buffer.from('0001')), { status: 'complete', packet: { kind: 'delim' }, consumed: 4 });
  assert.deepEqual(decode(Buffer.from('0002')), { status: 'complete', packet: { kind: 'response-end' }, consumed: 4 });
  const r = decode(Buffer.from('0009hello0000'));
  assert.equal(r.status, 'complete');
  if (r.status === 'complete') { assert.equal(r.consumed, 9); assert.equal((r.packet as { data: Buffer }).data.toString(), 'hello'); }
  assert.deepEqual(decode(Buffer.from('000')), { status: 'incomplete', need: 1 });
  assert.deepEqual(decode(Buffer.from('0009he')), { status: 'incomplete', need: 3 });
});

test('decode rejects malformed lengths with typed errors', () => {
  const bad = (s: string, code: string, msg?: RegExp) => assert.throws(() => decode(Buffer.from(s)), (e: unknown) => e instanceof GitwireError && e.code === code && (!msg || msg.test(e.message)));
  bad('zzzz', 'GW_PKT_BAD_LENGTH_CHAR', /bad line length character: zzzz/);
  bad('0003', 'GW_PKT_BAD_LENGTH', /bad line length 3/);
  // as git 2.39 and 2.55's packet_read: 0004 is an empty packet, data up to 65519 bytes is read
  assert.deepEqual(decode(Buffer.from('0004')), { status: 'complete', packet: { kind: 'data', data: Buffer.alloc(0) }, consumed: 4 });
  assert.deepEqual(decode(Buffer.from('fff3')), { status: 'incomplete', need: 0xfff3 - 4 });
  bad('fff4', 'GW_PKT_BAD_LENGTH', /bad line length 65520$/);
  bad('ffff', 'GW_PKT_BAD_LENGTH', /bad line length 65531$/);
});

test('property: decode(encode(x)) = x', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 1, maxLength: 2000 }), (arr) => {
    const b = Buffer.from(arr);
    const r = decode(encode(b));
    return r.status === 'complete' && r.packet.kind === 'data' && r.packet.data.equals(b) && r.consumed === b.length + 4;
  }));
});

test('property: random bytes only give packets, incomplete, or a typed error', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (arr) => {
    try { decode(Buffer.from(arr)); return true; } catch (e) { return e instanceof GitwireError; }
  }));
});

test('reader: kinds, peek, chomp, ERR, chunked input', async () => {
  const bytes = Buffer.concat([encode('hello\n'), Buffer.from('0001'), encode('ERR boom'), Buffer.from('00000002')]);
  async function* chunks() { for (let i = 0; i < bytes.length; i += 3) yield bytes.subarray(i, i + 3); }
  const r = new PktReader(chunks(), { chomp: true });
  assert.deepEqual((await r.peek()), { kind: 'data', data: Buffer.from('hello') });
  assert.deepEqual((await r.read()), { kind: 'data', data: Buffer.from('hello') });
  assert.equal((await r.read()).kind, 'delim');
  assert.deepEqual((await r.read()), { kind: 'data', data: Buffer.from('ERR boom') });
  assert.equal((await r.read()).kind, 'flush');
  assert.equal((await r.read()).kind, 'response-end');
  assert.equal((await r.read()).kind, 'eof');
  const r2 = new PktReader(encode('ERR nope'), { dieOnErr: true });
  await assert.rejects(r2.read(), /remote error: nope/);
  const r3 = new PktReader(Buffer.from('0009he'));
  await assert.rejects(r3.read(), /the remote end hung up unexpectedly/);
});

test('reader never consumes past the packet asked for', async () => {
  const r = new PktReader(Buffer.concat([encode('a'), encode('b')]));
  await r.read();
  assert.equal(r.consumed, 5);
  assert.equal(r.remainder().toString(), '0005b');
});

test('writer buffers and flushes in one write', () => {
  const sink = new MemorySink();
  const w = new PacketWriter(sink);
  w.data('a\n');
  w.data(Buffer.from('b\n'));
  w.dataParts('c', Buffer.from(' d'), '\n');
  assert.equal(sink.stats.writes, 0);
  w.flush();
  assert.equal(sink.stats.writes, 1);
  assert.equal(sink.data.toString(), '0006a\n0006b\n0008c d\n0000');
});

test('writer writes buffered bytes before a packet that would pass the limit', () => {
  const sink = new MemorySink();
  const w = new PacketWriter(sink, 100);
  w.data(Buffer.alloc(40, 0x61)); // 44 bytes
  w.data(Buffer.alloc(40, 0x62)); // 88
  assert.equal(sink.stats.writes, 0);
  w.data(Buffer.alloc(10, 0x63)); // 88 + 14 > 100 → first 88 go out
  assert.equal(sink.stats.writes, 1);
  assert.equal(sink.chunks[0]!.length, 88);
  w.data(Buffer.alloc(200, 0x64)); // bigger than the limit: buffered first, then its own write
  assert.equal(sink.stats.writes, 3);
  assert.equal(sink.chunks[1]!.length, 14);
  assert.equal(sink.chunks[2]!.length, 204);
  w.flush();
  assert.equal(sink.stats.writes, 4);
  assert.equal(sink.chunks[3]!.toString(), '0000');
});

test('writer sideband framing splits at the band maximum', () => {
  const sink = new MemorySink();
  const w = new PacketWriter(sink, 1 << 20);
  w.sideband = 'side-band';
  w.band(Band.Data, Buffer.alloc(2000, 0x78));
  w.push();
  const out = sink.data;
  assert.equal(out.subarray(0, 5).toString('latin1'), '03e8\x01');
  assert.equal(out.subarray(1000, 1005).toString('latin1'), '03e8\x01');
  assert.equal(out.subarray(2000, 2005).toString('latin1'), '000f\x01');
  assert.equal(out.length, 2000 + 15);
  const s2 = new MemorySink();
  const w2 = new PacketWriter(s2, 1 << 20);
  w2.sideband = 'side-band-64k';
  w2.band(Band.Progress, Buffer.alloc(70000, 0x79));
  w2.push();
  assert.equal(s2.data.subarray(0, 5).toString('latin1'), 'fff0\x02');
  assert.equal(s2.data.length, 70000 + 10);
});

test('writer error: ERR without sideband-all, band 3 with it', () => {
  const s = new MemorySink();
  const w = new PacketWriter(s);
  w.error('upload-pack: not our ref abc');
  assert.equal(s.data.toString(), '0024ERR upload-pack: not our ref abc');
  const s2 = new MemorySink();
  const w2 = new PacketWriter(s2);
  w2.sidebandAll = true;
  w2.error('oops');
  assert.equal(s2.data.toString('latin1'), '0009\x03oops');
});

test('encodePacket round-trips every kind', () => {
  const pkts: Packet[] = [{ kind: 'flush' }, { kind: 'delim' }, { kind: 'response-end' }, { kind: 'data', data: Buffer.from('x') }];
  for (const p of pkts) {
    const r = decode(encodePacket(p));
    assert.equal(r.status, 'complete');
    if (r.status === 'complete') assert.deepEqual(r.packet, p);
  }
});
