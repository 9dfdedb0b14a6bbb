/**
 * The pack-objects cache end to end: real git clients against
 * `gitwire serve --pack-cache`, over smart HTTP and git://.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';

let t: ReturnType<typeof tmp>;
let root: string;
let hook: string;
let hookLog: string;

before(() => {
  t = tmp('gitwire-pack-cache-e2e-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  for (let i = 0; i < 4; i++) commit(w, `c${i}`, { [`f${i}.txt`]: `${i}\n`.repeat(5000), [`r${i}.bin`]: randomBytes(100 << 10) });
  git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: w });
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  // uploadpack.packObjectsHook (protected config only): slow enough that concurrent clones meet, and it counts its runs
  hookLog = join(t.dir, 'hook.log');
  hook = join(t.dir, 'hook.sh');
  writeFileSync(hook, `#!/bin/sh\necho run >> '${hookLog}'\nsleep 1\nexec "$@"\n`);
  chmodSync(hook, 0o755);
});
after(() => t.cleanup());

const hookEnv = () => ({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'uploadpack.packObjectsHook', GIT_CONFIG_VALUE_0: hook });

function clone(url: string, dest: string, extra: string[] = []): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn('git', ['-c', 'protocol.version=2', 'clone', '--bare', ...extra, url, dest], { env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    c.on('close', (code) => resolve({ code, stderr }));
  });
}

function packNames(dest: string): string[] {
  return readdirSync(join(dest, 'objects', 'pack')).filter((n) => n.endsWith('.pack'));
}

function metrics(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve(b));
    }).on('error', reject).end();
  });
}

const outcomes = (logs: string[]) => logs.map((l) => /"packCache":"(\w+)"/.exec(l)?.[1]).filter(Boolean);

test('concurrent clones share one pack-objects (hook) run; a later clone is a hit; every clone fsck-clean and identical', async () => {
  const cacheDir = join(t.dir, 'cache');
  writeFileSync(hookLog, '');
  const srv = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--metrics', '0', '--pack-cache', cacheDir], hookEnv());
  try {
    const dests = Array.from({ length: 5 }, (_, i) => join(t.dir, `fan-${i}`));
    const urls = dests.map((_, i) => (i === 4 ? `git://127.0.0.1:${srv.gitPort}/repo.git` : `http://127.0.0.1:${srv.httpPort}/repo.git`));
    const rs = await Promise.all(dests.map((d, i) => clone(urls[i]!, d, ['--progress'])));
    for (const r of rs) assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(hookLog, 'utf8'), 'run\n', 'one pack-objects run for five clones');
    // the server logs a request after its answer has gone: a client can be done before its line is in (CI, Node 24, once)
    for (let i = 0; i < 100 && outcomes(srv.logs).length < 5; i++) await new Promise((res) => setTimeout(res, 50));
    const got = outcomes(srv.logs).sort();
    assert.deepEqual(got, ['join', 'join', 'join', 'join', 'miss']);
    assert.ok(rs.filter((r) => /Joining a pack-objects run in progress/.test(r.stderr)).length === 4, 'joiners are told on band 2');
    const names = dests.map(packNames);
    for (const n of names) assert.deepEqual(n, names[0], 'identical packs');
    for (const d of dests) git(['--git-dir', d, 'fsck', '--strict']);
    assert.equal(git(['--git-dir', dests[0]!, 'rev-parse', 'v1^{}']), git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'v1^{}']));

    // joined, so stored: the next identical clone streams the file
    const late = join(t.dir, 'late');
    const r = await clone(`http://127.0.0.1:${srv.httpPort}/repo.git`, late, ['--progress']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /remote: Reusing cached pack: \d+\.\d\d KiB, done\./);
    assert.equal(readFileSync(hookLog, 'utf8'), 'run\n', 'no new run for a hit');
    assert.deepEqual(packNames(late), names[0]);
    git(['--git-dir', late, 'fsck', '--strict']);
    for (let i = 0; i < 100 && outcomes(srv.logs).length < 6; i++) await new Promise((res) => setTimeout(res, 50));
    assert.equal(outcomes(srv.logs).at(-1), 'hit');
    assert.equal(readdirSync(cacheDir).filter((n) => n.endsWith('.pack')).length, 1);
    const m = await metrics(srv.metricsPort!);
    assert.match(m, /gitwire_pack_cache_hits_total 1\n/);
    assert.match(m, /gitwire_pack_cache_joins_total 4\n/);
    assert.match(m, /gitwire_pack_cache_misses_total 1\n/);
    assert.match(m, /gitwire_pack_cache_fallbacks_total\{reason="write"\} 0\n/);
  } finally {
    await srv.stop();
  }
});

test('a clone with no repeat stores nothing (min-occurrences 1); an unusable cache directory falls back to pack-objects', async () => {
  const cacheDir = join(t.dir, 'cache-once');
  const srv = await startServe(root, ['--http', '0', '--export-all', '--pack-cache', cacheDir]);
  try {
    const dest = join(t.dir, 'once');
    const r = await clone(`http://127.0.0.1:${srv.httpPort}/repo.git`, dest);
    assert.equal(r.code, 0, r.stderr);
    git(['--git-dir', dest, 'fsck']);
    await new Promise((res) => setTimeout(res, 200));
    assert.deepEqual(readdirSync(cacheDir), [], 'nothing stored, no spool left behind');
    assert.deepEqual(outcomes(srv.logs), ['miss']);
  } finally {
    await srv.stop();
  }
  const file = join(t.dir, 'plain-file');
  writeFileSync(file, '');
  const bad = await startServe(root, ['--http', '0', '--export-all', '--pack-cache', join(file, 'cache')]);
  try {
    // a first sighting never touches the directory; the repeat would be stored, and falls back
    for (const name of ['first', 'bypass']) {
      const dest = join(t.dir, name);
      const r = await clone(`http://127.0.0.1:${bad.httpPort}/repo.git`, dest);
      assert.equal(r.code, 0, r.stderr);
      git(['--git-dir', dest, 'fsck']);
    }
    assert.deepEqual(outcomes(bad.logs), ['miss', 'bypass']);
    assert.ok(bad.logs.some((l) => /"reason":"create"/.test(l) && /running pack-objects directly/.test(l)), 'the failure is logged');
  } finally {
    await bad.stop();
  }
});

/** One byte flipped in place (same inode and size), the mtime put back to `stamp`. */
function flip(file: string, at: number, stamp: number): void {
  const fd = openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    b[0]! ^= 0x40;
    writeSync(fd, b, 0, 1, at);
  } finally { closeSync(fd); }
  utimesSync(file, stamp, stamp);
}

