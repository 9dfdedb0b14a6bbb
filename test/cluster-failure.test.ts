/**
 * Three coordinated nodes when something fails: a node killed (-9) while it
 * holds the repository's fleet slot and produces a cache entry others
 * follow; Redis going away mid-run and coming back.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { commit } from './helpers/fixtures.js';
import { git, tmp } from './helpers/git.js';
import { HAVE_HAPROXY, HAVE_REDIS, gitRun, hookRuns, hookScript, startCluster, startRedis, type Proc } from './helpers/cluster.js';

const skip = !HAVE_REDIS || !HAVE_HAPROXY ? 'needs redis-server and haproxy (.ci/run installs them)' : false;

let t: { dir: string; cleanup: () => void };
let root: string;

before(() => {
  if (skip) return;
  t = tmp('gitwire-cluster-failure-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  for (let i = 0; i < 4; i++) commit(w, `c${i}`, { [`f${i}.txt`]: `${i}\n`.repeat(5000), [`r${i}.bin`]: randomBytes(100 << 10) });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
});

after(() => { if (!skip) t.cleanup(); });

async function until(f: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function metrics(port: number): Promise<string> {
  return new Promise((resolve) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(b));
    }).on('error', () => resolve('')).end();
  });
}

const spools = (cache: string) => readdirSync(cache).filter((n) => n.startsWith('tmp-'));

test('a node dies (kill -9) holding the fleet slot and producing an entry: its slot frees, followers complete through the fallback, no partial entry is left', { skip, timeout: 180_000 }, async () => {
  const d = join(t.dir, 'kill');
  mkdirSync(d);
  const redis: Proc = await startRedis(d);
  const hook = hookScript(d, 3);
  const cache = join(d, 'cache');
  const cl = await startCluster(d, { root, cache, redis: `redis://127.0.0.1:${redis.port}`, env: hook.env, args: ['--max-packs-per-repo', '1'] });
  try {
    const [a, b, c] = cl.nodes;
    const clone = (port: number, name: string) => gitRun(['-c', 'protocol.version=2', 'clone', '--progress', '--bare', `http://127.0.0.1:${port}/repo.git`, join(d, name)]);
    const onA = [clone(a!.httpPort!, 'a0'), clone(a!.httpPort!, 'a1')];
    // A holds the repository's only slot and runs pack-objects (in the hook's sleep, nothing sent yet)
    await until(() => hookRuns(hook.log).length === 1, "A's pack-objects run");
    const followers = [clone(b!.httpPort!, 'b0'), clone(b!.httpPort!, 'b1'), clone(c!.httpPort!, 'c0'), clone(c!.httpPort!, 'c1')];
    // B and C follow A's spool: they read it, they do not run their own
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(hookRuns(hook.log).length, 1, 'the followers wait for A, not for a slot of their own');
    a!.child.kill('SIGKILL');
    const ra = await Promise.all(onA);
    for (const r of ra) assert.notEqual(r.code, 0, 'a client of the dead node fails, as a direct fetch would');
    const rf = await Promise.all(followers);
    for (const [i, r] of rf.entries()) assert.equal(r.code, 0, `follower ${i}: ${r.stderr}`);
    // their fallbacks ran pack-objects under the fleet slot the dead node held: it freed by expiring
    const runs = hookRuns(hook.log);
    assert.equal(runs.length, 1 + 4, 'each follower ran its own pack-objects');
    const later = runs.slice(1).sort((x, y) => (x.start < y.start ? -1 : 1));
    for (let i = 1; i < later.length; i++) assert.ok(later[i - 1]!.end! <= later[i]!.start, 'one at a time still');
    for (const n of ['b0', 'b1', 'c0', 'c1']) {
      assert.equal((await gitRun(['fsck', '--no-progress'], { cwd: join(d, n) })).code, 0, `fsck ${n}`);
    }
    assert.deepEqual(spools(cache), [], "the dead producer's spool is gone, nothing half-written left");
    // whatever the cache holds is whole: a clone served from it is fsck-clean
    const again = await clone(c!.httpPort!, 'again');
    assert.equal(again.code, 0, again.stderr);
    assert.equal((await gitRun(['fsck', '--no-progress'], { cwd: join(d, 'again') })).code, 0);
  } finally {
    await cl.stop();
    await redis.stop();
  }
});

test('Redis goes away mid-run: fetches and pushes keep succeeding; when it is back, cross-node joins and fleet limits resume', { skip, timeout: 240_000 }, async () => {
  const d = join(t.dir, 'redis-away');
  mkdirSync(d);
  let redis: Proc = await startRedis(d);
  const port = redis.port;
  const hook = hookScript(d, 1);
  const cl = await startCluster(d, { root, cache: join(d, 'cache'), redis: `redis://127.0.0.1:${port}`, env: hook.env, args: ['--max-packs-per-repo', '1', '--metrics', '0'] });
  // the sample line itself (the metric's HELP line also starts with its name and "1 while ...")
  const up = async (v: 0 | 1) => (await Promise.all(cl.nodes.map((n) => metrics(n.metricsPort!)))).every((m) => m.split('\n').includes(`gitwire_coordination_up ${v}`));
  try {
    await until(() => up(1), 'every node to reach Redis');
    await redis.stop();
    await until(() => up(0), 'every node to notice Redis is gone');
    // still ready (200), and /readyz's body says how
    for (const n of cl.nodes) {
      const r = await fetch(`http://127.0.0.1:${n.httpPort}/readyz`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'ready\ncoordination: redis unreachable, serving with local limits and no cross-node joins\n');
    }
    const w = join(d, 'w');
    const c1 = await gitRun(['clone', '-q', `git://127.0.0.1:${cl.lb.git}/repo.git`, w]);
    assert.equal(c1.code, 0, c1.stderr);
    const oid = commit(w, 'while Redis is away', { 'away.txt': 'away\n' });
    const p = await gitRun(['push', '-q', 'origin', 'main'], { cwd: w });
    assert.equal(p.code, 0, p.stderr);
    for (const n of cl.nodes) {
      const f = await gitRun(['ls-remote', `http://127.0.0.1:${n.httpPort}/repo.git`, 'refs/heads/main']);
      assert.equal(f.stdout, `${oid}\trefs/heads/main\n`);
    }
    const fetches = await Promise.all(Array.from({ length: 3 }, (_, i) => gitRun(['clone', '-q', '--bare', `http://127.0.0.1:${cl.lb.http}/repo.git`, join(d, `away${i}`)])));
    for (const r of fetches) assert.equal(r.code, 0, r.stderr);

    redis = await startRedis(d, port);
    await until(() => up(1), 'every node to reconnect by itself');
    // /readyz and the metric read one state: once the metric says up, /readyz says so too, without waiting
    for (const n of cl.nodes) {
      const r = await fetch(`http://127.0.0.1:${n.httpPort}/readyz`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'ready\ncoordination: redis\n', 'the metric and /readyz agree');
    }
    // joins: identical clones over the three nodes (of a new tip: nothing stored for it yet), one pack-objects
    commit(w, 'Redis is back', { 'back.txt': 'back\n' });
    const p2 = await gitRun(['push', '-q', 'origin', 'main'], { cwd: w });
    assert.equal(p2.code, 0, p2.stderr);
    hookScript(d, 1);
    const same = await Promise.all(Array.from({ length: 9 }, (_, i) => gitRun(['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${cl.lb.http}/repo.git`, join(d, `back${i}`)])));
    for (const r of same) assert.equal(r.code, 0, r.stderr);
    assert.equal(hookRuns(hook.log).length, 1, 'one pack-objects for nine identical clones once Redis is back');
    // fleet limits: three different requests (depths) through three nodes run one at a time
    hookScript(d, 1);
    const depths = await Promise.all([1, 2, 3].map((n) => gitRun(['clone', '-q', '--bare', `--depth=${n}`, `http://127.0.0.1:${cl.lb.http}/repo.git`, join(d, `depth${n}`)])));
    for (const r of depths) assert.equal(r.code, 0, r.stderr);
    const runs = hookRuns(hook.log).sort((x, y) => (x.start < y.start ? -1 : 1));
    assert.equal(runs.length, 3);
    for (let i = 1; i < runs.length; i++) assert.ok(runs[i - 1]!.end! <= runs[i]!.start, 'the repository limit holds across the nodes again');
  } finally {
    await cl.stop();
    await redis.stop();
  }
});
