/**
 * Forks with shared objects (issue #38, item 3), end to end with real git:
 * a fork borrows every object from a kept object pool, pushes to either
 * repository stay in it, no `git gc`/`git repack` in any member or the
 * pool loses an object another needs, deleting the source keeps the fork
 * whole, and serve answers a clone of a fork (never of the pool).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, gitEnv, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { toReftable } from './helpers/reftable-repo.js';
import { forkRepository } from '../src/index.js';
import { GitwireError } from '../src/errors.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-fork-'); });
after(() => t.cleanup());

let n = 0;
/** a bare repository `name` under `root` with main (3 commits), a branch, an annotated tag, a loose commit on top */
function source(root: string, name: string): string {
  const work = join(t.dir, `work-${n++}`);
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'a\n' });
  commit(work, 'two', { 'b.txt': 'b\n' });
  git(['branch', 'feature'], { cwd: work });
  commit(work, 'three', { 'c.txt': 'c\n' });
  git(['tag', '-a', 'v1', '-m', 'v1'], { cwd: work });
  git(['checkout', '-q', 'feature'], { cwd: work });
  commit(work, 'feature only', { 'f.txt': 'f\n' });
  git(['checkout', '-q', 'main'], { cwd: work });
  const bare = join(root, name);
  git(['clone', '-q', '--bare', work, bare]);
  git(['repack', '-adb', '-q'], { cwd: bare });
  // and one loose commit the pack does not hold
  const loose = join(t.dir, `loose-${n++}`);
  git(['clone', '-q', bare, loose]);
  commit(loose, 'loose', { 'l.txt': 'l\n' });
  git(['push', '-q', 'origin', 'main'], { cwd: loose });
  return bare;
}

function fsck(dir: string): void {
  const r = run('git', ['fsck', '--no-progress', '--no-dangling'], { cwd: dir });
  assert.equal(r.status, 0, `git fsck in ${dir}: ${r.stdout.toString()}${r.stderr.toString()}`);
}

function cloneVia(dir: string, dest: string): void {
  git(['clone', '-q', '--no-local', '--upload-pack', `${BIN} upload-pack`, dir, dest]);
  fsck(dest);
}

function pushVia(work: string, dir: string, refspec: string): void {
  git(['push', '-q', '--receive-pack', `${BIN} receive-pack`, dir, refspec], { cwd: work });
}

function has(dir: string, oid: string): boolean {
  return run('git', ['cat-file', '-e', oid], { cwd: dir }).status === 0;
}

function duBytes(dir: string): number {
  let sum = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    sum += e.isDirectory() ? duBytes(p) : statSync(p).size;
  }
  return sum;
}

function poolOf(dir: string): string {
  return readFileSync(join(dir, 'objects', 'info', 'alternates'), 'utf8').trim().replace(/\/objects$/, '');
}

test('a fork borrows every object from the pool: its objects/ is refs-sized; clones of both are whole; pushes stay where they went', async () => {
  const root = join(t.dir, 'r1');
  mkdirSync(root);
  const src = source(root, 'src.git');
  const r = await forkRepository('src.git', 'forks/fork.git', { root });
  const fork = join(root, 'forks', 'fork.git');
  assert.equal(r.path, fork);
  assert.ok(r.newPool);
  assert.equal(poolOf(src), r.pool);
  assert.equal(poolOf(fork), r.pool);
  assert.ok(r.pool.startsWith(join(root, '@pools')), r.pool);
  // no pack, no loose object in the fork
  assert.deepEqual(readdirSync(join(fork, 'objects', 'pack')), []);
  assert.ok(duBytes(join(fork, 'objects')) < 4096, `fork objects/: ${duBytes(join(fork, 'objects'))} bytes`);
  assert.equal(git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: fork }), git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: src }));
  assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: fork }), 'refs/heads/main\n');
  // every pool pack is kept
  const packs = readdirSync(join(r.pool, 'objects', 'pack'));
  for (const p of packs.filter((f) => f.endsWith('.pack'))) assert.ok(packs.includes(p.replace(/\.pack$/, '.keep')), `${p} kept`);
  for (const d of [src, fork, r.pool]) fsck(d);
  // git finds the pool's bitmap from the fork and from the source, and only one per pack
  for (const d of [fork, src]) {
    const b = run('git', ['rev-list', '--test-bitmap', 'v1^{commit}'], { cwd: d });
    assert.equal(b.status, 0, `${d}: ${b.stderr.toString()}`);
  }
  assert.deepEqual(readdirSync(join(src, 'objects', 'pack')).filter((f) => f.endsWith('.bitmap')), []);

  cloneVia(src, join(t.dir, 'c-src'));
  cloneVia(fork, join(t.dir, 'c-fork'));
  const a = commit(join(t.dir, 'c-src'), 'to the source', { 's.txt': 's\n' });
  pushVia(join(t.dir, 'c-src'), src, 'main');
  const b = commit(join(t.dir, 'c-fork'), 'to the fork', { 'k.txt': 'k\n' });
  pushVia(join(t.dir, 'c-fork'), fork, 'main:refs/heads/fork-work');
  assert.ok(has(src, a) && !has(fork, a), 'the source push stays in the source');
  assert.ok(has(fork, b) && !has(src, b), 'the fork push stays in the fork');
  assert.ok(!has(r.pool, a) && !has(r.pool, b), 'nothing new reaches the pool');
  for (const d of [src, fork, r.pool]) fsck(d);
});