const entries = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.pack')).map((n) => join(dir, n));

test('a stored entry damaged in place (mtime restored) or replaced by another repository\'s entry is not served: git clone fails cleanly or gets a fresh pack, and the next clone succeeds', async () => {
  const cacheDir = join(t.dir, 'cache-damage');
  const w = join(t.dir, 'w-other');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'other', { 'o.bin': randomBytes(200 << 10) });
  git(['clone', '-q', '--bare', w, join(root, 'other.git')]);
  const srv = await startServe(root, ['--http', '0', '--export-all', '--pack-cache', cacheDir, '--pack-cache-min-occurrences', '0']);
  const url = (r: string) => `http://127.0.0.1:${srv.httpPort}/${r}`;
  const good = git(['--git-dir', join(root, 'repo.git'), 'rev-parse', 'main']);
  let n = 0;
  const cloneOk = async (what: string) => {
    const dest = join(t.dir, `damage-${n++}`);
    const r = await clone(url('repo.git'), dest);
    assert.equal(r.code, 0, `${what}: ${r.stderr}`);
    git(['--git-dir', dest, 'fsck', '--strict']);
    assert.equal(git(['--git-dir', dest, 'rev-parse', 'main']), good, what);
  };
  try {
    await cloneOk('miss');
    const [file] = entries(cacheDir);
    assert.ok(file);
    // whole seconds, so that putting the mtime back restores it exactly
    const stamp = Math.floor(Date.now() / 1000);
    utimesSync(file, stamp, stamp);
    await cloneOk('hit');
    // one byte flipped in place: same inode, size and mtime
    flip(file, statSync(file).size >> 1, stamp);
    const dest = join(t.dir, `damage-${n++}`);
    const r = await clone(url('repo.git'), dest);
    // git fails (its index-pack dies on the damaged object, or the server's check sends band 3 before the last byte) and leaves nothing
    if (r.code !== 0) {
      assert.match(r.stderr, /inflate|bad object|corrupt|aborting due to possible repository corruption/, r.stderr);
      assert.equal(existsSync(dest), false, 'a failed clone leaves nothing behind');
    } else git(['--git-dir', dest, 'fsck', '--strict']);
    // the entry is checked to its end even when the client left early, removed, and the next clone gets a fresh pack
    await cloneOk('after the damage');
    assert.ok(srv.logs.some((l) => /failed its trailer check while streaming/.test(l)), 'logged');
    await cloneOk('the regenerated entry');
    // damage git cannot see before the end (the trailer): the server's check fails, band 3 goes out before the last byte
    flip(file, statSync(file).size - 5, stamp);
    const r2 = await clone(url('repo.git'), join(t.dir, 'damage-trailer'));
    assert.notEqual(r2.code, 0);
    assert.match(r2.stderr, /remote: aborting due to possible repository corruption on the remote side/, r2.stderr);
    await cloneOk('after the trailer damage');
    // another repository's valid entry copied over this one
    const before = new Set(entries(cacheDir));
    const o = await clone(url('other.git'), join(t.dir, 'other-clone'));
    assert.equal(o.code, 0, o.stderr);
    const otherEntry = entries(cacheDir).find((f) => !before.has(f));
    assert.ok(otherEntry);
    copyFileSync(otherEntry, file);
    await cloneOk('replaced by other.git\'s entry');
    assert.ok(srv.logs.some((l) => /stored entry is not this request's/.test(l)), 'the replacement was detected');
    await cloneOk('regenerated after the replacement');
  } finally {
    await srv.stop();
  }
});
