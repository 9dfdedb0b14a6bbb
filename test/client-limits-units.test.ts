/**
 * Per-client limits (src/transport/limits/) without a server: who a client
 * is, the token buckets and their bound, requests in progress, saturation,
 * the cost score, and users queued ahead of anonymous clients for a pack
 * slot.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addressKey, clientId, ClientLimits, COST, InFlight, parsePressure, refusalMessage, requestCost, Saturation, TokenBuckets } from '../src/transport/limits/index.js';
import { PackLimiter } from '../src/transport/admission.js';
import { PacketWriter } from '../src/pktline/writer.js';
import type { Sink } from '../src/pktline/sink.js';

class NullSink implements Sink {
  readonly stats = { writes: 0, bytes: 0 };
  readonly retains = false;
  readonly backedUp = false;
  closed = false;
  write(): void { /* dropped */ }
  drained(): Promise<void> { return Promise.resolve(); }
  onClose(): void { /* never */ }
}

test('client key: the user, else the address; IPv6 per /64, IPv4-mapped as IPv4', () => {
  assert.deepEqual(clientId({ user: 'alice', remoteAddress: '10.0.0.1' }), { key: 'user:alice', anonymous: false });
  assert.deepEqual(clientId({ remoteAddress: '10.0.0.1' }), { key: 'ip:10.0.0.1', anonymous: true });
  assert.equal(addressKey('::ffff:10.0.0.1'), 'ip:10.0.0.1');
  assert.equal(addressKey('2001:db8:1:2:aaaa::1'), addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'));
  assert.equal(addressKey('2001:db8:1:2::5'), 'ip6:2001:db8:1:2::/64');
  assert.notEqual(addressKey('2001:db8:1:2::1'), addressKey('2001:db8:1:3::1'));
  assert.equal(addressKey('2001:db8::1'), 'ip6:2001:db8:0:0::/64');
  assert.equal(addressKey('fe80::1%eth0'), 'ip6:fe80:0:0:0::/64');
  assert.equal(addressKey('::1'), 'ip6:0:0:0:0::/64');
  assert.equal(addressKey(undefined), 'ip:unknown');
});

test('token bucket: a burst, then refusals with the wait, then a token per 1/rate', () => {
  let now = 0;
  const b = new TokenBuckets(2, 3, 100, () => now);
  assert.deepEqual([b.take('a'), b.take('a'), b.take('a')], [0, 0, 0]);
  assert.equal(b.take('a'), 500, 'the fourth waits half a second at 2/s');
  assert.equal(b.take('b'), 0, 'another client has its own bucket');
  now += 500;
  assert.equal(b.take('a'), 0);
  assert.ok(b.take('a') > 0);
  now += 10_000;
  assert.deepEqual([b.take('a'), b.take('a'), b.take('a')], [0, 0, 0], 'refilled to the burst, not beyond');
  assert.ok(b.take('a') > 0);
});

test('token bucket: 100,000 distinct addresses hold at most maxClients entries (and the heap does not grow with them)', () => {
  const b = new TokenBuckets(1, 1, 1000);
  for (let i = 0; i < 100_000; i++) b.take(`ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  assert.equal(b.size, 1000);
  const lim = new ClientLimits({ anonymous: { rate: 1, burst: 1, concurrency: 2 }, maxClients: 2000 });
  const heap0 = process.memoryUsage().heapUsed;
  for (let i = 0; i < 200_000; i++) {
    const v = lim.check({ remoteAddress: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` });
    if (v.ok) v.release();
  }
  assert.ok(lim.trackedClients <= 2000, `${lim.trackedClients} clients tracked`);
  assert.equal(lim.activeClients, 0, 'released requests leave no entry');
  // a loose bound: a table that kept every address would hold 200,000 entries (tens of MB)
  assert.ok(process.memoryUsage().heapUsed - heap0 < 16 * 1024 * 1024, 'heap grew by less than 16 MiB');
});

test('requests in progress per client: the limit, then room again after a release', () => {
  const f = new InFlight();
  const r1 = f.enter('a', 2), r2 = f.enter('a', 2);
  assert.ok(r1 && r2);
  assert.equal(f.enter('a', 2), undefined);
  assert.ok(f.enter('b', 2), 'another client is not counted');
  r1();
  r1();
  assert.equal(f.count('a'), 1, 'a release counts once');
  assert.ok(f.enter('a', 2));
});

test('client limits: anonymous and users apart; the refusal says how long to wait', () => {
  const lim = new ClientLimits({ anonymous: { rate: 0.5, burst: 1 }, user: { rate: 100 }, now: () => 0 });
  assert.ok(lim.check({ remoteAddress: '192.0.2.1' }).ok);
  const no = lim.check({ remoteAddress: '192.0.2.1' });
  assert.ok(!no.ok && no.reason === 'rate' && no.retryAfter === 2);
  assert.equal(refusalMessage({ reason: 'rate', retryAfter: 2 }), 'rate limited, please try again after 2 seconds');
  assert.equal(refusalMessage({ reason: 'rate', retryAfter: 1 }), 'rate limited, please try again after 1 second');
  // the same address logged in is another client, with the users' limits
  for (let i = 0; i < 50; i++) assert.ok(lim.check({ remoteAddress: '192.0.2.1', user: 'alice' }).ok);
  assert.deepEqual(lim.counts().anonymous, { admitted: 1, rate: 1, concurrency: 0, saturated: 0, busy: 0 });
  assert.equal(lim.counts().user.admitted, 50);
  assert.throws(() => new ClientLimits({ anonymous: { rate: -1 } }), RangeError);
});

