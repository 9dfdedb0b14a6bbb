/**
 * An LFS object damaged in place on the server (same size, mtime put back
 * with utimes) is not served as its oid and does not block its repair: the
 * batch asks for it again, verify refuses it, a download is cut before it
 * ends, and the next push of the real git-lfs client replaces it (issue 40,
 * item 7).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { request } from 'node:http';
import { git, tmp } from './helpers/git.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, objectFile, setCredentials, writeBlob, writeHtpasswd, type LfsHome } from './helpers/lfs.js';

const skip = haveGitLfs ? false : 'git-lfs is not installed (.ci/run installs it)';
const ok = (r: { code: number; stderr: string; stdout: string }, what = '') => assert.equal(r.code, 0, `${what}\n${r.stdout}\n${r.stderr}`);
const AUTH = `Basic ${Buffer.from('alice:alice-pw').toString('base64')}`;
const JSON_TYPE = 'application/vnd.git-lfs+json';

interface Answer { status: number; body: Buffer; complete: boolean }

/** One request; `complete` is false when the connection ended before the body did. */
function call(port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request({ host: '127.0.0.1', port, method, path, headers: { Authorization: AUTH, Accept: JSON_TYPE, ...(data ? { 'Content-Type': JSON_TYPE, 'Content-Length': data.length } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      const done = () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), complete: res.complete });
      res.on('end', done);
      res.on('error', done);
      res.on('aborted', done);
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** Change bytes in the middle of a file, keeping its size and mtime (what a stat-only check cannot see). */
function damage(file: string): void {
  const st = statSync(file, { bigint: true });
  // touch -r copies the times to the nanosecond (Node's utimes takes a double)
  const ref = `${file}.times`;
  writeFileSync(ref, '');
  execFileSync('touch', ['-r', file, ref]);
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.from('damaged!'), 0, 8, Number(st.size / 2n));
  closeSync(fd);
  execFileSync('touch', ['-r', ref, file]);
  rmSync(ref);
  const now = statSync(file, { bigint: true });
  assert.equal(now.size, st.size);
  assert.equal(now.mtimeNs, st.mtimeNs);
  assert.equal(now.ino, st.ino);
}

describe('an LFS object damaged in place', { skip }, () => {
  let t: ReturnType<typeof tmp>;
  let s: ServerProc;
  let url: string;
  let alice: LfsHome;
  before(async () => {
    t = tmp('gitwire-lfs-damaged-');
    const srv = join(t.dir, 'srv');
    mkdirSync(srv);
    git(['init', '-q', '--bare', '-b', 'main', join(srv, 'r.git')]);
    writeHtpasswd(join(t.dir, 'htpasswd'), { alice: 'alice-pw' });
    s = await startServe(srv, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd')]);
    url = `http://127.0.0.1:${s.httpPort}`;
    alice = lfsHome(join(t.dir, 'alice'));
    setCredentials(alice, s.httpPort!, 'alice', 'alice-pw');
  });
  after(async () => { await s.stop(); t.cleanup(); });

  test('is asked for again by the batch, refused by verify, never downloaded whole, and repaired by the next push', { timeout: 300_000 }, async () => {
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w], { env: alice.env });
    ok(await gitRun(['lfs', 'track', '*.bin'], w, alice.env));
    writeBlob(join(w, 'big.bin'), 3 * 1024 * 1024 + 17);
    const oid = await fileSha256(join(w, 'big.bin'));
    const size = statSync(join(w, 'big.bin')).size;
    ok(await gitRun(['add', '-A'], w, alice.env));
    ok(await gitRun(['commit', '-q', '-m', 'art'], w, alice.env));
    ok(await gitRun(['push', '-q', `${url}/r.git`, 'main'], w, alice.env), 'push');
    const file = objectFile(join(t.dir, 'srv', 'r.git'), oid);
    assert.equal(await fileSha256(file), oid);

    const batch = async () => JSON.parse((await call(s.httpPort!, 'POST', '/r.git/info/lfs/objects/batch', { operation: 'upload', transfers: ['basic'], objects: [{ oid, size }] })).body.toString()) as { objects: Array<{ actions?: Record<string, unknown> }> };
    assert.equal((await batch()).objects[0]!.actions, undefined, 'a good object is not asked for');
    assert.equal((await call(s.httpPort!, 'POST', '/r.git/info/lfs/objects/verify', { oid, size })).status, 200);

    damage(file);
    assert.ok((await batch()).objects[0]!.actions?.upload, 'the batch asks for the damaged object again');
    assert.equal((await call(s.httpPort!, 'POST', '/r.git/info/lfs/objects/verify', { oid, size })).status, 404, 'verify refuses it');
    const got = await call(s.httpPort!, 'GET', `/r.git/info/lfs/objects/${oid}`, undefined, { Accept: 'application/octet-stream' });
    assert.ok(!got.complete && got.body.length < size, `a download is cut before its end (status ${got.status}, ${got.body.length} of ${size} bytes, complete ${got.complete})`);
    const part = await call(s.httpPort!, 'GET', `/r.git/info/lfs/objects/${oid}`, undefined, { Accept: 'application/octet-stream', Range: 'bytes=0-99' });
    assert.equal(part.status, 404, 'nor is a range of it served');
    assert.ok(s.logs.some((l) => l.includes('GW_OBJECT_CORRUPT')), 'the log says why');

    // the real client: a clone cannot check the object out, a push repairs it, then a clone has it
    const c1 = join(t.dir, 'c1');
    const bad = await gitRun(['clone', '-q', `${url}/r.git`, c1], t.dir, alice.env);
    assert.notEqual(bad.code, 0, 'the clone does not take the damaged object');
    ok(await gitRun(['lfs', 'push', '--all', `${url}/r.git`], w, alice.env), 'lfs push');
    assert.equal(await fileSha256(file), oid, 'the push replaced the damaged object');
    const c2 = join(t.dir, 'c2');
    ok(await gitRun(['clone', '-q', `${url}/r.git`, c2], t.dir, alice.env), 'clone after the repair');
    assert.ok(readFileSync(join(c2, 'big.bin')).equals(readFileSync(join(w, 'big.bin'))));
    assert.equal((await batch()).objects[0]!.actions, undefined);
  });
});
