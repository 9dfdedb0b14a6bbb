/**
 * Three nodes over one root and one pack-cache directory, coordinated by a
 * real redis-server, behind haproxy (docs/cluster.md's configuration):
 * a fan-out of identical clones runs pack-objects once in the whole fleet;
 * a fleet-wide --max-packs-per-repo 1 never lets two pack-objects of one
 * repository overlap; a push through one node is seen at once through
 * another, and racing pushes through three nodes have one winner; with
 * attribute caching (--pool-revalidate, as NFS actimeo) only Redis'
 * invalidation makes the push seen.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { commit } from './helpers/fixtures.js';
import { git, tmp } from './helpers/git.js';
import { gitSshEnv, sshKit } from './helpers/ssh.js';
import { HAVE_HAPROXY, HAVE_REDIS, gitRun, hookRuns, hookScript, startCluster, startNode, startRedis, type Proc } from './helpers/cluster.js';

const skip = !HAVE_REDIS || !HAVE_HAPROXY ? 'needs redis-server and haproxy (.ci/run installs them)' : false;

let t: { dir: string; cleanup: () => void };
let root: string;
let work: string;
let redis: Proc;

before(async () => {
  if (skip) return;
  t = tmp('gitwire-cluster-fanout-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < 4; i++) commit(work, `c${i}`, { [`f${i}.txt`]: `${i}\n`.repeat(5000), [`r${i}.bin`]: randomBytes(100 << 10) });
  git(['clone', '-q', '--bare', work, join(root, 'repo.git')]);
  git(['config', 'http.receivepack', 'true'], { cwd: join(root, 'repo.git') });
  redis = await startRedis(t.dir);
});

after(async () => {
  if (skip) return;
  await redis.stop();
  t.cleanup();
});

const packNames = (dest: string) => readdirSync(join(dest, 'objects', 'pack')).filter((n) => n.endsWith('.pack'));

test('fan-out: 30 identical clones over three nodes run pack-objects once in the fleet; every clone is the same and fsck-clean', { skip, timeout: 180_000 }, async () => {
  const d = join(t.dir, 'fanout');
  mkdirSync(d);
  const hook = hookScript(d, 2);
  const cl = await startCluster(d, { root, cache: join(d, 'cache'), redis: `redis://127.0.0.1:${redis.port}`, env: hook.env });
  try {
    const url = `http://127.0.0.1:${cl.lb.http}/repo.git`;
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => gitRun(['-c', 'protocol.version=2', 'clone', '-q', '--bare', url, join(d, `c${i}`)])));
    for (const [i, r] of rs.entries()) assert.equal(r.code, 0, `clone ${i}: ${r.stderr}`);
    const runs = hookRuns(hook.log);
    assert.equal(runs.length, 1, `pack-objects ran ${runs.length} times in the fleet`);
    const names = new Set(rs.map((_, i) => packNames(join(d, `c${i}`)).join(',')));
    assert.equal(names.size, 1, `every clone received the same pack: ${[...names].join(' ')}`);
    for (let i = 0; i < 30; i++) {
      const f = await gitRun(['fsck', '--no-progress'], { cwd: join(d, `c${i}`) });
      assert.equal(f.code, 0, `fsck of clone ${i}: ${f.stderr}`);
    }
    // the balancer spread the fetches: every node served some, and the ones without the run followed it
    const fetches = cl.nodes.map((n) => n.logs.filter((l) => /"command":"fetch"/.test(l)));
    for (const [i, f] of fetches.entries()) assert.ok(f.length > 0, `node ${i + 1} served no fetch`);
    const outcomes = fetches.flat().map((l) => /"packCache":"(\w+)"/.exec(l)?.[1]);
    assert.equal(outcomes.filter((o) => o === 'miss').length, 1, `one miss in the fleet: ${outcomes.join(',')}`);
    assert.ok(outcomes.every((o) => o === 'miss' || o === 'join' || o === 'hit'), outcomes.join(','));
  } finally {
    await cl.stop();
  }
});

test('admission: --max-packs-per-repo 1 on three nodes never lets two pack-objects of one repository overlap; every client completes', { skip, timeout: 180_000 }, async () => {
  const d = join(t.dir, 'admission');
  mkdirSync(d);
  const hook = hookScript(d, 1);
  // no pack cache: every clone runs its own pack-objects
  const cl = await startCluster(d, { root, redis: `redis://127.0.0.1:${redis.port}`, env: hook.env, args: ['--max-packs-per-repo', '1'] });
  try {
    const url = `http://127.0.0.1:${cl.lb.http}/repo.git`;
    const rs = await Promise.all(Array.from({ length: 6 }, (_, i) => gitRun(['-c', 'protocol.version=2', 'clone', '--progress', '--bare', url, join(d, `c${i}`)])));
    for (const [i, r] of rs.entries()) assert.equal(r.code, 0, `clone ${i}: ${r.stderr}`);
    const runs = hookRuns(hook.log).sort((a, b) => (a.start < b.start ? -1 : 1));
    assert.equal(runs.length, 6);
    for (let i = 1; i < runs.length; i++) {
      assert.ok(runs[i - 1]!.end !== undefined && runs[i - 1]!.end! <= runs[i]!.start, `run ${i} started before run ${i - 1} ended`);
    }
    // a queued client was told why it waits (band 2)
    assert.ok(rs.some((r) => /remote: gitwire: waiting for a pack-objects slot \(the limit for this repository across the servers\)/.test(r.stderr)), rs.map((r) => r.stderr).join('\n---\n'));
  } finally {
    await cl.stop();
  }
});

test('consistency: a push through node A is fetched through node B at once; 10 racing pushes through three nodes give one winner', { skip, timeout: 180_000 }, async () => {
  const d = join(t.dir, 'consistency');
  mkdirSync(d);
  const kit = sshKit(join(d, 'ssh'));
  const user = kit.user('alice');
  const cl = await startCluster(d, { root, cache: join(d, 'cache'), redis: `redis://127.0.0.1:${redis.port}`, ssh: kit });
  try {
    const [a, b] = cl.nodes;
    // SSH through the balancer (TCP): one host key shared by the nodes, checked by the client
    const viaSsh = await gitRun(['ls-remote', 'ssh://git@127.0.0.1/repo.git', 'refs/heads/main'], { env: gitSshEnv(kit, user, cl.lb.ssh!) });
    assert.equal(viaSsh.code, 0, viaSsh.stderr);
    assert.match(viaSsh.stdout, /^[0-9a-f]{40}\trefs\/heads\/main\n$/);
    const w = join(d, 'w');
    git(['clone', '-q', `http://127.0.0.1:${a!.httpPort}/repo.git`, w]);
    // B has the repository pooled before the push
    assert.equal((await gitRun(['ls-remote', `http://127.0.0.1:${b!.httpPort}/repo.git`, 'refs/heads/main'])).code, 0);
    for (let i = 0; i < 3; i++) {
      const c = commit(w, `push ${i}`, { [`p${i}.txt`]: `${i}\n` });
      const p = await gitRun(['push', '-q', 'origin', 'main'], { cwd: w });
      assert.equal(p.code, 0, p.stderr);
      const f = await gitRun(['ls-remote', `http://127.0.0.1:${b!.httpPort}/repo.git`, 'refs/heads/main']);
      assert.equal(f.stdout, `${c}\trefs/heads/main\n`, 'node B sees the push through node A');
    }
    // 10 clients, each with its own commit on the same parent, push to main through the balancer's git:// at once
    const base = git(['rev-parse', 'HEAD'], { cwd: w }).trim();
    const clients = Array.from({ length: 10 }, (_, i) => {
      const c = join(d, `r${i}`);
      git(['clone', '-q', `git://127.0.0.1:${cl.lb.git}/repo.git`, c]);
      return { dir: c, oid: commit(c, `race ${i}`, { [`race${i}.txt`]: `${i}\n` }) };
    });
    const rs = await Promise.all(clients.map((c) => gitRun(['push', 'origin', 'main'], { cwd: c.dir })));
    const won = rs.flatMap((r, i) => (r.code === 0 ? [i] : []));
    assert.equal(won.length, 1, `one winner: ${rs.map((r) => r.stderr).join('\n---\n')}`);
    for (const [i, r] of rs.entries()) {
      if (i === won[0]) continue;
      // lost the lock race on the server, or saw the winner's update in the advertisement
      assert.match(r.stderr, /cannot lock ref 'refs\/heads\/main'|\[rejected\]\s+main -> main \(fetch first\)/, r.stderr);
    }
    const head = (await gitRun(['ls-remote', `http://127.0.0.1:${cl.nodes[2]!.httpPort}/repo.git`, 'refs/heads/main'])).stdout;
    assert.equal(head, `${clients[won[0]!]!.oid}\trefs/heads/main\n`);
    assert.notEqual(clients[won[0]!]!.oid, base);
    assert.equal((await gitRun(['fsck', '--no-progress'], { cwd: join(root, 'repo.git') })).code, 0);
    const locks = readdirSync(join(root, 'repo.git', 'refs', 'heads')).filter((n) => n.endsWith('.lock'));
    assert.deepEqual(locks, [], 'no lock file left');
  } finally {
    await cl.stop();
  }
});

test('attribute caching (--pool-revalidate 10 min, as NFS actimeo): a node coordinated by Redis sees a push through another node at once; an uncoordinated one keeps the old tip', { skip, timeout: 120_000 }, async () => {
  const d = join(t.dir, 'actimeo');
  const r = join(d, 'root');
  mkdirSync(r, { recursive: true });
  git(['clone', '-q', '--bare', work, join(r, 'repo.git')]);
  git(['config', 'http.receivepack', 'true'], { cwd: join(r, 'repo.git') });
  const url = `redis://127.0.0.1:${redis.port}`;
  const args = ['--pool-revalidate', '600000'];
  const a = await startNode({ root: r, redis: url, args });
  const b = await startNode({ root: r, redis: url, args });
  const alone = await startNode({ root: r, args });
  // today's default (every request looks at the files): sees a push at once without Redis
  const fresh = await startNode({ root: r });
  const tip = async (n: typeof a) => (await gitRun(['ls-remote', `http://127.0.0.1:${n.httpPort}/repo.git`, 'refs/heads/main'])).stdout;
  try {
    const old = await tip(b);
    assert.match(old, /^[0-9a-f]{40}\trefs\/heads\/main\n$/);
    assert.equal(await tip(alone), old);
    assert.equal(await tip(fresh), old);
    const w = join(d, 'w');
    git(['clone', '-q', `http://127.0.0.1:${a.httpPort}/repo.git`, w]);
    for (let i = 0; i < 2; i++) {
      const c = commit(w, `actimeo ${i}`, { [`a${i}.txt`]: `${i}\n` });
      const p = await gitRun(['push', '-q', 'origin', 'main'], { cwd: w });
      assert.equal(p.code, 0, p.stderr);
      // the files say so at once; the node without Redis still trusts what it saw
      assert.equal(git(['rev-parse', 'main'], { cwd: join(r, 'repo.git') }).trim(), c);
      assert.equal(await tip(alone), old, 'without invalidation the pooled snapshot stands until the interval ends');
      assert.equal(await tip(b), `${c}\trefs/heads/main\n`, "Redis' invalidation makes node B see the push through node A");
      assert.equal(await tip(fresh), `${c}\trefs/heads/main\n`, 'without --pool-revalidate a node looks at the files on every request');
      // a clone through B gets the new tip too (the same snapshot answers the fetch)
      const cb = await gitRun(['clone', '-q', '--bare', `http://127.0.0.1:${b.httpPort}/repo.git`, join(d, `b${i}`)]);
      assert.equal(cb.code, 0, cb.stderr);
      assert.equal(git(['rev-parse', 'main'], { cwd: join(d, `b${i}`) }).trim(), c);
    }
  } finally {
    await Promise.all([a.stop(), b.stop(), alone.stop(), fresh.stop()]);
  }
});
