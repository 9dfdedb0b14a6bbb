/**
 * Git LFS attacked as a stranger would, with raw HTTP and SSH clients
 * against `gitwire serve`: a store whose writes fail part way (the server
 * runs under a file size limit, as a full disk would fail it), object
 * data that is not what it says, and the answers each must still get.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { spawnSync } from 'node:child_process';
import { git, tmp } from './helpers/git.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { sshKit, sshRun, writeKnownHosts, type SshKit, type SshUser } from './helpers/ssh.js';
import { sha256, writeHtpasswd } from './helpers/lfs.js';

const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
/** one pkt-line of ASCII text */
const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
const FLUSH = '0000';
const DELIM = '0001';
/** `data` as the data packets of a put-object (at most 65516 bytes each) */
const dataPkts = (data: string) => { let o = ''; for (let i = 0; i < data.length; i += 65516) o += pkt(data.slice(i, i + 65516)); return o; };

function tmpFiles(gitDir: string): string[] {
  const d = join(gitDir, 'lfs', 'tmp');
  return existsSync(d) ? readdirSync(d) : [];
}
function stored(gitDir: string): string[] {
  const root = join(gitDir, 'lfs', 'objects');
  return existsSync(root) ? (readdirSync(root, { recursive: true }) as string[]).filter((p) => /[0-9a-f]{64}$/.test(p)) : [];
}

/** A PUT with a body of `body`, with or without Content-Length: the whole answer, or the error that cut it. */
function put(port: number, path: string, body: string, authorization: string, chunked = false): Promise<{ status: number; body: string } | Error> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { Authorization: authorization };
    if (!chunked) headers['Content-Length'] = Buffer.byteLength(body);
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', (e) => resolve(e));
    });
    req.on('error', (e) => resolve(e));
    if (chunked) { for (let i = 0; i < body.length; i += 65536) req.write(body.slice(i, i + 65536)); req.end(); } else req.end(body);
  });
}

const havePrlimit = spawnSync('prlimit', ['--version']).status === 0;

describe('lfs: a store whose writes fail part way (serve under a 1 MiB file size limit)', { skip: havePrlimit ? false : 'prlimit (util-linux) is not installed' }, () => {
  let t: ReturnType<typeof tmp>;
  let s: ServerProc;
  let kit: SshKit;
  let alice: SshUser;
  let srv: string;
  const auth = basic('alice', 'alice-pw');
  // 2 MiB of text: past the limit, so the write fails with EFBIG after 1 MiB, as a full disk fails it with ENOSPC
  const big = 'x'.repeat(2 * 1024 * 1024);
  const bigOid = sha256(big);
  before(async () => {
    t = tmp('gitwire-lfs-attack-');
    srv = join(t.dir, 'srv');
    mkdirSync(srv);
    git(['init', '-q', '--bare', '-b', 'main', join(srv, 'r.git')]);
    writeHtpasswd(join(t.dir, 'htpasswd'), { alice: 'alice-pw' });
    kit = sshKit(t.dir);
    alice = kit.user('alice');
    s = await startServe(srv, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd'), '--ssh', '0', '--ssh-keys', kit.keys, '--ssh-host-key', kit.hostKey], {},
      ['prlimit', `--fsize=${1024 * 1024}`, '--']);
    writeKnownHosts(kit, s.sshPort!);
  });
  after(async () => { await s.stop(); t.cleanup(); });

  test('HTTP PUT past what the store can write: a whole 500 answer (not a reset), no temporary file, the server goes on', async () => {
    const gitDir = join(srv, 'r.git');
    for (const chunked of [false, true]) {
      const r = await put(s.httpPort!, `/r.git/info/lfs/objects/${bigOid}`, big, auth, chunked);
      if (r instanceof Error) assert.fail(`chunked=${chunked}: ${r.message}`);
      assert.equal(r.status, 500, r.body);
      assert.match((JSON.parse(r.body) as { message: string }).message, /^The object could not be stored: /);
      assert.deepEqual(tmpFiles(gitDir), [], `chunked=${chunked}: no temporary file left`);
      assert.deepEqual(stored(gitDir), []);
    }
    // an object the store can hold still goes in
    const small = 'small object\n';
    const ok = await put(s.httpPort!, `/r.git/info/lfs/objects/${sha256(small)}`, small, auth);
    assert.ok(!(ok instanceof Error));
    assert.equal(ok.status, 200);
    assert.deepEqual(stored(gitDir).length, 1);
  });

  test('git-lfs-transfer put-object past what the store can write: status 500, the rest of the object is skipped, the session goes on', async () => {
    const input = pkt('version 1\n') + FLUSH
      + pkt(`put-object ${bigOid}\n`) + pkt(`size=${big.length}\n`) + DELIM + dataPkts(big) + FLUSH
      + pkt(`verify-object ${bigOid}\n`) + pkt(`size=${big.length}\n`) + FLUSH
      + pkt('quit\n') + FLUSH;
    const r = await sshRun(kit, alice, s.sshPort!, ['git@127.0.0.1', 'git-lfs-transfer /r.git upload'], input);
    assert.equal(r.code, 0, r.stderr);
    const after = r.stdout.slice(r.stdout.indexOf('status 200\n') + 'status 200\n'.length + 4);
    assert.match(after, /^000fstatus 500\n0001[0-9a-f]{4}the object could not be stored: [^\n]*\n0000000fstatus 404\n0001[0-9a-f]{4}object does not exist\n0000000fstatus 200\n0000$/, JSON.stringify(r.stdout));
    assert.deepEqual(tmpFiles(join(srv, 'r.git')), []);
  });
});

