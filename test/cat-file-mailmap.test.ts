/**
 * `cat-file --use-mailmap` (-s, -p, <type> <object>, --batch, --batch-check)
 * and the `mailmap <bool>` --batch-command command (git 2.52+), against git
 * v2.55.0's recorded output: git 2.39 reports sizes before the rewrite.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { git, run, tmp, BIN, type GitOpts } from './helpers/git.js';
import { Recorded } from './helpers/recorded.js';
import { Mailmap } from '../src/catfile/mailmap.js';

const rec = new Recorded('cat-file-mailmap-2.55', '2.55.0');
let t: ReturnType<typeof tmp>;
let repo: string;
let bare: string;

before(() => {
  t = tmp();
  repo = join(t.dir, 'mm');
  git(['init', '-q', '-b', 'main', repo]);
  writeFileSync(join(repo, 'a'), 'a\n');
  writeFileSync(join(repo, '.mailmap'), [
    '# a comment', 'Proper Name <proper@example.com> <AUTHOR@example.com>', '<new@example.com> <committer@EXAMPLE.com>',
    'Other <other@example.com> Nobody <nobody@example.com>', 'Tag Ger <tagger@example.com> C O Mitter <committer@example.com>', '',
  ].join('\n'));
  git(['add', '-A'], { cwd: repo });
  const env = { GIT_AUTHOR_DATE: '1700004000 +0000', GIT_COMMITTER_DATE: '1700004000 +0000' };
  git(['commit', '-q', '-m', 'one'], { cwd: repo, env });
  git(['tag', '-a', '-m', 'a tag', 'v1'], { cwd: repo, env });
  bare = join(t.dir, 'mm.git');
  git(['clone', '-q', '--bare', repo, bare]);
});
after(() => { rec.save(); t.cleanup(); });

function cmp(args: string[], input = '', label = args.join(' '), opts: GitOpts = {}) {
  const cwd = opts.cwd ?? repo;
  const g = rec.git(`${cwd === bare ? 'bare ' : ''}${label}`, ['cat-file', ...args], { ...opts, cwd, input });
  const m = run(BIN, ['cat-file', ...args], { ...opts, cwd, input });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${label}: stderr`);
  assert.equal(m.status, g.status, `${label}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${label}: stdout differs\n ours: ${m.stdout.toString().slice(0, 500)}\n git: ${g.stdout.toString().slice(0, 500)}`);
}

test('--use-mailmap rewrites idents (and sizes) in commits and tags, as git 2.55 (recorded)', () => {
  for (const cwd of [repo, bare]) {
    for (const a of [['-s', 'HEAD'], ['-p', 'HEAD'], ['-p', 'v1'], ['-s', 'v1'], ['commit', 'HEAD'], ['tag', 'v1'], ['tree', 'HEAD'], ['-p', 'HEAD:a'], ['-t', 'HEAD']]) {
      cmp(['--use-mailmap', ...a], '', `--use-mailmap ${a.join(' ')}`, { cwd });
      cmp(['--mailmap', ...a], '', `--mailmap ${a.join(' ')}`, { cwd });
    }
    const input = 'HEAD\nv1\nHEAD^{tree}\nHEAD:a\nnope\n';
    cmp(['--use-mailmap', '--batch'], input, 'batch', { cwd });
    cmp(['--use-mailmap', '--batch-check'], input, 'batch-check', { cwd });
    cmp(['--use-mailmap', '--batch-check=%(objectname) %(objectsize)'], input, 'batch-check size', { cwd });
  }
  const file = join(t.dir, 'mailmap-file');
  writeFileSync(file, 'From File <file@example.com> <author@example.com>\n');
  cmp(['--use-mailmap', '-p', 'HEAD'], '', 'mailmap.file', { env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'mailmap.file', GIT_CONFIG_VALUE_0: file } });
  cmp(['--use-mailmap', '-p', 'HEAD'], '', 'mailmap.blob', { cwd: bare, env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'mailmap.blob', GIT_CONFIG_VALUE_0: 'HEAD:.mailmap' } });
});

test('the `mailmap <bool>` batch command, with and without --buffer (git 2.55, recorded)', () => {
  const cmds = 'info HEAD\nmailmap true\ncontents HEAD\ninfo v1\nmailmap off\ncontents HEAD\nmailmap 1\ninfo HEAD\nmailmap\n';
  for (const args of [['--batch-command'], ['--batch-command', '--buffer']]) {
    const g = rec.git(`mailmap command ${args.join(' ')}`, ['cat-file', ...args], { cwd: repo, input: cmds });
    const m = run(BIN, ['cat-file', ...args], { cwd: repo, input: cmds });
    assert.equal(m.stderr.toString(), g.stderr.toString());
    assert.equal(m.status, g.status);
    assert.equal(m.stdout.toString(), g.stdout.toString());
    const bad = rec.git(`mailmap bogus ${args.join(' ')}`, ['cat-file', ...args], { cwd: repo, input: 'info HEAD\nmailmap bogus\n' });
    const mb = run(BIN, ['cat-file', ...args], { cwd: repo, input: 'info HEAD\nmailmap bogus\n' });
    assert.equal(mb.stderr.toString(), bad.stderr.toString());
    assert.equal(mb.status, bad.status);
    assert.equal(mb.stdout.toString(), bad.stdout.toString());
  }
});

test('map_user: email, then name, matched without regard to ASCII case', () => {
  const m = new Mailmap();
  m.addText(Buffer.from('A <a@new> <A@OLD>\n<only@new> <x@old>\nN <n@new> Who <w@old>\n'), true);
  assert.equal(m.mapUser(Buffer.from('anyone'), Buffer.from('a@old'))?.name.toString(), 'A');
  assert.equal(m.mapUser(Buffer.from('Keep'), Buffer.from('X@old'))?.name.toString(), 'Keep');
  assert.equal(m.mapUser(Buffer.from('Keep'), Buffer.from('X@old'))?.email.toString(), 'only@new');
  assert.equal(m.mapUser(Buffer.from('WHO'), Buffer.from('w@old'))?.email.toString(), 'n@new');
  assert.equal(m.mapUser(Buffer.from('Someone else'), Buffer.from('w@old')), undefined);
});
