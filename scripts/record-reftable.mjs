#!/usr/bin/env node
/**
 * Re-records the reftable stacks of test/recorded/reftable/ with a git
 * that writes reftable (>= 2.45; the installed 2.39 cannot):
 *
 *   GITWIRE_GIT_2_55=/path/to/git-2.55-prefix node scripts/record-reftable.mjs
 *
 * Each case is a list of git commands (`recipe.json`) run in a new
 * `--ref-format=reftable` repository with fixed identities and dates and
 * auto-compaction off (so the stack keeps several tables, tombstones
 * included); then its `reftable/` directory is copied, and what git 2.55
 * says about it is written to `expected.json`: every ref (id, symref
 * target, peeled id), HEAD, and each reflog. The test replays the recipe
 * with the installed git to make the same objects (fixed dates: the same
 * ids) and reads the recorded stack over them.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'test', 'recorded', 'reftable');
const prefix = process.env.GITWIRE_GIT_2_55;
if (!prefix) { console.error('set GITWIRE_GIT_2_55 to the install prefix of a git >= 2.45'); process.exit(2); }
const GIT = join(prefix, 'bin', 'git');

const env = {
  PATH: process.env.PATH, HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'A U Thor', GIT_AUTHOR_EMAIL: 'author@example.com', GIT_COMMITTER_NAME: 'C O Mitter', GIT_COMMITTER_EMAIL: 'committer@example.com',
  GIT_AUTHOR_DATE: '1700000000 +0130', GIT_COMMITTER_DATE: '1700000000 +0130', LC_ALL: 'C', GIT_TEST_REFTABLE_AUTOCOMPACTION: 'false',
};

const many = [];
for (let i = 0; i < 300; i++) many.push(['update-ref', `refs/changes/${String(i % 7)}/${i}/head`, 'HEAD']);

/** the cases: name, object format, extra config, commands (run in the work tree) */
const CASES = [
  ['small-sha1', 'sha1', [], [
    ['commit', '-q', '--allow-empty', '-m', 'one'],
    ['tag', '-a', '-m', 'annotated', 'v1'],
    ['tag', 'light'],
    ['branch', 'side'],
    ['commit', '-q', '--allow-empty', '-m', 'two'],
    ['branch', 'gone'],
    ['symbolic-ref', 'refs/heads/alias', 'refs/heads/side'],
    ['update-ref', '-m', 'moved by hand', 'refs/heads/side', 'HEAD'],
    ['update-ref', '-d', 'refs/heads/gone'],
    ['update-ref', 'refs/namespaces/ns/refs/heads/main', 'HEAD~1'],
    ['symbolic-ref', 'refs/namespaces/ns/HEAD', 'refs/namespaces/ns/refs/heads/main'],
  ]],
  ['small-sha256', 'sha256', [], [
    ['commit', '-q', '--allow-empty', '-m', 'one'],
    ['tag', '-a', '-m', 'annotated', 'v1'],
    ['commit', '-q', '--allow-empty', '-m', 'two'],
    ['branch', 'side', 'HEAD~1'],
    ['update-ref', '-d', 'refs/tags/v1'],
  ]],
  ['blocks-sha1', 'sha1', [['reftable.blockSize', '512'], ['reftable.restartInterval', '4'], ['core.logAllRefUpdates', 'always']], [
    ['commit', '-q', '--allow-empty', '-m', 'one'],
    ['tag', '-a', '-m', 'annotated', 'v1'],
    ...many,
    ['pack-refs'],
    ['commit', '-q', '--allow-empty', '-m', 'two'],
    ['update-ref', '-d', 'refs/changes/3/3/head'],
    ['update-ref', 'refs/changes/5/5/head', 'HEAD'],
  ]],
];

function git(args, cwd, input) {
  return execFileSync(GIT, args, { cwd, env, input, encoding: 'utf8', maxBuffer: 1 << 28 });
}

rmSync(OUT, { recursive: true, force: true });
for (const [name, format, config, recipe] of CASES) {
  const tmp = mkdtempSync(join(tmpdir(), 'record-reftable-'));
  try {
    const w = join(tmp, 'w');
    git(['init', '-q', '-b', 'main', '--ref-format=reftable', `--object-format=${format}`, w], tmp);
    for (const [k, v] of config) git(['config', k, v], w);
    for (const c of recipe) git(c, w);
    const refs = git(['for-each-ref', '--format=%(objectname) %(refname) %(symref) %(*objectname)'], w)
      .split('\n').filter(Boolean).map((l) => { const [oid, ref, symref, peeled] = l.split(' '); return { oid, ref, symref: symref || undefined, peeled: peeled || undefined }; });
    const head = git(['symbolic-ref', 'HEAD'], w).trim();
    const reflogs = {};
    for (const r of ['HEAD', ...refs.map((x) => x.ref)]) {
      let out = '';
      try { out = git(['reflog', 'show', '--format=%H %ct %gs', r], w); } catch { continue; }
      const lines = out.split('\n').filter(Boolean);
      if (lines.length) reflogs[r] = lines;
    }
    const dir = join(OUT, name);
    mkdirSync(dir, { recursive: true });
    cpSync(join(w, '.git', 'reftable'), join(dir, 'reftable'), { recursive: true });
    writeFileSync(join(dir, 'recipe.json'), `${JSON.stringify({ format, config, recipe }, null, 1)}\n`);
    writeFileSync(join(dir, 'expected.json'), `${JSON.stringify({ git: git(['version'], w).trim(), head, refs, reflogs }, null, 1)}\n`);
    console.log(`${name}: ${readdirSync(join(dir, 'reftable')).length - 1} tables, ${refs.length} refs`);
  } finally { rmSync(tmp, { recursive: true, force: true }); }
}
