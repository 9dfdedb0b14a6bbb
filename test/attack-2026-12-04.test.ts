/**
 * Defects found attacking the surfaces merged on 2026-12-04 (ownership,
 * damaged ref storage, SSH before authentication, HTTP auth, forwarded
 * headers, the shared LFS key, the drain phase). Each test failed on the
 * code before its fix.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { dubiousOwnership } from '../src/repo/ownership.js';

const root = process.geteuid?.() === 0;

test('safe.directory from an included file that was missing, or empty, when first read is seen once written', { skip: root ? false : 'chowning needs root' }, (t) => {
  const d = tmp('gitwire-atk-own-');
  t.after(() => d.cleanup());
  const repo = join(d.dir, 'r.git');
  git(['init', '-q', '--bare', repo]);
  assert.equal(spawnSync('chown', ['-R', '65534:65534', repo]).status, 0);
  const global = join(d.dir, 'global');
  const missing = join(d.dir, 'later');
  const empty = join(d.dir, 'empty');
  writeFileSync(empty, '');
  writeFileSync(global, `[include]\n\tpath = ${missing}\n\tpath = empty\n`);
  mkdirSync(join(d.dir, 'home'));
  const env = { ...process.env, GIT_CONFIG_GLOBAL: global, GIT_CONFIG_NOSYSTEM: '1', HOME: join(d.dir, 'home') };
  assert.match(dubiousOwnership({ path: repo }, env) ?? '', /dubious ownership/);
  // the missing include is written: the repository is listed
  writeFileSync(missing, `[safe]\n\tdirectory = ${repo}\n`);
  assert.equal(dubiousOwnership({ path: repo }, env), undefined, 'an include made after the first reading is read');
  // the empty include (relative to the global file) takes it back: refused again, as git would
  writeFileSync(empty, '[safe]\n\tdirectory =\n');
  assert.match(dubiousOwnership({ path: repo }, env) ?? '', /dubious ownership/, 'a reset in an include that was empty is seen');
  // and git agrees on both files as they are now
  const g = spawnSync('git', ['ls-remote', repo], { env, encoding: 'utf8' });
  assert.match(g.stderr, /dubious ownership/);
});
