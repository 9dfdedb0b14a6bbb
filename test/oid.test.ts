/** Object ids (repo/oid.ts): the one hex validator and the conversions, against Node's own hex codec. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hexOfBytes, isHex, parseHex, rawFromHexBytes, toHex } from '../src/repo/oid.js';

const ID = 'a94a8fe5ccb19ba61c4c0873d391e987982fbbd3';

test('isHex: exact length, lower case unless asked, text or bytes', () => {
  const rows: Array<[string, number, boolean, boolean]> = [
    // input, length, lower-case answer, any-case answer
    [ID, 40, true, true],
    [ID.toUpperCase(), 40, false, true],
    [ID.slice(1), 40, false, false],
    [`${ID}0`, 40, false, false],
    [`${ID.slice(0, 39)}g`, 40, false, false],
    [`${ID.slice(0, 39)} `, 40, false, false],
    [`${ID.slice(0, 39)}\u0161`, 40, false, false], // 0x161 & 0xff is 'a'
    ['', 0, false, false],
    ['0'.repeat(64), 64, true, true],
  ];
  for (const [h, len, lower, any] of rows) {
    assert.equal(isHex(h, len), lower, `${h} lower`);
    assert.equal(isHex(h, len, true), any, `${h} any`);
    if (!/[^\x00-\xff]/.test(h)) assert.equal(isHex(Buffer.from(h, 'latin1'), len), lower, `${h} bytes`);
  }
});

test('conversions agree with Buffer hex, with no string in between for hex bytes', () => {
  fc.assert(fc.property(fc.uint8Array({ minLength: 20, maxLength: 32 }), fc.nat(8), (raw, pad) => {
    const hex = Buffer.from(raw).toString('hex');
    assert.equal(toHex(parseHex(hex)), hex);
    const padded = Buffer.concat([Buffer.alloc(pad, 0x20), Buffer.from(hex), Buffer.from('\n')]);
    assert.deepEqual(rawFromHexBytes(padded, pad, hex.length), Buffer.from(raw));
    assert.deepEqual(rawFromHexBytes(Buffer.from(hex.toUpperCase())), Buffer.from(raw));
    assert.equal(hexOfBytes(Buffer.from(hex)), hex);
  }));
  // like Buffer.from(text, 'hex'), decoding stops at the first pair that is not hex
  assert.deepEqual(rawFromHexBytes(Buffer.from('abzz01')), Buffer.from('abzz01', 'hex'));
});
