/**
 * Making repositories (#38): `gitwire init` and createRepository() in each
 * format, judged by git; `serve --push-to-create` with real `git push`
 * over HTTP and SSH, allowed and refused, hostile names, racing pushes and
 * the per-user creation budget.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import bcrypt from 'bcryptjs';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitSshEnv, sshKit, startSsh } from './helpers/ssh.js';
import { createRepository, CreationBudget, DEFAULT_CREATES_PER_MINUTE, newRepositoryName, pushToCreate } from '../src/admin/index.js';
import { GitwireError } from '../src/errors.js';

/** a git v2.55.0 under the prefix GITWIRE_GIT_2_55 names, when set: reftable byte for byte and read by a git that reads it */
const NEW_GIT = join(process.env.GITWIRE_GIT_2_55 ?? '/nonexistent', 'bin', 'git');
const haveNewGit = existsSync(NEW_GIT);

function gitwire(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(BIN, args, { encoding: 'utf8', env: { ...gitEnv, ...env } });
}

/** the repositories and leftovers (hidden temporary or trash directories) in `dir`, recursively */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (!e.isDirectory()) continue;
      if (e.name.startsWith('.') || existsSync(join(d, e.name, 'HEAD'))) out.push(r);
      else walk(join(d, e.name), r);
    }
  };
  walk(dir, '');
  return out.sort();
}

test('gitwire init: a bare repository with HEAD at main that git reads, and pushes to with Debian 12\'s git', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-init-');
  try {
    const r = gitwire(['init', join(t.dir, 'a.git')]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `Initialized empty Git repository in ${join(t.dir, 'a.git')}/\n`);
    const a = join(t.dir, 'a.git');
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: a }).trim(), 'refs/heads/main');
    assert.equal(git(['rev-parse', '--is-bare-repository'], { cwd: a }).trim(), 'true');
    git(['fsck'], { cwd: a });
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    const c = commit(src, 'one', { 'a.txt': 'a\n' });
    git(['push', '-q', a, 'main'], { cwd: src });
    assert.equal(git(['rev-parse', 'HEAD'], { cwd: a }).trim(), c);
    // a second init of the same path is refused, the repository untouched
    const again = gitwire(['init', a]);
    assert.equal(again.status, 128);
    assert.match(again.stderr, /^fatal: '.*a\.git' already exists\n$/);
    assert.equal(git(['rev-parse', 'HEAD'], { cwd: a }).trim(), c);
    // -b and GITWIRE_DEFAULT_BRANCH and the config file's default-branch
    assert.equal(gitwire(['init', '-q', '-b', 'trunk', join(t.dir, 'b.git')]).status, 0);
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: join(t.dir, 'b.git') }).trim(), 'refs/heads/trunk');
    assert.equal(gitwire(['init', '-q', join(t.dir, 'c.git')], { GITWIRE_DEFAULT_BRANCH: 'dev' }).status, 0);
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: join(t.dir, 'c.git') }).trim(), 'refs/heads/dev');
    writeFileSync(join(t.dir, 'gitwire.yaml'), 'root: .\ndefault-branch: stable\n');
    assert.equal(gitwire(['init', '-q', '--config', join(t.dir, 'gitwire.yaml'), join(t.dir, 'd.git')]).status, 0);
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: join(t.dir, 'd.git') }).trim(), 'refs/heads/stable');
    // bad options: git's words
    const bad = gitwire(['init', '-b', 'a..b', join(t.dir, 'e.git')]);
    assert.equal(bad.status, 128);
    assert.equal(bad.stderr, "fatal: invalid initial branch name: 'a..b'\n");
    assert.equal(gitwire(['init', '--object-format=md5', join(t.dir, 'e.git')]).stderr, "fatal: unknown hash algorithm 'md5'\n");
    assert.equal(gitwire(['init', '--ref-format=bogus', join(t.dir, 'e.git')]).stderr, "fatal: unknown ref storage format 'bogus'\n");
    assert.equal(existsSync(join(t.dir, 'e.git')), false);
    assert.equal(gitwire(['init']).status, 129);
  } finally { t.cleanup(); }
});

