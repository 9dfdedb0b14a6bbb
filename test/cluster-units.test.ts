/**
 * The coordination pieces on their own: the in-process coordinator's
 * leases, fleet limits shared by two limiters (two nodes in one process),
 * and what is refused from another node (claim records, repository names,
 * spool names) before it touches the filesystem.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCoordinator } from '../src/cluster/index.js';
import { RedisCoordinator, parseClaim } from '../src/cluster/redis.js';
import { PackLimiter } from '../src/transport/admission.js';
import { DirectoryStore } from '../src/pack/cache.js';
import { PacketWriter } from '../src/pktline/writer.js';
import type { Sink } from '../src/pktline/sink.js';
import { git, tmp } from './helpers/git.js';
import { RepositoryPool } from '../src/repo/pool.js';
import { HAVE_REDIS, startRedis } from './helpers/cluster.js';
import { Redis } from 'ioredis';
import { createHash } from 'node:crypto';

class TestSink implements Sink {
  readonly stats = { writes: 0, bytes: 0 };
  readonly retains = false;
  readonly backedUp = false;
  closed = false;
  readonly chunks: Buffer[] = [];
  private cbs: Array<() => void> = [];
  write(b: Buffer): void { this.stats.writes++; this.stats.bytes += b.length; this.chunks.push(Buffer.from(b)); }
  drained(): Promise<void> { return Promise.resolve(); }
  onClose(cb: () => void): void { if (this.closed) cb(); else this.cbs.push(cb); }
  close(): void { this.closed = true; for (const cb of this.cbs) cb(); }
  text(): string { return Buffer.concat(this.chunks).toString('latin1'); }
}

test('LocalCoordinator: a scope has at most `limit` leases; a release frees one once and wakes the waiters', async () => {
  const c = new LocalCoordinator();
  let woken = 0;
  c.onRelease(() => { woken++; });
  const a = await c.tryLease('repo:x', 2);
  const b = await c.tryLease('repo:x', 2);
  assert.ok(a && b);
  assert.equal(await c.tryLease('repo:x', 2), undefined);
  assert.ok(await c.tryLease('repo:y', 2), 'another scope counts apart');
  a.release();
  a.release();
  assert.equal(c.count('repo:x'), 1);
  assert.equal(woken, 1);
  assert.ok(await c.tryLease('repo:x', 2));
  assert.equal(await c.tryLease('repo:x', 2), undefined);
});

test('LocalCoordinator.tryLeases: a slot of every scope or of none, released together once', async () => {
  const c = new LocalCoordinator();
  const a = await c.tryLeases([['repo:x', 1], ['client:1', 2]]);
  assert.ok('lease' in a);
  const b = await c.tryLeases([['client:1', 2], ['repo:x', 1]]);
  assert.deepEqual(b, { full: 1 }, 'the full scope is named by its index');
  assert.equal(c.count('client:1'), 1, 'the slot taken before the full scope was given back');
  a.lease.release();
  a.lease.release();
  assert.equal(c.count('repo:x'), 0);
  assert.equal(c.count('client:1'), 0);
});

test('RedisCoordinator.tryLeases: all or none across nodes, in one round trip each way, with the release published', { skip: HAVE_REDIS ? false : 'redis-server not installed' }, async () => {
  const t = tmp('gitwire-cluster-leases-');
  const redis = await startRedis(t.dir);
  const url = `redis://127.0.0.1:${redis.port}`;
  const n1 = new RedisCoordinator({ url, root: '/srv/git', prefix: 'leases-test:' });
  const n2 = new RedisCoordinator({ url, root: '/srv/git', prefix: 'leases-test:' });
  const raw = new Redis(url, { maxRetriesPerRequest: 0 });
  try {
    for (let i = 0; i < 500 && !(n1.status().up && n2.status().up); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(n1.status().up && n2.status().up);
    let woken = 0;
    n2.onRelease(() => { woken++; });
    const calls = async (cmd = 'eval'): Promise<number> => {
      const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(String(await raw.info('commandstats')));
      return m ? Number(m[1]) : 0;
    };
    // nobody waits on these scopes: the release wakes no node
    const p0 = await calls('publish');
    const q = await n1.tryLeases([['repo:/srv/git/quiet.git', 1], ['client:10.0.0.9', 1]]);
    assert.ok('lease' in q);
    q.lease.release();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await calls('publish'), p0, 'a release with nobody waiting publishes nothing');
    assert.equal(woken, 0);
    const e0 = await calls();
    const a = await n1.tryLeases([['repo:/srv/git/a.git', 1], ['client:10.0.0.1', 2]]);
    assert.ok('lease' in a);
    assert.equal(await calls() - e0, 1, 'both slots in one EVAL');
    // the repository is full: nothing of the client's scope may stay taken
    assert.deepEqual(await n2.tryLeases([['client:10.0.0.1', 2], ['repo:/srv/git/a.git', 1]]), { full: 1 });
    assert.equal(await raw.zcard(`leases-test:lease:${createHash('sha256').update('client:10.0.0.1').digest('hex')}`), 1);
    const e1 = await calls();
    a.lease.release();
    a.lease.release();
    for (let i = 0; i < 200 && woken === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(woken >= 1, 'the other node, which waits on the repository, heard the release');
    assert.equal(await calls('publish'), p0 + 1, 'published once');
    assert.equal(await calls() - e1, 1, 'given back in one EVAL, once');
    const b = await n2.tryLeases([['client:10.0.0.1', 2], ['repo:/srv/git/a.git', 1]]);
    assert.ok('lease' in b, 'free again after the release');
    b.lease.release();
    // a hostile writer's slots: one that claims to last for ever is dropped; one within a minute counts until it expires
    const hostileKey = `leases-test:lease:${createHash('sha256').update('client:10.0.0.66').digest('hex')}`;
    const [sec] = await raw.time();
    await raw.zadd(hostileKey, String(Number(sec) * 1000 + 1e12), 'forever');
    const h = await n1.tryLeases([['client:10.0.0.66', 1]]);
    assert.ok('lease' in h, 'a slot set to expire past the longest lease any node takes does not count');
    h.lease.release();
    await raw.zadd(hostileKey, String(Number(sec) * 1000 + 30_000), 'plausible');
    assert.deepEqual(await n1.tryLeases([['client:10.0.0.66', 1]]), { full: 0 }, 'one within the longest lease counts');
    assert.throws(() => new RedisCoordinator({ url, root: '/srv/git', ttlMs: 600_000 }), /lease TTL 600000 ms: it must be from 100 to 60000 ms/);
  } finally {
    raw.disconnect();
    await n1.close();
    await n2.close();
    await redis.stop();
    t.cleanup();
  }
});

test('fleet limits: two limiters sharing a coordinator count one repository together; the queued one is told why and gets its turn', async () => {
  const coordinator = new LocalCoordinator();
  const n1 = new PackLimiter(0, 60_000, 'pack-objects', { coordinator, perRepo: 1 });
  const n2 = new PackLimiter(0, 60_000, 'pack-objects', { coordinator, perRepo: 1 });
  const first = await n1.acquire(new PacketWriter(new TestSink()), true, { repo: '/srv/a.git' });
  const other = await n2.acquire(new PacketWriter(new TestSink()), true, { repo: '/srv/b.git' });
  const sink = new TestSink();
  const w = new PacketWriter(sink);
  w.sideband = 'side-band-64k';
  let granted = false;
  const queued = n2.acquire(w, true, { repo: '/srv/a.git' }).then((r) => { granted = true; return r; });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(granted, false, 'the repository has its one slot on the other node');
  assert.match(sink.text(), /gitwire: waiting for a pack-objects slot \(the limit for this repository across the servers\)\n/);
  first();
  const release = await queued;
  assert.match(sink.text(), /gitwire: pack-objects slot acquired\n/);
  release();
  other();
  assert.equal(coordinator.count('repo:/srv/a.git'), 0);
  // a client that goes away while queued leaves no lease behind
  const hold = await n1.acquire(new PacketWriter(new TestSink()), true, { repo: '/srv/a.git' });
  const gone = new TestSink();
  const p = n2.acquire(new PacketWriter(gone), true, { repo: '/srv/a.git' });
  await new Promise((r) => setTimeout(r, 20));
  gone.close();
  await assert.rejects(p, { code: 'GW_CLIENT_GONE' });
  hold();
  assert.equal(coordinator.count('repo:/srv/a.git'), 0);
});

test('per-client limits apply to the transport-bound acquire (forClient)', async () => {
  const coordinator = new LocalCoordinator();
  const lim = new PackLimiter(0, 60_000, 'pack-objects', { coordinator, perClient: 1 });
  const a = await lim.forClient('192.0.2.1')(new PacketWriter(new TestSink()), true);
  const b = await lim.forClient('192.0.2.2')(new PacketWriter(new TestSink()), true);
  assert.equal(coordinator.count('client:192.0.2.1'), 1);
  assert.equal(coordinator.count('client:192.0.2.2'), 1);
  a(); b();
  assert.equal(coordinator.count('client:192.0.2.1'), 0);
});

test('claim records from Redis are taken only in their exact shape', () => {
  const t40 = 'a'.repeat(40);
  assert.deepEqual(parseClaim(JSON.stringify({ state: 'running', node: 'n', spool: 's' })), { state: 'running', node: 'n', spool: 's' });
  assert.deepEqual(parseClaim(JSON.stringify({ state: 'done', node: 'n', spool: 's', size: 12, trailer: t40, stored: true })), { state: 'done', node: 'n', spool: 's', size: 12, trailer: t40, stored: true });
  for (const bad of [null, '', 'x', '[]', '{}', JSON.stringify({ state: 'done', node: 'n', spool: 's', size: -1, trailer: t40 }),
    JSON.stringify({ state: 'done', node: 'n', spool: 's', size: 1, trailer: 'zz' }), JSON.stringify({ state: 'running', node: 1, spool: 's' }),
    JSON.stringify({ state: 'other', node: 'n', spool: 's' }), 'x'.repeat(2000)]) {
    assert.equal(parseClaim(bad), undefined, String(bad));
  }
});

test("another node's repository name is mapped under the root, or refused", async () => {
  // no Redis listens here: the coordinator stays down and answers locally
  const c = new RedisCoordinator({ url: 'redis://127.0.0.1:1', root: '/srv/git' });
  try {
    assert.equal(c.repoName('/srv/git/a/b.git'), 'a/b.git');
    assert.equal(c.repoPath('a/b.git'), '/srv/git/a/b.git');
    assert.equal(c.repoPath('.'), '/srv/git');
    for (const bad of ['', '/etc', '../x', 'a/../../x', 'a/..', 'a\0b', 'x'.repeat(5000)]) assert.equal(c.repoPath(bad), undefined, bad);
    assert.equal(c.status().up, false);
    assert.equal(await c.claimPack('k', 's'), undefined, 'no claims while Redis is away');
    const l = await c.tryLease('repo:/srv/git/a.git', 1);
    assert.ok(l, 'local counting while Redis is away');
    assert.equal(await c.tryLease('repo:/srv/git/a.git', 1), undefined);
    l.release();
  } finally {
    await c.close();
  }
});

test("DirectoryStore.follow opens only a spool of the request's own key, by a name of the spool's form", async () => {
  const t = tmp('gitwire-cluster-units-');
  try {
    const dir = join(t.dir, 'cache');
    mkdirSync(dir);
    const store = new DirectoryStore(dir);
    const key = 'ab'.repeat(32);
    const spool = await store.create(key);
    await spool.write([Buffer.from('PACKdata')], 0);
    const f = await store.follow(key, spool.name!);
    assert.ok(f);
    const buf = Buffer.alloc(16);
    assert.equal(await f.read(buf, 0), 8);
    assert.equal(buf.subarray(0, 8).toString(), 'PACKdata');
    await f.close();
    writeFileSync(join(t.dir, 'outside'), 'x');
    for (const bad of ['../outside', `tmp-${'cd'.repeat(32)}-000000000000`, `${key}.pack`, spool.name!.replace('tmp-', 'tmp-/'), '']) {
      assert.equal(await store.follow(key, bad), undefined, bad);
    }
    await spool.discard();
    await spool.close();
  } finally {
    t.cleanup();
  }
});

test('RedisCoordinator: one state for /readyz and the metric: up only once the subscriber is subscribed, and it does not flap on the way back up', { skip: HAVE_REDIS ? false : 'redis-server not installed' }, async () => {
  const t = tmp('gitwire-cluster-state-');
  let redis = await startRedis(t.dir);
  const port = redis.port;
  const logged: Array<[string, string | undefined]> = [];
  const c = new RedisCoordinator({ url: `redis://127.0.0.1:${port}`, root: '/srv/git', prefix: 'state-test:', log: (msg, _f, level) => logged.push([msg, level]) });
  const heard: Array<string | undefined> = [];
  c.onInvalidate((repo) => heard.push(repo));
  // a raw client publishes as another node would, the moment `c` says it is up
  const raw = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 0, retryStrategy: (n) => Math.min(50 * n, 500) });
  raw.on('error', () => { /* Redis is stopped on purpose below */ });
  /** poll status() every turn of the loop until `want`; every value seen after the first `want` must stay `want` */
  const watch = async (want: boolean, onFirst?: () => void, settleMs = 300): Promise<boolean[]> => {
    const seen: boolean[] = [];
    let end = 0;
    for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
      const up = c.status().up;
      assert.equal(c.shared, up, 'cache claims follow the same state');
      seen.push(up);
      if (up === want && !end) { end = Date.now() + settleMs; onFirst?.(); }
      if (end && Date.now() > end) break;
      await new Promise((r) => setImmediate(r));
    }
    const first = seen.indexOf(want);
    assert.ok(first >= 0, `never ${want ? 'up' : 'down'}`);
    assert.ok(seen.slice(first).every((v) => v === want), `the state flapped after turning ${want ? 'up' : 'down'}`);
    return seen;
  };
  try {
    await watch(true);
    await redis.stop();
    await watch(false);
    assert.equal(c.status().error !== undefined, true, 'down says why');
    // cleared while Redis is still down: the coordinator can reconnect (and drop every snapshot) before startRedis returns
    heard.length = 0;
    redis = await startRedis(t.dir, port);
    let published: Promise<unknown> | undefined;
    await watch(true, () => { published = raw.publish('state-test:invalidate', 'another-node a.git'); });
    await published;
    for (let i = 0; i < 100 && !heard.includes('/srv/git/a.git'); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(heard.includes(undefined), 'after the outage every snapshot is dropped once');
    assert.ok(heard.includes('/srv/git/a.git'), 'an invalidation published the moment the node says it is up is heard');
    // being connected is news (info); losing Redis is trouble (warn)
    const level = (re: RegExp) => logged.filter(([m]) => re.test(m)).map(([, l]) => l);
    assert.deepEqual(level(/connected to Redis/), ['info']);
    assert.deepEqual(level(/Redis is back/), ['info']);
    assert.ok(level(/Redis unreachable/).length >= 1 && level(/Redis unreachable/).every((l) => l === 'warn'));
  } finally {
    raw.disconnect();
    await c.close();
    await redis.stop();
    t.cleanup();
  }
});