describe('lfs over ssh: what is left of a refused object is never read as commands', () => {
  let t: ReturnType<typeof tmp>;
  let s: ServerProc;
  let kit: SshKit;
  let alice: SshUser;
  let srv: string;
  before(async () => {
    t = tmp('gitwire-lfs-attack-ssh-');
    srv = join(t.dir, 'srv');
    mkdirSync(srv);
    git(['init', '-q', '--bare', '-b', 'main', join(srv, 'r.git')]);
    kit = sshKit(t.dir);
    alice = kit.user('alice');
    writeFileSync(join(t.dir, 'rules'), 'push ** alice\n');
    s = await startServe(srv, ['--ssh', '0', '--ssh-keys', kit.keys, '--ssh-host-key', kit.hostKey, '--auth-rules', join(t.dir, 'rules')]);
    writeKnownHosts(kit, s.sshPort!);
  });
  after(async () => { await s.stop(); t.cleanup(); });

  test('put-object with more bytes than its size, the excess being a lock command: 422, no lock taken, the session in step', async () => {
    const content = 'abc';
    // what follows the 3 bytes it announced is a command of the protocol, in the object's own data packets
    const input = pkt('version 1\n') + FLUSH
      + pkt(`put-object ${sha256(content)}\n`) + pkt('size=3\n') + DELIM + pkt('abc') + pkt('lock\n') + pkt('path=injected.bin\n') + FLUSH
      + pkt('list-lock\n') + FLUSH
      + pkt('quit\n') + FLUSH;
    const r = await sshRun(kit, alice, s.sshPort!, ['git@127.0.0.1', 'git-lfs-transfer /r.git upload'], input);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout,
      pkt('version=1\n') + pkt('locking\n') + FLUSH + pkt('status 200\n') + FLUSH
      + pkt('status 422\n') + DELIM + pkt('object does not match its oid: expected 3 bytes, got more\n') + FLUSH
      + pkt('status 200\n') + DELIM + FLUSH
      + pkt('status 200\n') + FLUSH);
    assert.equal(existsSync(join(srv, 'r.git', 'lfs', 'locks')) ? readdirSync(join(srv, 'r.git', 'lfs', 'locks')).length : 0, 0, 'no lock file');
  });

  test('a command of more than 4 MiB (a batch of long lines) is a protocol error as soon as it passes the limit, not held whole', async () => {
    const line = pkt(`${'a'.repeat(65515)}\n`);
    const input = pkt('version 1\n') + FLUSH + pkt('batch\n') + DELIM + line.repeat(100) + FLUSH + pkt('quit\n') + FLUSH;
    const r = await sshRun(kit, alice, s.sshPort!, ['git@127.0.0.1', 'git-lfs-transfer /r.git download'], input);
    assert.equal(r.code, 128);
    assert.equal(r.stderr, 'fatal: protocol error: command larger than 4194304 bytes\n');
  });
});

