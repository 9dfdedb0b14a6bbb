/**
 * The repository pool: a server that keeps repositories open between
 * requests must never serve stale refs or miss objects after a push, a
 * repack or a pack-refs made by git between requests.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { writeFileSync, mkdirSync } from 'node:fs';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { createHttpHandler } from '../src/transport/http.js';
import { RepositoryPool } from '../src/repo/pool.js';

const execFileP = promisify(execFile);
let t: ReturnType<typeof tmp>;
let root: string;
let work: string;
let server: Server;
let port: number;
const pool = new RepositoryPool({ maxEntries: 4 });

before(async () => {
  t = tmp();
  root = join(t.dir, 'root');
  mkdirSync(root);
  work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < 3; i++) commit(work, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(200) });
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) git(['clone', '-q', '--bare', work, join(root, `${name}.git`)]);
  const handler = createHttpHandler({ root, pool });
  server = createServer((req, res) => { void handler(req, res); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
after(async () => { await new Promise((r) => server.close(r)); pool.close(); t.cleanup(); });

async function gitAsync(args: string[], cwd?: string): Promise<string> {
  const r = await execFileP('git', args, { cwd, env: gitEnv, maxBuffer: 1 << 26 });
  return r.stdout;
}
const url = (name: string) => `http://127.0.0.1:${port}/${name}.git`;
const lsRemote = (name: string, v = 2) => gitAsync(['-c', `protocol.version=${v}`, 'ls-remote', url(name)]);

test('pool: a push, a repack -ad and a pack-refs between requests are seen by the next request', async () => {
  const bare = join(root, 'a.git');
  const clone = join(t.dir, 'clone-a');
  await gitAsync(['clone', '-q', url('a'), clone]);
  assert.equal(pool.stats.opens >= 1, true);
  const hitsBefore = pool.stats.hits;
  assert.equal(await lsRemote('a'), git(['ls-remote', bare]));
  assert.ok(pool.stats.hits > hitsBefore, 'the second request reuses the open repository');

  // new objects arrive as a new pack (what a push does)
  const tip = commit(work, 'new', { 'g': 'new content\n'.repeat(500) });
  git(['push', '-q', bare, 'main'], { cwd: work });
  git(['--git-dir', bare, 'repack', '-q', '-d'], {});
  await gitAsync(['fetch', '-q', 'origin'], clone);
  assert.equal(git(['rev-parse', 'origin/main'], { cwd: clone }).trim(), tip);

  // everything repacked into one pack, old packs deleted
  commit(work, 'more', { 'h': 'h\n'.repeat(300) });
  git(['push', '-q', bare, 'main', 'main:refs/heads/side'], { cwd: work });
  git(['--git-dir', bare, 'repack', '-q', '-a', '-d'], {});
  git(['--git-dir', bare, 'pack-refs', '--all'], {});
  assert.equal(await lsRemote('a'), git(['ls-remote', bare]));
  assert.equal(await lsRemote('a', 0), git(['ls-remote', bare]));
  await gitAsync(['fetch', '-q', 'origin'], clone);
  assert.equal(git(['rev-parse', 'origin/side'], { cwd: clone }).trim(), git(['--git-dir', bare, 'rev-parse', 'side']).trim());
  git(['fsck', '--no-progress'], { cwd: clone });
  // a fresh clone after the repack is complete
  const clone2 = join(t.dir, 'clone-a2');
  await gitAsync(['clone', '-q', '--mirror', url('a'), clone2]);
  git(['fsck', '--no-progress'], { cwd: clone2 });
  assert.equal(git(['for-each-ref'], { cwd: clone2 }), git(['for-each-ref'], { cwd: bare }));
});

test('pool: a config change between requests takes effect', async () => {
  const bare = join(root, 'b.git');
  await lsRemote('b');
  git(['--git-dir', bare, 'config', 'uploadpack.hideRefs', 'refs/heads/main']);
  try {
    const out = await lsRemote('b');
    assert.doesNotMatch(out, /refs\/heads\/main/);
    assert.ok(pool.stats.reopens >= 1);
  } finally {
    git(['--git-dir', bare, 'config', '--unset', 'uploadpack.hideRefs']);
  }
  assert.match(await lsRemote('b'), /refs\/heads\/main/);
});

test('pool: bounded by entry count; leased repositories are never closed under a request', async () => {
  for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) await lsRemote(name);
  assert.ok(pool.size <= 4, `pool holds ${pool.size} entries`);
  assert.ok(pool.stats.evictions >= 2);
  // concurrent clones of every repository: all complete and are fsck-clean
  await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map(async (name) => {
    const dir = join(t.dir, `par-${name}`);
    await gitAsync(['clone', '-q', '--bare', url(name), dir]);
    git(['fsck', '--no-progress'], { cwd: dir });
  }));
  assert.ok(pool.size <= 4);
});

test('pool: the byte bound holds', () => {
  const small = new RepositoryPool({ maxBytes: 1 });
  const l1 = small.acquire(join(root, 'c.git'), { strict: true, env: gitEnv });
  const l2 = small.acquire(join(root, 'd.git'), { strict: true, env: gitEnv });
  assert.equal(small.size, 2, 'leased entries stay open');
  l1.release();
  l2.release();
  assert.equal(small.size as number, 0, 'idle entries over the byte bound are closed');
  assert.equal(small.bytes, 0);
  small.close();
});

test('pool: a repository replaced while leased keeps serving its lease', () => {
  const p = new RepositoryPool();
  const bare = join(root, 'e.git');
  const l1 = p.acquire(bare, { strict: true, env: gitEnv });
  writeFileSync(join(bare, 'description'), 'x'); // not watched: same entry
  const l2 = p.acquire(bare, { strict: true, env: gitEnv });
  assert.equal(l1.repo, l2.repo);
  git(['--git-dir', bare, 'config', 'core.bigFileThreshold', '1m']);
  const l3 = p.acquire(bare, { strict: true, env: gitEnv });
  assert.notEqual(l3.repo, l1.repo);
  const head = git(['--git-dir', bare, 'rev-parse', 'HEAD']).trim();
  assert.ok(l1.repo.commit(Buffer.from(head, 'hex')), 'the old lease still reads objects');
  l1.release(); l2.release(); l3.release();
  git(['--git-dir', bare, 'config', '--unset', 'core.bigFileThreshold']);
  p.close();
});
