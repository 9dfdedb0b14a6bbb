/**
 * The reference-transaction hook for both ref backends: states
 * (preparing, prepared, committed, aborted), git's stdin lines, the
 * files backend's nested packed-refs transaction for deletions, and a
 * hook that refuses in "prepared" leaves every ref as it was.
 *
 * On the files backend the expected log is git 2.55's, recorded here as
 * its shape (CI's git 2.39 has no "preparing" state); with
 * GITWIRE_GIT_2_55 the same pushes go to git's own receive-pack too, for
 * files and reftable twins, and the logs are compared.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';

const t = tmp('gitwire-reftx-hook-');
after(() => t.cleanup());
const PREFIX = process.env.GITWIRE_GIT_2_55;
const ORACLE = PREFIX ? join(PREFIX, 'bin', 'git') : '';
const oracleSkip = ORACLE && existsSync(ORACLE) ? false : 'needs git 2.55: set GITWIRE_GIT_2_55 to its install prefix';
const Z = '0'.repeat(40);

function logHook(repo: string, log: string, exitIn = ''): void {
  const p = join(repo, 'hooks', 'reference-transaction');
  writeFileSync(p, `#!/bin/sh\necho "== $*" >>'${log}'\ncat >>'${log}'\n${exitIn ? `test "$1" = ${exitIn} && exit 1\n` : ''}exit 0\n`);
  chmodSync(p, 0o755);
}

function server(gitBin: string, name: string, work: string, format: string): string {
  const d = join(t.dir, name);
  const r = spawnSync(gitBin, ['clone', '-q', '--bare', ...(format === 'reftable' ? ['--ref-format=reftable'] : []), work, d], { env: gitEnv, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  // p1 packed; l1 packed and then loose (files); both in the stack (reftable)
  spawnSync(gitBin, ['pack-refs', '--all'], { cwd: d, env: gitEnv });
  spawnSync(gitBin, ['update-ref', 'refs/heads/l1', 'refs/heads/main~1'], { cwd: d, env: gitEnv });
  return d;
}

function makeWork(): { work: string; base: string; prev: string } {
  const work = join(t.dir, `work-${Math.random().toString(36).slice(2)}`);
  git(['init', '-q', '-b', 'main', work]);
  git(['commit', '-q', '--allow-empty', '-m', 'one'], { cwd: work });
  git(['commit', '-q', '--allow-empty', '-m', 'two'], { cwd: work });
  for (const b of ['p1', 'l1']) git(['branch', b], { cwd: work });
  return { work, base: git(['rev-parse', 'HEAD'], { cwd: work }).trim(), prev: git(['rev-parse', 'HEAD~1'], { cwd: work }).trim() };
}

function pushVia(client: string, receivePack: string | undefined, work: string, dest: string, specs: string[]): { code: number; stderr: string } {
  const r = spawnSync(client, ['push', ...(receivePack ? [`--receive-pack=${receivePack}`] : []), dest, ...specs], { cwd: work, env: gitEnv, encoding: 'utf8' });
  return { code: r.status ?? -1, stderr: r.stderr };
}

test("files backend: gitwire's hook calls are git 2.55's (recorded shape): nested packed-refs transaction for deletions", () => {
  const { work, base, prev } = makeWork();
  const d = server('git', 'files.git', work, 'files');
  const l1 = prev; // (the server moved l1 back one commit)
  const log = join(t.dir, 'files.log');
  logHook(d, log);
  git(['commit', '-q', '--allow-empty', '-m', 'three'], { cwd: work });
  const tip = git(['rev-parse', 'HEAD'], { cwd: work }).trim();
  const r = pushVia('git', `${BIN} receive-pack`, work, d, ['HEAD:refs/heads/new', ':refs/heads/p1', ':refs/heads/l1', 'HEAD:refs/heads/main']);
  assert.equal(r.code, 0, r.stderr);
  // recorded from git 2.55 (receive-pack: deletions in a transaction of their own first; the client sends its commands sorted by ref)
  const expected = [
    '== preparing', `${l1} ${Z} refs/heads/l1`, `${base} ${Z} refs/heads/p1`,
    '== preparing', `${Z} ${Z} refs/heads/l1`, `${Z} ${Z} refs/heads/p1`,
    '== prepared', `${Z} ${Z} refs/heads/l1`, `${Z} ${Z} refs/heads/p1`,
    '== prepared', `${l1} ${Z} refs/heads/l1`, `${base} ${Z} refs/heads/p1`,
    '== committed', `${Z} ${Z} refs/heads/l1`, `${Z} ${Z} refs/heads/p1`,
    '== committed', `${l1} ${Z} refs/heads/l1`, `${base} ${Z} refs/heads/p1`,
    '== preparing', `${base} ${tip} refs/heads/main`, `${Z} ${tip} refs/heads/new`,
    '== prepared', `${base} ${tip} refs/heads/main`, `${Z} ${tip} refs/heads/new`,
    '== committed', `${base} ${tip} refs/heads/main`, `${Z} ${tip} refs/heads/new`,
  ];
  assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), expected);
});

test('files backend: deleting only a loose ref: the nested packed-refs transaction is aborted', () => {
  const { work, base } = makeWork();
  const d = join(t.dir, 'files-loose.git');
  git(['clone', '-q', '--bare', work, d]);
  git(['update-ref', 'refs/heads/only-loose', base], { cwd: d });
  const log = join(t.dir, 'files-loose.log');
  logHook(d, log);
  assert.equal(pushVia('git', `${BIN} receive-pack`, work, d, [':refs/heads/only-loose']).code, 0);
  assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), [
    '== preparing', `${base} ${Z} refs/heads/only-loose`,
    '== aborted', `${Z} ${Z} refs/heads/only-loose`,
    '== prepared', `${base} ${Z} refs/heads/only-loose`,
    '== committed', `${base} ${Z} refs/heads/only-loose`,
  ]);
});

test('a hook refusing in "prepared" leaves every ref as it was, and no lock behind (files backend)', () => {
  const { work } = makeWork();
  const d = server('git', 'refuse.git', work, 'files');
  const before = git(['for-each-ref'], { cwd: d });
  const log = join(t.dir, 'refuse.log');
  logHook(d, log, 'prepared');
  git(['commit', '-q', '--allow-empty', '-m', 'three'], { cwd: work });
  const r = pushVia('git', `${BIN} receive-pack`, work, d, ['HEAD:refs/heads/new', 'HEAD:refs/heads/main']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /in 'prepared' phase, update aborted by the reference-transaction hook/);
  assert.equal(git(['for-each-ref'], { cwd: d }), before);
  const calls = readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('== '));
  assert.deepEqual(calls, ['== preparing', '== prepared', '== aborted']);
  assert.deepEqual(readdirSync(join(d, 'refs', 'heads')).filter((f) => f.endsWith('.lock')), []);
});

for (const format of ['files', 'reftable']) {
  test(`${format}: the same pushes into git 2.55's receive-pack and gitwire's give the same hook calls`, { skip: oracleSkip }, () => {
    const { work } = makeWork();
    const ours = server(ORACLE, `ours-${format}.git`, work, format);
    const theirs = server(ORACLE, `theirs-${format}.git`, work, format);
    const lo = join(t.dir, `ours-${format}.log`), lt = join(t.dir, `theirs-${format}.log`);
    logHook(ours, lo);
    logHook(theirs, lt);
    git(['commit', '-q', '--allow-empty', '-m', 'three'], { cwd: work });
    for (const specs of [['HEAD:refs/heads/new', ':refs/heads/p1', ':refs/heads/l1', 'HEAD:refs/heads/main'], ['HEAD~2:refs/heads/new'], ['--atomic', 'HEAD:refs/heads/a', 'HEAD:refs/heads/b']]) {
      const a = pushVia(ORACLE, `${BIN} receive-pack`, work, ours, specs);
      const b = pushVia(ORACLE, undefined, work, theirs, specs);
      assert.equal(a.code, b.code, `${specs.join(' ')}: ${a.stderr} / ${b.stderr}`);
    }
    assert.equal(readFileSync(lo, 'utf8'), readFileSync(lt, 'utf8'));
    // and refused in "prepared": nothing changes, on either side
    for (const [d, l] of [[ours, lo], [theirs, lt]] as const) { rmSync(l); logHook(d, l, 'prepared'); }
    const before = spawnSync(ORACLE, ['for-each-ref'], { cwd: ours, env: gitEnv, encoding: 'utf8' }).stdout;
    const a = pushVia(ORACLE, `${BIN} receive-pack`, work, ours, ['HEAD:refs/heads/refused']);
    const b = pushVia(ORACLE, undefined, work, theirs, ['HEAD:refs/heads/refused']);
    assert.notEqual(a.code, 0);
    assert.notEqual(b.code, 0);
    assert.equal(readFileSync(lo, 'utf8'), readFileSync(lt, 'utf8'));
    assert.equal(spawnSync(ORACLE, ['for-each-ref'], { cwd: ours, env: gitEnv, encoding: 'utf8' }).stdout, before);
  });
}
