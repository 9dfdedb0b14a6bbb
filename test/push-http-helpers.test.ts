/**
 * The helpers the network push tests (and many others) wait on child
 * processes with: none may wait for ever, and each says what it found.
 * A test file whose wait never ends hangs the whole CI run silently (Node 24,
 * push-http.test.js: over 11 minutes, no CPU, no child left).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { startS3 } from './helpers/lfs-s3.js';
import { finished, stopChild } from './helpers/child-wait.js';

/** this environment without node:test's mark of a file it runs (a process started here is not one) */
function plainEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

/**
 * startGitDaemon in a process of its own, with a `git` first in PATH whose `git daemon` fails as
 * one does when its port is taken at the moment it binds (`failures` times; then the real git):
 * what that process printed, and whether it ended by itself.
 */
function daemonStart(dir: string, failures: number): { out: string; ended: boolean } {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const real = spawnSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).stdout.trim();
  writeFileSync(join(bin, 'git'), `#!/bin/sh
if [ "$1" = daemon ]; then
  n=$(cat '${dir}/count' 2>/dev/null || echo 0)
  if [ "$n" -lt ${failures} ]; then
    echo $((n+1)) > '${dir}/count'
    echo "[$$] Could not bind to 127.0.0.1: Address already in use" >&2
    echo "fatal: unable to allocate any listen sockets on port 1" >&2
    exit 128
  fi
fi
exec '${real}' "$@"
`);
  chmodSync(join(bin, 'git'), 0o755);
  const script = `
    import { startGitDaemon } from ${JSON.stringify(join(ROOT, 'build', 'test', 'helpers', 'push-net.js'))};
    try {
      const d = await startGitDaemon(${JSON.stringify(dir)});
      console.log('started');
      await d.stop();
      console.log('stopped');
    } catch (e) { console.log('failed: ' + e.message); }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: plainEnv({ PATH: `${bin}:${process.env.PATH}` }), encoding: 'utf8', timeout: 40_000, killSignal: 'SIGKILL' });
  return { out: r.stdout + r.stderr, ended: r.signal === null };
}

test('git daemon that could not bind its port: another port (was: "git daemon did not start" after 10 s)', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-daemon-bind-');
  try {
    const r = daemonStart(t.dir, 1);
    assert.equal(r.out, 'started\nstopped\n');
    assert.ok(r.ended);
  } finally { t.cleanup(); }
});

test('git daemon that never comes up: startGitDaemon fails saying why, and nothing keeps the process alive (its probe re-armed a timer for ever)', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-daemon-never-');
  try {
    const r = daemonStart(t.dir, 1000);
    assert.ok(r.ended, `the process ended by itself: ${r.out}`);
    assert.match(r.out, /^failed: git daemon did not start: port \d+: exited 128: .*Address already in use/);
  } finally { t.cleanup(); }
});

test('gitAsync settles when what git started outlives it holding its pipes, and that process is killed', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-gitasync-held-');
  try {
    // a shell alias whose background job keeps git's stdout and stderr: git exits at once, 'close' never comes
    const t0 = performance.now();
    const r = await gitAsync(['-c', 'alias.hold=!sleep 987 &', 'hold'], t.dir, {}, 2000);
    const ms = performance.now() - t0;
    assert.ok(ms < 20_000, `settled after ${Math.round(ms)} ms`);
    assert.equal(r.code, 0, 'git itself exited 0');
    assert.match(r.stderr, /\[test helper\] git -c alias\.hold=.* held by: (\d+) .*sleep 987/);
    const pid = Number(/held by: (\d+)/.exec(r.stderr)![1]);
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((res) => setTimeout(res, 20));
    assert.ok(!alive(pid), `the holder ${pid} was killed`);
  } finally { t.cleanup(); }
});

test('stopping a child that ignores SIGTERM: killed after the deadline, and the stop fails naming it', { timeout: 30_000 }, async () => {
  const child = spawn('sh', ['-c', 'trap "" TERM; sleep 986 & wait'], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise((r) => setTimeout(r, 200));
  const shell = child.pid!;
  await assert.rejects(stopChild(child, 'a stubborn shell', { exitMs: 1000 }), (e: Error) => {
    assert.match(e.message, new RegExp(`stopping a stubborn shell \\(pid ${shell}\\) with SIGTERM: .*not finished after 1000 ms.*pid ${shell} still running.*sleep 986`));
    return true;
  });
  assert.ok(!alive(shell), 'the shell is gone');
});

test('finished(): a child that already closed settles at once; one never started settles with its error', { timeout: 30_000 }, async () => {
  const c = spawn('true', [], { stdio: ['ignore', 'pipe', 'pipe'] });
  c.stdout.resume(); c.stderr.resume();
  await new Promise((r) => c.once('close', r));
  const t0 = performance.now();
  const done = await finished(c, 'true', { timeoutMs: 10_000 });
  assert.deepEqual(done, { code: 0, signal: null, timedOut: false, note: '' });
  assert.ok(performance.now() - t0 < 1000);
  const bad = spawn(join(ROOT, 'no-such-program'), [], { stdio: ['ignore', 'pipe', 'pipe'] });
  const f = await finished(bad, 'nothing', { timeoutMs: 10_000 });
  assert.equal(f.error?.message.includes('ENOENT'), true, String(f.error));
});

test('s3rver killed by a signal, then stopped: the stop returns (it waited for a second exit, for ever)', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-s3-stop-');
  try {
    const s3 = await startS3(join(t.dir, 's3'), 'bucket', ROOT);
    s3.child.kill('SIGKILL');
    await new Promise((r) => s3.child.once('exit', r));
    await s3.stop();
  } finally { t.cleanup(); }
});

test('a server a test left running: killed and named a while after the file\'s last test, and the file fails (it hung)', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-left-running-');
  try {
    const file = join(t.dir, 'leaves.test.mjs');
    writeFileSync(file, `
      import { test } from 'node:test';
      import { startGitDaemon } from ${JSON.stringify(join(ROOT, 'build', 'test', 'helpers', 'push-net.js'))};
      test('starts a daemon and forgets it', async () => { await startGitDaemon(${JSON.stringify(t.dir)}); });
    `);
    const t0 = performance.now();
    const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { env: plainEnv({ GITWIRE_TEST_LEFT_AFTER_MS: '1500' }), encoding: 'utf8', timeout: 40_000, killSignal: 'SIGKILL' });
    const out = r.stdout + r.stderr;
    assert.equal(r.signal, null, `the run ended by itself: ${out}`);
    assert.ok(performance.now() - t0 < 30_000);
    assert.match(out, /\[test helper\] 1\.5 s after this file's last test, git daemon on \d+ \(pid \d+\) was still running: pid \d+ still running; .*git-daemon --verbose.*; killed$/m);
    assert.notEqual(r.status, 0, 'the file failed');
    assert.match(out, /^ok 1 - starts a daemon and forgets it/m);
  } finally { t.cleanup(); }
});
