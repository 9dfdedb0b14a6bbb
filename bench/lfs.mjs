/**
 * `npm run bench -- lfs`: Git LFS through `gitwire serve`, against the
 * floor of moving the same bytes through Node (a trivial PUT/GET server:
 * request piped to a file, file piped to the response), in one run,
 * alternating:
 *
 * - upload and download of one 1 GiB object (LFS_BENCH_MB to change it):
 *   client wall, server CPU (utime+stime from /proc/<pid>/stat) and the
 *   server's peak RSS (VmHWM);
 * - one batch request naming 10,000 oids (download: none stored; upload:
 *   all to send): latency.
 *
 * gitwire hashes every uploaded byte (SHA-256 against the oid) and the
 * floor does not: that is most of the CPU difference on upload.
 * Writes a markdown table to stdout.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { median } from './parse.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const MB = Number(process.env.LFS_BENCH_MB ?? 1024);
const SIZE = MB * 1024 * 1024;
const RUNS = Number(process.env.LFS_BENCH_RUNS ?? 3);
const BLOCK = 1024 * 1024;
const TICK = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

const FLOOR = `
const http = require('node:http'); const fs = require('node:fs'); const { pipeline } = require('node:stream');
const file = process.argv[1];
const s = http.createServer((req, res) => {
  if (req.method === 'PUT') pipeline(req, fs.createWriteStream(file), (e) => { res.writeHead(e ? 500 : 200, { 'Content-Length': 0 }); res.end(); });
  else { const st = fs.statSync(file); res.writeHead(200, { 'Content-Length': st.size }); pipeline(fs.createReadStream(file), res, () => {}); }
});
s.listen(0, '127.0.0.1', () => process.stdout.write('"url":"http://127.0.0.1:' + s.address().port + '/"\\n'));
process.on('SIGTERM', () => process.exit(0));
`;

function start(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d.toString();
      const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(buf);
      if (m) resolve({ child, port: Number(m[1]), stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }) });
    });
    child.once('exit', (c) => reject(new Error(`exited ${c}`)));
  });
}

const cpuMs = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return ((Number(f[11]) + Number(f[12])) * 1000) / TICK; };
const peakKB = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

function blocks() {
  const seed = Buffer.alloc(BLOCK);
  const base = createHash('sha512').update('lfs-bench').digest();
  for (let i = 0; i < BLOCK; i += base.length) base.copy(seed, i);
  const block = (i) => { const b = Buffer.from(seed); b.writeBigUInt64BE(BigInt(i), 0); return b; };
  const h = createHash('sha256');
  for (let i = 0; i < SIZE / BLOCK; i++) h.update(block(i));
  return { block, oid: h.digest('hex') };
}

function put(port, path, headers, block) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', headers: { ...headers, 'Content-Length': SIZE } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`PUT ${res.statusCode}`))));
    });
    req.on('error', reject);
    let i = 0;
    const pump = () => { while (i < SIZE / BLOCK) { if (!req.write(block(i++))) { req.once('drain', pump); return; } } req.end(); };
    pump();
  });
}

function get(port, path, headers) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let n = 0;
      res.on('data', (c) => { n += c.length; });
      res.on('end', () => (n === SIZE ? resolve(Number(process.hrtime.bigint() - t0) / 1e6) : reject(new Error(`GET ${res.statusCode}: ${n} bytes`))));
    }).on('error', reject).end();
  });
}

async function post(port, path, headers, body) {
  const t0 = process.hrtime.bigint();
  const r = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers, body });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`POST ${r.status}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export async function lfsBench() {
  const tmp = mkdtempSync(join(tmpdir(), 'gitwire-lfs-bench-'));
  try {
    spawnSync('git', ['init', '-q', '--bare', join(tmp, 'srv', 'r.git')]);
    const bcrypt = createRequire(import.meta.url)('bcryptjs');
    writeFileSync(join(tmp, 'htpasswd'), `bench:${bcrypt.hashSync('pw', 4).replace(/^\$2b\$/, '$2y$')}\n`);
    const auth = { Authorization: `Basic ${Buffer.from('bench:pw').toString('base64')}` };
    const gw = await start([BIN, 'serve', join(tmp, 'srv'), '--http', '0', '--htpasswd', join(tmp, 'htpasswd'), '--quiet']);
    const floor = await start([process.execPath, '-e', FLOOR, join(tmp, 'floor.bin')]);
    const { block, oid } = blocks();
    const objPath = join(tmp, 'srv', 'r.git', 'lfs', 'objects', oid.slice(0, 2), oid.slice(2, 4), oid);
    const rows = { gitwire: { up: [], upCpu: [], down: [], downCpu: [] }, floor: { up: [], upCpu: [], down: [], downCpu: [] } };
    const sides = [
      ['gitwire', gw, `/r.git/info/lfs/objects/${oid}`, auth],
      ['floor', floor, '/obj', {}],
    ];
    for (let run = 0; run < RUNS; run++) {
      for (const [name, srv, path, headers] of run % 2 ? [...sides].reverse() : sides) {
        if (name === 'gitwire') rmSync(objPath, { force: true });
        let c = cpuMs(srv.child.pid);
        rows[name].up.push(await put(srv.port, path, headers, block));
        rows[name].upCpu.push(cpuMs(srv.child.pid) - c);
        c = cpuMs(srv.child.pid);
        rows[name].down.push(await get(srv.port, path, headers));
        rows[name].downCpu.push(cpuMs(srv.child.pid) - c);
      }
    }
    const rss = { gitwire: peakKB(gw.child.pid), floor: peakKB(floor.child.pid) };
    // a batch naming 10,000 oids
    const oids = Array.from({ length: 10_000 }, (_, i) => createHash('sha256').update(`o${i}`).digest('hex'));
    const body = (operation) => JSON.stringify({ operation, transfers: ['basic'], objects: oids.map((o) => ({ oid: o, size: 100 })) });
    const batch = { download: [], upload: [] };
    const bh = { ...auth, 'Content-Type': 'application/vnd.git-lfs+json', Accept: 'application/vnd.git-lfs+json' };
    for (let i = 0; i < 6; i++) for (const op of ['download', 'upload']) { const ms = await post(gw.port, '/r.git/info/lfs/objects/batch', bh, body(op)); if (i) batch[op].push(ms); }
    await gw.stop();
    await floor.stop();
    const f = (x, d = 0) => x.toFixed(d);
    const m = (a) => median(a);
    let s = `\n### Git LFS (npm run bench -- lfs)\n\n${MB} MiB object, ${RUNS} runs each, alternating, medians. Server CPU is the server process's utime+stime; peak RSS its VmHWM over the whole run.\n\n`;
    s += '| case | wall ms floor | wall ms gitwire | wall ratio | server CPU ms floor | server CPU ms gitwire | CPU ratio |\n|---|---:|---:|---:|---:|---:|---:|\n';
    for (const [k, label] of [['up', 'upload (PUT)'], ['down', 'download (GET)']]) {
      const a = rows.floor, b = rows.gitwire;
      s += `| ${label} | ${f(m(a[k]))} | ${f(m(b[k]))} | ${f(m(b[k]) / m(a[k]), 2)} | ${f(m(a[`${k}Cpu`]))} | ${f(m(b[`${k}Cpu`]))} | ${f(m(b[`${k}Cpu`]) / Math.max(1, m(a[`${k}Cpu`])), 2)} |\n`;
    }
    s += `\npeak RSS: floor ${f(rss.floor / 1024, 1)} MiB, gitwire serve ${f(rss.gitwire / 1024, 1)} MiB.\n`;
    s += `\nbatch of 10,000 oids: download (none stored) ${f(m(batch.download), 1)} ms, upload (all to send, with actions) ${f(m(batch.upload), 1)} ms (medians of 5 after a warm-up).\n`;
    return s;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(await lfsBench());
