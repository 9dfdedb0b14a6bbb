/**
 * Git LFS behind the TLS proxy docs/push.md recommends: its nginx block,
 * run as written but for the port, the certificate and the backend, in
 * front of `gitwire serve --trust-proxy 127.0.0.1`. The batch's links must
 * be the proxy's https URL (they were `http://` to the TLS port, and the
 * push failed with `LFS: Client error`). The forwarded headers count only
 * from a trusted peer, and `--public-url` wins over them.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { git, tmp, ROOT } from './helpers/git.js';
import { freePort } from './helpers/push-net.js';
import { listening } from './helpers/cluster.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, writeBlob, writeHtpasswd, type Run } from './helpers/lfs.js';

const NGINX = '/usr/sbin/nginx';
const HAVE = existsSync(NGINX) && haveGitLfs && spawnSync('openssl', ['version']).status === 0;

let t: ReturnType<typeof tmp>;
let root: string;
let htpasswd: string;
before(() => {
  t = tmp('gitwire-lfs-tls-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  git(['init', '-q', '--bare', '-b', 'main', join(root, 'r.git')]);
  htpasswd = join(t.dir, 'htpasswd');
  writeHtpasswd(htpasswd, { alice: 'alice-pw' });
});
after(() => t.cleanup());

const ok = (r: Run, what = '') => assert.equal(r.code, 0, `${what}\n${r.stderr}`);

/** docs/push.md's nginx server block, listening on `port` with this certificate, passing to `backend`. */
function nginxFromDocs(dir: string, port: number, backend: number, cert: string, key: string): string {
  const doc = readFileSync(join(ROOT, 'docs', 'push.md'), 'utf8');
  const m = /```nginx\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/push.md has no nginx block');
  const server = m[1]!
    .replace('listen 443 ssl;', `listen 127.0.0.1:${port} ssl;`)
    .replace('/etc/ssl/git.example.com.pem', cert).replace('/etc/ssl/git.example.com.key', key)
    .replace('proxy_pass http://127.0.0.1:8080;', `proxy_pass http://127.0.0.1:${backend};`);
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((n) => `  ${n === 'client_body' ? 'client_body' : n}_temp_path ${dir}/${n};`).join('\n');
  return `daemon off;\nmaster_process on;\nworker_processes 1;\n${process.getuid?.() === 0 ? 'user root;\n' : ''}pid ${dir}/nginx.pid;\nerror_log ${dir}/error.log warn;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n${temps}\n${server}}\n`;
}

test('LFS push and clone through docs/push.md\'s nginx TLS block: the batch links are https to the proxy', { skip: HAVE ? false : 'needs nginx, openssl and git-lfs', timeout: 180_000 }, async () => {
  const key = join(t.dir, 'key.pem');
  const cert = join(t.dir, 'cert.pem');
  const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { encoding: 'utf8' });
  assert.equal(gen.status, 0, gen.stderr);
  const s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd, '--trust-proxy', '127.0.0.1']);
  const dir = join(t.dir, 'nginx');
  for (const d of ['', 'client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d), { recursive: true });
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), nginxFromDocs(dir, port, s.httpPort!, cert, key));
  let nginx: ChildProcess | undefined;
  try {
    nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
    await listening(port);
    const home = lfsHome(join(t.dir, 'home'), { 'http.sslCAInfo': cert });
    // the environment's own CA bundle (GIT_SSL_CAINFO wins over the config) would not know this certificate
    home.env = { ...home.env, GIT_SSL_CAINFO: cert };
    writeFileSync(home.creds, `https://alice:alice-pw@localhost:${port}\n`);
    const url = `https://localhost:${port}/r.git`;
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w], { env: home.env });
    ok(await gitRun(['lfs', 'track', '*.bin'], w, home.env));
    writeBlob(join(w, 'a.bin'), 300_000);
    writeBlob(join(w, 'b.bin'), 1234);
    ok(await gitRun(['add', '-A'], w, home.env));
    ok(await gitRun(['commit', '-q', '-m', 'lfs'], w, home.env));
    ok(await gitRun(['push', '-q', url, 'main'], w, home.env), 'LFS push through the TLS proxy');
    const clone = join(t.dir, 'clone');
    ok(await gitRun(['clone', '-q', url, clone], t.dir, home.env), 'LFS clone through the TLS proxy');
    for (const f of ['a.bin', 'b.bin']) assert.equal(await fileSha256(join(clone, f)), await fileSha256(join(w, f)), f);
    // the log names the client nginx forwarded, with nginx as the proxy
    const lfsLines = s.logs.filter((l) => l.includes('"command":"lfs-batch"')).map((l) => JSON.parse(l) as { remoteAddress?: string; proxyAddress?: string });
    assert.ok(lfsLines.length > 0);
    for (const e of lfsLines) assert.equal(e.proxyAddress, '127.0.0.1', 'the client came through the proxy');
  } finally {
    nginx?.kill('SIGTERM');
    if (nginx && nginx.exitCode === null) await new Promise((r) => nginx!.once('exit', r));
    await s.stop();
  }
});