test('gitwire init --object-format=sha256: git takes a push into it', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-init256-');
  try {
    const a = join(t.dir, 'a.git');
    assert.equal(gitwire(['init', '-q', '--object-format=sha256', a]).status, 0);
    assert.equal(git(['rev-parse', '--show-object-format'], { cwd: a }).trim(), 'sha256');
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', '--object-format=sha256', src]);
    const c = commit(src, 'one', { 'a.txt': 'a\n' });
    git(['push', '-q', a, 'main'], { cwd: src });
    assert.equal(git(['rev-parse', 'main'], { cwd: a }).trim(), c);
    git(['fsck'], { cwd: a });
  } finally { t.cleanup(); }
});

test('gitwire init --ref-format=reftable: what git 2.45+ makes (byte for byte with git 2.55 when present); the installed git\'s limit said', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-initrt-');
  try {
    const a = join(t.dir, 'a.git');
    const r = gitwire(['init', '--ref-format=reftable', a]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(join(a, 'HEAD'), 'utf8'), 'ref: refs/heads/.invalid\n');
    assert.equal(readFileSync(join(a, 'refs', 'heads'), 'utf8'), 'this repository uses the reftable format\n');
    const v = /git version (\d+)\.(\d+)/.exec(git(['version']))!;
    const installedReads = Number(v[1]) > 2 || Number(v[2]) >= 45;
    if (installedReads) assert.equal(r.stderr, '');
    else assert.match(r.stderr, /^warning: the installed git cannot fetch from or push to it: .*git 2\.45 or later is needed\n$/);
    // gitwire itself reads it: an ls-remote through upload-pack says HEAD is unborn main
    const ls = spawnSync('git', ['ls-remote', '--symref', `--upload-pack=${BIN} upload-pack`, a], { encoding: 'utf8', env: { ...gitEnv, GIT_PROTOCOL: 'version=2' } });
    assert.equal(ls.status, 0, ls.stderr);
    if (haveNewGit) {
      const ref = join(t.dir, 'ref.git');
      spawnSync(NEW_GIT, ['init', '-q', '--bare', '--ref-format=reftable', '-b', 'main', ref]);
      const tables = (d: string) => readFileSync(join(d, 'reftable', 'tables.list'), 'utf8').trim().split('\n');
      const ours = tables(a), theirs = tables(ref);
      assert.equal(ours.length, 1);
      assert.deepEqual(readFileSync(join(a, 'reftable', ours[0]!)), readFileSync(join(ref, 'reftable', theirs[0]!)));
      assert.equal(spawnSync(NEW_GIT, ['symbolic-ref', 'HEAD'], { cwd: a, encoding: 'utf8' }).stdout, 'refs/heads/main\n');
      const src = join(t.dir, 'src');
      git(['init', '-q', '-b', 'main', src]);
      const c = commit(src, 'one', { 'a.txt': 'a\n' });
      const p = spawnSync(NEW_GIT, ['push', '-q', a, 'main'], { cwd: src, encoding: 'utf8', env: gitEnv });
      assert.equal(p.status, 0, p.stderr);
      assert.equal(spawnSync(NEW_GIT, ['rev-parse', 'main'], { cwd: a, encoding: 'utf8' }).stdout.trim(), c);
      assert.equal(spawnSync(NEW_GIT, ['fsck'], { cwd: a, encoding: 'utf8' }).status, 0);
    }
  } finally { t.cleanup(); }
});

