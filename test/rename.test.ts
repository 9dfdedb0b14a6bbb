/**
 * Renaming a repository (issue #38, item 4), end to end: while a server
 * runs, a clone by the old name works before and is refused after, the new
 * name clones, the server's repository pool forgets the old name at once,
 * a pool member renamed anywhere keeps borrowing, and hostile or
 * colliding names are refused with nothing moved.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { BIN, git, gitEnv, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { HAVE_REDIS, startRedis } from './helpers/cluster.js';
import { forkRepository, renameRepository, startServer } from '../src/index.js';
import { GitwireError } from '../src/errors.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-rename-'); });
after(() => t.cleanup());

let n = 0;
function bare(root: string, name: string): string {
  const work = join(t.dir, `work-${n++}`);
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'a\n' });
  commit(work, 'two', { 'b.txt': 'b\n' });
  const dir = join(root, name);
  git(['clone', '-q', '--bare', work, dir]);
  return dir;
}

function fsck(dir: string): void {
  const r = run('git', ['fsck', '--no-progress', '--no-dangling'], { cwd: dir });
  assert.equal(r.status, 0, `git fsck in ${dir}: ${r.stderr.toString()}`);
}

function clone(url: string, dest: string): { ok: boolean; err: string } {
  const r = run('git', ['clone', '-q', url, dest]);
  if (r.status === 0) fsck(dest);
  return { ok: r.status === 0, err: r.stderr.toString() };
}

/** clone without blocking the event loop (the server of the next test runs in this process) */
function cloneAsync(url: string, dest: string): Promise<{ ok: boolean; err: string }> {
  return new Promise((resolve) => {
    const c = spawn('git', ['clone', '-q', url, dest], { env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (b: Buffer) => { err += b.toString(); });
    c.on('exit', (code) => {
      if (code === 0) fsck(dest);
      resolve({ ok: code === 0, err });
    });
  });
}

test('renameRepository in a running server: the old name clones before and is refused after, the new one clones, the pool forgets the old name at once', async () => {
  const root = join(t.dir, 'r1');
  mkdirSync(root);
  bare(root, 'old.git');
  const s = await startServer({ root, http: 0, exportAll: true, spawnHelper: false, pool: { revalidateMs: 60_000 } });
  try {
    const url = (name: string) => `http://127.0.0.1:${s.httpPort}/${name}`;
    assert.ok((await cloneAsync(url('old.git'), join(t.dir, 'c1'))).ok);
    assert.equal(s.pool!.size, 1, 'the pool holds the old name');
    const r = renameRepository('old.git', 'group/new.git', { root, pool: s.pool, coordinator: s.coordinator });
    assert.equal(r.to, join(root, 'group', 'new.git'));
    assert.equal(s.pool!.size, 0, 'the old name is gone from the pool at once');
    const gone = await cloneAsync(url('old.git'), join(t.dir, 'c2'));
    assert.equal(gone.ok, false);
    assert.match(gone.err, /not found|404/i);
    assert.ok((await cloneAsync(url('group/new.git'), join(t.dir, 'c3'))).ok);
  } finally { await s.shutdown(1000); }
});

test('gitwire rename while gitwire serve runs (HTTP): before and after; onto an existing repository and with hostile names it refuses and moves nothing', async () => {
  const root = join(t.dir, 'r2');
  mkdirSync(root);
  bare(root, 'a.git');
  bare(root, 'b.git');
  let s: ServerProc | undefined;
  try {
    s = await startServe(root, ['--http', '0']);
    const url = (name: string) => `http://127.0.0.1:${s!.httpPort}/${name}`;
    assert.ok(clone(url('a.git'), join(t.dir, 'd1')).ok);
    const onto = run(BIN, ['rename', '--root', root, 'a.git', 'b.git']);
    assert.equal(onto.status, 128);
    assert.equal(onto.stderr.toString(), "fatal: destination 'b.git' already exists\n");
    for (const bad of ['../out.git', '@pools/x.git', '~x.git', 'x\ty.git', `${'d/'.repeat(2000)}x.git`, 'a.git/inner.git']) {
      const r = run(BIN, ['rename', '--root', root, 'a.git', bad]);
      assert.equal(r.status, 128, `${bad}: ${r.stderr.toString()}`);
      assert.match(r.stderr.toString(), /^fatal: /);
    }
    const missing = run(BIN, ['rename', '--root', root, 'nope.git', 'c.git']);
    assert.equal(missing.stderr.toString(), "fatal: 'nope.git' does not appear to be a git repository\n");
    assert.deepEqual(readdirSync(root).sort(), ['a.git', 'b.git']);
    // `b` is `b.git` to every request: refused; `a.git` to `a` is its own twin: allowed
    assert.match(run(BIN, ['rename', '--root', root, 'a.git', 'b']).stderr.toString(), /^fatal: destination 'b' already exists as 'b.git'\n/);
    assert.equal(run(BIN, ['rename', '--root', root, 'a.git', 'a']).status, 0);
    assert.equal(run(BIN, ['rename', '--root', root, 'a', 'a.git']).status, 0);
    const ok = run(BIN, ['rename', '--root', root, 'a.git', 'c.git']);
    assert.equal(ok.status, 0, ok.stderr.toString());
    assert.equal(clone(url('a.git'), join(t.dir, 'd2')).ok, false);
    assert.ok(clone(url('c.git'), join(t.dir, 'd3')).ok);
    assert.equal(run(BIN, ['rename', 'one']).status, 129);
  } finally { await s?.stop(); }
});

test('a symlink leading out of the root is no way out for the new name', () => {
  const root = join(t.dir, 'r3');
  mkdirSync(root);
  bare(root, 'a.git');
  mkdirSync(join(t.dir, 'outside'));
  symlinkSync(join(t.dir, 'outside'), join(root, 'link'));
  assert.throws(() => renameRepository('a.git', 'link/a.git', { root }), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_ADMIN' && /not under the root/.test(e.message));
  assert.ok(existsSync(join(root, 'a.git')));
  assert.deepEqual(readdirSync(join(t.dir, 'outside')), []);
});

test('a rename or a fork makes a name as push-to-create does: what creation refuses, they refuse, nothing moved', async () => {
  const root = join(t.dir, 'r3b');
  mkdirSync(root);
  bare(root, 'a.git');
  bare(root, 'outer.git');
  mkdirSync(join(root, 'plain'));
  writeFileSync(join(root, 'plain', 'f'), 'x');
  // each refused by names.ts's rules (letters, digits and - . _ + @; no .lock, no '..', no .git but last;
  // at most 8 components and 200 bytes; no repository above the new one)
  for (const bad of ['-x.git', 'a b.git', 'x.lock', 'x..y.git', 'x..git', 'd.git/x.git', `${'d/'.repeat(8)}x.git`, `${'x'.repeat(201)}.git`, 'outer/inner.git', 'plain/f/x.git', '.hidden.git']) {
    const byName = (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_NAME' && /^cannot create '/.test(e.message);
    assert.throws(() => renameRepository('a.git', bad, { root }), byName, `rename to ${JSON.stringify(bad)}`);
    await assert.rejects(forkRepository('a.git', bad, { root }), byName, `fork to ${JSON.stringify(bad)}`);
  }
  assert.deepEqual(readdirSync(root).sort(), ['a.git', 'outer.git', 'plain']);
  assert.deepEqual(readdirSync(join(root, 'plain')), ['f']);
  // what creation takes, they take
  renameRepository('a.git', 'grp/sub-1/a_b+c@d.git', { root });
  fsck((await forkRepository('grp/sub-1/a_b+c@d.git', 'grp/fork.git', { root })).path);
  // the CLI says it in git's way
  const r = run(BIN, ['rename', '--root', root, 'grp/fork.git', 'outer/x.git']);
  assert.equal(r.status, 128);
  assert.match(r.stderr.toString(), /^fatal: cannot create 'outer\/x': 'outer' is a repository\n/);
});

test('a pool member renamed to another depth keeps borrowing from its pool; the source too', async () => {
  const root = join(t.dir, 'r4');
  mkdirSync(root);
  bare(root, 'src.git');
  await forkRepository('src.git', 'fork.git', { root });
  renameRepository('fork.git', 'deep/er/fork.git', { root });
  renameRepository('src.git', 'moved/src.git', { root });
  fsck(join(root, 'deep', 'er', 'fork.git'));
  fsck(join(root, 'moved', 'src.git'));
  // a pool is no repository to rename
  const pool = readdirSync(join(root, '@pools')).find((f) => f.endsWith('.git'))!;
  assert.throws(() => renameRepository(`@pools/${pool}`, 'p.git', { root }), /does not appear to be a git repository/);
  // and a fork of the renamed source still joins the same pool
  const r = await forkRepository('moved/src.git', 'fork2.git', { root });
  assert.equal(r.newPool, false);
  fsck(r.path);
});

test('a clone in flight while its repository is renamed either finishes whole or fails cleanly, and ends', { timeout: 60_000 }, async () => {
  const root = join(t.dir, 'r5');
  mkdirSync(root);
  const dir = join(root, 'big.git');
  git(['init', '-q', '--bare', dir]);
  const lines: string[] = [];
  for (let i = 1; i <= 3000; i++) lines.push(`commit refs/heads/main\nmark :${i}\ncommitter C <c@example.com> ${1700000000 + i} +0000\ndata 2\nc\n${i > 1 ? `from :${i - 1}\n` : ''}M 100644 inline f${i % 50}\ndata 1000\n${'x'.repeat(990)}${String(i).padStart(10, '0')}\n`);
  git(['fast-import', '--quiet'], { cwd: dir, input: lines.join('') });
  let s: ServerProc | undefined;
  try {
    s = await startServe(root, ['--http', '0']);
    const dest = join(t.dir, 'inflight');
    const c = spawn('git', ['clone', '-q', `http://127.0.0.1:${s.httpPort}/big.git`, dest], { env: gitEnv, stdio: 'ignore' });
    const done = new Promise<number | null>((r) => c.on('exit', (code) => r(code)));
    await new Promise((r) => setTimeout(r, 150));
    renameRepository('big.git', 'big2.git', { root });
    const code = await done;
    if (code === 0) fsck(dest);
    else assert.ok(!existsSync(join(dest, '.git')), 'a failed clone leaves nothing half made');
    assert.ok(clone(`http://127.0.0.1:${s.httpPort}/big2.git`, join(t.dir, 'after')).ok);
  } finally { await s?.stop(); }
});

test('a push in flight while its repository is renamed is refused cleanly (or lands whole): no quarantine or temporary pack left behind', { timeout: 60_000 }, async () => {
  const root = join(t.dir, 'r6');
  mkdirSync(root);
  const dir = bare(root, 'p.git');
  const w = join(t.dir, 'push-work');
  git(['clone', '-q', dir, w]);
  writeFileSync(join(w, 'big'), randomBytes(20 << 20));
  const tip = commit(w, 'big', {});
  const c = spawn('git', ['push', '-q', '--receive-pack', `${BIN} receive-pack`, dir, 'HEAD:main'], { cwd: w, env: gitEnv, stdio: 'ignore' });
  const done = new Promise<number | null>((r) => c.on('exit', (code) => r(code)));
  // the rename lands while the pack is being received: its quarantine exists under the old name
  for (let i = 0; i < 200 && !readdirSync(join(dir, 'objects')).some((f) => f.startsWith('tmp_objdir-incoming-')); i++) await new Promise((r) => setTimeout(r, 25));
  renameRepository('p.git', 'q.git', { root });
  const code = await done;
  const q = join(root, 'q.git');
  fsck(q);
  const main = git(['rev-parse', 'main'], { cwd: q }).trim();
  if (code === 0) assert.equal(main, tip);
  else assert.notEqual(main, tip);
  assert.deepEqual(readdirSync(join(q, 'objects')).filter((f) => f.startsWith('incoming-') || f.startsWith('tmp')), []);
  assert.deepEqual(readdirSync(join(q, 'objects', 'pack')).filter((f) => f.startsWith('tmp')), []);
});

test('gitwire rename --redis: a server that trusts its snapshots (--pool-revalidate 60 s) forgets the old name at once, so a new repository there is what it serves', { skip: !HAVE_REDIS && 'no redis-server', timeout: 60_000 }, async () => {
  const root = join(t.dir, 'r7');
  mkdirSync(root);
  bare(root, 'a.git');
  const redis = await startRedis(t.dir);
  let s: ServerProc | undefined;
  try {
    s = await startServe(root, ['--http', '0', '--redis', `redis://127.0.0.1:${redis.port}`, '--pool-revalidate', '60000']);
    const url = `http://127.0.0.1:${s.httpPort}/a.git`;
    const lsRemote = () => git(['ls-remote', url, 'refs/heads/main']).split('\t')[0];
    const before = lsRemote();
    const r = run(BIN, ['rename', '--root', root, '--redis', `redis://127.0.0.1:${redis.port}`, 'a.git', 'b.git']);
    assert.equal(r.status, 0, r.stderr.toString());
    // another repository under the old name
    const other = bare(root, 'a.git');
    const now = git(['rev-parse', 'main'], { cwd: other }).trim();
    assert.notEqual(now, before);
    const end = Date.now() + 5000;
    let seen = lsRemote();
    while (seen !== now && Date.now() < end) { await new Promise((res) => setTimeout(res, 50)); seen = lsRemote(); }
    assert.equal(seen, now, 'the server serves the new a.git, not its snapshot of the renamed one');
    assert.equal(run(BIN, ['rename', '--root', root, '--redis', 'redis://127.0.0.1:1', 'b.git', 'c.git']).status, 128);
    assert.ok(existsSync(join(root, 'b.git')), 'nothing renamed when Redis cannot be told');
  } finally {
    await s?.stop();
    await redis.stop();
  }
});