/** A download batch for one object, with these headers: the action's href. */
function batchHref(port: number, headers: Record<string, string>): Promise<string> {
  const body = JSON.stringify({ operation: 'upload', transfers: ['basic'], objects: [{ oid: 'a'.repeat(64), size: 3 }] });
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/r.git/info/lfs/objects/batch', method: 'POST', headers: { 'Content-Type': 'application/vnd.git-lfs+json', Accept: 'application/vnd.git-lfs+json', Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}`, ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => { text += d.toString(); });
      res.on('end', () => {
        try {
          const j = JSON.parse(text) as { objects: Array<{ actions?: { upload?: { href: string } } }> };
          resolve(j.objects[0]?.actions?.upload?.href ?? `no href: ${text}`);
        } catch (e) { reject(new Error(`${res.statusCode}: ${text} (${(e as Error).message})`)); }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('the forwarded scheme and host count from a --trust-proxy peer only; --public-url wins over them', { timeout: 60_000 }, async () => {
  const fwd = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'git.example.com' };
  const oid = 'a'.repeat(64);
  let s: ServerProc = await startServe(root, ['--http', '0', '--htpasswd', htpasswd]);
  try {
    const own = `http://127.0.0.1:${s.httpPort}`;
    assert.equal(await batchHref(s.httpPort!, {}), `${own}/r.git/info/lfs/objects/${oid}`);
    assert.equal(await batchHref(s.httpPort!, fwd), `${own}/r.git/info/lfs/objects/${oid}`, 'an untrusted peer names nothing');
  } finally { await s.stop(); }
  s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd, '--trust-proxy', '127.0.0.1']);
  try {
    assert.equal(await batchHref(s.httpPort!, fwd), `https://git.example.com/r.git/info/lfs/objects/${oid}`);
    assert.equal(await batchHref(s.httpPort!, { Forwarded: 'for=10.0.0.1;proto=http, for=10.0.0.2;proto=https;host="git.example.org:8443"' }), `https://git.example.org:8443/r.git/info/lfs/objects/${oid}`, "RFC 7239: the last element, the proxy's own");
    assert.equal(await batchHref(s.httpPort!, { 'X-Forwarded-Proto': 'https' }), `https://127.0.0.1:${s.httpPort}/r.git/info/lfs/objects/${oid}`, 'the scheme alone keeps the Host');
    assert.equal(await batchHref(s.httpPort!, { 'X-Forwarded-Proto': 'javascript', 'X-Forwarded-Host': 'a/b@evil' }), `http://127.0.0.1:${s.httpPort}/r.git/info/lfs/objects/${oid}`, 'a value that is no scheme or host is ignored');
  } finally { await s.stop(); }
  s = await startServe(root, ['--http', '0', '--htpasswd', htpasswd, '--trust-proxy', '127.0.0.1', '--public-url', 'https://git.example.com/git/']);
  try {
    assert.equal(await batchHref(s.httpPort!, { 'X-Forwarded-Host': 'other.example' }), `https://git.example.com/git/r.git/info/lfs/objects/${oid}`);
  } finally { await s.stop(); }
});
