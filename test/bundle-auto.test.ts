/**
 * `--bundles auto` (bundle/service.ts): a repository's bundle is made after
 * N clones within the window, off the request path; remade once the refs
 * moved and it is old enough, the superseded one removed after the grace
 * period; left alone while up to date. With a shared coordinator (Redis),
 * one node makes a repository's bundle: the others find the lease taken.
 * A request with a ref filter is offered nothing and cannot download.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { gitRun, HAVE_REDIS, startRedis } from './helpers/cluster.js';
import { startServer } from '../src/transport/server.js';
import { createCoordinator } from '../src/cluster/index.js';
import { BundleService, type BundleLogLine } from '../src/bundle/service.js';
import { bundleDir, listBundles, makeBundle } from '../src/bundle/index.js';
import { Repository } from '../src/repo/repository.js';

let t: ReturnType<typeof tmp>;
let root: string;
before(() => { t = tmp('gitwire-bundle-auto-'); root = join(t.dir, 'root'); mkdirSync(root); });
after(() => t.cleanup());

test('auto: made after N clones, remade once behind, the old one removed; left alone while up to date', async () => {
  const repo = makeBitmapRepo(root, 'auto.git', { commits: 20 });
  const lines: BundleLogLine[] = [];
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 2, clonesWindowMs: 60_000, remakeAfterMs: 0, checkEveryMs: 0, graceMs: 0, log: (l) => lines.push(l) });
  const s = await startServer({ root, http: 0, bundles, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/auto.git`;
    const clone = async (name: string) => {
      const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, name)]);
      assert.equal(r.code, 0, r.stderr);
      await bundles.idle();
    };
    await clone('a1');
    assert.deepEqual(listBundles(bundleDir({ commonDir: repo })), [], 'one clone: not yet');
    await clone('a2');
    const first = listBundles(bundleDir({ commonDir: repo }));
    assert.equal(first.length, 1, 'the second clone within the window made it');
    assert.equal(lines.at(-1)?.outcome, 'made');
    assert.equal(lines.at(-1)?.source, 'bitmap');
    assert.equal(bundles.stats.made, 1);
    // nothing moved: looked at, left alone
    await clone('a3');
    assert.equal(lines.at(-1)?.outcome, 'up-to-date');
    assert.deepEqual(listBundles(bundleDir({ commonDir: repo })).map((b) => b.name), first.map((b) => b.name));
    // a push: the next clone finds it behind and remakes it; the superseded one goes (grace 0)
    const work = join(t.dir, 'work');
    git(['clone', '-q', repo, work]);
    commit(work, 'moved', { 'm.txt': 'moved\n' });
    git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
    await new Promise((r) => setTimeout(r, 1100)); // a new token (seconds)
    await clone('a4');
    assert.equal(lines.at(-1)?.outcome, 'made');
    const now = listBundles(bundleDir({ commonDir: repo }));
    assert.equal(now.length, 1);
    assert.ok(now[0]!.token > first[0]!.token);
    assert.deepEqual(lines.at(-1)?.removed, [first[0]!.name]);
    assert.equal(bundles.stats.notTaken >= 1, true, 'clones without the bundle are counted');
  } finally {
    await s.shutdown(1000);
    await bundles.close();
  }
});

test('auto: a young bundle is remade once remakePushes pushes over HTTP moved refs (counted in its directory, so any node sees them); fewer leave it', { timeout: 60_000 }, async () => {
  const repo = makeBitmapRepo(root, 'pushes.git', { commits: 20 });
  const lines: BundleLogLine[] = [];
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 1, remakeAfterMs: 3_600_000, remakePushes: 2, checkEveryMs: 0, graceMs: 0, log: (l) => lines.push(l) });
  const s = await startServer({ root, http: 0, receivePack: true, spawnHelper: false, bundles, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/pushes.git`;
    const clone = async (name: string) => {
      const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, name)]);
      assert.equal(r.code, 0, r.stderr);
      await bundles.idle();
    };
    await clone('p1');
    assert.equal(lines.at(-1)?.outcome, 'made');
    const first = listBundles(bundleDir({ commonDir: repo }));
    const work = join(t.dir, 'pushes-work');
    assert.equal((await gitRun(['clone', '-q', url, work])).code, 0);
    const push = async (i: number) => {
      commit(work, `p${i}`, { 'p.txt': `${i}\n` });
      const r = await gitRun(['-C', work, 'push', '-q', 'origin', 'HEAD:main']);
      assert.equal(r.code, 0, r.stderr);
    };
    await push(1);
    await new Promise((r) => setTimeout(r, 1100)); // a new token (seconds)
    const made = lines.length;
    await clone('p2');
    assert.equal(lines.length, made, 'one push behind, an hour young: not looked at again');
    assert.deepEqual(listBundles(bundleDir({ commonDir: repo })).map((b) => b.name), first.map((b) => b.name));
    await push(2);
    await clone('p3');
    assert.equal(lines.at(-1)?.outcome, 'made', 'two pushes behind: remade');
    const now = listBundles(bundleDir({ commonDir: repo }));
    assert.equal(now.length, 1);
    assert.ok(now[0]!.token > first[0]!.token);
    // the count starts again from the new bundle
    await push(3);
    const again = lines.length;
    await clone('p4');
    assert.equal(lines.length, again);
  } finally {
    await s.shutdown(1000);
    await bundles.close();
  }
});

test('a request with a ref filter is offered no bundle (no capability, empty list) and cannot download it', async () => {
  const repo = makeBitmapRepo(root, 'filtered.git', { commits: 12 });
  const made = await makeBundle(Repository.open(repo));
  const s = await startServer({ root, http: 0, bundles: { mode: 'serve' }, refFilter: (info) => (info.req?.headers['x-narrow'] ? (n) => n !== 'refs/heads/old' : undefined), log: () => undefined });
  try {
    const base = `http://127.0.0.1:${s.httpPort}/filtered.git`;
    const ask = async (narrow: boolean) => {
      const h: Record<string, string> = { 'Git-Protocol': 'version=2', ...(narrow ? { 'X-Narrow': '1' } : {}) };
      const adv = await (await fetch(`${base}/info/refs?service=git-upload-pack`, { headers: h })).text();
      const list = Buffer.from(await (await fetch(`${base}/git-upload-pack`, {
        method: 'POST', body: '0017command=bundle-uri\n00010000', headers: { ...h, 'Content-Type': 'application/x-git-upload-pack-request' },
      })).arrayBuffer()).toString('latin1');
      const dl = await fetch(`${base}/info/bundles/${made.name}`, { headers: h });
      await dl.arrayBuffer();
      return { capability: /bundle-uri\n/.test(adv), list, download: dl.status };
    };
    const wide = await ask(false);
    assert.equal(wide.capability, true);
    assert.match(wide.list, /bundle\.gitwire\.uri=/);
    assert.equal(wide.download, 200);
    const narrow = await ask(true);
    // the command is not advertised to it: refused as any unadvertised command is, and nothing listed
    assert.deepEqual({ ...narrow, list: /bundle\./.test(narrow.list) }, { capability: false, list: false, download: 404 });
  } finally {
    await s.shutdown(1000);
  }
});

test('a bundle directory that cannot be written (a file in its place): the attempt fails with its reason in the log, clones go on', async () => {
  const repo = makeBitmapRepo(root, 'blocked.git', { commits: 12 });
  mkdirSync(join(repo, 'gitwire'));
  writeFileSync(bundleDir({ commonDir: repo }), 'not a directory');
  const lines: BundleLogLine[] = [];
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 1, log: (l) => lines.push(l) });
  const s = await startServer({ root, http: 0, bundles, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/blocked.git`;
    for (const n of ['b1', 'b2']) {
      const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, n)]);
      assert.equal(r.code, 0, r.stderr);
      await bundles.idle();
    }
    assert.equal(lines[0]?.outcome, 'failed');
    assert.match(lines[0]!.error!, /EEXIST|ENOTDIR|not a directory/i);
    assert.equal(bundles.stats.failed >= 1, true);
  } finally {
    await s.shutdown(1000);
    await bundles.close();
  }
});

test('fleet: with Redis, one of two nodes makes a repository\'s bundle; the other finds the lease taken', { skip: HAVE_REDIS ? false : 'needs redis-server' }, async () => {
  const repo = makeBitmapRepo(root, 'fleet.git', { commits: 20 });
  const redis = await startRedis(t.dir);
  const a = await createCoordinator({ redis: `redis://127.0.0.1:${redis.port}`, root });
  const b = await createCoordinator({ redis: `redis://127.0.0.1:${redis.port}`, root });
  try {
    for (let i = 0; i < 100 && !(a.status().up && b.status().up); i++) await new Promise((r) => setTimeout(r, 20));
    const na = new BundleService({ mode: 'auto', minBytes: 0, coordinator: a });
    const nb = new BundleService({ mode: 'auto', minBytes: 0, coordinator: b });
    const [x, y] = await Promise.all([na.makeFor(repo), nb.makeFor(repo)]);
    assert.deepEqual([x.outcome, y.outcome].sort(), ['leased-elsewhere', 'made']);
    assert.equal(listBundles(bundleDir({ commonDir: repo })).length, 1);
    // the lease was given back: the next one may make (and finds it up to date)
    const z = await nb.makeFor(repo);
    assert.equal(z.outcome, 'up-to-date');
  } finally {
    await a.close();
    await b.close();
    await redis.stop();
  }
});
