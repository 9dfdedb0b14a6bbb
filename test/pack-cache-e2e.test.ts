/**
 * The pack-objects cache end to end: real git clients against
 * `gitwire serve --pack-cache`, over smart HTTP and git://.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
