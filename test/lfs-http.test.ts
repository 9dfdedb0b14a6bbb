/**
 * Git LFS over smart HTTP with the real git-lfs client against `gitwire
 * serve`: push and clone (one object of 100 MB), locks between two users,
 * refusals that leave the store as it was, and the API's answers to
 * requests git-lfs would not send (bad oids, foreign tokens, ranges).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { git, tmp } from './helpers/git.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, objectFile, setCredentials, sha256, writeBlob, writeHtpasswd, type LfsHome } from './helpers/lfs.js';

const skip = haveGitLfs ? false : 'git-lfs is not installed (.ci/run installs it)';
const ok = (r: { code: number; stderr: string; stdout: string }, what = '') => assert.equal(r.code, 0, `${what}\n${r.stdout}\n${r.stderr}`);
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const JSON_TYPE = 'application/vnd.git-lfs+json';

/** every file under the repository's lfs/objects (what the store holds) */
function stored(gitDir: string): string[] {
  const root = join(gitDir, 'lfs', 'objects');
  if (!existsSync(root)) return [];
  return (readdirSync(root, { recursive: true }) as string[]).filter((p) => /[0-9a-f]{64}$/.test(p)).sort();
}
function tmpFiles(gitDir: string): string[] {
  const d = join(gitDir, 'lfs', 'tmp');
  return existsSync(d) ? readdirSync(d) : [];
}

/** a work tree tracking *.bin, with origin at url */
async function lfsWork(h: LfsHome, dir: string, url: string): Promise<string> {
  git(['init', '-q', '-b', 'main', dir], { env: h.env });
  ok(await gitRun(['lfs', 'track', '*.bin'], dir, h.env));
  git(['remote', 'add', 'origin', url], { cwd: dir, env: h.env });
  return dir;
}

async function commitAll(h: LfsHome, dir: string, msg: string): Promise<void> {
  ok(await gitRun(['add', '-A'], dir, h.env));
  ok(await gitRun(['commit', '-q', '-m', msg], dir, h.env));
}

/** A PUT that announces `length` bytes and sends 16: the answer (the server must not wait for the rest). */
function announcedPut(port: number, path: string, length: number, authorization: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', headers: { Authorization: authorization, 'Content-Length': length } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => { req.destroy(); resolve({ status: res.statusCode ?? 0, body }); });
    });
    req.on('error', reject);
    req.write(Buffer.alloc(16));
  });
}

