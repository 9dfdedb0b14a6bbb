/**
 * Issue #10, fairness: requests slicing at the same time share one slice
 * per turn of the event loop (util/budget.ts), so N heavy requests hold a
 * turn about as long as one. Checked structurally (the shares handed out),
 * not by timing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Slicer } from '../src/util/budget.js';

test('slicers that yield on the same turn resume with the slice split between them; alone, one gets all of it', async () => {
  const a = new Slicer(2), b = new Slicer(2), c = new Slicer(2), d = new Slicer(2);
  await Promise.all([a.yieldNow(), b.yieldNow(), c.yieldNow(), d.yieldNow()]);
  assert.deepEqual([a.share, b.share, c.share, d.share], [0.5, 0.5, 0.5, 0.5]);
  await Promise.all([a.yieldNow(), b.yieldNow()]);
  assert.deepEqual([a.share, b.share], [1, 1]);
  await a.yieldNow();
  assert.equal(a.share, 2);
  // a share never drops below a quarter millisecond, however many share the turn
  const many = Array.from({ length: 100 }, () => new Slicer(2));
  await Promise.all(many.map((s) => s.yieldNow()));
  assert.ok(many.every((s) => s.share === 0.25));
});