test('git gc --prune=now and git repack -ad in the source, the fork and the pool: every member stays whole (fsck), even after the source drops a branch the fork still has', async () => {
  const root = join(t.dir, 'r2');
  mkdirSync(root);
  const src = source(root, 'src.git');
  const { pool } = await forkRepository('src.git', 'fork.git', { root });
  const fork = join(root, 'fork.git');
  const featureTip = git(['rev-parse', 'refs/heads/feature'], { cwd: src }).trim();
  // the source forgets `feature` and rewrites main: those objects live on only for the fork
  git(['update-ref', '-d', 'refs/heads/feature'], { cwd: src });
  git(['update-ref', 'refs/heads/main', 'main~2'], { cwd: src });
  git(['reflog', 'expire', '--expire=now', '--all'], { cwd: src });
  const w = join(t.dir, 'gc-fork-work');
  cloneVia(fork, w);
  pushVia(w, fork, `${commit(w, 'fork work', { 'z.txt': 'z\n' })}:refs/heads/more`);
  const gcs: string[][] = [['gc', '--prune=now', '--quiet'], ['repack', '-a', '-d', '-q'], ['gc', '--aggressive', '--prune=now', '--quiet'], ['repack', '-a', '-d', '-l', '-q', '--cruft'], ['prune', '--expire=now']];
  for (const args of gcs) {
    for (const where of [src, fork, pool]) {
      git(args, { cwd: where });
      for (const d of [src, fork, pool]) fsck(d);
    }
  }
  assert.ok(has(fork, featureTip));
  cloneVia(fork, join(t.dir, 'c-after-gc'));
  assert.equal(git(['rev-parse', 'origin/feature'], { cwd: join(t.dir, 'c-after-gc') }).trim(), featureTip);
});

test('gitwire receive-pack\'s own post-push maintenance (gc --auto) in the source and the fork: every member stays whole; it never runs in the pool', async () => {
  const root = join(t.dir, 'r11');
  mkdirSync(root);
  const src = source(root, 'src.git');
  const { pool } = await forkRepository('src.git', 'fork.git', { root });
  const fork = join(root, 'fork.git');
  git(['update-ref', '-d', 'refs/heads/feature'], { cwd: src });
  for (const d of [src, fork]) for (const [k, v] of [['gc.autoPackLimit', '1'], ['transfer.unpackLimit', '1'], ['gc.autoDetach', 'false'], ['gc.pruneExpire', 'now'], ['receive.autogc', 'true']]) git(['config', k!, v!], { cwd: d });
  const packsBefore = readdirSync(join(pool, 'objects', 'pack')).sort();
  for (const d of [src, fork]) {
    const w = join(t.dir, `autogc-${n++}`);
    cloneVia(d, w);
    for (let i = 0; i < 3; i++) {
      commit(w, `auto ${i}`, { [`auto${i}.txt`]: `${i}\n` });
      pushVia(w, d, 'HEAD:refs/heads/auto');
    }
  }
  // gc ran in the members (each push kept its pack; more than one pack starts gc --auto): one local pack each
  for (const d of [src, fork]) assert.equal(readdirSync(join(d, 'objects', 'pack')).filter((f) => f.endsWith('.pack')).length, 1, d);
  assert.deepEqual(readdirSync(join(pool, 'objects', 'pack')).sort(), packsBefore, 'the pool is untouched');
  for (const d of [src, fork, pool]) fsck(d);
  cloneVia(fork, join(t.dir, 'c-autogc'));
});

