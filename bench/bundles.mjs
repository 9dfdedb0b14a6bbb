/**
 * `npm run bench -- bundles`: clone offload (docs/serving.md). N rounds
 * (--clones, default 20) on the `history` fixture, each kind once a round,
 * alternating:
 * - a plain clone, and a clone with the bundle from gitwire's own route
 *   (`serve --bundles serve`, the local store): git 2.55 with
 *   transfer.bundleURI when GITWIRE_GIT_2_55 names one, else the installed
 *   git with --bundle-uri=<the bundle's URL>;
 * - the same clone with the bundle in S3 (s3rver on loopback, `serve
 *   --bundles auto --bundle-store s3://…`): the client downloads from the
 *   bucket by the signed URL, so no bundle byte passes through gitwire;
 * - the incremental fetch alone: the one commit the bundle lacks, fetched
 *   by a client that has the bundle's refs (a bare clone of the bundle
 *   file), as the fetch after unbundling is; from each of the two servers
 *   (a bundle clone is compared with the fetch from its own server);
 * - the bundle file alone, downloaded with curl from gitwire's route, and
 *   from nginx serving the same file as a static file (sendfile on): the
 *   floor of a local-store bundle clone, the kernel's copying.
 * The server has one commit the bundle lacks, so each bundle clone also
 * fetches. Per row: the serving process's CPU (schedstat of its threads;
 * nginx: master and workers), the bytes gitwire sent (upload-pack: the
 * total less the bundle downloads), the bundle bytes gitwire served, and
 * the client's wall time. Also the cost of making the bundle (`gitwire
 * bundle create`, wall and CPU), and gitwire's CPU a second while idle
 * (timers: a row's CPU includes it over the row's wall time). Then where
 * a bundle clone's CPU beyond its server's fetch alone goes: the idle CPU
 * over the extra wall time (the client unbundling), the `bundle-uri`
 * request (measured alone: the median of BUNDLE_URI_REQUESTS requests as
 * git sends them, each on a connection of its own), the download (local
 * store), and what is left. Writes markdown tables to stdout.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { get, request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as fx from './fixtures.mjs';
import { median } from './parse.mjs';
import { NGINX, nginxPreamble } from './nginx.mjs';
import { children, freePort, ownCpuMs } from './proc.mjs';
import { spawnServe } from './serve-process.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** the gitwire measured (GITWIRE_BENCH_BIN: another build's bin/gitwire, to compare two in the same conditions) */
const BIN = process.env.GITWIRE_BENCH_BIN || join(ROOT, 'bin', 'gitwire');

/** a metric's value (summed over labels), over a fresh connection: a kept-alive one may have been closed while git ran synchronously */
function metric(port, name) {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let n = 0;
        for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) n += Number(m[1]);
        resolve(n);
      });
    }).on('error', reject);
  });
}

