/**
 * The benchmark's reference stack (bench/nginx.mjs: nginx + fcgiwrap +
 * git http-backend, started on loopback with a temporary configuration)
 * serves real clones, protocol v2 included, and its CPU accounting sees
 * the CGIs that fcgiwrap leaves to the kernel to reap. Not a timing test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';

interface Stack { port: number; pids(): number[]; cgiCpuMs(): number; stop(): Promise<void> }
const nginx = await import(new URL('../../bench/nginx.mjs', import.meta.url).href) as {
  startNginxStack(root: string, dir: string, opts?: { env?: NodeJS.ProcessEnv; children?: number }): Promise<Stack>;
  parseTimes(text: string): number;
  nginxMissing(): string | undefined;
};

test("parseTimes reads bash's times: the children's user and system time", () => {
  assert.equal(nginx.parseTimes('0m0.002s 0m0.001s\n0m0.120s 0m0.030s\n'), 150);
  assert.equal(nginx.parseTimes('0m0.000s 0m0.000s\n1m2.500s 0m0.004s\n'), 62504);
  assert.throws(() => nginx.parseTimes('0m0.002s 0m0.001s\n'));
});

test('nginx + fcgiwrap + git http-backend serve clones (v0 and v2), and the CGIs\' CPU is counted', async () => {
  assert.equal(nginx.nginxMissing(), undefined, '.ci/run installs nginx and fcgiwrap');
  const t = tmp('gitwire-bench-nginx-');
  const work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < 5; i++) commit(work, `c${i}`, { [`f${i}.txt`]: `${i}\n`.repeat(1000) });
  git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: work });
  const root = join(t.dir, 'root');
  git(['clone', '-q', '--bare', work, join(root, 'r.git')]);
  const s = await nginx.startNginxStack(root, join(t.dir, 'stack'), { env: gitEnv, children: 2 });
  const kids = (p: number) => { try { return readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').split(' ').filter(Boolean).map(Number); } catch { return []; } };
  // nginx's master and workers, fcgiwrap and its preforked workers
  const pids = s.pids().flatMap((p) => [p, ...kids(p)]);
  assert.ok(pids.length >= 5, `the stack's processes: ${pids.join(' ')}`);
  try {
    s.cgiCpuMs();
    const want = git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: join(root, 'r.git') });
    for (const v of ['0', '2']) {
      const dest = join(t.dir, `c${v}`);
      const r = run('git', ['-c', `protocol.version=${v}`, 'clone', '-q', '--bare', `http://127.0.0.1:${s.port}/r.git`, dest], { env: { ...gitEnv, GIT_TRACE_PACKET: join(t.dir, `trace${v}`) } });
      assert.equal(r.status, 0, r.stderr.toString());
      assert.equal(git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: dest }), want, `v${v}: the refs`);
      assert.equal(run('git', ['fsck', '--no-dangling'], { cwd: dest }).status, 0);
      // the Git-Protocol header reaches http-backend: the server answers in version 2
      assert.equal(/< version 2/.test(readFileSync(join(t.dir, `trace${v}`), 'utf8')), v === '2', `v${v}: the protocol spoken`);
    }
    // two clones: info/refs and upload-pack each ran git http-backend, upload-pack and (for the pack) pack-objects
    assert.ok(s.cgiCpuMs() > 0, 'the CGIs\' CPU is counted');
    assert.deepEqual(readdirSync(join(t.dir, 'stack', 'times')), [], 'and each CGI\'s figures are read once');
  } finally {
    await s.stop();
    t.cleanup();
  }
  // every process of the stack has exited (fcgiwrap's workers outlive a SIGTERM to fcgiwrap alone)
  const live = (p: number) => { try { return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${p}/stat`, 'utf8')); } catch { return false; } };
  for (let i = 0; i < 100 && pids.some(live); i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(pids.filter(live), [], 'no process of the stack left');
});
