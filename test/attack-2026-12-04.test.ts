/**
 * Defects found attacking the surfaces merged on 2026-12-04 (ownership,
 * damaged ref storage, SSH before authentication, HTTP auth, forwarded
 * headers, the shared LFS key, the drain phase). Each test failed on the
 * code before its fix.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { dubiousOwnership } from '../src/repo/ownership.js';
import { createCoordinator } from '../src/cluster/index.js';
import { HAVE_REDIS, startRedis } from './helpers/cluster.js';
import { commit } from './helpers/fixtures.js';
import { toReftable } from './helpers/reftable-repo.js';
import { ReftableRefStore } from '../src/repo/refs/reftable/store.js';
import { FilesRefStore } from '../src/repo/refs/files/store.js';
import { admitRequest } from '../src/transport/request.js';
import { sshKit, startSsh } from './helpers/ssh.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { connect } from 'node:net';

const root = process.geteuid?.() === 0;

test('safe.directory from an included file that was missing, or empty, when first read is seen once written', { skip: root ? false : 'chowning needs root' }, (t) => {
  const d = tmp('gitwire-atk-own-');
  t.after(() => d.cleanup());
  const repo = join(d.dir, 'r.git');
  git(['init', '-q', '--bare', repo]);
  assert.equal(spawnSync('chown', ['-R', '65534:65534', repo]).status, 0);
  const global = join(d.dir, 'global');
  const missing = join(d.dir, 'later');
  const empty = join(d.dir, 'empty');
  writeFileSync(empty, '');
  writeFileSync(global, `[include]\n\tpath = ${missing}\n\tpath = empty\n`);
  mkdirSync(join(d.dir, 'home'));
  const env = { ...process.env, GIT_CONFIG_GLOBAL: global, GIT_CONFIG_NOSYSTEM: '1', HOME: join(d.dir, 'home') };
  assert.match(dubiousOwnership({ path: repo }, env) ?? '', /dubious ownership/);
  // the missing include is written: the repository is listed
  writeFileSync(missing, `[safe]\n\tdirectory = ${repo}\n`);
  assert.equal(dubiousOwnership({ path: repo }, env), undefined, 'an include made after the first reading is read');
  // the empty include (relative to the global file) takes it back: refused again, as git would
  writeFileSync(empty, '[safe]\n\tdirectory =\n');
  assert.match(dubiousOwnership({ path: repo }, env) ?? '', /dubious ownership/, 'a reset in an include that was empty is seen');
  // and git agrees on both files as they are now
  const g = spawnSync('git', ['ls-remote', repo], { env, encoding: 'utf8' });
  assert.match(g.stderr, /dubious ownership/);
});

test('a malformed shared LFS key in Redis is replaced, not left to split the fleet (each node fell back to a key of its own)', { skip: HAVE_REDIS ? false : 'needs redis-server', timeout: 30_000 }, async (t) => {
  const d = tmp('gitwire-atk-redis-');
  const redis = await startRedis(d.dir);
  const url = `redis://127.0.0.1:${redis.port}`;
  const a = await createCoordinator({ redis: url, root: d.dir });
  const b = await createCoordinator({ redis: url, root: d.dir });
  t.after(async () => { await a.close(); await b.close(); await redis.stop(); d.cleanup(); });
  for (const c of [a, b]) for (let i = 0; i < 100 && !c.status().up; i++) await new Promise((r) => setTimeout(r, 50));
  const cli = (...args: string[]) => spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' }).stdout.trim();
  const first = await a.sharedSecret('lfs-token-key');
  assert.equal(first?.length, 32);
  // a writer that is not gitwire (a restore, another version, a hostile client) leaves garbage, short or long
  for (const garbage of ['short', 'x'.repeat(200), Buffer.alloc(32, 7).toString('hex')]) {
    cli('SET', 'gitwire:secret:lfs-token-key', garbage);
    const ka = await a.sharedSecret('lfs-token-key');
    const kb = await b.sharedSecret('lfs-token-key');
    assert.ok(ka && kb, `a key is agreed after ${JSON.stringify(garbage.slice(0, 20))}`);
    assert.equal(ka.length, 32);
    assert.ok(ka.equals(kb), 'both nodes have the same key');
    assert.equal(cli('GET', 'gitwire:secret:lfs-token-key'), ka.toString('base64'));
  }
  // FLUSHALL: a new key is agreed the same way
  cli('FLUSHALL');
  const ka = await a.sharedSecret('lfs-token-key');
  const kb = await b.sharedSecret('lfs-token-key');
  assert.ok(ka && kb && ka.equals(kb));
});

test('reftable: a key flipped so that it sorts past the listed prefix is corrupt, not the end of the list (the refs after it were dropped, the rest listed as all)', async (t) => {
  const d = tmp('gitwire-atk-rt-');
  t.after(() => d.cleanup());
  const w = join(d.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { f: '1\n' });
  for (let i = 0; i < 31; i++) git(['-C', w, 'branch', `topic-${String(i).padStart(2, '0')}`]);
  for (let i = 0; i < 4; i++) git(['-C', w, 'tag', '-a', '-m', `t${i}`, `v${i}`]);
  const base = join(d.dir, 'base.git');
  git(['clone', '-q', '--mirror', w, base]);
  git(['--git-dir', base, 'symbolic-ref', 'HEAD', 'refs/heads/main']);
  const cases: Array<{ what: string; table: number; at: (b: Buffer) => number }> = [
    // the newest table's first key is HEAD: its first byte made 0xb7 sorts it after every refs/ key
    { what: 'the first key of a table', table: 1, at: (b) => b.indexOf('HEAD') },
    // a restart key in the middle of the oldest table's first block (and the keys sharing its start)
    { what: 'a restart key', table: 0, at: (b) => b.indexOf('refs/heads/topic-03') },
  ];
  const list = (dir: string) => {
    const s = new ReftableRefStore(dir, dir, 20, { blockSize: 4096, restartInterval: 16, logExpire: 0 } as never);
    return [...s.iterate('refs/')].map((r) => r.name.toString('latin1'));
  };
  for (const c of cases) {
    const dir = join(d.dir, `${c.table}.git`);
    cpSync(base, dir, { recursive: true });
    const r = toReftable(dir, { tables: 2, blockSize: 256, restartInterval: 4 });
    const all = list(dir);
    assert.equal(all.length, 31 + 1 + 4, 'the fixture lists every ref');
    const p = join(dir, 'reftable', r.tables[c.table]!);
    const b = readFileSync(p);
    const at = c.at(b);
    assert.ok(at > 0, c.what);
    b[at] = b[at]! ^ 0xff;
    writeFileSync(p, b);
    let got: string[] | undefined;
    assert.throws(() => { got = list(dir); }, (e: Error & { code?: string }) => e.code === 'GW_REFS_CORRUPT' && /keys out of order/.test(e.message), `${c.what}: listed ${got?.length} of ${all.length}`);
    // scan(), what the advertisement uses, alike
    const s = new ReftableRefStore(dir, dir, 20, { blockSize: 4096, restartInterval: 16, logExpire: 0 } as never);
    let n = 0;
    await assert.rejects(s.scan(['refs/'], () => { n++; }), (e: Error & { code?: string }) => e.code === 'GW_REFS_CORRUPT', `${c.what}: scan listed ${n}`);
  }
});

test('packed-refs: damage before the first ref is an error naming the file (a header flipped gave EBADF from closing the file twice; an empty line, a cut id or a bad name at the top was skipped by the seek, the rest listed as all)', async (t) => {
  const d = tmp('gitwire-atk-packed-');
  t.after(() => d.cleanup());
  const w = join(d.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { f: '1\n' });
  for (let i = 0; i < 10; i++) git(['-C', w, 'branch', `topic-${i}`]);
  const base = join(d.dir, 'base.git');
  git(['clone', '-q', '--mirror', w, base]);
  git(['--git-dir', base, 'pack-refs', '--all']);
  const text = readFileSync(join(base, 'packed-refs'), 'latin1');
  const first = text.indexOf('\n') + 1;
  const cases: Array<[string, (s: string) => string]> = [
    ['the header', (s) => `\u00dc${s.slice(1)}`],
    ['an empty line', (s) => `${s.slice(0, first)}\n${s.slice(first + 1)}`],
    ['a cut id', (s) => `${s.slice(0, first)}${s.slice(first + 1)}`],
    // ("refs" flipped to " efs": git's "packed refname is dangerous")
    ['a name that is none', (s) => s.replace(' refs/heads/main\n', '  efs/heads/main\n')],
  ];
  for (const [what, damage] of cases) {
    const dir = join(d.dir, `${what.replace(/\W/g, '-')}.git`);
    cpSync(base, dir, { recursive: true });
    writeFileSync(join(dir, 'packed-refs'), damage(text), 'latin1');
    const g = spawnSync('git', ['--git-dir', dir, 'for-each-ref'], { encoding: 'utf8' });
    assert.notEqual(g.status, 0, `${what}: git refuses it too`);
    let n = 0;
    await assert.rejects(new FilesRefStore(dir, dir, 20).scan(['refs/'], () => { n++; }),
      (e: Error & { code?: string }) => e.code === 'GW_REFS_CORRUPT' && /packed-refs/.test(e.message), `${what}: listed ${n}`);
  }
});

test('a repository reached through a .git file another user owns is refused, as enter_repo refuses it (only the directory it names was checked)', { skip: root ? false : 'chowning needs root' }, async (t) => {
  const d = tmp('gitwire-atk-gitfile-');
  t.after(() => d.cleanup());
  const srv = join(d.dir, 'srv');
  mkdirSync(srv);
  const target = join(srv, 'target.git');
  git(['init', '-q', '--bare', target]);
  for (const name of ['theirs', 'ours']) {
    mkdirSync(join(srv, name));
    writeFileSync(join(srv, name, '.git'), `gitdir: ${target}\n`);
  }
  assert.equal(spawnSync('chown', ['65534:65534', join(srv, 'theirs', '.git')]).status, 0);
  const env = { ...process.env, GIT_CONFIG_GLOBAL: join(d.dir, 'none'), GIT_CONFIG_NOSYSTEM: '1' };
  const admit = (path: string) => admitRequest({ root: srv, env }, { transport: 'http', path, service: 'upload-pack' });
  for (const path of ['/theirs', '/theirs/.git']) {
    const a = await admit(path);
    assert.equal(a.ok ? 'ok' : a.outcome, 'dubious-ownership', path);
  }
  const ours = await admit('/ours');
  assert.equal(ours.ok, true, 'the same repository through a .git file of our own');
  // git (upload-pack's enter_repo, or discovery here with git 2.39) refuses it too
  const g = spawnSync('git', ['ls-remote', join(srv, 'theirs')], { env, encoding: 'utf8' });
  assert.match(g.stderr, /dubious ownership/);
});

test('SIGTERM: an SSH connection that never authenticates does not hold the shutdown for its grace period', { timeout: 60_000 }, async (t) => {
  const d = tmp('gitwire-atk-sshstop-');
  t.after(() => d.cleanup());
  const kit = sshKit(d.dir);
  kit.user('alice');
  mkdirSync(join(d.dir, 'srv'));
  const s = await startSsh(kit, join(d.dir, 'srv'), ['--shutdown-grace', '20']);
  // the signal handlers are set once the start-up line is out
  // (was the whole --shutdown-grace, 20 s)
  await assertSilentConnectionStopsQuickly(s, s.sshPort);
});

test('SIGTERM: a git:// connection that never sends its request does not hold the shutdown until --init-timeout', { timeout: 60_000 }, async (t) => {
  const d = tmp('gitwire-atk-gitstop-');
  t.after(() => d.cleanup());
  mkdirSync(join(d.dir, 'srv'));
  const s = await startServe(join(d.dir, 'srv'), ['--git', '0', '--init-timeout', '20', '--shutdown-grace', '20']);
  // (was --init-timeout: 9.8 s with the default 10)
  await assertSilentConnectionStopsQuickly(s, s.gitPort!);
});

/** SIGTERM with one silent connection open on `port`: the server stops as asked, well before its grace period ends. */
async function assertSilentConnectionStopsQuickly(s: ServerProc, port: number): Promise<void> {
  // the signal handlers are set once the start-up line is out
  for (let i = 0; i < 200 && !s.logs.some((l) => l.includes('"msg":"gitwire serve:')); i++) await new Promise((r) => setTimeout(r, 50));
  const silent = connect({ host: '127.0.0.1', port });
  silent.on('error', () => undefined);
  await new Promise((r) => silent.once('connect', r));
  const t0 = performance.now();
  await s.stop('SIGTERM');
  const ms = performance.now() - t0;
  assert.equal(s.child.exitCode, 0, `it stopped as asked, not killed (signal ${s.child.signalCode}, ${Math.round(performance.now() - t0)} ms; its last lines: ${s.logs.slice(-4).join('\n')})`);
  silent.destroy();
  assert.ok(ms < 10_000, `the server took ${Math.round(ms)} ms to stop`);
}