/** s3rver (the tests' S3 server, a devDependency) on a free loopback port with one bucket */
function startS3(dir, bucket) {
  const script = `
const S3rver = require('s3rver');
new S3rver({ port: 0, address: '127.0.0.1', directory: process.argv[1], silent: true, configureBuckets: [{ name: process.argv[2] }] }).run().then((a) => process.stdout.write('port ' + a.port + '\\n'), (e) => { process.stderr.write(String(e) + '\\n'); process.exit(1); });
process.on('SIGTERM', () => process.exit(0));`;
  const child = spawn(process.execPath, ['-e', script, dir, bucket], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /port (\d+)/.exec(out);
      if (!m) return;
      const port = Number(m[1]);
      resolve({ child, port, env: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}` } });
    });
    child.once('exit', (c) => reject(new Error(`s3rver exited ${c}`)));
  });
}

/** nginx serving `dir` as static files (Debian's sendfile and tcp_nopush), one worker */
async function startStaticNginx(dir, work) {
  mkdirSync(work, { recursive: true });
  const port = await freePort();
  const conf = join(work, 'nginx.conf');
  writeFileSync(conf, `${nginxPreamble({ dir: work, workers: 1, connections: 64 })}  server { listen 127.0.0.1:${port}; root ${dir}; location / { } }
}
`);
  const p = spawn(NGINX, ['-p', work, '-c', conf, '-e', join(work, 'error.log')], { detached: true, stdio: 'ignore' });
  for (let i = 0; i < 500 && !existsSync(join(work, 'nginx.pid')); i++) await new Promise((r) => setTimeout(r, 20));
  if (!existsSync(join(work, 'nginx.pid'))) throw new Error(`nginx did not start: ${readFileSync(join(work, 'error.log'), 'utf8')}`);
  return { p, port, cpu: () => ownCpuMs(p.pid) + children(p.pid).reduce((n, c) => n + ownCpuMs(c), 0), stop: () => { try { process.kill(-p.pid, 'SIGTERM'); } catch { /* gone */ } } };
}

/** `bundle-uri` requests measured alone, per server */
const BUNDLE_URI_REQUESTS = 40;
const pkt = (s) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
/** the request git 2.55 sends for the list (transport_get_remote_bundle_uri) */
const BUNDLE_URI_BODY = `${pkt('command=bundle-uri\n')}${pkt('agent=git/2.55.0\n')}${pkt('object-format=sha1\n')}00010000`;

/** one POST to `url` on a connection of its own; resolves with the answer's status once its body is read */
function post(url, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The server's CPU (ms) for one `bundle-uri` request: the median over `n`,
 * each read once the server has settled (20 ms after its answer), less the
 * idle CPU of that time.
 */
async function bundleUriCpu(pid, url, n, idlePerS) {
  const each = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const c0 = ownCpuMs(pid);
    const status = await post(`${url}/git-upload-pack`, BUNDLE_URI_BODY);
    if (status !== 200) throw new Error(`bundle-uri: HTTP ${status}`);
    await new Promise((r) => setTimeout(r, 20));
    each.push(ownCpuMs(pid) - c0 - (idlePerS * (performance.now() - t0)) / 1000);
  }
  return median(each);
}

/** the bundle-uri list (v2 `command=bundle-uri`) of `url`: its bundle URI */
async function listedUri(url) {
  const r = await fetch(`${url}/git-upload-pack`, { method: 'POST', body: '0017command=bundle-uri\n00010000', headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request' } });
  const text = Buffer.from(await r.arrayBuffer()).toString('latin1');
  const m = /bundle\.gitwire\.uri=([^\n]+)\n/.exec(text);
  if (!m) throw new Error(`no bundle listed: ${text}`);
  return m[1];
}

export async function bundlesBench({ clones = 20 } = {}) {
  const env = fx.env;
  const load0 = loadavg().map((x) => x.toFixed(2)).join(' ');
  const fixture = await fx.history();
  const tmp = mkdtempSync(join(tmpdir(), 'gitwire-bench-bundles-'));
  const stops = [];
  try {
    const root = join(tmp, 'root');
    execFileSync('mkdir', ['-p', root]);
    const repo = join(root, 'history.git');
    execFileSync('cp', ['-al', fixture, repo]);
    const made0 = performance.now();
    const mk = spawnSync('/usr/bin/time', ['-f', '%U %S', BIN, 'bundle', 'create', '-q', repo], { env, encoding: 'utf8' });
    if (mk.status !== 0) throw new Error(`bundle create: ${mk.stderr}`);
    const makeWall = performance.now() - made0;
    const [u, s] = mk.stderr.trim().split('\n').at(-1).split(' ').map(Number);
    const bundles = join(repo, 'gitwire', 'bundles');
    const bundleName = readdirSync(bundles).find((n) => n.endsWith('.bundle'));
    const bundleFile = join(bundles, bundleName);
    const bundleBytes = statSync(bundleFile).size;
    // a client that has the bundle's refs (and objects): the incremental fetch's starting point
    const base = join(tmp, 'from-bundle.git');
    execFileSync('git', ['clone', '-q', '--bare', bundleFile, base], { env });
    // one commit the bundle will not have: every bundle clone fetches something after it
    const tip = execFileSync('git', ['commit-tree', 'main^{tree}', '-p', 'main', '-m', 'after the bundle'], { cwd: repo, env, encoding: 'utf8' }).trim();
    execFileSync('git', ['update-ref', 'refs/heads/main', tip], { cwd: repo, env });
    const git255 = process.env.GITWIRE_GIT_2_55 && existsSync(join(process.env.GITWIRE_GIT_2_55, 'bin', 'git')) ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : undefined;
    const local = await spawnServe(BIN, root, ['--bundles', 'serve'], env);
    stops.push(() => local.p.kill('SIGTERM'));
    // S3: the same bundle uploaded where `--bundle-store s3://bench/bundles` keeps it (<prefix>/<repository>/<file>)
    const s3 = await startS3(join(tmp, 's3'), 'bench');
    stops.push(() => s3.child.kill('SIGTERM'));
    {
      const { S3Client, PutObjectCommand } = await import('@aws-sdk/client-s3');
      const client = new S3Client({ region: 'us-east-1', endpoint: s3.env.AWS_ENDPOINT_URL_S3, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
      await client.send(new PutObjectCommand({ Bucket: 'bench', Key: `bundles/history.git/${bundleName}`, Body: readFileSync(bundleFile), ContentLength: bundleBytes }));
      client.destroy();
    }
    const remote = await spawnServe(BIN, root, ['--bundles', 'auto', '--bundle-store', 's3://bench/bundles'], { ...env, ...s3.env });
    stops.push(() => remote.p.kill('SIGTERM'));
    const nginx = await startStaticNginx(bundles, join(tmp, 'nginx'));
    stops.push(nginx.stop);
    const url = `http://127.0.0.1:${local.port}/history.git`;
    const s3url = `http://127.0.0.1:${remote.port}/history.git`;
    const signed = git255 ? undefined : await listedUri(s3url);
    const clientOf = (kind) => (git255 && (kind === 'bundle' || kind === 's3') ? git255 : 'git');
    const kinds = {
      plain: { server: local, cmd: (dest) => ['git', ['clone', '-q', '--bare', url, dest]] },
      bundle: { server: local, cmd: (dest) => [clientOf('bundle'), git255 ? ['-c', 'transfer.bundleURI=true', 'clone', '-q', '--bare', url, dest] : ['clone', '-q', '--bare', `--bundle-uri=${url}/info/bundles/${bundleName}`, url, dest]] },
      s3: { server: remote, cmd: (dest) => [clientOf('s3'), git255 ? ['-c', 'transfer.bundleURI=true', 'clone', '-q', '--bare', s3url, dest] : ['clone', '-q', '--bare', `--bundle-uri=${signed}`, s3url, dest]] },
      // the fetch a bundle clone ends with: into a copy of the bundle's clone (objects hard-linked, refs its own)
      fetch: { server: local, prepare: (dest) => execFileSync('cp', ['-al', base, dest]), cmd: (dest) => [git255 ?? 'git', ['-C', dest, 'fetch', '-q', url, '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*']] },
      fetchS3: { server: remote, prepare: (dest) => execFileSync('cp', ['-al', base, dest]), cmd: (dest) => [git255 ?? 'git', ['-C', dest, 'fetch', '-q', s3url, '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*']] },
      file: { server: local, cmd: () => ['curl', ['-sf', '-o', '/dev/null', `${url}/info/bundles/${bundleName}`]] },
      nginx: { server: nginx, cmd: () => ['curl', ['-sf', '-o', '/dev/null', `http://127.0.0.1:${nginx.port}/${bundleName}`]] },
    };
    // both servers warmed alike (the S3 one otherwise sees few requests, its code less optimized than the other's)
    for (let i = 0; i < 5; i++) {
      for (const k of ['fetch', 'fetchS3']) {
        const dest = join(tmp, `warm-${k}-${i}`);
        kinds[k].prepare(dest);
        const [bin, args] = kinds[k].cmd(dest);
        execFileSync(bin, args, { env });
        rmSync(dest, { recursive: true, force: true });
      }
    }
    // what the server spends doing nothing (timers, GC), charged to every row in proportion to its wall time; once
    // start-up's and the warm-up's work has settled: V8's memory reducer runs ~8 s after the last request (an auto +
    // S3 serve alone after 5 bundle clones: 5.23 ms of CPU a second over the next 10 s, then 0.00-0.21)
    await new Promise((r) => setTimeout(r, 20_000));
    const idle0 = ownCpuMs(local.p.pid), idleS3 = ownCpuMs(remote.p.pid);
    await new Promise((r) => setTimeout(r, 10_000));
    const idlePerS = (ownCpuMs(local.p.pid) - idle0) / 10;
    const idlePerSS3 = (ownCpuMs(remote.p.pid) - idleS3) / 10;
    const rows = Object.fromEntries(Object.keys(kinds).map((k) => [k, []]));
    for (let i = 0; i < clones; i++) {
      for (const [kind, k] of Object.entries(kinds)) {
        const dest = join(tmp, `c-${kind}-${i}`);
        k.prepare?.(dest);
        const [bin, args] = k.cmd(dest);
        const gw = k.server !== nginx;
        const cpuOf = () => (gw ? ownCpuMs(k.server.p.pid) : k.server.cpu());
        const cpu0 = cpuOf();
        const sent0 = gw ? await metric(k.server.metricsPort, 'gitwire_bytes_sent_total') : 0;
        const dl0 = gw ? await metric(k.server.metricsPort, 'gitwire_bundle_download_bytes_total') : 0;
        const t0 = performance.now();
        const r = spawnSync(bin, args, { env, encoding: 'utf8' });
        const wall = performance.now() - t0;
        if (r.status !== 0) throw new Error(`${kind}: ${bin} ${args.join(' ')}: ${r.stderr}`);
        const cpu = cpuOf() - cpu0;
        const dl = gw ? (await metric(k.server.metricsPort, 'gitwire_bundle_download_bytes_total')) - dl0 : bundleBytes;
        const sent = gw ? (await metric(k.server.metricsPort, 'gitwire_bytes_sent_total')) - sent0 - dl : 0;
        rows[kind].push({ cpu, sent, dl, wall });
        rmSync(dest, { recursive: true, force: true });
      }
    }
    // measured warm, after the rounds
    const uriCpu = { local: await bundleUriCpu(local.p.pid, url, BUNDLE_URI_REQUESTS, idlePerS), s3: await bundleUriCpu(remote.p.pid, s3url, BUNDLE_URI_REQUESTS, idlePerSS3) };
    const med = (k, f) => median(rows[k].map((x) => x[f]));
    const mb = (n) => (n / 1e6).toFixed(2);
    const each = (k) => rows[k].map((x) => x.cpu.toFixed(0)).join(' ');
    let out = `\n### Clone offload: ${clones} rounds on history, each kind once a round\n\n`;
    out += `gitwire: ${BIN}; load average at the start ${load0}\n\n`;
    out += `client: ${git255 ? 'git 2.55, -c transfer.bundleURI=true' : 'installed git, --bundle-uri=<the bundle URL>'}; bundle (${mb(bundleBytes)} MB) made by \`gitwire bundle create\` in ${(makeWall / 1000).toFixed(2)} s wall, ${(u + s).toFixed(2)} s CPU\n\n`;
    out += '| what | server CPU ms (median) | each round | gitwire upload-pack MB (median) | bundle MB from gitwire (median) | client wall s (median) |\n|---|---:|---|---:|---:|---:|\n';
    const names = {
      plain: 'clone without bundle', bundle: 'clone with bundle, local store (gitwire serves the file)', s3: 'clone with bundle, S3 store (s3rver serves the file)',
      fetch: 'incremental fetch alone (the commit the bundle lacks), local-store server', fetchS3: 'incremental fetch alone, S3-store server', file: 'bundle file alone from gitwire (curl)', nginx: 'bundle file alone from nginx, static, sendfile (curl; nginx CPU)',
    };
    for (const k of Object.keys(kinds)) out += `| ${names[k]} | ${med(k, 'cpu').toFixed(1)} | ${each(k)} | ${k === 'nginx' ? '-' : mb(med(k, 'sent'))} | ${k === 'nginx' ? '-' : mb(med(k, 'dl'))} | ${(med(k, 'wall') / 1000).toFixed(2)} |\n`;
    out += `\ngitwire's bytes with the bundle: local store ${(100 * (med('bundle', 'sent')) / med('plain', 'sent')).toFixed(2)}% of a plain clone's (upload-pack), S3 ${(100 * (med('s3', 'sent') + med('s3', 'dl')) / med('plain', 'sent')).toFixed(2)}% (everything gitwire sent). `;
    out += `Server CPU per bundle clone against the incremental fetch alone from the same server: local ${(med('bundle', 'cpu') / med('fetch', 'cpu')).toFixed(2)}x, S3 ${(med('s3', 'cpu') / med('fetchS3', 'cpu')).toFixed(2)}x (against the local-store server's fetch ${(med('s3', 'cpu') / med('fetch', 'cpu')).toFixed(2)}x). `;
    out += `gitwire idle: ${idlePerS.toFixed(2)} ms of CPU a second (local-store server), ${idlePerSS3.toFixed(2)} (S3-store server), over a row's wall time part of its CPU. `;
    out += `load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`;
    // where a bundle clone's CPU beyond the fetch alone goes
    out += `\n#### Where a bundle clone's server CPU goes, beyond the fetch alone from its server (medians, ms)\n\n`;
    out += '| bundle clone | CPU | fetch alone | ratio | idle over the extra wall time | bundle-uri request (alone) | bundle download from gitwire (curl row) | rest |\n|---|---:|---:|---:|---:|---:|---:|---:|\n';
    for (const [k, f, idle, uri, dl] of [['bundle', 'fetch', idlePerS, uriCpu.local, med('file', 'cpu')], ['s3', 'fetchS3', idlePerSS3, uriCpu.s3, 0]]) {
      const cpu = med(k, 'cpu'), fcpu = med(f, 'cpu');
      const idleMs = (idle * Math.max(0, med(k, 'wall') - med(f, 'wall'))) / 1000;
      out += `| ${k === 's3' ? 'S3 store' : 'local store'} | ${cpu.toFixed(1)} | ${fcpu.toFixed(1)} | ${(cpu / fcpu).toFixed(2)}x | ${idleMs.toFixed(1)} | ${uri.toFixed(2)} | ${dl.toFixed(1)} | ${(cpu - fcpu - idleMs - uri - dl).toFixed(1)} |\n`;
    }
    return out;
  } finally {
    for (const stop of stops.reverse()) { try { stop(); } catch { /* gone */ } }
    rmSync(tmp, { recursive: true, force: true });
  }
}