test('createRepository: exclusive by default; racing creators end with one repository and no leftovers', { timeout: 30_000 }, async () => {
  const t = tmp('gitwire-create-');
  try {
    const p = join(t.dir, 'g', 'r.git');
    assert.deepEqual(createRepository(p), { path: p, created: true });
    assert.throws(() => createRepository(p), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_EXISTS');
    assert.deepEqual(createRepository(p, { exclusive: false }), { path: p, created: false });
    // a file in the way
    writeFileSync(join(t.dir, 'file.git'), 'x');
    assert.throws(() => createRepository(join(t.dir, 'file.git')), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_EXISTS');
    // 50 concurrent creators in 5 child processes: one created, the rest found it
    const script = `import(${JSON.stringify(new URL('../src/admin/index.js', import.meta.url).href)}).then(({ createRepository }) => { let n = 0; for (let i = 0; i < 10; i++) if (createRepository(process.argv[1], { exclusive: false }).created) n++; process.stdout.write(String(n)); })`;
    const target = join(t.dir, 'race', 'x.git');
    const runs = await Promise.all([0, 1, 2, 3, 4].map(() => new Promise<number>((resolve) => {
      const c = spawn(process.execPath, ['-e', script, target], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      c.stdout.on('data', (b: Buffer) => { out += b.toString(); });
      c.on('close', () => resolve(Number(out)));
    })));
    assert.equal(runs.reduce((a, b) => a + b, 0), 1);
    assert.deepEqual(listing(join(t.dir, 'race')), ['x.git']);
    git(['fsck'], { cwd: target });
  } finally { t.cleanup(); }
});

function users(t: { dir: string }) {
  const hash = (pw: string) => bcrypt.hashSync(pw, 4).replace(/^\$2b\$/, '$2y$');
  writeFileSync(join(t.dir, 'htpasswd'), `alice:${hash('a-pw')}\nbob:${hash('b-pw')}\ncarol:${hash('c-pw')}\n`);
  writeFileSync(join(t.dir, 'rules'), '# alice and carol push (so create) under team/, bob only fetches\npush team/** alice carol\nfetch ** bob\n');
}

const httpUrl = (s: ServerProc, user: string, pw: string, path: string) => `http://${user}:${pw}@127.0.0.1:${s.httpPort}/${path}`;

test('serve --push-to-create over HTTP: a permitted push makes the repository (HEAD main), others and hostile names make nothing', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-p2c-http-');
  let s: ServerProc | undefined;
  try {
    users(t);
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    const c = commit(src, 'one', { 'a.txt': 'a\n' });
    s = await startServe(root, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules'), '--push-to-create']);
    const ok = await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', 'team/new.git'), 'main'], src);
    assert.equal(ok.code, 0, ok.stderr);
    const made = join(root, 'team', 'new.git');
    assert.equal(git(['rev-parse', 'main'], { cwd: made }).trim(), c);
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: made }).trim(), 'refs/heads/main');
    git(['fsck'], { cwd: made });
    // the name without .git is the same repository
    const again = await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', 'team/new'), 'main:refs/heads/second'], src);
    assert.equal(again.code, 0, again.stderr);
    assert.match(git(['for-each-ref'], { cwd: made }), /refs\/heads\/second/);
    // a clone of what was made
    const cl = await gitAsync(['clone', '-q', httpUrl(s, 'bob', 'b-pw', 'team/new.git'), join(t.dir, 'clone')], t.dir);
    assert.equal(cl.code, 0, cl.stderr);
    // bob may not push there, alice not outside team/: not found, nothing made
    for (const [u, pw, path] of [['bob', 'b-pw', 'team/bobs.git'], ['alice', 'a-pw', 'elsewhere.git'], ['alice', 'wrong', 'team/x.git']] as const) {
      const r = await gitAsync(['push', httpUrl(s, u, pw, path), 'main'], src);
      assert.notEqual(r.code, 0, `${u} ${path}`);
      assert.match(r.stderr, /(not found|401|403|Authentication failed)/i);
    }
    // hostile names: nothing is made, the answer is a missing repository's
    const deep = `team/${Array.from({ length: 40 }, (_, i) => `d${i}`).join('/')}.git`;
    const long = `team/${'x'.repeat(300)}.git`;
    for (const path of ['team/../escape.git', 'team/%2e%2e/escape.git', 'team/.hidden.git', 'team/a%00b.git', deep, long, 'team/x.lock/y.git', 'team/in.git/side.git', 'team/-dash.git', 'team/sp%20ace.git']) {
      const r = await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', path), 'main'], src);
      assert.notEqual(r.code, 0, path);
    }
    assert.deepEqual(listing(root), ['team/new.git']);
    assert.equal(existsSync(join(t.dir, 'escape.git')), false);
    // without --push-to-create: a missing repository is not found, as before
    await s.stop();
    s = await startServe(root, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules')]);
    const off = await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', 'team/other.git'), 'main'], src);
    assert.notEqual(off.code, 0);
    assert.deepEqual(listing(root), ['team/new.git']);
  } finally { await s?.stop(); t.cleanup(); }
});

test('serve --push-to-create: two users racing for one name end with one repository holding one of the pushes', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-p2c-race-');
  let s: ServerProc | undefined;
  try {
    users(t);
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const a = join(t.dir, 'a'), b = join(t.dir, 'b');
    git(['init', '-q', '-b', 'main', a]);
    git(['init', '-q', '-b', 'main', b]);
    const ca = commit(a, 'alice', { 'a.txt': 'a\n' });
    const cb = commit(b, 'carol', { 'b.txt': 'b\n' });
    s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules'), '--push-to-create']);
    for (let round = 0; round < 4; round++) {
      const name = `team/race${round}.git`;
      const [ra, rb] = await Promise.all([
        gitAsync(['push', httpUrl(s, 'alice', 'a-pw', name), 'main'], a),
        gitAsync(['push', httpUrl(s, 'carol', 'c-pw', name), 'main'], b),
      ]);
      const dir = join(root, name);
      const tip = git(['rev-parse', 'main'], { cwd: dir }).trim();
      // at least one push won; main is the tip of a push that said it succeeded
      assert.ok(ra.code === 0 || rb.code === 0, `${ra.stderr}\n${rb.stderr}`);
      assert.ok((tip === ca && ra.code === 0) || (tip === cb && rb.code === 0), `${tip} ${ra.code} ${rb.code}`);
      git(['fsck'], { cwd: dir });
    }
    assert.deepEqual(listing(root), ['team/race0.git', 'team/race1.git', 'team/race2.git', 'team/race3.git']);
  } finally { await s?.stop(); t.cleanup(); }
});