describe('lfs over http, git-lfs client', { skip }, () => {
  let t: ReturnType<typeof tmp>;
  let s: ServerProc;
  let srv: string;
  let url: string;
  let alice: LfsHome;
  let bob: LfsHome;
  before(async () => {
    t = tmp('gitwire-lfs-http-');
    srv = join(t.dir, 'srv');
    mkdirSync(srv);
    for (const r of ['r.git', 'locks.git', 'ro.git', 'small.git']) git(['init', '-q', '--bare', '-b', 'main', join(srv, r)]);
    writeHtpasswd(join(t.dir, 'htpasswd'), { alice: 'alice-pw', bob: 'bob-pw', carol: 'carol-pw' });
    // carol may fetch ro but push nothing; alice and bob push everything
    writeFileSync(join(t.dir, 'rules'), 'push ** alice bob\nfetch ro carol\n');
    s = await startServe(srv, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules'), '--lfs-max-object-size', '150m']);
    url = `http://127.0.0.1:${s.httpPort}`;
    alice = lfsHome(join(t.dir, 'alice'));
    setCredentials(alice, s.httpPort!, 'alice', 'alice-pw');
    bob = lfsHome(join(t.dir, 'bob'));
    setCredentials(bob, s.httpPort!, 'bob', 'bob-pw');
  });
  after(async () => { await s.stop(); t.cleanup(); });

  test('push several LFS files (one of 100 MB) with a bcrypt user, clone elsewhere: identical bytes', async () => {
    const w = await lfsWork(alice, join(t.dir, 'w1'), `${url}/r.git`);
    writeBlob(join(w, 'big.bin'), 100 * 1024 * 1024);
    writeBlob(join(w, 'small.bin'), 12_345);
    writeFileSync(join(w, 'empty.bin'), '');
    mkdirSync(join(w, 'sub dir'));
    writeFileSync(join(w, 'sub dir', 'text.bin'), 'hello lfs\n');
    writeFileSync(join(w, 'plain.txt'), 'not lfs\n');
    await commitAll(alice, w, 'lfs files');
    ok(await gitRun(['push', '-q', 'origin', 'main'], w, alice.env), 'push');
    const gitDir = join(srv, 'r.git');
    const want = [await fileSha256(join(w, 'big.bin')), await fileSha256(join(w, 'small.bin')), sha256('hello lfs\n')];
    for (const oid of want) assert.ok(existsSync(objectFile(gitDir, oid)), `stored ${oid}`);
    assert.deepEqual(tmpFiles(gitDir), [], 'no temporary file left');
    // the stored objects are the bytes (git-lfs's own layout, readable by git lfs on the server)
    assert.equal(await fileSha256(objectFile(gitDir, want[0]!)), want[0]);

    // anonymous fetch is allowed under --auth push: a clone with no credentials at all
    const anon = lfsHome(join(t.dir, 'anon'));
    const c = join(t.dir, 'c1');
    ok(await gitRun(['clone', '-q', `${url}/r`, c], t.dir, anon.env), 'clone');
    for (const f of ['big.bin', 'small.bin', 'empty.bin', join('sub dir', 'text.bin'), 'plain.txt']) {
      assert.equal(await fileSha256(join(c, f)), await fileSha256(join(w, f)), f);
    }
    // a second push has nothing to send: the batch answers without actions
    writeFileSync(join(w, 'plain.txt'), 'changed\n');
    await commitAll(alice, w, 'no new lfs');
    const again = await gitRun(['push', 'origin', 'main'], w, { ...alice.env, GIT_TRACE: '0' });
    ok(again);
    assert.doesNotMatch(again.stderr, /Uploading LFS objects: *100% \(\d+\/\d+\)/, 'nothing uploaded twice');
    assert.deepEqual(stored(gitDir).length, 3);
  });

  test('a wrong password is refused with git-lfs\'s credential error; nothing is stored', async () => {
    const mallory = lfsHome(join(t.dir, 'mallory'));
    setCredentials(mallory, s.httpPort!, 'alice', 'wrong');
    const w = await lfsWork(mallory, join(t.dir, 'w-wrong'), `${url}/small.git`);
    writeBlob(join(w, 'x.bin'), 1000);
    await commitAll(mallory, w, 'x');
    const r = await gitRun(['lfs', 'push', 'origin', 'main'], w, mallory.env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Authentication required|Git credentials|credentials/i, r.stderr);
    assert.deepEqual(stored(join(srv, 'small.git')), []);
    // the answer a client sees: 401 with both challenges and git-lfs's JSON body
    const res = await fetch(`${url}/small.git/info/lfs/objects/batch`, {
      method: 'POST', headers: { Authorization: basic('alice', 'wrong'), 'Content-Type': JSON_TYPE, Accept: JSON_TYPE },
      body: JSON.stringify({ operation: 'upload', objects: [{ oid: 'a'.repeat(64), size: 1 }] }),
    });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('lfs-authenticate'), 'Basic realm="gitwire"');
    assert.equal(res.headers.get('www-authenticate'), 'Basic realm="gitwire"');
    assert.match(res.headers.get('content-type') ?? '', /^application\/vnd\.git-lfs\+json/);
    assert.deepEqual(await res.json(), { message: 'Credentials needed' });
  });

  test('a user without a push rule is refused (403); downloads are public under --auth push', async () => {
    const carol = lfsHome(join(t.dir, 'carol'));
    setCredentials(carol, s.httpPort!, 'carol', 'carol-pw');
    const w = await lfsWork(carol, join(t.dir, 'w-carol'), `${url}/ro.git`);
    writeBlob(join(w, 'x.bin'), 1000);
    await commitAll(carol, w, 'x');
    const r = await gitRun(['lfs', 'push', 'origin', 'main'], w, carol.env);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Forbidden|403/, r.stderr);
    assert.deepEqual(stored(join(srv, 'ro.git')), []);
    // under --auth push anyone may download (as anyone may fetch): a missing object is a per-object 404
    const batch = (repo: string) => fetch(`${url}/${repo}/info/lfs/objects/batch`, {
      method: 'POST', headers: { Authorization: basic('carol', 'carol-pw'), 'Content-Type': JSON_TYPE },
      body: JSON.stringify({ operation: 'download', objects: [{ oid: 'b'.repeat(64), size: 3 }] }),
    });
    const a = await batch('ro.git');
    assert.equal(a.status, 200);
    assert.deepEqual((await a.json() as { objects: unknown[] }).objects, [{ oid: 'b'.repeat(64), size: 3, error: { code: 404, message: 'Object does not exist' } }]);
    const b = await batch('r.git');
    assert.equal(b.status, 200);
  });

  test('an upload whose content does not match its oid, and an oversized one: refused, store unchanged', async () => {
    const gitDir = join(srv, 'small.git');
    const before = stored(gitDir);
    const oid = sha256('right content');
    const put = (body: string, headers: Record<string, string> = {}) => fetch(`${url}/small.git/info/lfs/objects/${oid}`, { method: 'PUT', headers: { Authorization: basic('alice', 'alice-pw'), 'Content-Type': 'application/octet-stream', ...headers }, body });
    const bad = await put('wrong content');
    assert.equal(bad.status, 422);
    assert.match((await bad.json() as { message: string }).message, /^Object does not match its oid/);
    assert.deepEqual(stored(gitDir), before);
    assert.deepEqual(tmpFiles(gitDir), []);
    // the right bytes are taken
    const good = await put('right content');
    assert.equal(good.status, 200);
    assert.equal(readFileSync(objectFile(gitDir, oid), 'utf8'), 'right content');
    rmSync(objectFile(gitDir, oid));

    // past --lfs-max-object-size (150m): the batch refuses the object with git-lfs's per-object error
    const big = 151 * 1024 * 1024;
    const res = await fetch(`${url}/small.git/info/lfs/objects/batch`, {
      method: 'POST', headers: { Authorization: basic('alice', 'alice-pw'), 'Content-Type': JSON_TYPE },
      body: JSON.stringify({ operation: 'upload', objects: [{ oid: 'c'.repeat(64), size: big }] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual((await res.json() as { objects: unknown[] }).objects, [{ oid: 'c'.repeat(64), size: big, error: { code: 422, message: `Object size ${big} exceeds the maximum of ${150 * 1024 * 1024} bytes` } }]);
    // and a PUT that announces it is cut before its body is read
    const tooBig = await announcedPut(s.httpPort!, `/small.git/info/lfs/objects/${'c'.repeat(64)}`, big, basic('alice', 'alice-pw'));
    assert.equal(tooBig.status, 413);
    assert.match(tooBig.body, /exceeds the maximum/);
    assert.deepEqual(stored(gitDir), before);
    assert.deepEqual(tmpFiles(gitDir), []);
  });

  test('the real client with an oversized object: git-lfs prints the server\'s message, the push fails', async () => {
    const t2 = tmp('gitwire-lfs-small-');
    const srv2 = join(t2.dir, 'srv');
    git(['init', '-q', '--bare', '-b', 'main', join(srv2, 'm.git')]);
    const s2 = await startServe(srv2, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--lfs-max-object-size', '1k']);
    try {
      const h = lfsHome(join(t2.dir, 'h'));
      setCredentials(h, s2.httpPort!, 'alice', 'alice-pw');
      const w = await lfsWork(h, join(t2.dir, 'w'), `http://127.0.0.1:${s2.httpPort}/m.git`);
      writeBlob(join(w, 'big.bin'), 2048);
      await commitAll(h, w, 'big');
      const r = await gitRun(['push', 'origin', 'main'], w, h.env);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /Object size 2048 exceeds the maximum of 1024 bytes/, r.stderr);
      assert.deepEqual(stored(join(srv2, 'm.git')), []);
      assert.equal(git(['for-each-ref'], { cwd: join(srv2, 'm.git') }), '', 'no ref pushed');
    } finally { await s2.stop(); t2.cleanup(); }
  });

  test('a download of a missing object: git-lfs reports it, the store is untouched', async () => {
    const w = await lfsWork(alice, join(t.dir, 'w-miss'), `${url}/small.git`);
    writeBlob(join(w, 'gone.bin'), 5000);
    await commitAll(alice, w, 'gone');
    ok(await gitRun(['push', '-q', 'origin', 'main'], w, alice.env));
    const oid = await fileSha256(join(w, 'gone.bin'));
    rmSync(objectFile(join(srv, 'small.git'), oid));
    const before = stored(join(srv, 'small.git'));
    const c = join(t.dir, 'c-miss');
    const r = await gitRun(['clone', `${url}/small.git`, c], t.dir, bob.env);
    assert.match(r.stderr, /Object does not exist/, r.stderr);
    assert.deepEqual(stored(join(srv, 'small.git')), before);
    // over the basic transfer itself: 404 with git-lfs's JSON body
    const g = await fetch(`${url}/small.git/info/lfs/objects/${oid}`, { headers: { Authorization: basic('bob', 'bob-pw') } });
    assert.equal(g.status, 404);
    assert.deepEqual(await g.json(), { message: 'Object does not exist' });
  });

  test('locks between two users: lock, list, refused unlock, unlock --force, push of a file locked by someone else', async () => {
    const wa = await lfsWork(alice, join(t.dir, 'wa'), `${url}/locks.git`);
    writeFileSync(join(wa, '.gitattributes'), '*.bin filter=lfs diff=lfs merge=lfs -text lockable\n');
    writeBlob(join(wa, 'art.bin'), 4000);
    await commitAll(alice, wa, 'art');
    ok(await gitRun(['push', '-q', 'origin', 'main'], wa, alice.env));
    const wb = join(t.dir, 'wb');
    ok(await gitRun(['clone', '-q', `${url}/locks.git`, wb], t.dir, bob.env));

    ok(await gitRun(['lfs', 'lock', 'art.bin'], wa, alice.env), 'alice locks');
    const listed = await gitRun(['lfs', 'locks'], wb, bob.env);
    ok(listed);
    assert.match(listed.stdout, /^art\.bin\s+alice\s+ID:[0-9a-f]{32}-[0-9a-f]{16}\n$/);
    // bob may not take alice's lock, nor lock the path himself
    const taken = await gitRun(['lfs', 'lock', 'art.bin'], wb, bob.env);
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr, /already created lock/, taken.stderr);
    const refused = await gitRun(['lfs', 'unlock', 'art.bin'], wb, bob.env);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /owned by alice/, refused.stderr);

    // bob changes the file alice holds and pushes: git-lfs checks locks/verify and refuses
    ok(await gitRun(['config', 'lfs.locksverify', 'true'], wb, bob.env));
    writeBlob(join(wb, 'art.bin'), 4001);
    await commitAll(bob, wb, 'bob edits');
    const pushed = await gitRun(['push', 'origin', 'main'], wb, bob.env);
    assert.notEqual(pushed.code, 0, pushed.stderr);
    // git-lfs 3.3 says "Cannot update locked files." (older ones "Unable to push locked files"), and names them
    const said = `${pushed.stdout}${pushed.stderr}`;
    assert.match(said, /Cannot update locked files\.|Unable to push locked files/, said);
    assert.match(said, /art\.bin/, said);
    assert.equal(git(['rev-parse', 'main'], { cwd: join(srv, 'locks.git') }).trim(), git(['rev-parse', 'main'], { cwd: wa }).trim(), 'the branch did not move');

    // force (bob may push): the lock goes, and the same push goes through
    ok(await gitRun(['lfs', 'unlock', '--force', 'art.bin'], wb, bob.env), 'unlock --force');
    assert.equal((await gitRun(['lfs', 'locks'], wa, alice.env)).stdout, '');
    ok(await gitRun(['push', '-q', 'origin', 'main'], wb, bob.env), 'push after unlock');

    // the lock a user takes is theirs: alice sees it as ours after a restart of the server
    ok(await gitRun(['lfs', 'lock', 'art.bin'], wb, bob.env));
    const v = await fetch(`${url}/locks.git/info/lfs/locks/verify`, { method: 'POST', headers: { Authorization: basic('bob', 'bob-pw'), 'Content-Type': JSON_TYPE }, body: '{}' });
    const vj = await v.json() as { ours: Array<{ path: string; owner: { name: string } }>; theirs: unknown[] };
    assert.deepEqual([vj.ours.map((l) => [l.path, l.owner.name]), vj.theirs], [[['art.bin', 'bob']], []]);
  });

  test('concurrent lock requests for one path: exactly one owner', async () => {
    const one = (u: string) => fetch(`${url}/locks.git/info/lfs/locks`, {
      method: 'POST', headers: { Authorization: basic(u, `${u}-pw`), 'Content-Type': JSON_TYPE }, body: JSON.stringify({ path: 'race.psd' }),
    }).then(async (r) => ({ status: r.status, body: await r.json() as { lock: { id: string; owner: { name: string } } } }));
    const all = await Promise.all(Array.from({ length: 24 }, (_, i) => one(i % 2 ? 'alice' : 'bob')));
    const won = all.filter((r) => r.status === 201);
    assert.equal(won.length, 1, JSON.stringify(all.map((r) => r.status)));
    const conflicts = all.filter((r) => r.status === 409);
    assert.equal(conflicts.length, 23);
    for (const c of conflicts) assert.equal(c.body.lock.id, won[0]!.body.lock.id);
  });

  test('hostile requests: bad oids, foreign tokens, huge bodies, ranges', async () => {
    const auth = { Authorization: basic('alice', 'alice-pw') };
    for (const bad of ['..%2f..%2fconfig', 'A'.repeat(64), 'a'.repeat(63), `${'a'.repeat(64)}%00`]) {
      const r = await fetch(`${url}/r.git/info/lfs/objects/${bad}`, { headers: auth });
      assert.ok(r.status === 422 || r.status === 404, `${bad}: ${r.status}`);
    }
    const big = await fetch(`${url}/r.git/info/lfs/objects/batch`, { method: 'POST', headers: { ...auth, 'Content-Type': JSON_TYPE }, body: ' '.repeat(5 * 1024 * 1024) }).catch((e: Error) => e);
    if (!(big instanceof Error)) assert.equal(big.status, 413);
    const batch = await fetch(`${url}/r.git/info/lfs/objects/batch`, { method: 'POST', headers: { ...auth, 'Content-Type': JSON_TYPE }, body: JSON.stringify({ operation: 'download', objects: [{ oid: sha256('hello lfs\n'), size: 10 }, { oid: '../../x', size: 1 }, { oid: 'd'.repeat(64), size: -1 }] }) });
    const bj = await batch.json() as { objects: Array<{ oid: string; error?: { code: number }; actions?: { download: { href: string; header: Record<string, string>; expires_in: number } } }> };
    assert.equal(bj.objects[1]!.error!.code, 422);
    assert.equal(bj.objects[2]!.error!.code, 422);
    const dl = bj.objects[0]!.actions!.download;
    assert.ok(dl.expires_in > 0);
    // the action's token downloads, with Range
    const part = await fetch(dl.href, { headers: { ...dl.header, Range: 'bytes=6-' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), 'bytes 6-9/10');
    assert.equal(await part.text(), 'lfs\n');
    const past = await fetch(dl.href, { headers: { ...dl.header, Range: 'bytes=10-' } });
    assert.equal(past.status, 416);
    // last below first is no range (RFC 9110 14.1.1): ignored, the whole object (was 416)
    const backwards = await fetch(dl.href, { headers: { ...dl.header, Range: 'bytes=5-3' } });
    assert.equal(backwards.status, 200);
    assert.equal(await backwards.text(), 'hello lfs\n');
    // the same token for another repository, or for an upload, is no credential
    const other = await fetch(dl.href.replace('/r.git/', '/small.git/'), { headers: dl.header });
    assert.equal(other.status, 401);
    const up = await fetch(dl.href, { method: 'PUT', headers: dl.header, body: 'hello lfs\n' });
    assert.equal(up.status, 401);
    const forged = await fetch(dl.href, { headers: { Authorization: dl.header.Authorization!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) } });
    assert.equal(forged.status, 401);
    // too many objects in one batch
    const many = await fetch(`${url}/r.git/info/lfs/objects/batch`, { method: 'POST', headers: { ...auth, 'Content-Type': JSON_TYPE }, body: JSON.stringify({ operation: 'download', objects: Array.from({ length: 10_001 }, () => ({ oid: 'e'.repeat(64), size: 1 })) }) });
    assert.equal(many.status, 413);
    // not LFS's paths: git's own routes are untouched
    const refs = await fetch(`${url}/r.git/info/refs?service=git-upload-pack`);
    assert.equal(refs.status, 200);
  });
});

describe('serve without users', { skip }, () => {
  test('downloads are open, an upload is refused with 403 (no credential prompt: nobody can sign in)', async () => {
    const t = tmp('gitwire-lfs-anon-');
    git(['init', '-q', '--bare', '-b', 'main', join(t.dir, 'r.git')]);
    const s = await startServe(t.dir, ['--http', '0']);
    try {
      const batch = (operation: string) => fetch(`http://127.0.0.1:${s.httpPort}/r.git/info/lfs/objects/batch`, {
        method: 'POST', headers: { 'Content-Type': JSON_TYPE }, body: JSON.stringify({ operation, objects: [{ oid: 'f'.repeat(64), size: 1 }] }),
      });
      const down = await batch('download');
      assert.equal(down.status, 200);
      const up = await batch('upload');
      assert.equal(up.status, 403);
      assert.equal(up.headers.get('lfs-authenticate'), null);
      assert.match((await up.json() as { message: string }).message, /signed-in user/);
      assert.ok(!existsSync(join(t.dir, 'r.git', 'lfs', 'objects')));
    } finally { await s.stop(); t.cleanup(); }
  });
});

describe('serve --no-lfs', { skip }, () => {
  test('no LFS routes: 404 as for any unknown path', async () => {
    const t = tmp('gitwire-nolfs-');
    git(['init', '-q', '--bare', join(t.dir, 'r.git')]);
    const s = await startServe(t.dir, ['--http', '0', '--no-lfs']);
    try {
      const r = await fetch(`http://127.0.0.1:${s.httpPort}/r.git/info/lfs/objects/batch`, { method: 'POST', body: '{}' });
      assert.equal(r.status, 404);
    } finally { await s.stop(); t.cleanup(); }
  });
});
