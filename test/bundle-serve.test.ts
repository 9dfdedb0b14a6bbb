/**
 * Bundles on a server (`serve --bundles`): the download route
 * (`<repo>/info/bundles/<file>`: Range, ETag, If-None-Match, names
 * validated), the v2 bundle-uri list (bytes as git 2.55's client parses
 * them), per-request visibility, and clones with real git: 2.39's
 * `--bundle-uri`, and with git 2.55 (GITWIRE_GIT_2_55) the server-advertised
 * `transfer.bundleURI` flow over HTTP and SSH, where the bundle comes from
 * the bundle URL and upload-pack sends only what is newer.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { GIT_2_55, gitWith, makeBitmapRepo } from './helpers/bitmap-repo.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { sshKit, startSsh, gitSshEnv } from './helpers/ssh.js';
import { Repository } from '../src/repo/repository.js';
import { makeBundle, type MadeBundle } from '../src/bundle/index.js';

let t: ReturnType<typeof tmp>;
let root: string;
let repo: string;
let made: MadeBundle;
let srv: ServerProc;
let base: string;

/** the request log lines the server wrote (pino JSON) */
function requests(p: ServerProc): Array<Record<string, unknown>> {
  return p.logs.flatMap((l) => { try { const j = JSON.parse(l) as Record<string, unknown>; return j.msg === 'request' ? [j] : []; } catch { return []; } });
}

/** the log lines from `from` on, once one satisfies `ok` (the server's stdout is read while the test waits) */
async function linesAfter(p: ServerProc, from: number, ok: (e: Record<string, unknown>) => boolean): Promise<Array<Record<string, unknown>>> {
  for (let i = 0; i < 250; i++) {
    const lines = requests(p).slice(from);
    if (lines.some(ok)) return lines;
    await new Promise((r) => setTimeout(r, 20));
  }
  return requests(p).slice(from);
}

/** refs as ls-remote shows them, peeled lines aside */
function refsOf(url: string, bin = 'git', env: NodeJS.ProcessEnv = {}): string {
  const r = run(bin, ['ls-remote', url], { env: { ...gitEnv, ...env } });
  assert.equal(r.status, 0, r.stderr.toString());
  // refs/bundles/*: what the client made of the bundle's refs (bundle-uri.c unbundle_from_file)
  return r.stdout.toString().split('\n').filter((l) => l && !l.endsWith('^{}') && !l.includes('\trefs/bundles/')).sort().join('\n');
}

