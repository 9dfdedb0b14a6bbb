/**
 * upload-pack's filter specs (protocol/filter.ts) against git's
 * gently_parse_list_objects_filter: numbers as git_parse_ulong reads them
 * (base 0, k/m/g, at most 2^64-1 after the unit), bad numbers and bad
 * escapes with git's messages, never a JavaScript one. Messages recorded
 * from git 2.55.0 (`upload-pack --stateless-rpc`, a v2 fetch with the
 * filter); 2.39 says the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseFilter } from '../src/protocol/filter.js';

const nines = '9'.repeat(400);

test('filter numbers as git_parse_ulong reads them; the spec pack-objects gets is the value', () => {
  assert.equal(parseFilter('blob:limit=0x10').spec, 'blob:limit=16');
  assert.equal(parseFilter('blob:limit=010').spec, 'blob:limit=8');
  assert.equal(parseFilter('blob:limit=1k').spec, 'blob:limit=1024');
  assert.equal(parseFilter('blob:limit= +5').spec, 'blob:limit=5');
  assert.equal(parseFilter('blob:limit=18446744073709551615').spec, 'blob:limit=18446744073709551615');
  assert.equal(parseFilter('blob:limit=16777216g').spec, 'blob:limit=18014398509481984');
  assert.equal(parseFilter('tree:0x2').treeDepth, 2n);
  assert.deepEqual(parseFilter('combine:blob:none+tree:3').subs?.map((s) => s.spec), ['blob:none', 'tree:3']);
});

test('bad filter specs get git\'s messages', () => {
  const bad: Array<[string, string]> = [
    [`tree:${nines}`, "expected 'tree:<depth>'"],
    [`combine:tree%3A${nines}`, "expected 'tree:<depth>'"],
    ['combine:%ZZ', "invalid filter-spec '%ZZ'"],
    ['blob:limit=99999999999999999999', "invalid filter-spec 'blob:limit=99999999999999999999'"],
    [`blob:limit=${nines}`, `invalid filter-spec 'blob:limit=${nines}'`],
    ['blob:limit=17179869184g', "invalid filter-spec 'blob:limit=17179869184g'"],
    ['blob:limit=-1', "invalid filter-spec 'blob:limit=-1'"],
    ['blob:limit=1x', "invalid filter-spec 'blob:limit=1x'"],
  ];
  for (const [spec, msg] of bad) assert.throws(() => parseFilter(spec), { message: msg }, spec);
});
