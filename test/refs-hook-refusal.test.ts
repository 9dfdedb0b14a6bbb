/**
 * A hook that refuses a push: the pusher sees exactly what git's
 * receive-pack shows, byte for byte (stderr and stdout of `git push`,
 * only the server's path replaced), on both ref backends. Each case pushes
 * to two twins of one repository, one served by gitwire and one by git,
 * and the refs afterwards must agree too.
 *
 * Cases: pre-receive declining (with output on its stdout and stderr),
 * the update hook declining one ref (plain, --atomic, --porcelain), and
 * the reference-transaction hook aborting in "prepared".
 *
 * The files backend runs with the git that GITWIRE_GIT_2_55 names where
 * it is set, else with the installed git (these messages are the same in
 * 2.39 and 2.55); reftable needs git >= 2.45 (skipped without it).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, gitEnv, tmp } from './helpers/git.js';

const PREFIX = process.env.GITWIRE_GIT_2_55;
const ORACLE = PREFIX && existsSync(join(PREFIX, 'bin', 'git')) ? join(PREFIX, 'bin', 'git') : '';
const reftableSkip = ORACLE ? false : 'needs git >= 2.45 for reftable: set GITWIRE_GIT_2_55 to a git 2.55 install prefix';
const GIT = ORACLE || 'git';
// receive-pack's helpers (unpack-objects, index-pack, rev-list) from the same git, for both servers
const env: NodeJS.ProcessEnv = { ...gitEnv, ...(ORACLE ? { PATH: `${join(PREFIX!, 'bin')}:${process.env.PATH}` } : {}) };

const t = tmp('gitwire-hook-refusal-');
after(() => t.cleanup());

interface Out { code: number; stdout: string; stderr: string }
function g(args: string[], cwd?: string): Out {
  const r = spawnSync(GIT, args, { cwd, env, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
function ok(args: string[], cwd?: string): string {
  const r = g(args, cwd);
  assert.equal(r.code, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

let seq = 0;
/** a client with main and blocked one commit ahead of the servers, and two bare twins of it */
function setup(format: 'files' | 'reftable'): { work: string; servers: { gitwire: string; git: string } } {
  const dir = join(t.dir, `c${++seq}`);
  const work = join(dir, 'work');
  ok(['init', '-q', '-b', 'main', work]);
  ok(['commit', '-q', '--allow-empty', '-m', 'one'], work);
  ok(['branch', 'blocked'], work);
  ok(['tag', '-a', '-m', 'a tag', 'v1'], work);
  const servers = { gitwire: join(dir, 'gw', 'srv.git'), git: join(dir, 'git', 'srv.git') };
  for (const s of Object.values(servers)) ok(['clone', '-q', '--bare', ...(format === 'reftable' ? ['--ref-format=reftable'] : []), work, s]);
  ok(['commit', '-q', '--allow-empty', '-m', 'two'], work);
  ok(['branch', '-f', 'blocked'], work);
  return { work, servers };
}

function hook(server: string, name: string, body: string): void {
  const p = join(server, 'hooks', name);
  writeFileSync(p, `#!/bin/sh\n${body}\n`);
  chmodSync(p, 0o755);
}

/** The same push to both twins: exit code, stdout and stderr identical (the path aside), refs identical. */
function pushBoth(work: string, servers: { gitwire: string; git: string }, args: string[], as255: (s: string) => string = (s) => s): Out {
  const opts = args.filter((a) => a.startsWith('-')), specs = args.filter((a) => !a.startsWith('-'));
  const gw = g(['push', `--receive-pack=${BIN} receive-pack`, ...opts, servers.gitwire, ...specs], work);
  const gt = g(['push', ...opts, servers.git, ...specs], work);
  const norm = (s: string, srv: string) => s.split(srv).join('<SERVER>');
  assert.equal(norm(gw.stderr, servers.gitwire), as255(norm(gt.stderr, servers.git)), `stderr of push ${args.join(' ')}`);
  assert.equal(norm(gw.stdout, servers.gitwire), norm(gt.stdout, servers.git), `stdout of push ${args.join(' ')}`);
  assert.equal(gw.code, gt.code, `exit code of push ${args.join(' ')}`);
  const refs = (d: string) => ok(['for-each-ref', '--format=%(objectname) %(refname)'], d);
  assert.equal(refs(servers.gitwire), refs(servers.git), `refs after push ${args.join(' ')}`);
  return gw;
}

for (const format of ['files', 'reftable'] as const) {
  const skip = format === 'reftable' ? reftableSkip : false;

  test(`${format}: pre-receive declining, with output on its stdout and stderr, reads as git's`, { skip }, () => {
    const { work, servers } = setup(format);
    for (const s of Object.values(servers)) hook(s, 'pre-receive', 'cat >/dev/null\necho "on stdout: no pushes today"\necho "on stderr: ask the release team" >&2\nexit 1');
    const r = pushBoth(work, servers, ['main', 'blocked', 'refs/tags/v1:refs/tags/v2']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pre-receive hook declined/);
  });

  test(`${format}: the update hook declining one ref (plain, --porcelain, --atomic) reads as git's`, { skip }, () => {
    const { work, servers } = setup(format);
    for (const s of Object.values(servers)) hook(s, 'update', 'if [ "$1" = refs/heads/blocked ]; then echo "update: $1 is frozen ($2 -> $3)"; exit 1; fi\nexit 0');
    const plain = pushBoth(work, servers, ['main', 'blocked']);
    assert.match(plain.stderr, /hook declined to update refs\/heads\/blocked/);
    ok(['commit', '-q', '--allow-empty', '-m', 'three'], work);
    ok(['branch', '-f', 'blocked'], work);
    const porcelain = pushBoth(work, servers, ['--porcelain', 'main', 'blocked']);
    assert.match(porcelain.stdout, /\[remote rejected\] \(hook declined\)/);
    ok(['commit', '-q', '--allow-empty', '-m', 'four'], work);
    ok(['branch', '-f', 'blocked'], work);
    const atomic = pushBoth(work, servers, ['--atomic', 'main', 'blocked']);
    assert.match(atomic.stderr, /atomic push failure/);
  });

  test(`${format}: the reference-transaction hook aborting in "prepared" reads as git's`, { skip }, () => {
    const { work, servers } = setup(format);
    for (const s of Object.values(servers)) hook(s, 'reference-transaction', 'cat >/dev/null\nif [ "$1" = prepared ]; then echo "reference-transaction: no"; exit 1; fi\nexit 0');
    // git 2.39 (CI's) dies with "ref updates aborted by hook"; 2.55, the target, names the phase (recorded from 2.55)
    const as255 = ORACLE ? undefined : (s: string) => s.replace('fatal: ref updates aborted by hook\n', "fatal: in 'prepared' phase, update aborted by the reference-transaction hook\n");
    const r = pushBoth(work, servers, ['main', 'blocked'], as255);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /update aborted by the reference-transaction hook/);
    const a = pushBoth(work, servers, ['--atomic', 'main', 'blocked'], as255);
    assert.notEqual(a.code, 0);
  });
}
