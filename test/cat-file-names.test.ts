/**
 * cat-file against git: object names (replace refs, `:/<regex>`, reflog
 * `@{…}`, describe names), names and stdin as bytes, --batch-command
 * buffering, and git's errors. Compared live with the installed git where
 * it behaves as git 2.55 does; otherwise with git v2.55.0's recorded output.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { git, run, tmp, BIN, type GitOpts } from './helpers/git.js';
import { Recorded } from './helpers/recorded.js';

const rec = new Recorded('cat-file-names-2.55', '2.55.0');
let t: ReturnType<typeof tmp>;
let repo: string;
let head: string;
const at = (n: number) => ({ GIT_AUTHOR_DATE: `${1700001000 + n * 60} +0000`, GIT_COMMITTER_DATE: `${1700001000 + n * 60} +0000` });

before(() => {
  t = tmp();
  repo = join(t.dir, 'names');
  git(['init', '-q', '-b', 'main', repo]);
  const c = (n: number, msg: string, files: Record<string, string>) => {
    for (const [f, v] of Object.entries(files)) { mkdirSync(join(repo, f, '..'), { recursive: true }); writeFileSync(join(repo, f), v); }
    git(['add', '-A'], { cwd: repo });
    git(['commit', '-q', '-m', msg], { cwd: repo, env: at(n) });
  };
  c(1, 'first commit', { 'a.txt': 'a\n', 'ünï.txt': 'unicode name\n', 'dir/b.txt': 'b\n' });
  c(2, 'second: a needle in a haystack', { 'a.txt': 'a2\n' });
  git(['branch', 'brånch'], { cwd: repo, env: at(3) });
  git(['checkout', '-q', 'brånch'], { cwd: repo, env: at(3) });
  c(4, 'on the branch', { 'c.txt': 'c\n' });
  git(['checkout', '-q', 'main'], { cwd: repo, env: at(5) });
  c(6, 'third', { 'a.txt': 'a3\n' });
  git(['tag', '-a', '-m', 'tag one', 'v1', 'HEAD~1'], { cwd: repo, env: at(7) });
  // a gitlink to a commit this repository does not have
  git(['update-index', '--add', '--cacheinfo', `160000,${'1234567890'.repeat(4)},sub`], { cwd: repo });
  git(['commit', '-q', '-m', 'add a submodule entry'], { cwd: repo, env: at(8) });
  // replace the first commit with the branch commit, and a.txt's blob with c.txt's
  git(['replace', 'HEAD~3', 'brånch'], { cwd: repo, env: at(9) });
  git(['replace', git(['rev-parse', 'HEAD:a.txt'], { cwd: repo }).trim(), git(['rev-parse', 'brånch:c.txt'], { cwd: repo }).trim()], { cwd: repo, env: at(9) });
  head = git(['rev-parse', 'HEAD'], { cwd: repo }).trim();
});
after(() => { rec.save(); t.cleanup(); });

function cmp(args: string[], input: string | Buffer, label = args.join(' '), opts: GitOpts = {}) {
  const g = run('git', ['cat-file', ...args], { cwd: repo, input, ...opts });
  const m = run(BIN, ['cat-file', ...args], { cwd: repo, input, ...opts });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${label}: stderr`);
  assert.equal(m.status, g.status, `${label}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${label}: stdout differs\n ours: ${m.stdout.toString().slice(0, 600)}\n git: ${g.stdout.toString().slice(0, 600)}`);
}

/** against git 2.55's recorded answer */
function cmpRecorded(key: string, args: string[], input: string | Buffer, opts: GitOpts = {}) {
  const g = rec.git(key, ['cat-file', ...args], { cwd: repo, input, ...opts });
  const m = run(BIN, ['cat-file', ...args], { cwd: repo, input, ...opts });
  assert.equal(m.stderr.toString('latin1'), g.stderr.toString('latin1'), `${key}: stderr`);
  assert.equal(m.status, g.status, `${key}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${key}: stdout differs\n ours: ${m.stdout.toString().slice(0, 600)}\n git: ${g.stdout.toString().slice(0, 600)}`);
}

const NAMES = [
  'HEAD', 'HEAD:ünï.txt', 'brånch', 'brånch:ünï.txt', 'refs/heads/brånch', 'brånch~1:dir/b.txt',
  'HEAD@{0}', 'HEAD@{1}', 'HEAD@{2}', 'main@{0}', 'main@{1}', 'main@{2}', 'brånch@{1}', '@{0}', '@{1}', '@{-1}', '@{-1}~1', '@{-2}', '@', '@~1',
  ':/needle', ':/^second', ':/!-first', ':/!!x', ':/nomatch', 'HEAD^{/needle}', 'HEAD^{/}', 'HEAD~2^{/first}',
  'HEAD~3', 'HEAD~3^{tree}', 'HEAD~3:a.txt', 'HEAD:a.txt', 'HEAD~4', 'v1', 'v1^{}', 'v1-1-gdeadbeef', 'HEAD:sub/x',
  'HEAD:nope', 'nope', 'HEAD:dir/', 'HEAD:./a.txt', 'refs/heads/', '.', '..',
];

