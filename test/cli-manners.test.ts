/**
 * The command line's manners, as git's own: a mistyped command or serve
 * flag names the closest ones (help.c's choice, compared here with git's
 * own answer to the same kind of typo), `-C <path>` runs in another
 * directory, and a bad --auth-rules file is fatal (128) as a bad
 * --htpasswd file is.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, run, tmp } from './helpers/git.js';
import { gitLevenshtein, mostSimilar } from '../src/cli/suggest.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp(); });
after(() => t.cleanup());

test("git's weighted distance: a swap is free, a deletion dearest", () => {
  assert.equal(gitLevenshtein('sreve', 'serve'), 0, 'two neighbours swapped');
  assert.equal(gitLevenshtein('serv', 'serve'), 1, 'one insertion');
  assert.equal(gitLevenshtein('servex', 'serve'), 3, 'one deletion');
  assert.equal(gitLevenshtein('sarve', 'serve'), 2, 'one substitution');
});

test("the choice is help.c's: prefixes first, then every tie at the best score of the rest", () => {
  // every gitwire command counts as one of git's "common" commands, whose prefixes score 0
  assert.deepEqual(mostSimilar('sta', ['add', 'stage', 'stash', 'status', 'show']), ['stage', 'stash', 'status', 'show']);
  assert.deepEqual(mostSimilar('stauts', ['status', 'stash', 'stage']), ['status']);
  assert.deepEqual(mostSimilar('s', ['serve', 'stage']), [], 'a prefix of every candidate is too ambiguous');
  assert.deepEqual(mostSimilar('zzzzzzzz', ['serve', 'demo']), [], 'nothing close');
  // git judges the best non-prefix score even when a prefix matched: nothing under the floor, nothing said
  assert.deepEqual(mostSimilar('ab', ['abcdef', 'zzzzzzzzzz']), []);
});

test("a mistyped command: git's wording, then the most similar one, exit 1", () => {
  const r = run(BIN, ['server']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr.toString(), "gitwire: 'server' is not a gitwire command. See 'gitwire --help'.\n\nThe most similar command is\n\tserve\n");
  // the same shape as git's own
  const g = run('git', ['stauts']);
  assert.equal(g.status, 1);
  assert.match(g.stderr.toString(), /^git: 'stauts' is not a git command\. See 'git --help'\.\n\nThe most similar command is\n\tstatus\n$/);
  const far = run(BIN, ['zzzzzzzzzz']);
  assert.equal(far.stderr.toString(), "gitwire: 'zzzzzzzzzz' is not a gitwire command. See 'gitwire --help'.\n", 'nothing close: no suggestion');
});

test('a mistyped serve flag: unknown option, the closest flags as a hint, exit 129', () => {
  const r = run(BIN, ['serve', t.dir, '--htpaswd', 'x']);
  assert.equal(r.status, 129);
  const err = r.stderr.toString();
  assert.match(err, /^error: unknown option `htpaswd'\nhint: did you mean --htpasswd\?\nusage: gitwire serve/);
  const short = run(BIN, ['serve', '-x']);
  assert.equal(short.status, 129);
  assert.match(short.stderr.toString(), /^error: unknown switch `x'\nusage:/, 'a single letter gets no guess');
});

test("-C <path>: as git's, relative to the one before, an empty one ignored", () => {
  const repo = join(t.dir, 'a', 'repo');
  mkdirSync(join(t.dir, 'a'), { recursive: true });
  git(['init', '-q', repo]);
  git(['-C', repo, 'commit', '-q', '--allow-empty', '-m', 'one']);
  const head = git(['-C', repo, 'rev-parse', 'HEAD']).trim();
  const r = run(BIN, ['-C', t.dir, '-C', 'a', '-C', '', '-C', 'repo', 'cat-file', '-t', head]);
  assert.equal(r.stderr.toString(), '');
  assert.equal(r.stdout.toString(), 'commit\n');
  const missing = run(BIN, ['-C', join(t.dir, 'nope'), 'cat-file', '-t', head]);
  assert.equal(missing.status, 128);
  assert.equal(missing.stderr.toString(), `fatal: cannot change to '${join(t.dir, 'nope')}': No such file or directory\n`);
  const none = run(BIN, ['-C']);
  assert.equal(none.status, 129);
  assert.match(none.stderr.toString(), /^no directory given for '-C' option\nusage: gitwire/);
  // git says the same
  assert.match(run('git', ['-C']).stderr.toString(), /^no directory given for '-C' option\n/);
});

test('a bad --auth-rules file is fatal (128), as a bad --htpasswd file is', () => {
  const ht = join(t.dir, 'htpasswd');
  writeFileSync(ht, 'u:$2y$05$abcdefghijklmnopqrstuuM6Bqk3F4N0bW8F5jX1v1CjJb2GQ7mK\n');
  const rules = join(t.dir, 'rules');
  writeFileSync(rules, 'garbage\n');
  const bad = run(BIN, ['serve', t.dir, '--http', '0', '--htpasswd', ht, '--auth-rules', rules]);
  assert.equal(bad.status, 128);
  assert.match(bad.stderr.toString(), /^fatal: --auth-rules: /);
  const noHt = run(BIN, ['serve', t.dir, '--http', '0', '--htpasswd', join(t.dir, 'none')]);
  assert.equal(noHt.status, 128);
});
