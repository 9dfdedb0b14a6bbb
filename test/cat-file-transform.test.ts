/**
 * --textconv, --filters and --path, alone and with --batch/--batch-check/
 * --batch-command: .gitattributes drivers, diff.<driver>.textconv, smudge
 * filters, ident, end-of-line conversion and working-tree-encoding, in the
 * work tree, a subdirectory and a bare repository. Compared live with git
 * where the installed git behaves as git 2.55; recorded from git v2.55.0
 * where it does not (bare repositories, failing filters).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { git, run, tmp, BIN, type GitOpts } from './helpers/git.js';
import { Recorded } from './helpers/recorded.js';

const rec = new Recorded('cat-file-transform-2.55', '2.55.0');
let t: ReturnType<typeof tmp>;
let repo: string;
let bare: string;

const ATTRS = [
  '*.up diff=upper', '*.crlf text eol=crlf', '*.id ident', '*.sm filter=rot', '*.auto text=auto eol=crlf', '*.bin binary',
  'dir/*.x diff=upper', '*.u16 working-tree-encoding=UTF-16LE', '*.nodrv diff=nosuchdriver', '"quoted name.up" diff=upper',
].join('\n') + '\n';

before(() => {
  t = tmp();
  repo = join(t.dir, 'tx');
  git(['init', '-q', '-b', 'main', repo]);
  const files: Record<string, string | Buffer> = {
    '.gitattributes': ATTRS, 'a.up': 'hello\nworld\n', 'b.crlf': 'l1\nl2\n', 'c.id': '$Id$\nx $Id: old $\n', 'd.sm': 'abcabc\n',
    'e.auto': 'one\ntwo\n', 'f.bin': 'bin\n', 'dir/g.x': 'deep\n', 'h.txt': 'plain\n', 'i.u16': Buffer.from('wide\n', 'utf16le'),
    'j.nodrv': 'no driver\n', 'quoted name.up': 'spaced\n', 'ünï.up': 'ünïcode\n',
  };
  for (const [f, v] of Object.entries(files)) { mkdirSync(join(repo, f, '..'), { recursive: true }); writeFileSync(join(repo, f), v); }
  symlinkSync('a.up', join(repo, 'link'));
  git(['config', 'diff.upper.textconv', 'tr a-z A-Z <'], { cwd: repo });
  git(['config', 'filter.rot.smudge', 'tr a-c x-z'], { cwd: repo });
  git(['config', 'filter.rot.clean', 'cat'], { cwd: repo });
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-q', '-m', 'files'], { cwd: repo, env: { GIT_AUTHOR_DATE: '1700003000 +0000', GIT_COMMITTER_DATE: '1700003000 +0000' } });
  bare = join(t.dir, 'tx.git');
  git(['clone', '-q', '--bare', repo, bare]);
  git(['config', 'diff.upper.textconv', 'tr a-z A-Z <'], { cwd: bare });
  git(['config', 'filter.rot.smudge', 'tr a-c x-z'], { cwd: bare });
});
after(() => { rec.save(); t.cleanup(); });

function cmp(args: string[], input: string, label = args.join(' '), opts: GitOpts = {}) {
  const cwd = opts.cwd ?? repo;
  const g = run('git', ['cat-file', ...args], { ...opts, cwd, input });
  const m = run(BIN, ['cat-file', ...args], { ...opts, cwd, input });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${label}: stderr`);
  assert.equal(m.status, g.status, `${label}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${label}: stdout differs\n ours: ${JSON.stringify(m.stdout.toString().slice(0, 500))}\n git: ${JSON.stringify(g.stdout.toString().slice(0, 500))}`);
}

function cmpRecorded(key: string, args: string[], input = '', opts: GitOpts = {}) {
  const cwd = opts.cwd ?? repo;
  const g = rec.git(key, ['cat-file', ...args], { ...opts, cwd, input });
  const m = run(BIN, ['cat-file', ...args], { ...opts, cwd, input });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${key}: stderr`);
  assert.equal(m.status, g.status, `${key}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${key}: stdout differs\n ours: ${JSON.stringify(m.stdout.toString().slice(0, 500))}\n git: ${JSON.stringify(g.stdout.toString().slice(0, 500))}`);
}

const PATHS = ['a.up', 'b.crlf', 'c.id', 'd.sm', 'e.auto', 'f.bin', 'dir/g.x', 'h.txt', 'i.u16', 'j.nodrv', 'quoted name.up', 'ünï.up', 'link'];

test('--textconv and --filters on <rev>:<path>, and with --path=<path> <rev>', () => {
  for (const p of PATHS) {
    for (const m of ['--textconv', '--filters']) {
      cmp([m, `HEAD:${p}`], '');
      cmp([m, `--path=${p}`, 'HEAD:h.txt'], '');
    }
  }
  cmp(['--textconv', 'HEAD'], '', 'a commit without a path');
  cmp(['--textconv', '--path=a.up', 'HEAD'], '', 'textconv runs on whatever object --path names');
  cmp(['--textconv', '--path=a.up', 'HEAD^{tree}'], '');
  cmp(['--filters', '--path=a.up', 'HEAD'], '');
  cmp(['--filters', 'HEAD:dir'], '');
  cmp(['--textconv', 'HEAD:nope'], '');
  cmp(['--textconv', 'HEAD:./dir/g.x'], '', 'relative path from the top');
  cmp(['--textconv', 'HEAD:./g.x'], '', 'relative path from a subdirectory', { cwd: join(repo, 'dir') });
  cmp(['--filters', 'HEAD:../b.crlf'], '', '.. from a subdirectory', { cwd: join(repo, 'dir') });
});

test('--textconv/--filters with --batch, --batch-check and --batch-command use the path in %(rest)', () => {
  const input = PATHS.map((p) => `HEAD:${p} ${p}`).join('\n') + '\nHEAD:a.up other.txt\nHEAD HEAD\nHEAD:nope x\n';
  for (const m of ['--textconv', '--filters']) {
    cmp(['--batch', m], input);
    cmp(['--batch-check', m], input);
    cmp(['--batch=%(objectname) %(objecttype) %(rest)', m], input);
    // --batch-command does not split its arguments: no path, so a blob's contents die
    cmp(['--batch-command', m], input.split('\n').filter(Boolean).map((l, i) => `${i % 2 ? 'info' : 'contents'} ${l}`).join('\n') + '\n');
    cmp(['--batch-command', m], 'info HEAD:a.up\ncontents HEAD\ncontents HEAD:a.up\n', `${m}: batch-command without a path`);
    cmp(['--batch', '--buffer', m], input);
  }
  cmp(['--batch', '--textconv'], 'HEAD:a.up\n', 'a blob without a path dies');
});

test('end-of-line settings: core.autocrlf, core.eol and info/attributes', () => {
  const env = (pairs: Array<[string, string]>) => ({ GIT_CONFIG_COUNT: String(pairs.length), ...Object.fromEntries(pairs.flatMap(([k, v], i) => [[`GIT_CONFIG_KEY_${i}`, k], [`GIT_CONFIG_VALUE_${i}`, v]])) });
  for (const cfg of [[['core.autocrlf', 'true']], [['core.autocrlf', 'input']], [['core.eol', 'crlf']], [['core.autocrlf', 'false'], ['core.eol', 'crlf']]] as Array<Array<[string, string]>>) {
    for (const p of ['h.txt', 'e.auto', 'b.crlf', 'f.bin']) cmp(['--filters', `HEAD:${p}`], '', `${JSON.stringify(cfg)} ${p}`, { env: env(cfg) });
  }
  mkdirSync(join(repo, '.git', 'info'), { recursive: true });
  writeFileSync(join(repo, '.git', 'info', 'attributes'), '*.txt text eol=crlf\n*.up -diff\n');
  try {
    cmp(['--filters', 'HEAD:h.txt'], '', 'info/attributes wins');
    cmp(['--textconv', 'HEAD:a.up'], '', 'info/attributes -diff');
  } finally {
    writeFileSync(join(repo, '.git', 'info', 'attributes'), '');
  }
});

test('bare repositories and failing drivers, as git 2.55 (recorded)', () => {
  const input = PATHS.map((p) => `HEAD:${p} ${p}`).join('\n') + '\n';
  cmpRecorded('bare batch textconv', ['--batch', '--textconv'], input, { cwd: bare });
  cmpRecorded('bare batch filters', ['--batch', '--filters'], input, { cwd: bare });
  cmpRecorded('bare GIT_ATTR_SOURCE', ['--batch', '--textconv'], input, { cwd: bare, env: { GIT_ATTR_SOURCE: 'HEAD' } });
  cmpRecorded('bare relative path', ['-p', 'HEAD:./a.up'], '', { cwd: bare });
  const cfg = (k: string, v: string) => ({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: k, GIT_CONFIG_VALUE_0: v });
  cmpRecorded('failing textconv', ['--textconv', 'HEAD:a.up'], '', { env: cfg('diff.upper.textconv', 'false') });
  cmpRecorded('failing textconv in batch', ['--batch', '--textconv'], 'HEAD:h.txt h.txt\nHEAD:a.up a.up\nHEAD:h.txt h.txt\n', { env: cfg('diff.upper.textconv', 'false') });
  cmpRecorded('failing smudge', ['--filters', 'HEAD:d.sm'], '', { env: cfg('filter.rot.smudge', 'false') });
  const required = { GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'filter.rot.smudge', GIT_CONFIG_VALUE_0: 'false', GIT_CONFIG_KEY_1: 'filter.rot.required', GIT_CONFIG_VALUE_1: 'true' };
  cmpRecorded('failing required smudge', ['--filters', 'HEAD:d.sm'], '', { env: required });
  cmpRecorded('failing required smudge in batch', ['--batch', '--filters'], 'HEAD:h.txt h.txt\nHEAD:d.sm d.sm\n', { env: required });
});