describe('lfs over http: bodies that cost more to parse than they are worth', () => {
  let t: ReturnType<typeof tmp>;
  let s: ServerProc;
  let url: string;
  before(async () => {
    t = tmp('gitwire-lfs-attack-json-');
    git(['init', '-q', '--bare', '-b', 'main', join(t.dir, 'r.git')]);
    writeHtpasswd(join(t.dir, 'htpasswd'), { alice: 'alice-pw' });
    s = await startServe(t.dir, ['--http', '0', '--htpasswd', join(t.dir, 'htpasswd')]);
    url = `http://127.0.0.1:${s.httpPort}/r.git/info/lfs`;
  });
  after(async () => { await s.stop(); t.cleanup(); });
  const batch = (body: string, headers: Record<string, string> = {}) => fetch(`${url}/objects/batch`, { method: 'POST', headers: { 'Content-Type': 'application/vnd.git-lfs+json', ...headers }, body })
    .then(async (r) => ({ status: r.status, json: await r.json() as { message?: string; objects?: Array<{ oid: string; error?: { code: number } }> } }));

  test('deep nesting and a flood of values are refused unparsed, before credentials (anyone can send them)', async () => {
    // valid JSON, a download (anonymous may download): it used to be parsed, its one object a per-object error
    const deep = await batch(`{"operation":"download","objects":[${'['.repeat(200)}${']'.repeat(200)}]}`);
    assert.deepEqual(deep, { status: 400, json: { message: 'request body nested deeper than 16 levels' } });
    const flood = await batch(`{"operation":"download","objects":[],"x":[${'0,'.repeat(100_000)}0]}`);
    assert.equal(flood.status, 413);
    assert.match(flood.json.message ?? '', /^request body has more than \d+ JSON values$/);
    // what git-lfs sends for the largest batch the server takes (10,000 objects) still goes through
    const objects = Array.from({ length: 10_000 }, (_, i) => ({ oid: sha256(String(i)), size: i }));
    const full = await batch(JSON.stringify({ operation: 'download', transfers: ['basic', 'ssh'], ref: { name: 'refs/heads/main' }, objects, hash_algo: 'sha256' }));
    assert.equal(full.status, 200);
    assert.equal(full.json.objects!.length, 10_000);
  });

  test('the tokens in batch actions say nothing of the server\'s paths', async () => {
    const r = await batch(JSON.stringify({ operation: 'upload', objects: [{ oid: sha256('x'), size: 1 }] }), { Authorization: basic('alice', 'alice-pw') });
    const o = r.json.objects![0] as unknown as { actions: { upload: { header: { Authorization: string } } } };
    const token = o.actions.upload.header.Authorization.replace(/^Bearer gwlfs1\./, '');
    for (const part of token.split('.')) {
      const text = Buffer.from(part, 'base64url').toString('latin1');
      assert.ok(!text.includes(t.dir) && !text.includes('r.git'), `token part ${part} reads ${JSON.stringify(text)}`);
    }
    // and it still works (a download of what it uploads: the object is not there yet, a per-object 404)
    const d = await batch(JSON.stringify({ operation: 'download', objects: [{ oid: sha256('x'), size: 1 }] }), { Authorization: o.actions.upload.header.Authorization });
    assert.equal(d.status, 200);
    assert.equal(d.json.objects![0]!.error?.code, 404);
  });

  test('a symbolic link planted in lfs/objects is not an object: not listed, not served', async () => {
    const secret = join(t.dir, 'secret.txt');
    writeFileSync(secret, 'not for clients\n');
    const oid = sha256('not for clients\n');
    const dir = join(t.dir, 'r.git', 'lfs', 'objects', oid.slice(0, 2), oid.slice(2, 4));
    mkdirSync(dir, { recursive: true });
    symlinkSync(secret, join(dir, oid));
    const b = await batch(JSON.stringify({ operation: 'download', objects: [{ oid, size: 16 }] }));
    assert.equal(b.json.objects![0]!.error?.code, 404);
    const g = await fetch(`${url}/objects/${oid}`);
    assert.equal(g.status, 404);
    assert.deepEqual(await g.json(), { message: 'Object does not exist' });
  });

  test('an oid that is not text is a per-object 422 (it was a 500 when it could not be made a string)', async () => {
    const r = await batch(JSON.stringify({ operation: 'download', objects: [{ oid: { toString: 1 }, size: 1 }, { oid: [[1]], size: 1 }, { oid: 7, size: 1 }] }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.objects!.map((o) => [o.oid, o.error?.code]), [['object', 422], ['array', 422], ['7', 422]]);
  });
});
