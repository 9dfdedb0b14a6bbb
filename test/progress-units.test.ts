/** The progress deadline's rule on a fake clock and fake counters (transport/limits/progress.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressDeadline, stallReason, tickMs, type Flow, type Stall } from '../src/transport/limits/progress.js';

/** a flow whose counters the test moves: `sent` counts what was written (queued or taken), `taken` what the peer took */
function fake() {
  const c = { sent: 0, taken: 0, received: 0, t: 0 };
  const flow: Flow = { accepted: () => c.taken, queued: () => c.sent - c.taken, received: () => c.received };
  const stalls: Stall[] = [];
  const d = new ProgressDeadline(flow, 3000, (s) => stalls.push(s), () => c.t);
  return { c, d, stalls };
}

test('bytes queued for a peer that takes none are cut after the timeout; keepalives queued behind them change nothing', () => {
  const { c, d, stalls } = fake();
  c.sent = 1 << 20;
  c.taken = 200_000;
  d.check();
  for (let t = 0; t <= 2900; t += 100) {
    c.t = t;
    // a keepalive every 500 ms, into the full queue
    if (t % 500 === 0) c.sent += 5;
    d.check();
  }
  assert.equal(stalls.length, 0);
  c.t = 3000;
  d.check();
  assert.equal(stalls.length, 1);
  assert.equal(stalls[0]!.direction, 'not-reading');
  assert.equal(stalls[0]!.queued, c.sent - c.taken);
  assert.ok(d.stopped);
  assert.match(stallReason(stalls[0]!), /^no progress for 3\.0 s: the client took none of the \d+ bytes waiting for it$/);
  // once only
  c.t = 10_000;
  d.check();
  assert.equal(stalls.length, 1);
});

test('a peer that takes bytes, however slowly, is never cut', () => {
  const { c, d, stalls } = fake();
  c.sent = 1 << 20;
  for (let t = 0; t <= 60_000; t += 1000) {
    c.t = t;
    if (t % 2000 === 0) c.taken += 1;
    d.check();
  }
  assert.equal(stalls.length, 0);
  d.stop();
});

test('the server at work (nothing queued, nothing awaited) is not the peer\'s time; a wait for input is', () => {
  const { c, d, stalls } = fake();
  for (let t = 0; t <= 60_000; t += 1000) { c.t = t; d.check(); }
  assert.equal(stalls.length, 0, 'pack-objects counting for a minute is not a stall');
  // now the conversation waits for the peer: its count starts here, not at the last byte
  d.reading(true);
  c.t = 62_900;
  d.check();
  assert.equal(stalls.length, 0);
  c.t = 63_000;
  d.check();
  assert.equal(stalls.length, 1);
  assert.equal(stalls[0]!.direction, 'not-sending');
  assert.match(stallReason(stalls[0]!), /sent nothing/);
});

test('bytes received end a wait\'s count; the end of a wait stops it', () => {
  const { c, d, stalls } = fake();
  d.reading(true);
  c.t = 2000;
  c.received = 10;
  d.check();
  c.t = 4500;
  d.check();
  assert.equal(stalls.length, 0);
  d.reading(false);
  c.t = 100_000;
  d.check();
  assert.equal(stalls.length, 0);
  d.stop();
});

test('a timeout of 0 never fires; the tick is a tenth of the timeout within 50 ms and 1 s', () => {
  const stalls: Stall[] = [];
  const d = new ProgressDeadline({ accepted: () => 0, queued: () => 1, received: () => 0 }, 0, (s) => stalls.push(s), () => 1e9);
  d.check();
  assert.equal(stalls.length, 0);
  assert.ok(d.stopped);
  assert.equal(tickMs(100), 50);
  assert.equal(tickMs(3000), 300);
  assert.equal(tickMs(120_000), 1000);
});
