/**
 * Git LFS through three nodes behind haproxy (docs/cluster.md): the batch
 * is answered by one node, the uploads, downloads and verify land on the
 * others, so every node must accept the tokens another signed. With
 * `--redis` the nodes agree on one key; with `--lfs-token-key-file` they
 * share the file's. (Each node used to sign with a random key of its own:
 * the push failed with `LFS: Client error` on a 401.)
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp, BIN, run } from './helpers/git.js';
import { HAVE_HAPROXY, HAVE_REDIS, startCluster, startRedis } from './helpers/cluster.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, setCredentials, writeBlob, writeHtpasswd, type Run } from './helpers/lfs.js';
import { TokenSigner } from '../src/lfs/index.js';

let t: ReturnType<typeof tmp>;
let htpasswd: string;
before(() => {
  t = tmp('gitwire-lfs-cluster-');
  htpasswd = join(t.dir, 'htpasswd');
  writeHtpasswd(htpasswd, { alice: 'alice-pw' });
});
after(() => t.cleanup());

const ok = (r: Run, what = '') => assert.equal(r.code, 0, `${what}\n${r.stderr}`);

test('a new signing key: tokens of the key before it still verify, older ones do not', () => {
  const s = new TokenSigner(Buffer.alloc(32, 1));
  const first = s.sign({ repository: '/r', operation: 'upload' }, 60).token;
  s.useKey(Buffer.alloc(32, 2));
  const second = s.sign({ repository: '/r', operation: 'upload' }, 60).token;
  assert.equal(s.verify(first)?.repository, '/r', 'one key back still verifies');
  assert.equal(s.verify(second)?.repository, '/r');
  assert.equal(new TokenSigner(Buffer.alloc(32, 2)).verify(second)?.repository, '/r', 'another holder of the key');
  s.useKey(Buffer.alloc(32, 3));
  assert.equal(s.verify(first), undefined, 'two keys back');
  assert.equal(s.verify(second)?.repository, '/r');
});

/** Push LFS files through the cluster, clone them back: the bytes match. */
async function pushAndClone(name: string, args: string[], redis?: string): Promise<void> {
  const root = join(t.dir, name);
  mkdirSync(root);
  git(['init', '-q', '--bare', '-b', 'main', join(root, 'r.git')]);
  mkdirSync(join(t.dir, `${name}-lb`));
  const c = await startCluster(join(t.dir, `${name}-lb`), { root, redis, args: ['--htpasswd', htpasswd, ...args] });
  try {
    const url = `http://127.0.0.1:${c.lb.http}/r.git`;
    const home = lfsHome(join(t.dir, `${name}-home`));
    setCredentials(home, c.lb.http, 'alice', 'alice-pw');
    const w = join(t.dir, `${name}-w`);
    git(['init', '-q', '-b', 'main', w], { env: home.env });
    ok(await gitRun(['lfs', 'track', '*.bin'], w, home.env));
    // several objects: the batch, each upload and each verify go round the three nodes
    for (let i = 0; i < 6; i++) writeBlob(join(w, `f${i}.bin`), 50_000 + i);
    ok(await gitRun(['add', '-A'], w, home.env));
    ok(await gitRun(['commit', '-q', '-m', 'lfs'], w, home.env));
    ok(await gitRun(['push', '-q', url, 'main'], w, home.env), 'push through the balancer');
    const clone = join(t.dir, `${name}-clone`);
    ok(await gitRun(['clone', '-q', url, clone], t.dir, home.env), 'clone through the balancer');
    for (let i = 0; i < 6; i++) assert.equal(await fileSha256(join(clone, `f${i}.bin`)), await fileSha256(join(w, `f${i}.bin`)), `f${i}.bin`);
    // every node answered some of it
    const served = c.nodes.map((n) => n.logs.filter((l) => l.includes('"command":"lfs-')).length);
    assert.ok(served.every((n) => n > 0), `LFS requests per node: ${served.join(', ')}`);
  } finally { await c.stop(); }
}

test('three nodes with --redis agree on one token key: LFS push and clone through haproxy', { skip: !HAVE_REDIS || !HAVE_HAPROXY || !haveGitLfs ? 'needs redis-server, haproxy and git-lfs' : false, timeout: 180_000 }, async () => {
  const redis = await startRedis(t.dir);
  try {
    await pushAndClone('redis', [], `redis://127.0.0.1:${redis.port}`);
  } finally { await redis.stop(); }
});

test('three nodes with one --lfs-token-key-file: LFS push and clone through haproxy', { skip: !HAVE_HAPROXY || !haveGitLfs ? 'needs haproxy and git-lfs' : false, timeout: 180_000 }, async () => {
  const key = join(t.dir, 'lfs-token-key');
  writeFileSync(key, `${'k'.repeat(48)}\n`, { mode: 0o600 });
  await pushAndClone('keyfile', ['--lfs-token-key-file', key]);
});

test('--lfs-token-key-file: missing or short is fatal at start', () => {
  const short = join(t.dir, 'short-key');
  writeFileSync(short, 'tooshort\n', { mode: 0o600 });
  const r = run(BIN, ['serve', t.dir, '--http', '0', '--lfs-token-key-file', short]);
  assert.equal(r.status, 128);
  assert.match(r.stderr.toString(), /^fatal: --lfs-token-key-file: .*short-key holds 8 bytes; a key needs at least 32/);
  const missing = run(BIN, ['serve', t.dir, '--http', '0', '--lfs-token-key-file', join(t.dir, 'none')]);
  assert.equal(missing.status, 128);
  assert.match(missing.stderr.toString(), /cannot read .*none: ENOENT/);
  assert.ok(readFileSync(short).length > 0);
});
