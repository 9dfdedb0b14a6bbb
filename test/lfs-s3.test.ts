/**
 * `serve --lfs-store s3://bucket/prefix` against a real S3-compatible
 * server (s3rver, from npm, on loopback): git-lfs pushes and clones, the
 * objects land in the bucket under `<prefix>/<repository>/aa/bb/<oid>`,
 * and the bytes go between the client and the store directly (gitwire
 * answers only the batch and verify requests, and keeps no object).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, ROOT, tmp } from './helpers/git.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, setCredentials, writeBlob, writeHtpasswd } from './helpers/lfs.js';
import { startS3, type S3Server } from './helpers/lfs-s3.js';

const skip = haveGitLfs ? false : 'git-lfs is not installed (.ci/run installs it)';
const ok = (r: { code: number; stderr: string; stdout: string }, what = '') => assert.equal(r.code, 0, `${what}\n${r.stdout}\n${r.stderr}`);

describe('lfs with an S3-compatible store (s3rver)', { skip }, () => {
  let t: ReturnType<typeof tmp>;
  let s3: S3Server;
  let s: ServerProc;
  let srv: string;
  before(async () => {
    t = tmp('gitwire-lfs-s3-');
    mkdirSync(join(t.dir, 's3'));
    s3 = await startS3(join(t.dir, 's3'), 'lfs-bucket', ROOT);
    srv = join(t.dir, 'srv');
    git(['init', '-q', '--bare', '-b', 'main', join(srv, 'group', 'p.git')]);
    writeHtpasswd(join(t.dir, 'htpasswd'), { alice: 'alice-pw' });
    s = await startServe(srv, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--lfs-store', 's3://lfs-bucket/lfs/objects'], s3.env);
  });
  after(async () => { await s.stop(); await s3.stop(); t.cleanup(); });

  test('push and clone: the objects are in the bucket, byte for byte, and never passed through gitwire', async () => {
    const h = lfsHome(join(t.dir, 'home'));
    setCredentials(h, s.httpPort!, 'alice', 'alice-pw');
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    ok(await gitRun(['lfs', 'track', '*.bin'], w, h.env));
    writeBlob(join(w, 'a.bin'), 3 * 1024 * 1024 + 17);
    writeBlob(join(w, 'b.bin'), 1000);
    ok(await gitRun(['add', '-A'], w, h.env));
    ok(await gitRun(['commit', '-q', '-m', 'lfs'], w, h.env));
    const url = `http://127.0.0.1:${s.httpPort}/group/p`;
    ok(await gitRun(['push', '-q', url, 'main'], w, h.env), 'push');
    for (const f of ['a.bin', 'b.bin']) {
      const oid = await fileSha256(join(w, f));
      // s3rver keeps an object's bytes in `<key>._S3rver_object`
      const file = join(t.dir, 's3', 'lfs-bucket', 'lfs', 'objects', 'group', 'p', oid.slice(0, 2), oid.slice(2, 4), `${oid}._S3rver_object`);
      assert.ok(existsSync(file), `${f} in the bucket`);
      assert.equal(await fileSha256(file), oid);
    }
    assert.ok(!existsSync(join(srv, 'group', 'p.git', 'lfs', 'objects')), 'nothing in the repository');
    const c = join(t.dir, 'c');
    ok(await gitRun(['clone', '-q', url, c], t.dir, h.env), 'clone');
    for (const f of ['a.bin', 'b.bin']) assert.equal(await fileSha256(join(c, f)), await fileSha256(join(w, f)), f);
    // what gitwire did for LFS: batch and verify requests only, none of them carrying an object
    const lfs = s.logs.filter((l) => l.includes('"command":"lfs-')).map((l) => JSON.parse(l) as { command: string; bytesOut: number });
    assert.ok(lfs.some((l) => l.command === 'lfs-batch'));
    assert.deepEqual(lfs.filter((l) => l.command === 'lfs-upload' || l.command === 'lfs-download'), []);
    for (const l of lfs) assert.ok(l.bytesOut < 64 * 1024, JSON.stringify(l));
    // a PUT to gitwire itself is refused: this store takes objects only through its own URLs
    const oid = await fileSha256(join(w, 'b.bin'));
    const put = await fetch(`${url}/info/lfs/objects/${oid}`, { method: 'PUT', headers: { Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}` }, body: 'x' });
    assert.equal(put.status, 405);
  });
});