test('names: replace refs, :/regex, @{…} reflogs and non-ASCII names resolve as in git', () => {
  const input = `${NAMES.join('\n')}\n`;
  cmp(['--batch'], input);
  cmp(['--batch-check'], input);
  cmp(['--batch-check=%(objectname) %(objecttype) %(rest)'], NAMES.map((n) => `${n} rest of ${n}`).join('\n') + '\n', 'with %(rest)');
  cmp(['--batch-command'], NAMES.map((n, i) => `${i % 2 ? 'info' : 'contents'} ${n}`).join('\n') + '\n', 'batch-command');
});

test('replace refs are off with GIT_NO_REPLACE_OBJECTS, core.useReplaceRefs=false, and for --batch-all-objects', () => {
  const input = 'HEAD~3\nHEAD~3^{tree}\nHEAD:a.txt\nHEAD~3:a.txt\n';
  cmp(['--batch'], input, 'no replace (env)', { env: { GIT_NO_REPLACE_OBJECTS: '1' } });
  cmp(['--batch'], input, 'no replace (config)', { env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.useReplaceRefs', GIT_CONFIG_VALUE_0: 'false' } });
  cmp(['--batch-all-objects', '--batch'], '');
  for (const m of ['-t', '-s', '-p', '-e']) cmp([m, 'HEAD~3'], '', `${m} replaced commit`);
  cmp(['blob', 'HEAD:a.txt'], '');
  cmp(['commit', 'HEAD~3'], '');
});

test('single-object modes: git\'s messages for bogus full and short ids, missing paths and reflog limits', () => {
  const cases = ['1'.repeat(40), '1111111', 'deadbeef', 'HEAD:nope', 'nope:x', 'HEAD:./nope', 'main@{99}', 'brånch@{9}', '@{-9}', ':/nomatch', 'HEAD:ünï.txt', 'brånch'];
  for (const n of cases) for (const m of ['-t', '-s', '-p', '-e']) cmp([m, n], '', `${m} ${n}`);
  for (const n of ['1'.repeat(40), 'HEAD:nope']) cmp(['blob', n], '', `blob ${n}`);
  cmp(['--batch-check'], 'main@{99}\n', 'reflog limit in batch mode dies');
});

test('stdin is bytes: invalid UTF-8, NULs, CR LF and an unterminated last line', () => {
  const input = Buffer.concat([
    Buffer.from('HEAD:\xff\xfe.txt\n', 'latin1'),
    Buffer.from('br\xc3\xa5nch\n', 'latin1'),
    Buffer.from('HEAD\x00ignored after NUL\n', 'latin1'),
    Buffer.from('HEAD:ünï.txt\r\n'),
    Buffer.from('\xe9t\xe9\n', 'latin1'),
    Buffer.from('HEAD\r', 'latin1'),
  ]);
  cmp(['--batch-check'], input, 'bytes');
  cmp(['--batch'], input, 'bytes (contents)');
  cmp(['--batch-check=%(objectname) [%(rest)]'], Buffer.concat([Buffer.from('HEAD \t r\xe9st\n', 'latin1'), Buffer.from('HEAD\t\n')]), 'rest bytes');
  cmp(['-z', '--batch-check'], Buffer.from('HEAD\r\0brånch\0HEAD:ünï.txt'), '-z');
  cmp(['--batch-command'], Buffer.from('info br\xe5nch\nbogus \xff\n', 'latin1'), 'latin1 in a command');
});

test('--batch-command: flush and --buffer keep git\'s order, with and without a final flush', () => {
  const cmds = ['info HEAD', 'contents HEAD:a.txt', 'info nope', 'contents brånch', 'info HEAD:sub/x'];
  cmp(['--batch-command', '--buffer'], [...cmds, 'flush', ...cmds].join('\n') + '\n', 'flush in the middle');
  cmp(['--batch-command', '--buffer'], [...cmds, 'flush'].join('\n') + '\n', 'flush at the end');
  cmp(['--batch-command', '--buffer'], cmds.join('\n') + '\n', 'no flush: dispatched at the end');
  cmp(['--batch-command', '--buffer'], cmds.join('\n'), 'no flush, no final newline');
  cmp(['--batch-command', '--buffer'], [...cmds, 'bogus'].join('\n') + '\n', 'error after queued commands: nothing of the queue is printed');
  cmp(['--batch-command', '--buffer'], [cmds[0], 'flush', 'bogus'].join('\n') + '\n', 'error after a flush');
  cmp(['--batch-command'], [...cmds, 'flush'].join('\n') + '\n', 'flush without --buffer');
  cmp(['--batch-command', '--buffer'], ['flush', 'flush', ...cmds].join('\n') + '\n', 'empty flushes');
});

test('git 2.55: -Z with --batch-command, %(objectmode), and submodule entries (recorded)', () => {
  cmpRecorded('-Z batch-command buffer', ['--batch-command', '--buffer', '-Z'], ['info HEAD', 'contents HEAD:a.txt', 'flush', 'info nope'].join('\0') + '\0');
  const input = 'HEAD:sub\nHEAD:a.txt\nHEAD:dir\nHEAD\nHEAD:ünï.txt\nHEAD:nope\n:sub\n:a.txt\n';
  cmpRecorded('objectmode', ['--batch-check=%(objectname) %(objectmode) %(objecttype)'], input);
  cmpRecorded('objectmode only', ['--batch-check=[%(objectmode)]'], input);
  cmpRecorded('submodule batch-check', ['--batch-check'], input);
  cmpRecorded('submodule batch', ['--batch'], input);
  cmpRecorded('submodule follow-symlinks', ['--batch-check', '--follow-symlinks'], input);
  cmpRecorded('format errors', ['--batch-check=%(objectname) %(bogus)'], input);
  cmpRecorded('format unterminated', ['--batch-check=%(objectname'], input);
  cmpRecorded('-t submodule', ['-t', 'HEAD:sub'], '');
});

test('unreadable loose objects: a zlib preset dictionary and a bogus type, as git 2.55 (recorded)', () => {
  const d = join(t.dir, 'corrupt');
  git(['init', '-q', '-b', 'main', d]);
  writeFileSync(join(d, 'file'), 'content that will be recompressed\n');
  const blob = git(['hash-object', '-w', 'file'], { cwd: d }).trim();
  const p = join(d, '.git', 'objects', blob.slice(0, 2), blob.slice(2));
  chmodSync(p, 0o644);
  writeFileSync(p, Buffer.from([0o170, 0o273, 0o017, 0o112, 0o003, 0o143])); // asks for a dictionary
  // a loose object of type "bogus" (written directly: git ≥ 2.50 refuses to make one)
  const raw = Buffer.from('bogus 6\0hello\n', 'latin1');
  const bogus = createHash('sha1').update(raw).digest('hex');
  mkdirSync(join(d, '.git', 'objects', bogus.slice(0, 2)), { recursive: true });
  writeFileSync(join(d, '.git', 'objects', bogus.slice(0, 2), bogus.slice(2)), deflateSync(raw));
  const opts = { cwd: d };
  const both = (key: string, args: string[], input = '') => {
    const g = rec.git(key, ['cat-file', ...args], { ...opts, input });
    const m = run(BIN, ['cat-file', ...args], { ...opts, input });
    assert.equal(m.stderr.toString(), g.stderr.toString(), `${key}: stderr`);
    assert.equal(m.status, g.status, `${key}: status`);
    assert.equal(m.stdout.toString(), g.stdout.toString(), `${key}: stdout`);
  };
  for (const m of ['-t', '-s', '-p', '-e']) { both(`dict ${m}`, [m, blob]); both(`bogus ${m}`, [m, bogus]); }
  for (const ty of ['blob', 'commit']) { both(`dict ${ty}`, [ty, blob]); both(`bogus ${ty}`, [ty, bogus]); }
  both('dict batch', ['--batch'], `${blob}\n`);
  both('dict batch-check', ['--batch-check'], `${blob}\n`);
  both('dict name only', ['--batch-check=%(objectname)'], `${blob}\n`);
  both('bogus batch-check', ['--batch-check'], `${bogus}\n`);
  both('dict and bogus all objects', ['--batch-all-objects', '--batch-check=%(objectname)']);
  both('bogus --allow-unknown-type', ['--allow-unknown-type', '-t', bogus]);
  assert.ok(head.length === 40);
});

// extensions.compatObjectFormat is served: test/parity-cat-file-compat.test.ts

test('index names (:<path>, :<stage>:<path>, :./<path>) and git\'s diagnoses for missing paths, index v2 and v4', () => {
  const sub = join(repo, 'dir');
  writeFileSync(join(repo, 'untracked.txt'), 'not added\n');
  try {
    for (const v of ['2', '4']) {
      git(['update-index', '--index-version', v], { cwd: repo });
      const input = [':a.txt', ':0:a.txt', ':1:a.txt', ':ünï.txt', ':dir/b.txt', ':nope', ':untracked.txt', ':./a.txt'].join('\n') + '\n';
      cmp(['--batch-check=%(objectname) %(objecttype)'], input, `index v${v} batch`); // %(objectmode) needs git 2.44+: see the recorded objectmode cases
      for (const n of [':a.txt', ':1:a.txt', ':nope', ':untracked.txt', ':dir/b.txt', ':ünï.txt']) cmp(['-p', n], '', `index v${v} -p ${n}`);
      for (const n of [':b.txt', ':./b.txt', ':../a.txt', 'HEAD:b.txt', 'HEAD:./b.txt', 'HEAD:../a.txt', ':nope']) cmp(['-p', n], '', `from a subdirectory: -p ${n}`, { cwd: sub });
      for (const n of ['HEAD:untracked.txt', 'HEAD:nope', 'HEAD:a.txt/x']) cmp(['-t', n], '', `-t ${n}`);
    }
  } finally {
    git(['update-index', '--index-version', '2'], { cwd: repo });
  }
});