test('saturation: CPU pressure over the threshold refuses new anonymous work, not advertisements, not users', async () => {
  const d = mkdtempSync(join(tmpdir(), 'gitwire-psi-'));
  try {
    const f = join(d, 'cpu.pressure');
    writeFileSync(f, 'some avg10=93.50 avg60=80.00 avg300=40.00 total=123\nfull avg10=10.00 avg60=5.00 avg300=1.00 total=12\n');
    assert.equal(parsePressure('some avg10=1.25 avg60=0.00 avg300=0.00 total=1\n'), 1.25);
    const sat = new Saturation({ cpuPressure: 80, pressureFile: f, intervalMs: 60_000 });
    const lim = new ClientLimits({ saturation: sat, saturatedRetryAfter: 3 });
    try {
      assert.ok(lim.check({ remoteAddress: '192.0.2.9' }).ok, 'not saturated before a sample');
      assert.equal(await sat.sample(), true);
      const no = lim.check({ remoteAddress: '192.0.2.9' }, 'work');
      assert.ok(!no.ok && no.reason === 'saturated' && no.retryAfter === 3);
      assert.ok(lim.check({ remoteAddress: '192.0.2.9' }, 'small').ok, 'an advertisement is let through');
      assert.ok(lim.check({ remoteAddress: '192.0.2.9', user: 'alice' }, 'work').ok, 'a user is let through');
      writeFileSync(f, 'some avg10=12.00 avg60=80.00 avg300=40.00 total=123\n');
      assert.equal(await sat.sample(), false);
      assert.ok(lim.check({ remoteAddress: '192.0.2.9' }).ok);
    } finally { lim.close(); sat.close(); }
  } finally { rmSync(d, { recursive: true, force: true }); }
});

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
const oid = 'a'.repeat(40);

test('cost score: advertisement-sized requests 1, an incremental fetch 4, a clone 10', () => {
  assert.equal(requestCost(Buffer.from(`${pkt('command=ls-refs\n')}0001${pkt('peel\n')}0000`)), COST.advertisement);
  assert.equal(requestCost(Buffer.from(`${pkt('command=fetch\n')}0001${pkt(`want ${oid}\n`)}${pkt('deepen 1\n')}${pkt('done\n')}0000`)), COST.clone);
  assert.equal(requestCost(Buffer.from(`${pkt('command=fetch\n')}0001${pkt(`want ${oid}\n`)}${pkt(`have ${oid}\n`)}${pkt('done\n')}0000`)), COST.incremental);
  assert.equal(requestCost(Buffer.from(`${pkt(`want ${oid} side-band-64k\n`)}0000${pkt('done\n')}`)), COST.clone, 'v0');
  assert.equal(requestCost(Buffer.from('garbage')), COST.advertisement);
});

test('pack queue: a user waiting for a slot goes ahead of anonymous clients that came first', async () => {
  const lim = new PackLimiter(1);
  const hold = await lim.forClient({ key: 'ip:10.0.0.1', anonymous: true })(new PacketWriter(new NullSink()), false);
  const order: string[] = [];
  const anon1 = lim.forClient({ key: 'ip:10.0.0.2', anonymous: true })(new PacketWriter(new NullSink()), false).then((r) => { order.push('anon1'); return r; });
  const anon2 = lim.forClient({ key: 'ip:10.0.0.3', anonymous: true })(new PacketWriter(new NullSink()), false).then((r) => { order.push('anon2'); return r; });
  const user = lim.forClient({ key: 'user:alice', anonymous: false })(new PacketWriter(new NullSink()), false).then((r) => { order.push('user'); return r; });
  assert.equal(lim.waiting, 3);
  hold();
  (await user)();
  (await anon1)();
  (await anon2)();
  assert.deepEqual(order, ['user', 'anon1', 'anon2']);
});

test('releaseOnClose: at once for what has closed already, else on the first close, once', async () => {
  const { EventEmitter } = await import('node:events');
  const { releaseOnClose } = await import('../src/transport/limits/index.js');
  let n = 0;
  const closed = Object.assign(new EventEmitter(), { destroyed: true });
  releaseOnClose(() => { n++; }, closed);
  assert.equal(n, 1);
  const ch = Object.assign(new EventEmitter(), { incoming: { state: 'closed' } });
  releaseOnClose(() => { n++; }, ch);
  assert.equal(n, 2, 'an ssh2 channel the client closed');
  const a = new EventEmitter(), b = new EventEmitter();
  releaseOnClose(() => { n++; }, a, b);
  b.emit('close');
  a.emit('close');
  assert.equal(n, 3);
  assert.equal(a.listenerCount('close'), 0, 'the other listener is gone');
});

test('anonymous work in all: bounded whatever the number of addresses; advertisements and users aside', () => {
  const lim = new ClientLimits({ anonymousWork: 2 });
  const a = lim.check({ remoteAddress: '198.51.100.1' }), b = lim.check({ remoteAddress: '198.51.100.2' });
  assert.ok(a.ok && b.ok);
  const c = lim.check({ remoteAddress: '198.51.100.3' });
  assert.ok(!c.ok && c.reason === 'busy' && c.retryAfter === 1);
  assert.equal(refusalMessage(c), 'too many anonymous requests at once, please try again after 1 second');
  assert.ok(lim.check({ remoteAddress: '198.51.100.3' }, 'small').ok, 'an advertisement is not counted');
  assert.ok(lim.check({ remoteAddress: '198.51.100.3', user: 'alice' }).ok, 'a user is not counted');
  assert.equal(lim.anonymousWorkInProgress, 2);
  a.release();
  const d = lim.check({ remoteAddress: '198.51.100.3' });
  assert.ok(d.ok);
  assert.equal(lim.counts().anonymous.busy, 1);
});