test('RepositoryPool revalidateMs: one ref snapshot serves the interval (a change on disk is not seen) until invalidate(); 0 looks every time', async () => {
  const t = tmp('gitwire-pool-revalidate-');
  try {
    const repo = join(t.dir, 'r.git');
    git(['init', '-q', '--bare', '-b', 'main', repo]);
    const blob = (s: string) => git(['hash-object', '-w', '--stdin'], { cwd: repo, input: s }).trim();
    const tree = (b: string) => git(['mktree'], { cwd: repo, input: `100644 blob ${b}\tf\n` }).trim();
    const c1 = git(['commit-tree', tree(blob('1\n')), '-m', 'one'], { cwd: repo }).trim();
    const c2 = git(['commit-tree', tree(blob('2\n')), '-m', 'two'], { cwd: repo }).trim();
    git(['update-ref', 'refs/heads/main', c1], { cwd: repo });
    const tipOf = (pool: RepositoryPool) => {
      const lease = pool.acquire(repo);
      const view = lease.repo.forRequest();
      try { return view.refs.resolve('refs/heads/main')?.hex?.toString('latin1'); } finally { view.endRequest(); lease.release(); }
    };
    const trusting = new RepositoryPool({ revalidateMs: 600_000 });
    const looking = new RepositoryPool();
    assert.equal(tipOf(trusting), c1);
    assert.equal(tipOf(looking), c1);
    // a request that ended does not end the interval's snapshot for the next one
    assert.equal(tipOf(trusting), c1);
    git(['update-ref', 'refs/heads/main', c2], { cwd: repo });
    assert.equal(tipOf(looking), c2, 'the default pool sees the change at once');
    assert.equal(tipOf(trusting), c1, 'within the interval the pooled snapshot stands');
    trusting.invalidate(repo);
    assert.equal(tipOf(trusting), c2, 'invalidate() ends the interval');
    // the live refs (what a push locks and checks) are never the trusted snapshot
    const lease = trusting.acquire(repo);
    git(['update-ref', 'refs/heads/main', c1], { cwd: repo });
    assert.equal(lease.repo.refs.resolve('refs/heads/main')?.hex?.toString('latin1'), c1);
    lease.release();
    assert.throws(() => new RepositoryPool({ revalidateMs: -1 }), RangeError);
    trusting.close();
    looking.close();
  } finally {
    t.cleanup();
  }
});
