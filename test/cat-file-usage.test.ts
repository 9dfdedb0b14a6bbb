/**
 * cat-file's command line, table-driven: every bad combination git 2.55
 * rejects, with its exact message, usage text and exit code (129), and the
 * help output. git 2.39 (installed in CI) words many of these differently,
 * so the expected output is git v2.55.0's, recorded (test/recorded/).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { git, run, tmp, BIN } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { Recorded, installedGitVersion } from './helpers/recorded.js';
import { usageText } from '../src/catfile/options.js';

const rec = new Recorded('cat-file-usage-2.55', '2.55.0');
let t: ReturnType<typeof tmp>;
let repo: string;

before(() => {
  t = tmp();
  repo = join(t.dir, 'r');
  git(['init', '-q', '-b', 'main', repo]);
  commit(repo, 'one', { 'a.txt': 'a\n' });
});
after(() => { rec.save(); t.cleanup(); });

/** [label, argv] — each row runs both gits' cat-file with these arguments (no stdin) */
const ROWS: Array<[string, string[]]> = [
  // two command modes at once
  ['-e -p', ['-e', '-p', 'HEAD']],
  ['-p -t', ['-p', '-t', 'HEAD']],
  ['-t -s', ['-t', '-s', 'HEAD']],
  ['-s --textconv', ['-s', '--textconv', 'HEAD:a.txt']],
  ['--textconv --filters', ['--textconv', '--filters', 'HEAD:a.txt']],
  ['--batch-all-objects -e', ['--batch-all-objects', '-e', 'HEAD']],
  ['bundled -pe', ['-pe', 'HEAD']],
  ['same mode twice is fine', ['-t', '-t', 'HEAD']],
  // --path misuse
  ['--path with --batch', ['--path=a.txt', '--batch']],
  ['--path with --batch-check', ['--path=a.txt', '--batch-check']],
  ['--path with -e', ['--path=a.txt', '-e', 'HEAD']],
  ['--path with -p', ['--path=a.txt', '-p', 'HEAD']],
  ['--path with -t', ['--path=a.txt', '-t', 'HEAD']],
  ['--path with -s', ['--path=a.txt', '-s', 'HEAD']],
  ['--path without a value', ['--textconv', '--path']],
  // a mode without its object
  ['--textconv alone', ['--textconv']],
  ['--filters alone', ['--filters']],
  ['-e alone', ['-e']],
  ['-p alone', ['-p']],
  ['-t alone', ['-t']],
  ['-s alone', ['-s']],
  ['--textconv without a path', ['--textconv', 'HEAD']],
  // too many arguments
  ['-e one two three', ['-e', 'one', 'two', 'three']],
  ['<type> <object> extra', ['blob', 'HEAD:a.txt', 'x']],
  ['<type> alone', ['blob']],
  ['no arguments', []],
  // transforms with batch-only options
  ['--textconv --buffer', ['--textconv', '--buffer', 'HEAD:a.txt']],
  ['--filters --follow-symlinks', ['--filters', '--follow-symlinks', 'HEAD:a.txt']],
  ['--textconv --batch-all-objects', ['--textconv', '--batch-all-objects']],
  ['--buffer alone', ['--buffer', '-t', 'HEAD']],
  ['--follow-symlinks alone', ['--follow-symlinks', '-t', 'HEAD']],
  ['--batch-all-objects alone', ['--batch-all-objects']],
  ['-z alone', ['-z', '-t', 'HEAD']],
  ['-Z alone', ['-Z', '-t', 'HEAD']],
  // batch mode conflicts
  ['two batch modes', ['--batch', '--batch-check']],
  ['-e with --batch', ['--batch', '-e']],
  ['argument with --batch', ['--batch', 'HEAD']],
  ['--no-batch', ['--no-batch']],
  // parse-options itself
  ['unknown long option', ['--bogus']],
  ['unknown long option with a value', ['--bogus=1']],
  ['unknown switch', ['-x']],
  ['single-dash long option', ['-batch']],
  ['single-dash -path', ['-path']],
  ['ambiguous abbreviation', ['--batch-c']],
  ['abbreviation', ['--batch-ch', '--batch-all-objects']],
  ['--no-no-batch', ['--no-no-batch']],
  ['--no-textconv', ['--no-textconv']],
  ['takes no value', ['--buffer=1', '--batch']],
  ['-h', ['-h']],
  ['-h after options', ['-e', '-h']],
  ['--help-all', ['--help-all']],
  ['--end-of-options', ['--end-of-options', '-t']],
  ['--allow-unknown-type is a no-op', ['--allow-unknown-type', '-t', 'HEAD']],
  // --filter
  ['--filter without a batch mode', ['--filter=blob:none', '-t', 'HEAD']],
  ['--filter=tree:1', ['--filter=tree:1', '--batch-check']],
  ['--filter=sparse:oid', ['--filter=sparse:oid=HEAD:a.txt', '--batch-check']],
  ['--filter=sparse:path', ['--filter=sparse:path=x', '--batch-check']],
  ['--filter=bogus', ['--filter=bogus', '--batch-check']],
  ['--filter twice (combine)', ['--filter=blob:none', '--filter=blob:limit=1', '--batch-check']],
  ['--filter=combine:', ['--filter=combine:blob:none+tree:0', '--batch-check']],
  ['--filter=auto', ['--filter=auto', '--batch-check']],
  ['--filter=object:type=bad', ['--filter=object:type=bad', '--batch-check']],
  ['--filter=blob:limit=x', ['--filter=blob:limit=x', '--batch-check']],
  ['--filter=blob:limit=-1', ['--filter=blob:limit=-1', '--batch-check']],
  ['--filter=tree:x', ['--filter=tree:x', '--batch-check']],
  ['--no-filter', ['--filter=tree:1', '--no-filter', '-t', 'HEAD']],
];

test('cat-file usage errors: git 2.55 messages, usage text and exit codes, row by row', () => {
  const live = installedGitVersion()[0] > 2 || (installedGitVersion()[0] === 2 && installedGitVersion()[1] >= 55);
  for (const [label, args] of ROWS) {
    const want = live ? run('git', ['cat-file', ...args], { cwd: repo }) : rec.git(`usage: ${label}`, ['cat-file', ...args], { cwd: repo });
    const got = run(BIN, ['cat-file', ...args], { cwd: repo });
    assert.equal(got.stderr.toString(), want.stderr.toString(), `${label}: stderr`);
    assert.equal(got.stdout.toString(), want.stdout.toString(), `${label}: stdout`);
    assert.equal(got.status, want.status, `${label}: exit code`);
  }
});

test('the usage text is generated from the option table and matches git 2.55 (-h)', () => {
  const want = rec.git('usage: -h', ['cat-file', '-h'], { cwd: repo });
  assert.equal(usageText(), want.stdout.toString());
  assert.match(usageText(true), /^ {4}-z {20}stdin is NUL-terminated$/m); // hidden options show with --help-all
});

test('-h works outside a repository; other errors need one first, as in git', () => {
  const h = run(BIN, ['cat-file', '-h'], { cwd: t.dir });
  assert.equal(h.status, 129);
  assert.equal(h.stdout.toString(), usageText());
  const e = run(BIN, ['cat-file', '-e', '-p'], { cwd: t.dir });
  assert.equal(e.status, 128);
  assert.match(e.stderr.toString(), /not a git repository/);
});