test('the pool\'s pins keep the members\' history even with its .keep files gone', async () => {
  const root = join(t.dir, 'r3');
  mkdirSync(root);
  source(root, 'src.git');
  const { pool } = await forkRepository('src.git', 'fork.git', { root });
  const fork = join(root, 'fork.git');
  for (const f of readdirSync(join(pool, 'objects', 'pack'))) if (f.endsWith('.keep')) unlinkSync(join(pool, 'objects', 'pack', f));
  git(['gc', '--prune=now', '--quiet'], { cwd: pool });
  fsck(fork);
  cloneVia(fork, join(t.dir, 'c-pins'));
});

test('deleting the source (rm -rf) keeps the fork whole; a fork of a fork joins the same pool and takes the fork\'s own objects in', async () => {
  const root = join(t.dir, 'r4');
  mkdirSync(root);
  const src = source(root, 'src.git');
  const { pool } = await forkRepository('src.git', 'a.git', { root });
  const a = join(root, 'a.git');
  const w = join(t.dir, 'fof-work');
  cloneVia(a, w);
  const own = commit(w, 'only in a', { 'o.txt': 'o\n' });
  pushVia(w, a, 'main:refs/heads/own');
  rmSync(src, { recursive: true, force: true });
  fsck(a);
  cloneVia(a, join(t.dir, 'c-a'));
  // a bitmapped pack of its own in a: the pool keeps one bitmap, so git warns about no second one
  git(['repack', '-a', '-d', '-b', '-q'], { cwd: a });
  const r = await forkRepository('a.git', 'b.git', { root });
  assert.equal(r.pool, pool);
  assert.equal(readdirSync(join(pool, 'objects', 'pack')).filter((f) => f.endsWith('.bitmap')).length, 1);
  for (const d of [a, join(root, 'b.git')]) {
    const l = run('git', ['pack-objects', '--all', '--stdout', '-q'], { cwd: d, input: '' });
    assert.equal(l.status, 0);
    assert.doesNotMatch(l.stderr.toString(), /ignoring extra bitmap/);
  }
  assert.equal(r.newPool, false);
  const b = join(root, 'b.git');
  assert.ok(has(b, own));
  assert.ok(has(pool, own), 'a\'s own objects entered the pool');
  // a, whose objects b borrows, can now be deleted too
  rmSync(a, { recursive: true, force: true });
  fsck(b);
  cloneVia(b, join(t.dir, 'c-b'));
});

test('a fork of 100,000 objects: under a second (loose bound 10 s here), its objects/ under 1 MB', async () => {
  const root = join(t.dir, 'r5');
  mkdirSync(root);
  const big = join(root, 'big.git');
  git(['init', '-q', '--bare', big]);
  // 33,334 commits, each a blob, a tree and a commit: 100,002 objects, in one pack by fast-import
  const lines: string[] = [];
  for (let i = 1; i <= 33_334; i++) {
    const data = `${i}\n`;
    lines.push(`commit refs/heads/main\nmark :${i}\ncommitter C <c@example.com> ${1700000000 + i} +0000\ndata 2\nc\n`);
    if (i > 1) lines.push(`from :${i - 1}\n`);
    lines.push(`M 100644 inline f\ndata ${data.length}\n${data}\n`);
  }
  git(['fast-import', '--quiet'], { cwd: big, input: lines.join('') });
  const count = git(['count-objects', '-v'], { cwd: big });
  assert.match(count, /in-pack: 100002/);
  const t0 = process.hrtime.bigint();
  const r = await forkRepository('big.git', 'big-fork.git', { root });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const bytes = duBytes(join(r.path, 'objects'));
  process.stdout.write(`# fork of 100,002 objects: ${ms.toFixed(0)} ms, fork objects/ ${bytes} bytes\n`);
  assert.ok(ms < 10_000, `${ms} ms`);
  assert.ok(bytes < 1024 * 1024, `${bytes} bytes`);
  assert.equal(git(['rev-parse', 'main'], { cwd: r.path }), git(['rev-parse', 'main'], { cwd: big }));
  assert.equal(git(['rev-list', '--count', '--objects', 'main'], { cwd: r.path }).trim(), '100002');
});