test('serve --push-to-create --create-rate: one user\'s creations are bounded; pushes to existing repositories are not', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-p2c-rate-');
  let s: ServerProc | undefined;
  try {
    users(t);
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    commit(src, 'one', { 'a.txt': 'a\n' });
    s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules'), '--push-to-create', '--create-rate', '3']);
    const results = [];
    const from = Date.now();
    for (let i = 0; i < 6; i++) results.push(await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', `team/n${i}.git`), 'main'], src));
    // 3 a minute, refilled as time passes: one more each 20 s the pushes take (a loaded machine)
    const made = results.filter((r) => r.code === 0).length;
    const refilled = Math.floor(((Date.now() - from) * 3) / 60_000);
    assert.ok(made >= 3 && made <= Math.min(5, 3 + refilled), `${made} made after ${refilled} refills`);
    assert.deepEqual(results.map((r) => r.code === 0), results.map((_, i) => i < made));
    assert.match(results[made]!.stderr, /429/);
    assert.deepEqual(listing(join(root, 'team')), Array.from({ length: made }, (_, i) => `n${i}.git`));
    // another user has a budget of their own, and pushes to made repositories go on
    assert.equal((await gitAsync(['push', httpUrl(s, 'carol', 'c-pw', 'team/c.git'), 'main'], src)).code, 0);
    assert.equal((await gitAsync(['push', httpUrl(s, 'alice', 'a-pw', 'team/n0.git'), 'main:refs/heads/more'], src)).code, 0);
  } finally { await s?.stop(); t.cleanup(); }
});

