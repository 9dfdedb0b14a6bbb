import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { checkRefnameFormat } from '../src/repo/refname.js';

const cases: Array<[string, boolean?]> = [
  ['refs/heads/main'], ['refs/heads/feature/x'], ['HEAD'], ['refs/heads/..'], ['refs/heads/a..b'], ['refs/heads/.hidden'],
  ['refs/heads/x.lock'], ['refs/heads/x.lock/y'], ['refs/heads/x.'], ['refs/heads/x/'], ['/refs/heads/x'], ['refs//heads/x'],
  ['refs/heads/a@{b'], ['@'], ['refs/heads/@'], ['refs/heads/a b'], ['refs/heads/a~1'], ['refs/heads/a^'], ['refs/heads/a:b'],
  ['refs/heads/a?'], ['refs/heads/a['], ['refs/heads/a\\b'], ['refs/heads/a*'], ['refs/heads/*', true], ['refs/*/x/*', true],
  ['refs/heads/brånch'], ['refs/heads/\x01'], ['refs/heads/\x7f'], ['refs/heads/./x'], ['refs/../../etc/passwd'], ['a'], ['a/b'],
  ['refs/heads/x.lockx'], ['refs/heads/.'], ['refs/heads/a.b'], ['refs/heads/{a}'], ['refs/heads/a@b'],
];

test('checkRefnameFormat agrees with git check-ref-format', () => {
  for (const [name, pattern] of cases) {
    for (const onelevel of [false, true]) {
      const args = ['check-ref-format'];
      if (onelevel) args.push('--allow-onelevel');
      if (pattern) args.push('--refspec-pattern');
      args.push(name);
      const git = spawnSync('git', args).status === 0;
      assert.equal(checkRefnameFormat(name, { allowOnelevel: onelevel, refspecPattern: !!pattern }), git, `${JSON.stringify(name)} onelevel=${onelevel}`);
    }
  }
});