test('refused: an existing destination, hostile names, a pool, a source with foreign alternates; racing forks end with one pool and one fork per name', async () => {
  const root = join(t.dir, 'r6');
  mkdirSync(root);
  source(root, 'src.git');
  source(root, 'other.git');
  const refused = async (p: Promise<unknown>, re: RegExp) => {
    await assert.rejects(p, (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_ADMIN' && re.test(e.message));
  };
  await refused(forkRepository('src.git', 'other.git', { root }), /already exists and is not an empty directory/);
  await refused(forkRepository('src.git', 'other', { root }), /already exists as 'other\.git'/);
  // a failed first fork leaves no pool behind: the pools directory is a file here
  mkdirSync(join(root, '@pools'), { recursive: true });
  writeFileSync(join(root, '@pools', 'pools-file'), 'x');
  await refused(forkRepository('src.git', 'nopool.git', { root, poolsDir: join(root, '@pools', 'pools-file') }), /.+/);
  // a pools directory serve would answer for
  await refused(forkRepository('src.git', 'nopool.git', { root, poolsDir: join(root, 'pools') }), /must be inside an '@pools' directory/);
  assert.ok(!existsSync(join(root, 'pools')));
  assert.ok(!existsSync(join(root, 'nopool.git')));
  writeFileSync(join(root, 'file'), 'x');
  await refused(forkRepository('src.git', 'file', { root }), /already exists/);
  for (const bad of ['../out.git', 'a/../../out.git', '~x.git', '@pools/x.git', 'a\nb.git', 'a\\b.git', `${'d/'.repeat(4000)}x.git`, `${'x'.repeat(300)}.git`, '', '/']) {
    // a name creation refuses (names.ts) is GW_REPO_NAME; '' and '/' name nothing
    await assert.rejects(forkRepository('src.git', bad, { root }), (e: unknown) => e instanceof GitwireError && (e.code === 'GW_REPO_NAME' || e.code === 'GW_REPO_ADMIN'));
  }
  assert.ok(!existsSync(join(t.dir, 'out.git')));
  await refused(forkRepository('missing.git', 'y.git', { root }), /does not appear to be a git repository/);
  // a lock left by a fork that crashed (its pid is gone) is taken over
  writeFileSync(join(root, 'src.git', 'gitwire-fork.lock'), '2147483646\n');
  fsck((await forkRepository('src.git', 'after-crash.git', { root })).path);
  assert.ok(!existsSync(join(root, 'src.git', 'gitwire-fork.lock')));
  await assert.rejects(forkRepository('src.git', 'src.git/inner.git', { root }), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_NAME');
  // racing: four forks of one source at once share one pool; two racing for one name: one wins
  const rs = await Promise.allSettled([
    forkRepository('src.git', 'race1.git', { root }), forkRepository('src.git', 'race2.git', { root }),
    forkRepository('src.git', 'same.git', { root }), forkRepository('src.git', 'same.git', { root }),
  ]);
  assert.equal(rs[0]!.status, 'fulfilled');
  assert.equal(rs[1]!.status, 'fulfilled');
  assert.equal(rs.slice(2).filter((x) => x.status === 'fulfilled').length, 1, JSON.stringify(rs.slice(2)));
  const pools = new Set(rs.filter((x) => x.status === 'fulfilled').map((x) => (x as PromiseFulfilledResult<{ pool: string }>).value.pool));
  assert.equal(pools.size, 1);
  assert.equal(readdirSync(join(root, '@pools')).filter((f) => f.endsWith('.git')).length, 1);
  assert.deepEqual(readdirSync(root).filter((f) => f.startsWith('.tmp')), []);
  for (const d of ['src.git', 'race1.git', 'race2.git', 'same.git']) fsck(join(root, d));
  // the pool itself is not a source
  const pool = [...pools][0]!;
  await refused(forkRepository(`@pools/${pool.split('/').pop()!}`, 'p.git', { root }), /.+/);
  // a source borrowing from a repository that is no pool
  const shared = join(root, 'shared.git');
  git(['clone', '-q', '--bare', '--shared', join(root, 'other.git'), shared]);
  await refused(forkRepository('shared.git', 'z.git', { root }), /not a gitwire object pool/);
});

test('gitwire fork on the command line; serve clones a fork over HTTP and git://, and never the pool', async () => {
  const root = join(t.dir, 'r7');
  mkdirSync(root);
  source(root, 'src.git');
  const r = run(BIN, ['fork', '--root', root, 'src.git', 'cli-fork.git']);
  assert.equal(r.status, 0, r.stderr.toString());
  assert.match(r.stdout.toString(), /^forked src\.git to .*cli-fork\.git/);
  const again = run(BIN, ['fork', '--root', root, 'src.git', 'cli-fork.git']);
  assert.equal(again.status, 128);
  assert.equal(again.stderr.toString(), "fatal: destination path 'cli-fork.git' already exists and is not an empty directory\n");
  const usage = run(BIN, ['fork', 'only-one']);
  assert.equal(usage.status, 129);
  const pool = readdirSync(join(root, '@pools')).find((f) => f.endsWith('.git'))!;
  let s: ServerProc | undefined;
  try {
    s = await startServe(root, ['--http', '0', '--git', '0', '--export-all']);
    cloneHttp(`http://127.0.0.1:${s.httpPort}/cli-fork.git`, join(t.dir, 'h-fork'));
    cloneHttp(`git://127.0.0.1:${s.gitPort}/cli-fork.git`, join(t.dir, 'g-fork'));
    assert.equal(git(['rev-parse', 'origin/feature'], { cwd: join(t.dir, 'h-fork') }), git(['rev-parse', 'feature'], { cwd: join(root, 'src.git') }));
    const refused = run('git', ['clone', '-q', `http://127.0.0.1:${s.httpPort}/@pools/${pool}`, join(t.dir, 'h-pool')]);
    assert.notEqual(refused.status, 0);
    assert.match(refused.stderr.toString(), /not found|404/i);
  } finally { await s?.stop(); }
});

function cloneHttp(url: string, dest: string): void {
  git(['clone', '-q', url, dest]);
  fsck(dest);
}

test('a SHA-256 source: its pool and fork are SHA-256 too, and whole', async () => {
  const root = join(t.dir, 'r9');
  mkdirSync(root);
  const work = join(t.dir, 'sha256-work');
  git(['init', '-q', '--object-format=sha256', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'a\n' });
  commit(work, 'two', { 'b.txt': 'b\n' });
  git(['clone', '-q', '--bare', work, join(root, 's.git')]);
  const r = await forkRepository('s.git', 'f.git', { root });
  assert.equal(git(['rev-parse', '--show-object-format'], { cwd: r.path }).trim(), 'sha256');
  assert.equal(git(['rev-parse', '--show-object-format'], { cwd: r.pool }).trim(), 'sha256');
  for (const d of [join(root, 's.git'), r.path, r.pool]) fsck(d);
  assert.equal(git(['rev-parse', 'main'], { cwd: r.path }), git(['rev-parse', 'main'], { cwd: work }));
  cloneVia(r.path, join(t.dir, 'c-sha256'));
});

test('a reftable source: the fork gets its branches, tags and HEAD in packed-refs, and is whole', async () => {
  const root = join(t.dir, 'r10');
  mkdirSync(root);
  const dir = source(root, 'rt.git');
  const want = git(['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/tags'], { cwd: dir });
  toReftable(dir);
  const r = await forkRepository('rt.git', 'rt-fork.git', { root });
  assert.equal(git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: r.path }), want);
  assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: r.path }), 'refs/heads/main\n');
  fsck(r.path);
  cloneVia(r.path, join(t.dir, 'c-rt'));
});

test('a fork made while the source takes pushes: every fork is whole', async () => {
  const root = join(t.dir, 'r8');
  mkdirSync(root);
  const src = source(root, 'src.git');
  const w = join(t.dir, 'busy-work');
  cloneVia(src, w);
  const pushes = (async () => {
    for (let i = 0; i < 6; i++) {
      commit(w, `busy ${i}`, { [`busy${i}.txt`]: `${i}\n` });
      await new Promise<void>((done, fail) => {
        const c = spawn('git', ['push', '-q', '--receive-pack', `${BIN} receive-pack`, src, 'main'], { cwd: w, env: gitEnv, stdio: 'ignore' });
        c.on('exit', (code) => (code === 0 ? done() : fail(new Error(`push ${code}`))));
      });
    }
  })();
  const forks = [];
  for (let i = 0; i < 4; i++) forks.push(await forkRepository('src.git', `busy${i}.git`, { root }));
  await pushes;
  for (const f of forks) fsck(f.path);
  fsck(src);
});
