/**
 * Racing pushes: git's lock protocol decides, exactly one wins, and every
 * repository stays fsck-clean. Also a push during a fetch, a push while
 * `git gc` runs, and a lock held by another (git) process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, openSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, gitBuf, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, fsck, objectFiles, rawReceivePack, request, transcript } from './helpers/push.js';

const CAPS = 'report-status object-format=sha1 agent=x';

function setup() {
  const t = tmp('gitwire-race-');
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  const server = join(t.dir, 'server.git');
  git(['clone', '-q', '--bare', src, server]);
  git(['config', 'core.logAllRefUpdates', 'true'], { cwd: server });
  const base = git(['rev-parse', 'HEAD'], { cwd: src }).trim();
  return { t, src, server, base };
}

test('10 clients push different new values to one ref at once: exactly one wins', async () => {
  const { t, src, server, base } = setup();
  try {
    const reqs: Array<{ tip: string; body: Buffer }> = [];
    for (let i = 0; i < 10; i++) {
      git(['checkout', '-q', '-B', `c${i}`, base], { cwd: src });
      const tip = commit(src, `racer ${i}`, { [`r${i}.txt`]: `racer ${i}\n` });
      const pack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${tip}\n^${base}\n` });
      reqs.push({ tip, body: request([`${base} ${tip} refs/heads/main`], CAPS, pack) });
    }
    const results = await Promise.all(reqs.map((r) => rawReceivePack('gitwire', server, r.body, {}, ['--stateless-rpc'])));
    const lines = results.map((r) => transcript(r.stdout).find((l) => l.startsWith('ok ') || l.startsWith('ng '))!);
    const winners = lines.map((l, i) => (l === 'ok refs/heads/main\n' ? i : -1)).filter((i) => i >= 0);
    assert.equal(winners.length, 1, lines.join(''));
    for (const [i, l] of lines.entries()) {
      if (i === winners[0]) continue;
      // git 2.55's reasons: the lock was busy past core.filesRefLockTimeout, or the value moved under it
      assert.match(l, /^ng refs\/heads\/main (incorrect old value provided|reference already exists)\n$/);
    }
    assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: server }).trim(), reqs[winners[0]!]!.tip);
    const log = git(['reflog', 'show', '--format=%H', 'refs/heads/main'], { cwd: server }).trim().split('\n');
    assert.equal(log.length, 1);
    assert.equal(fsck(server).code, 0);
    assert.deepEqual(readdirSync(join(server, 'refs', 'heads')).filter((n) => n.endsWith('.lock')), []);
    assert.deepEqual(readdirSync(join(server, 'objects')).filter((n) => n.startsWith('tmp_objdir')), []);
  } finally { t.cleanup(); }
});

test('a lock held by another process: the ref is refused with git\'s error, the lock is left alone', async () => {
  const { t, src, server, base } = setup();
  try {
    const tip = commit(src, 'next', { 'b.txt': 'b\n' });
    const pack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${tip}\n^${base}\n` });
    const lock = join(server, 'refs', 'heads', 'main.lock');
    closeSync(openSync(lock, 'wx'));
    const r = await rawReceivePack('gitwire', server, request([`${base} ${tip} refs/heads/main`], CAPS, pack), {}, ['--stateless-rpc']);
    // recorded from git 2.55.0
    assert.equal(r.stdout.toString(), '000eunpack ok\n0030ng refs/heads/main reference already exists\n0000');
    assert.equal(r.stderr, `error: cannot lock ref 'refs/heads/main': Unable to create '${server}/./refs/heads/main.lock': File exists.\n\nAnother git process seems to be running in this repository, or the lock file may be stale\n`);
    assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: server }).trim(), base);
    unlinkSync(lock);
    const again = await rawReceivePack('gitwire', server, request([`${base} ${tip} refs/heads/main`], CAPS, pack), {}, ['--stateless-rpc']);
    assert.equal(again.stdout.toString(), '000eunpack ok\n0017ok refs/heads/main\n0000');
  } finally { t.cleanup(); }
});

test('the quarantine removed under a push (as git prune does): git\'s refusal, the ref and objects untouched', async () => {
  for (const impl of IMPLS) {
    const { t, src, server, base } = setup();
    try {
      const tip = commit(src, 'next', { 'b.txt': 'b\n' });
      const pack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${tip}\n^${base}\n` });
      const hook = join(server, 'hooks', 'pre-receive');
      writeFileSync(hook, '#!/bin/sh\nrm -rf "$GIT_QUARANTINE_PATH"\n');
      chmodSync(hook, 0o755);
      const before = objectFiles(server);
      const r = await rawReceivePack(impl, server, request([`${base} ${tip} refs/heads/main`], CAPS, pack), {}, ['--stateless-rpc']);
      assert.equal(r.stdout.toString(), '000eunpack ok\n0046ng refs/heads/main unable to migrate objects to permanent storage\n0000', impl);
      assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: server }).trim(), base, impl);
      assert.deepEqual(objectFiles(server), before, impl);
      assert.equal(fsck(server).code, 0, impl);
    } finally { t.cleanup(); }
  }
});

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; err: string }> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { cwd, env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (b: Buffer) => { err += b.toString(); });
    c.on('close', (code) => resolve({ code: code ?? -1, err }));
  });
}

test('a push during a fetch, and pushes while git gc runs', async () => {
  const { t, src, server } = setup();
  try {
    for (let i = 0; i < 30; i++) commit(src, `more ${i}`, { [`m${i % 4}.txt`]: `more ${i}\n`.repeat(50) });
    const [clone, pushed] = await Promise.all([
      run('git', ['clone', '-q', '--bare', `--upload-pack=${BIN} upload-pack`, server, join(t.dir, 'fetched.git')], t.dir),
      run('git', ['push', `--receive-pack=${BIN} receive-pack`, server, 'main'], src),
    ]);
    assert.equal(clone.code, 0, clone.err);
    assert.equal(pushed.code, 0, pushed.err);
    assert.equal(fsck(join(t.dir, 'fetched.git')).code, 0);
    assert.equal(fsck(server).code, 0);

    const gc = run('git', ['gc', '--quiet', '--prune=now'], server);
    for (let i = 0; i < 5; i++) {
      const tip = commit(src, `during gc ${i}`, { 'gc.txt': `gc ${i}\n` });
      const r = await run('git', ['push', `--receive-pack=${BIN} receive-pack`, server, 'main'], src);
      if (r.code === 0) assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: server }).trim(), tip);
      // git prune --expire=now removes every objects/tmp_* entry not newer than now, a push's
      // quarantine too (builtin/prune.c, prune_tmp_file): git's receive-pack loses that race the
      // same way, so a push may fail in unpack, connectivity or migration; it must fail cleanly.
      // Once migrated, the pushed objects are unreachable until the ref moves, so prune may
      // delete them before update() looks: git's update() then says "unpack should have
      // generated ..." and rejects with "bad pack", and so does gitwire (CI saw it once).
      else assert.match(r.err, /reference already exists|incorrect old value|failed to update|unpacker error|missing necessary objects|unable to migrate|unpack should have generated [0-9a-f]{40}, but I can't find it!/, r.err);
    }
    assert.equal((await gc).code, 0);
    // after gc, a push goes through on what gc left
    const tip = commit(src, 'after gc', { 'gc.txt': 'after\n' });
    const after = await run('git', ['push', `--receive-pack=${BIN} receive-pack`, server, 'main'], src);
    assert.equal(after.code, 0, after.err);
    assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: server }).trim(), tip);
    const f = fsck(server);
    assert.equal(f.code, 0, f.out);
  } finally { t.cleanup(); }
});