test('serve --push-to-create over SSH (OpenSSH): permitted push makes it, a user without a push rule is told it is not there', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-p2c-ssh-');
  let s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const kit = sshKit(t.dir);
    const alice = kit.user('alice'), bob = kit.user('bob');
    writeFileSync(join(t.dir, 'rules'), 'push team/** alice\nfetch ** bob\n');
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    const c = commit(src, 'one', { 'a.txt': 'a\n' });
    s = await startSsh(kit, root, ['--auth-rules', join(t.dir, 'rules'), '--push-to-create']);
    const url = (p: string) => `ssh://git@127.0.0.1:${s!.sshPort}/${p}`;
    const ok = await gitAsync(['push', url('team/s.git'), 'main'], src, gitSshEnv(kit, alice, s.sshPort));
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(git(['rev-parse', 'main'], { cwd: join(root, 'team', 's.git') }).trim(), c);
    const no = await gitAsync(['push', url('team/b.git'), 'main'], src, gitSshEnv(kit, bob, s.sshPort));
    assert.notEqual(no.code, 0);
    assert.match(no.stderr, /fatal: '\/team\/b\.git' does not appear to be a git repository/);
    const dots = await gitAsync(['push', url('team/../x.git'), 'main'], src, gitSshEnv(kit, alice, s.sshPort));
    assert.notEqual(dots.code, 0);
    assert.deepEqual(listing(root), ['team/s.git']);
  } finally { await s?.stop(); t.cleanup(); }
});

test('serve --push-to-create needs --auth-rules', { timeout: 30_000 }, () => {
  const t = tmp('gitwire-p2c-flag-');
  try {
    const r = spawnSync(BIN, ['serve', t.dir, '--http', '0', '--push-to-create'], { encoding: 'utf8', env: gitEnv, timeout: 10_000 });
    assert.equal(r.status, 129);
    assert.match(r.stderr, /--push-to-create needs --auth-rules/);
  } finally { t.cleanup(); }
});

test('push-to-create, attacked: 10,000 creations by one user in a burst make --create-rate of them; 4,000-component and 64 KiB names are refused before any file is touched', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-p2c-flood-');
  try {
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const hook = pushToCreate({ root, budget: new CreationBudget(DEFAULT_CREATES_PER_MINUTE) });
    const may = async () => true as const;
    let made = 0, refused = 0;
    const t0 = performance.now();
    for (let i = 0; i < 10_000; i++) {
      const r = await hook({ user: 'mallory', path: `/flood/r${i}.git` }, may);
      if (typeof r === 'string') made++;
      else if (r && r.status === 429) refused++;
    }
    const ms = performance.now() - t0;
    assert.equal(made, DEFAULT_CREATES_PER_MINUTE);
    assert.equal(refused, 10_000 - DEFAULT_CREATES_PER_MINUTE);
    assert.equal(readdirSync(join(root, 'flood')).length, DEFAULT_CREATES_PER_MINUTE);
    // another user is not held by mallory's budget
    assert.equal(typeof (await hook({ user: 'alice', path: 'flood/alice.git' }, may)), 'string');
    console.log(`# 10,000 push-to-create attempts by one user: ${made} made, ${refused} refused in ${ms.toFixed(0)} ms`);
    // hostile names: refused (undefined: not found), nothing made
    for (const path of ['a/'.repeat(4000) + 'x.git', `${'y'.repeat(65536)}.git`, '../out.git', 'a/../../out.git', 'a\0b.git', '\xff\xfe.git', 'a/b.lock/c.git', 'x.git/.git', '/', '', '~root/x.git', '.hidden.git']) {
      assert.equal(await hook({ user: 'alice', path }, may), undefined, JSON.stringify(path.slice(0, 20)));
    }
    assert.throws(() => newRepositoryName('a/'.repeat(4000)), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REPO_NAME');
    assert.deepEqual(readdirSync(root), ['flood']);
    assert.equal(existsSync(join(t.dir, 'out.git')), false);
  } finally { t.cleanup(); }
});
