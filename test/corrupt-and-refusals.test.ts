/**
 * Issue #27's defects: a corrupt object in a served repository gives the
 * HTTP client git's error (the advertisement is git's, the fetch fails with
 * pack-objects' words naming the object and its file) and the log the
 * same; a git:// push refused for want of credentials says so.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import bcrypt from 'bcryptjs';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';
import { gitAsync } from './helpers/push-net.js';
import type { RequestLog } from '../src/transport/http.js';

/** A bare repository whose refs are loose, its objects loose, and its annotated tag's object garbage. */
function corruptTagRepo(dir: string): { repo: string; tag: string; file: string } {
  const w = join(dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  git(['tag', '-a', '-m', 'release', 'v1'], { cwd: w });
  const repo = join(dir, 'root', 'r.git');
  mkdirSync(dirname(repo), { recursive: true });
  git(['clone', '-q', '--bare', '--no-local', w, repo]);
  const packDir = join(repo, 'objects', 'pack');
  const keep = join(dir, 'keep');
  mkdirSync(keep);
  for (const f of readdirSync(packDir)) renameSync(join(packDir, f), join(keep, f));
  const pack = readdirSync(keep).find((f) => f.endsWith('.pack'))!;
  git(['unpack-objects', '-q'], { cwd: repo, input: spawnSync('cat', [join(keep, pack)]).stdout });
  // loose refs: nothing peeled in packed-refs, so the advertisement reads the tag
  const refs = git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: repo });
  rmSync(join(repo, 'packed-refs'));
  for (const line of refs.trim().split('\n')) {
    const [oid, ref] = line.split(' ');
    mkdirSync(dirname(join(repo, ref!)), { recursive: true });
    writeFileSync(join(repo, ref!), `${oid}\n`);
  }
  const tag = git(['rev-parse', 'v1'], { cwd: repo }).trim();
  const file = join(repo, 'objects', tag.slice(0, 2), tag.slice(2));
  chmodSync(file, 0o644);
  writeFileSync(file, 'garbage');
  return { repo, tag, file };
}

const noAgent = (s: string) => s.replace(/agent=\S+/, 'agent=X').replace(/^[0-9a-f]{4}(?=[0-9a-f]{40} HEAD)/, 'LLLL');

test('a corrupt tag: the advertisement is git\'s, the clone fails with git\'s error naming the object and file, and the log says the same', { timeout: 90_000 }, async () => {
  const t = tmp('gitwire-corrupt-');
  try {
    const { repo, tag, file } = corruptTagRepo(t.dir);
    // the advertisement: git leaves the ^{} line of a tag it cannot read out, and goes on
    const ours = spawnSync(BIN, ['upload-pack', '--advertise-refs', repo], { env: gitEnv, encoding: 'latin1' });
    const theirs = spawnSync('git', ['upload-pack', '--advertise-refs', repo], { env: gitEnv, encoding: 'latin1' });
    assert.equal(theirs.status, 0);
    assert.equal(ours.status, 0, ours.stderr);
    assert.equal(noAgent(ours.stdout), noAgent(theirs.stdout));
    assert.doesNotMatch(ours.stdout, /\^\{\}/);

    // git's own upload-pack on the same repository: its clone dies on the object, naming the file
    const ref = await gitAsync(['clone', '-q', `file://${repo}`, join(t.dir, 'ref')]);
    assert.notEqual(ref.code, 0);
    assert.ok(ref.stderr.includes(`fatal: loose object ${tag} (stored in `), ref.stderr);

    const s = await startServe(join(t.dir, 'root'), ['--http', '0']);
    try {
      for (const v of ['0', '2']) {
        const r = await gitAsync(['-c', `protocol.version=${v}`, 'clone', '-q', `http://127.0.0.1:${s.httpPort}/r.git`, join(t.dir, `c${v}`)]);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, new RegExp(`remote: fatal: loose object ${tag} \\(stored in ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\) is corrupt`), `v${v}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /expected flush after ref listing/);
      }
      await new Promise((r) => setTimeout(r, 200));
      const failed = s.logs.filter((l) => l.includes('"msg":"request"')).map((l) => JSON.parse(l) as RequestLog).filter((e) => e.outcome !== 'ok');
      assert.equal(failed.length, 2, JSON.stringify(failed));
      for (const e of failed) {
        assert.equal(e.outcome, 'GW_PACK_FAILED');
        assert.match(e.error!, /aborting due to possible repository corruption/);
        const said = (e.detail as { packObjects: string[] }).packObjects.join('\n');
        assert.ok(said.includes(`fatal: loose object ${tag} (stored in ${file}) is corrupt`), said);
      }
    } finally { await s.stop(); }
  } finally { t.cleanup(); }
});

test('a git:// push refused because it needs credentials says so', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-gitcreds-');
  try {
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    commit(w, 'base', { 'a.txt': 'a\n' });
    mkdirSync(join(t.dir, 'root'));
    git(['clone', '-q', '--bare', w, join(t.dir, 'root', 'r.git')]);
    const htpasswd = join(t.dir, 'htpasswd');
    writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw', 4)}\n`);
    const s = await startServe(join(t.dir, 'root'), ['--git', '0', '--export-all', '--enable', 'receive-pack', '--htpasswd', htpasswd, '--quiet']);
    try {
      const r = await gitAsync(['push', `git://127.0.0.1:${s.gitPort}/r.git`, 'main:refs/heads/x'], w);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /fatal: remote error: push needs credentials, which git:\/\/ cannot carry \(use HTTP or SSH\): \/r\.git/);
      assert.doesNotMatch(r.stderr, /not exported/);
      // a fetch needs none under --auth push
      assert.equal((await gitAsync(['ls-remote', `git://127.0.0.1:${s.gitPort}/r.git`])).code, 0);
    } finally { await s.stop(); }
  } finally { t.cleanup(); }
});