before(async () => {
  t = tmp('gitwire-bundle-serve-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  repo = makeBitmapRepo(root, 'r.git', { commits: 30 });
  made = await makeBundle(Repository.open(repo));
  srv = await startServe(root, ['--http', '0', '--bundles', 'serve']);
  base = `http://127.0.0.1:${srv.httpPort}`;
});
after(async () => { await srv?.stop(); t.cleanup(); });

test('the download: whole file with an ETag, 304 for If-None-Match, 206 for a range, 416 past the end, HEAD', async () => {
  const url = `${base}/r.git/info/bundles/${made.name}`;
  const bytes = readFileSync(made.file);
  const r = await fetch(url);
  assert.equal(r.status, 200);
  const etag = r.headers.get('etag')!;
  assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
  assert.equal(r.headers.get('accept-ranges'), 'bytes');
  assert.equal(Number(r.headers.get('content-length')), bytes.length);
  assert.ok(Buffer.from(await r.arrayBuffer()).equals(bytes));
  const nm = await fetch(url, { headers: { 'If-None-Match': etag } });
  assert.equal(nm.status, 304);
  assert.equal((await nm.arrayBuffer()).byteLength, 0);
  const part = await fetch(url, { headers: { Range: 'bytes=10-4105' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 10-4105/${bytes.length}`);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 4106)));
  const tail = await fetch(url, { headers: { Range: 'bytes=-7' } });
  assert.equal(tail.status, 206);
  assert.ok(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(bytes.length - 7)));
  const past = await fetch(url, { headers: { Range: `bytes=${bytes.length}-` } });
  assert.equal(past.status, 416);
  assert.equal(past.headers.get('content-range'), `bytes */${bytes.length}`);
  await past.arrayBuffer();
  // last below first: not a range at all (RFC 9110 14.1.1), so the header is ignored and the whole file comes (was 416)
  const backwards = await fetch(url, { headers: { Range: 'bytes=5-3' } });
  assert.equal(backwards.status, 200);
  assert.equal(backwards.headers.get('content-range'), null);
  assert.ok(Buffer.from(await backwards.arrayBuffer()).equals(bytes));
  // a stale validator: the range is ignored, the whole file comes
  const ifRange = await fetch(url, { headers: { Range: 'bytes=0-3', 'If-Range': '"stale"' } });
  assert.equal(ifRange.status, 200);
  await ifRange.arrayBuffer();
  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers.get('content-length')), bytes.length);
  const post = await fetch(url, { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  await post.arrayBuffer();
  const line = requests(srv).find((e) => e.command === 'bundle' && e.status === 200);
  assert.ok(line, 'the download is logged');
  assert.equal(line.bytesOut, bytes.length);
  assert.equal(line.repository, '/r.git');
});

test('bundle names are validated: traversal, other files of the directory and of the repository are 404', async () => {
  writeFileSync(join(repo, 'gitwire', 'bundles', 'notes.txt'), 'not a bundle');
  for (const p of ['..%2F..%2Fconfig', '%2e%2e', '..', 'notes.txt', `${made.name}%00`, `x${made.name}`, '1-000000000000.bundle', '%2Fetc%2Fpasswd', '']) {
    const r = await fetch(`${base}/r.git/info/bundles/${p}`);
    assert.equal(r.status, 404, p);
    assert.doesNotMatch(await r.text(), /core\.|not a bundle|root:/, p);
  }
  const r = await fetch(`${base}/r.git/info/bundles/..%2F..%2F..%2Fr.git%2Fconfig`);
  assert.equal(r.status, 404);
  await r.arrayBuffer();
});

test('the same repository spelled other ways (`r`, `r.git/`, `%72.git`) reaches the same bundle, as info/refs does', async () => {
  for (const spelled of ['r', 'r.git/', '%72.git', 'r/']) {
    const res = await fetch(`${base}/${spelled}${spelled.endsWith('/') ? '' : '/'}info/bundles/${made.name}`, { method: 'HEAD' });
    assert.equal(res.status, 200, spelled);
    assert.equal(Number(res.headers.get('content-length')), made.bytes, spelled);
  }
});

/** a v2 `command=bundle-uri` request over smart HTTP; the response's packets */
async function bundleUriOver(url: string): Promise<string> {
  const body = Buffer.from('0017command=bundle-uri\n0001' + '0000', 'latin1');
  const r = await fetch(`${url}/git-upload-pack`, { method: 'POST', body, headers: { 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' } });
  assert.equal(r.status, 200);
  return Buffer.from(await r.arrayBuffer()).toString('latin1');
}

test('v2: bundle-uri is advertised, and the list is the bytes git 2.55 parses: lower-case keys, a URL relative to the remote', async () => {
  const adv = await (await fetch(`${base}/r.git/info/refs?service=git-upload-pack`, { headers: { 'Git-Protocol': 'version=2' } })).text();
  assert.match(adv, /\n?[0-9a-f]{4}bundle-uri\n/);
  const got = await bundleUriOver(`${base}/r.git`);
  // git 2.55 bundle-uri.c: bundle_uri_parse_line() takes `key=value` (no newline); bundle_list_update() compares
  // subkeys with strcmp against "version", "mode", "heuristic", "uri", "creationtoken" (lower case: a
  // `creationToken` key is ignored) and the heuristic's value with "creationToken"; relative_url(baseURI, uri)
  // resolves `info/bundles/…` against the URL the client fetches from (transport.c sets baseURI to it)
  const pkt = (s: string) => (s.length + 4).toString(16).padStart(4, '0') + s;
  const want = [
    'bundle.version=1', 'bundle.mode=all', 'bundle.heuristic=creationToken',
    `bundle.gitwire.uri=info/bundles/${made.name}`, `bundle.gitwire.creationtoken=${made.token}`,
  ].map(pkt).join('') + '0000';
  assert.equal(got, want);
});

test('operator-written bundle.* config is the list, as before', async () => {
  git(['config', 'bundle.version', '1'], { cwd: repo });
  git(['config', 'bundle.mode', 'any'], { cwd: repo });
  git(['config', 'bundle.cdn.uri', 'https://cdn.example.com/r.bundle'], { cwd: repo });
  try {
    const got = await bundleUriOver(`${base}/r.git`);
    assert.equal(got, '0014bundle.version=1' + '0013bundle.mode=any' + '0033bundle.cdn.uri=https://cdn.example.com/r.bundle' + '0000');
  } finally {
    git(['config', '--remove-section', 'bundle'], { cwd: repo });
    git(['config', '--remove-section', 'bundle.cdn'], { cwd: repo });
  }
});

test('a change of hideRefs makes the bundle another view\'s: neither listed nor served', async () => {
  git(['config', 'uploadpack.hideRefs', 'refs/heads/old'], { cwd: repo });
  try {
    assert.equal(await bundleUriOver(`${base}/r.git`), '0000');
    const r = await fetch(`${base}/r.git/info/bundles/${made.name}`);
    assert.equal(r.status, 404);
    await r.arrayBuffer();
  } finally {
    git(['config', '--unset', 'uploadpack.hideRefs'], { cwd: repo });
  }
  assert.notEqual(await bundleUriOver(`${base}/r.git`), '0000');
});

test('without --bundles nothing changes: no bundle-uri capability, no route', async () => {
  const plain = await startServe(root, ['--http', '0']);
  try {
    const adv = await (await fetch(`http://127.0.0.1:${plain.httpPort}/r.git/info/refs?service=git-upload-pack`, { headers: { 'Git-Protocol': 'version=2' } })).text();
    assert.doesNotMatch(adv, /bundle-uri/);
    const r = await fetch(`http://127.0.0.1:${plain.httpPort}/r.git/info/bundles/${made.name}`);
    assert.equal(r.status, 404);
    await r.arrayBuffer();
  } finally {
    await plain.stop();
  }
});

test('git 2.39: clone --bundle-uri=<gitwire URL>: the bundle is unbundled, the fetch starts from it, fsck --strict clean, refs equal', async () => {
  const dest = join(t.dir, 'c239');
  const before = requests(srv).length;
  const r = run('git', ['clone', '-q', '--bare', `--bundle-uri=${base}/r.git/info/bundles/${made.name}`, `${base}/r.git`, dest]);
  assert.equal(r.status, 0, r.stderr.toString());
  git(['fsck', '--strict', '--no-dangling'], { cwd: dest });
  assert.equal(refsOf(dest), refsOf(`${base}/r.git`));
  const lines = await linesAfter(srv, before, (e) => e.command === 'fetch');
  assert.ok(lines.some((e) => e.command === 'bundle' && e.status === 200), 'the bundle came from gitwire\'s URL');
  const f = lines.find((e) => e.command === 'fetch');
  assert.ok(f, 'a fetch followed');
  assert.ok((f.haves as number) > 0, 'the fetch named the bundle\'s tips as haves');
  assert.equal(f.bundle, 'taken');
});

test('a truncated or replaced bundle on disk: the client falls back to a full clone, with a correct result', () => {
  const bytes = readFileSync(made.file);
  try {
    for (const damage of ['truncate', 'garbage'] as const) {
      if (damage === 'truncate') truncateSync(made.file, Math.floor(bytes.length / 2));
      else writeFileSync(made.file, Buffer.concat([bytes.subarray(0, 200), Buffer.alloc(bytes.length - 200, 0x41)]));
      const dest = join(t.dir, `c-${damage}`);
      const r = run('git', ['clone', '-q', '--bare', `--bundle-uri=${base}/r.git/info/bundles/${made.name}`, `${base}/r.git`, dest]);
      assert.equal(r.status, 0, r.stderr.toString());
      git(['fsck', '--strict', '--no-dangling'], { cwd: dest });
      assert.equal(refsOf(dest), refsOf(`${base}/r.git`));
    }
  } finally {
    writeFileSync(made.file, bytes);
  }
});

test('git 2.55, transfer.bundleURI over HTTP and SSH: the bundle comes from the bundle URL, upload-pack sends only what is newer', { skip: GIT_2_55 ? false : 'needs git 2.55 (GITWIRE_GIT_2_55)' }, async () => {
  // something newer than the bundle: the fetch after it must carry it, and only it
  const work = join(t.dir, 'work');
  git(['clone', '-q', repo, work]);
  commit(work, 'after the bundle', { 'new.txt': 'newer than the bundle\n' });
  git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
  const kit = sshKit(join(t.dir, 'ssh'));
  const user = kit.user('alice');
  const both = await startSsh(kit, root, ['--http', '0', '--bundles', 'serve']);
  try {
    const http = `http://127.0.0.1:${both.httpPort}/r.git`;
    const ssh = `ssh://git@127.0.0.1:${both.sshPort}/r.git`;
    const env = gitSshEnv(kit, user, both.sshPort);
    for (const [label, url] of [['http', http], ['ssh', ssh]] as const) {
      const before = requests(both).length;
      const dest = join(t.dir, `c255-${label}`);
      const r = run(GIT_2_55!, ['-c', 'transfer.bundleURI=true', 'clone', '-q', '--bare', url, dest], { env: { ...gitEnv, ...env } });
      assert.equal(r.status, 0, r.stderr.toString());
      gitWith(GIT_2_55!, ['fsck', '--strict', '--no-dangling'], dest);
      assert.equal(refsOf(dest, GIT_2_55!), refsOf(url, GIT_2_55!, env));
      const lines = await linesAfter(both, before, (e) => e.command === 'fetch');
      const dl = lines.find((e) => e.command === 'bundle' && e.status === 200);
      assert.ok(dl, `${label}: the bundle came from the bundle URL`);
      assert.equal(dl.bytesOut, made.bytes);
      const f = lines.find((e) => e.command === 'fetch');
      assert.ok(f, `${label}: a fetch followed`);
      assert.equal(f.bundle, 'taken', `${label}: it started from the bundle`);
      // only what is newer: far less than the bundle's pack
      assert.ok((f.bytesOut as number) < made.pack.bytes / 4, `${label}: fetch sent ${String(f.bytesOut)} bytes, the bundle's pack is ${made.pack.bytes}`);
      assert.ok(gitWith(GIT_2_55!, ['cat-file', '-p', 'main:new.txt'], dest).toString().includes('newer than the bundle'));
    }
  } finally {
    await both.stop();
  }
});
