/** identityRanks(): one shared array of ranks 0..n-1 for whole-pack plans, known for what it is at once. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { identityRanks, isIdentityRanks } from '../src/pack/produce/identity-ranks.js';

test('identityRanks: 0..n-1, views of one array (grown for a larger n), recognised without a read; other arrays read through', () => {
  const a = identityRanks(5);
  assert.deepEqual([...a], [0, 1, 2, 3, 4]);
  const b = identityRanks(1000);
  assert.equal(b.length, 1000);
  assert.ok(b.every((v, i) => v === i));
  assert.equal(identityRanks(700).buffer, b.buffer, 'a smaller n is a view of the same array');
  assert.ok(isIdentityRanks(b) && isIdentityRanks(identityRanks(3)));
  assert.ok(isIdentityRanks(Uint32Array.from([0, 1, 2])), 'a plain identity array');
  assert.ok(!isIdentityRanks(Uint32Array.from([0, 2, 3])));
  // a view of the shared array that does not start at 0 is not identity
  assert.ok(!isIdentityRanks(b.subarray(1, 4)));
  assert.ok(isIdentityRanks(new Uint32Array(0)));
});
