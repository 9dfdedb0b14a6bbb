/**
 * Count the times slicers give the event loop away while `fn` runs, on a
 * clock that moves 10 ms per reading: a slicer then yields at every 64th
 * tick (the first point it reads the clock), so the count follows the
 * ticks a loop makes and not the machine's speed. Anything else reading
 * performance.now() meanwhile sees the same clock (budgets spend fast).
 */
import { Slicer } from '../../src/util/budget.js';

export async function countYields(fn: () => Promise<unknown>): Promise<number> {
  let yields = 0;
  const realYield = Slicer.prototype.yieldNow;
  const realNow = performance.now;
  let clock = realNow.call(performance);
  Slicer.prototype.yieldNow = function (this: Slicer) { yields++; return realYield.call(this); };
  performance.now = () => (clock += 10);
  try {
    await fn();
  } finally {
    Slicer.prototype.yieldNow = realYield;
    performance.now = realNow;
  }
  return yields;
}
