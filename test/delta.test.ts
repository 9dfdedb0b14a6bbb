/**
 * applyDeltaIn (ranges, copies inside one array) against applyDelta on
 * generated deltas: short and long copies and inserts, every placement of
 * base, delta and result, and the corrupt cases.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyDelta, applyDeltaIn, deltaResultSizeAt } from '../src/repo/delta.js';

function varint(n: number): number[] {
  const out: number[] = [];
  do { let c = n & 0x7f; n = Math.floor(n / 128); if (n) c |= 0x80; out.push(c); } while (n);
  return out;
}

/** A delta rebuilding a result from `base` with copies and inserts of the given sizes (deterministic). */
function makeDelta(base: Buffer, ops: Array<['copy' | 'insert', number]>): { delta: Buffer; result: Buffer } {
  const bytes: number[] = [];
  const result: number[] = [];
  let seed = 7;
  for (const [kind, n] of ops) {
    if (kind === 'copy') {
      const off = (seed = (seed * 31 + 17) % (base.length - n + 1));
      let op = 0x80;
      const args: number[] = [];
      for (let i = 0; i < 4; i++) { const b = (off >>> (8 * i)) & 0xff; if (b) { op |= 1 << i; args.push(b); } }
      for (let i = 0; i < 3; i++) { const b = (n >>> (8 * i)) & 0xff; if (b) { op |= 0x10 << i; args.push(b); } }
      bytes.push(op, ...args);
      for (let i = 0; i < n; i++) result.push(base[off + i]!);
    } else {
      bytes.push(n);
      for (let i = 0; i < n; i++) { const b = (i * 13 + n) & 0xff; bytes.push(b); result.push(b); }
    }
  }
  return { delta: Buffer.from([...varint(base.length), ...varint(result.length), ...bytes]), result: Buffer.from(result) };
}

const base = Buffer.alloc(5000);
for (let i = 0; i < base.length; i++) base[i] = (i * 7 + (i >> 8)) & 0xff;
const OPS: Array<['copy' | 'insert', number]> = [['copy', 3], ['insert', 5], ['copy', 47], ['copy', 48], ['insert', 47], ['insert', 48], ['copy', 1200], ['insert', 127], ['copy', 4096], ['insert', 1]];

test('applyDeltaIn builds what applyDelta builds, wherever base, delta and result sit', () => {
  const { delta, result } = makeDelta(base, OPS);
  assert.deepEqual(applyDelta(base, delta), result);
  assert.equal(deltaResultSizeAt(delta, 0, delta.length), result.length);
  // separate arrays, at offsets
  const out = Buffer.alloc(result.length + 20, 0xee);
  assert.equal(applyDeltaIn(base, 0, base.length, delta, 0, delta.length, out, 10, result.length + 10, false, false), result.length);
  assert.deepEqual(out.subarray(10, 10 + result.length), result);
  assert.equal(out[9], 0xee);
  assert.equal(out[10 + result.length], 0xee);
  // base, delta and result in one array (copyWithin for both kinds of copy)
  const C = 16384;
  const mem = Buffer.alloc(4 * C, 0xee);
  base.copy(mem, C);
  delta.copy(mem, 3 * C);
  for (const [bIn, dIn] of [[true, true], [true, false], [false, true]] as const) {
    mem.fill(0xee, 2 * C, 3 * C);
    const b = bIn ? mem : base, bAt = bIn ? C : 0;
    const d = dIn ? mem : delta, dAt = dIn ? 3 * C : 0;
    assert.equal(applyDeltaIn(b, bAt, base.length, d, dAt, dAt + delta.length, mem, 2 * C, C, bIn, dIn), result.length);
    assert.deepEqual(mem.subarray(2 * C, 2 * C + result.length), result, `base in: ${bIn}, delta in: ${dIn}`);
    assert.equal(mem[2 * C + result.length], 0xee);
  }
});

test('applyDeltaIn rejects corrupt deltas as applyDelta does', () => {
  const { delta } = makeDelta(base, OPS);
  const out = Buffer.alloc(20000);
  const bad = (d: Buffer, b: Buffer = base, cap = out.length) => assert.throws(() => applyDeltaIn(b, 0, b.length, d, 0, d.length, out, 0, cap, false, false), { code: 'GW_OBJECT_CORRUPT' });
  bad(delta, base.subarray(1));                       // base size mismatch
  bad(delta.subarray(0, delta.length - 1));           // result short
  bad(delta, base, 100);                              // no room for the result
  bad(Buffer.from([...varint(base.length), 4, 0]));   // opcode 0
  bad(Buffer.from([...varint(base.length), 4, 0x91, 0xff, 0x20])); // copy past the base's end
  bad(Buffer.from([...varint(base.length), 2, 3, 1, 2, 3]));       // insert past the result's end
  bad(Buffer.from([0x80]));                           // truncated header
  bad(Buffer.from([0, 0]));                           // empty base, empty result: under git's DELTA_SIZE_MIN
  bad(Buffer.from([0, 1, 1]));                        // three bytes: under it too
  assert.throws(() => applyDelta(Buffer.alloc(0), Buffer.from([0, 0])), { code: 'GW_OBJECT_CORRUPT' });
  // the delta's range ends where it is told to, not at the array's end
  const padded = Buffer.concat([delta, Buffer.from([5, 1, 2, 3, 4, 5])]);
  assert.throws(() => applyDeltaIn(base, 0, base.length, padded, 0, padded.length, out, 0, out.length, false, false), { code: 'GW_OBJECT_CORRUPT' });
  assert.doesNotThrow(() => applyDeltaIn(base, 0, base.length, padded, 0, delta.length, out, 0, out.length, false, false));
});
