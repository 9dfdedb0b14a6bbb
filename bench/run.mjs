#!/usr/bin/env node
/**
 * gitwire against git, side by side in one run: wall time, CPU and peak
 * RSS of the serving side, bytes sent, and write calls made by the serving
 * process itself (strace). Medians of alternating runs (A B A B …).
 *
 *   npm run bench                 full run (writes BENCHMARKS.md)
 *   npm run bench -- --quick      skips refs-1m; 2 counted runs for the heavy cases, shorter
 *                                 HTTP loads, no strace of the whole-repository cat-file; < 5 minutes
 *   npm run bench -- clone-v2     only cases whose name contains "clone-v2"
 *   npm run bench -- ssh          only the SSH rows: serve --ssh against OpenSSH's sshd (bench/ssh.mjs)
 *   npm run bench -- delta        only the native delta search against git pack-objects' on git.git file histories (bench/delta.mjs)
 *   npm run bench -- lfs          only Git LFS: 1 GiB upload/download against a trivial Node server, 10,000-oid batch (bench/lfs.mjs)
 *   npm run bench -- flood [--duration 60] [--clients 200]
 *                                 200 anonymous clients from 200 loopback addresses and one user fetching:
 *                                 defaults, docs/limits.md's recipe, nginx + http-backend (bench/flood.mjs)
 *   npm run bench -- pack-cache --clones 8
 *                                 only the pack-objects cache cases (CI fan-out with 8 clones; default 20)
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as fx from './fixtures.mjs';
import { median, parseStrace, parseTime } from './parse.mjs';
import { drawChart } from './chart.mjs';
import { nginxMissing, startNginxStack } from './nginx.mjs';
import { rssSampler } from './rss-sampler.mjs';
import { spawnServe } from './serve-process.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: { quick: { type: 'boolean' }, runs: { type: 'string' }, 'no-strace': { type: 'boolean' }, 'no-http': { type: 'boolean' }, clones: { type: 'string' }, duration: { type: 'string' }, clients: { type: 'string' } },
});
const QUICK = !!opt.quick;
const RUNS = Number(opt.runs ?? 5);
/** counted runs for the heavy cases (pack-sized transfers, whole-repository cat-file) */
const HEAVY = QUICK ? 2 : RUNS;
const env = fx.env;
const TMP = mkdtempSync(join(tmpdir(), 'gitwire-bench-'));

function ensureTool(bin, pkg) {
  if (spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0 || existsSync(bin)) return true;
  process.stderr.write(`installing ${pkg}…\n`);
  spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'ignore' });
  return spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0 || existsSync(bin);
}
const HAVE_TIME = ensureTool('/usr/bin/time', 'time');
const HAVE_STRACE = !opt['no-strace'] && ensureTool('strace', 'strace');
if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });

const SERVERS = {
  git: { upload: 'git upload-pack', receive: 'git receive-pack', catfile: ['git', 'cat-file'] },
  gitwire: { upload: `${BIN} upload-pack`, receive: `${BIN} receive-pack`, catfile: [BIN, 'cat-file'] },
};
const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
let seq = 0;
const tmpFile = (ext) => join(TMP, `m${++seq}.${ext}`);

const HAVE_PY = spawnSync('python3', ['-c', 'import os; os.wait4'], { stdio: 'ignore' }).status === 0;
/** Resource use of a command's process tree: python's wait4 (microseconds), else /usr/bin/time (10 ms). */
function timeWrap(cmd) {
  const f = tmpFile('time');
  const read = () => { const m = parseTime(readFileSync(f, 'utf8')); return { cpuMs: m.cpuMs, rssKB: m.rssKB, serverWallMs: m.wallMs }; };
  if (HAVE_PY) return { cmd: `python3 ${q(join(ROOT, 'bench', 'rusage.py'))} -o ${q(f)} ${cmd}`, read };
  if (!HAVE_TIME) return { cmd, read: () => ({}) };
  return { cmd: `/usr/bin/time -f '%e %U %S %M' -o ${q(f)} ${cmd}`, read };
}
function straceWrap(cmd, fd = 1) {
  const f = tmpFile('strace');
  return { cmd: `strace -f -qq -e trace=execve,write,writev,sendmsg,sendto -o ${q(f)} ${cmd}`, read: () => parseStrace(readFileSync(f, 'utf8'), fd) };
}

/** Run a git client command whose --upload-pack is `server`; returns wall ms and the server's figures. */
function served(clientArgs, server, { cwd, strace = false } = {}) {
  const w = strace ? straceWrap(server) : timeWrap(server);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('git', clientArgs(w.cmd), { cwd, env, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`git ${clientArgs('<server>').join(' ')} failed: ${r.stderr}`);
  return { wallMs, ...w.read() };
}

/** Run a command directly (cat-file, advertise); stdin from `input`. */
function direct(argv, { input, cwd, strace = false, extraEnv } = {}) {
  const cmd = argv.map(q).join(' ');
  const w = strace ? straceWrap(cmd) : timeWrap(cmd);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('sh', ['-c', w.cmd], { cwd, env: extraEnv ? { ...env, ...extraEnv } : env, input, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  return { ...w.read(), wallMs };
}

/**
 * Request/response cat-file driver: one name, wait for the whole answer,
 * next. Per request it notes when the answer's first byte and its last
 * byte arrived (medians in µs from the request's write): git writes the
 * header before it reads the object, gitwire writes the answer once.
 */
async function catfileRR(argv, names, { cwd, strace = false }) {
  const cmd = argv.map(q).join(' ');
  const w = strace ? straceWrap(cmd) : timeWrap(cmd);
  const t0 = process.hrtime.bigint();
  const p = spawn('sh', ['-c', w.cmd], { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = Buffer.alloc(0);
  let wake = null;
  let first = 0n;
  const firstUs = [], doneUs = [];
  p.stdout.on('data', (d) => { if (!first) first = process.hrtime.bigint(); buf = buf.length ? Buffer.concat([buf, d]) : d; if (wake) { const f = wake; wake = null; f(); } });
  const need = async (n) => { while (buf.length < n) await new Promise((r) => { wake = r; }); };
  for (const name of names) {
    first = 0n;
    const sent = process.hrtime.bigint();
    p.stdin.write(`${name}\n`);
    await need(1);
    let nl;
    while ((nl = buf.indexOf(10)) < 0) await new Promise((r) => { wake = r; });
    const header = buf.toString('latin1', 0, nl);
    const size = Number(header.split(' ')[2]);
    const total = nl + 1 + size + 1;
    await need(total);
    buf = buf.subarray(total);
    firstUs.push(Number(first - sent) / 1e3);
    doneUs.push(Number(process.hrtime.bigint() - sent) / 1e3);
  }
  p.stdin.end();
  await new Promise((r) => p.on('exit', r));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ...w.read(), wallMs, firstUs: median(firstUs), doneUs: median(doneUs) };
}

/** A repository holding one 1 GiB blob (compressible, deterministic), packed by git add (bulk check-in). */
function bigBlobRepo() {
  const dir = join(fx.FIXTURES, 'bigblob.git');
  const stamp = join(dir, '.gitwire-fixture');
  if (!existsSync(stamp)) {
    log('building fixture bigblob (1 GiB)');
    rmSync(dir, { recursive: true, force: true });
    execFileSync('git', ['init', '-q', '--bare', dir], { env });
    const file = join(TMP, 'big.bin');
    const fd = openSync(file, 'w');
    const block = Buffer.alloc(1 << 20);
    for (let i = 0; i < block.length; i++) block[i] = (i * 7 + (i >> 9)) & 0xff;
    for (let off = 0; off < 1 << 30; off += block.length) { block.writeUInt32BE(off, 0); writeSync(fd, block); }
    closeSync(fd);
    const oid = execFileSync('git', ['--git-dir', dir, 'hash-object', '-w', file], { env }).toString().trim();
    rmSync(file);
    writeFileSync(stamp, oid);
  }
  return { dir, oid: readFileSync(stamp, 'utf8').trim() };
}

/* ---------- HTTP servers ---------- */
/** utime, stime, cutime, cstime of one process, in ms */
function procTimes(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ms = (i) => (Number(f[i]) * 1000) / 100;
  return { self: ms(11) + ms(12), reaped: ms(13) + ms(14) };
}
function liveChildren(pid) {
  const out = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
    }
  } catch { /* gone */ }
  return out;
}
/** the spawn helper serve forks its children through (src/util/spawn-helper.ts): gitwire's own CPU, not its children's */
function isSpawnHelper(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('spawn-helper.js'); } catch { return false; }
}
/** CPU of a process and everything under it: its own, its reaped children's, and its live descendants' */
function procCpuMs(pid) {
  try {
    const t = procTimes(pid);
    return t.self + t.reaped + liveChildren(pid).reduce((n, c) => n + (procCpuMs(c) || 0), 0);
  } catch { return NaN; }
}
/** CPU of a server's children (pack-objects, http-backend, …): the tree less the server itself and its spawn helper */
function procChildCpuMs(pid) {
  try {
    let own = procTimes(pid).self;
    for (const c of liveChildren(pid)) if (isSpawnHelper(c)) own += procTimes(c).self;
    return procCpuMs(pid) - own;
  } catch { return NaN; }
}
async function startHttp(kind, root) {
  // serve as users start it: through the bin's sh line, which gives it its node flags
  const [cmd, args] = kind === 'gitwire' ? [BIN, ['serve', root, '--http', '0', '--quiet', '--export-all']] : [process.execPath, [join(ROOT, 'bench', 'cgi.mjs'), root]];
  const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let b = '';
    p.stdout.on('data', (d) => {
      b += d;
      const m = /"port":(\d+)/.exec(b) || /"url":"http:\/\/[^:]+:(\d+)\//.exec(b);
      if (m) resolve(Number(m[1]));
    });
    p.on('exit', (c) => reject(new Error(`${kind} server exited ${c}`)));
  });
  p.stdout.resume();
  return { p, port, stop: () => { p.kill('SIGTERM'); return new Promise((r) => p.on('exit', r)); } };
}
function httpReq(port, method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let n = 0;
      res.on('data', (d) => { n += d.length; });
      res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`HTTP ${res.statusCode}`))));
    });
    r.on('error', reject);
    r.end(body);
  });
}
async function rps(port, make, seconds, concurrency = 4) {
  const until = Date.now() + seconds * 1000;
  let n = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < until) { await make(port); n++; }
  }));
  return n / seconds;
}

/* ---------- pack-objects cache: CI fan-out ---------- */
const cacheRows = [];
const wantCase = (name) => !positionals.length || positionals.some((p) => name.includes(p));

async function startServe(root, extra) {
  const { p, port, metricsPort } = await spawnServe(BIN, root, extra, env);
  return { p, port, metricsPort, cpu: () => procCpuMs(p.pid), stop: () => { p.kill('SIGTERM'); return new Promise((r) => p.on('exit', r)); } };
}
function cloneAsync(port, dest) {
  return new Promise((resolve, reject) => {
    const c = spawn('git', ['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${port}/history.git`, dest], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d) => { err += d; });
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`clone failed: ${err}`))));
  });
}
async function cacheMetrics(port) {
  const text = await new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => { let b = ''; res.on('data', (d) => { b += d; }); res.on('end', () => resolve(b)); }).on('error', reject).end();
  });
  const m = {};
  for (const line of text.split('\n')) {
    const x = /^gitwire_pack_cache_(\w+?)(?:_total)?(?:\{reason="([\w-]+)"\})? (\d+)/.exec(line);
    if (x) m[x[2] ? `fallback_${x[2]}` : x[1]] = Number(x[3]);
  }
  return m;
}
/** Every clone has the same pack (same checksum name) and refs; one is fully fsck'd. */
function checkClones(dests) {
  const sig = (d) => `${execFileSync('ls', [join(d, 'objects', 'pack')]).toString().split('\n').filter((n) => n.endsWith('.pack')).join(',')} ${execFileSync('git', ['--git-dir', d, 'for-each-ref'], { env }).toString()}`;
  const first = sig(dests[0]);
  const identical = dests.every((d) => sig(d) === first);
  const fsck = spawnSync('git', ['--git-dir', dests[0], 'fsck', '--strict', '--no-dangling'], { env, stdio: 'ignore' }).status === 0;
  return { identical, fsck };
}
/** Server CPU of `clones` clones (concurrent or one after another) on a fresh server. */
async function cacheRun(root, { clones, concurrent, cache, minOcc }) {
  const dir = join(TMP, `pack-cache-${++seq}`);
  const srv = await startServe(root, cache ? ['--pack-cache', dir, ...(minOcc === undefined ? [] : ['--pack-cache-min-occurrences', String(minOcc)])] : []);
  const dests = Array.from({ length: clones }, () => join(TMP, `cc-${++seq}`));
  try {
    await new Promise((r) => setTimeout(r, 300));
    const c0 = srv.cpu();
    const k0 = procChildCpuMs(srv.p.pid);
    const t0 = process.hrtime.bigint();
    if (concurrent) await Promise.all(dests.map((d) => cloneAsync(srv.port, d)));
    else for (const d of dests) await cloneAsync(srv.port, d);
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
    await new Promise((r) => setTimeout(r, 500)); // the last entry is published
    const cpuMs = srv.cpu() - c0;
    const packObjectsCpuMs = procChildCpuMs(srv.p.pid) - k0; // reaped children: pack-objects
    const metrics = cache ? await cacheMetrics(srv.metricsPort) : {};
    const check = clones > 1 ? checkClones(dests) : { identical: true, fsck: spawnSync('git', ['--git-dir', dests[0], 'fsck', '--no-dangling'], { env, stdio: 'ignore' }).status === 0 };
    return { cpuMs, packObjectsCpuMs, wallMs, metrics, ...check };
  } finally {
    await srv.stop();
    for (const d of dests) rmSync(d, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  }
}

async function packCacheCases(hist) {
  const root = dirname(hist);
  const N = Number(opt.clones ?? 20);
  if (!['pack-cache-fanout', 'pack-cache-sequential', 'pack-cache-norepeat'].some(wantCase)) return;
  log(`pack-objects cache (history, ${N} clones)`);
  // one clone without the cache: the unit every figure is divided by (median of 3)
  const ones = [];
  for (let i = 0; i < 3; i++) ones.push(await cacheRun(root, { clones: 1, concurrent: false, cache: false }));
  const one = median(ones.map((x) => x.cpuMs));
  const onePo = median(ones.map((x) => x.packObjectsCpuMs));
  log(`  one clone, no cache: ${one.toFixed(0)} ms server CPU (pack-objects ${onePo.toFixed(0)} ms)`);
  const row = (name, r, extra = {}) => {
    const x = { name, clones: r.clones, oneCloneCpuMs: one, cpuMs: r.cpuMs, ratio: r.cpuMs / one, onePackObjectsCpuMs: onePo, packObjectsCpuMs: r.packObjectsCpuMs, packObjectsRatio: r.packObjectsCpuMs / onePo, wallMs: r.wallMs, identical: r.identical, fsck: r.fsck, metrics: r.metrics, ...extra };
    cacheRows.push(x);
    log(`  ${name}: ${r.cpuMs.toFixed(0)} ms server CPU = ${x.ratio.toFixed(2)}x one clone (pack-objects ${r.packObjectsCpuMs.toFixed(0)} ms = ${x.packObjectsRatio.toFixed(2)}x); hits ${r.metrics.hits ?? '–'} joins ${r.metrics.joins ?? '–'} misses ${r.metrics.misses ?? '–'}; stored ${r.metrics.stored_bytes ?? 0} B, spooled ${r.metrics.spooled_bytes ?? 0} B; identical ${r.identical}, fsck ${r.fsck}`);
  };
  if (wantCase('pack-cache-fanout')) {
    const cached = await cacheRun(root, { clones: N, concurrent: true, cache: true });
    row('pack-cache-fanout', { ...cached, clones: N });
    const uncached = await cacheRun(root, { clones: N, concurrent: true, cache: false });
    row('pack-cache-fanout (no cache)', { ...uncached, clones: N });
  }
  if (wantCase('pack-cache-sequential')) {
    const seqRun = await cacheRun(root, { clones: N, concurrent: false, cache: true });
    row('pack-cache-sequential', { ...seqRun, clones: N });
    const seq0 = await cacheRun(root, { clones: N, concurrent: false, cache: true, minOcc: 0 });
    row('pack-cache-sequential (min-occurrences 0)', { ...seq0, clones: N });
  }
  if (wantCase('pack-cache-norepeat')) {
    // alternating single clones, with and without the cache
    const withC = [], without = [], poW = [], poC = [];
    let stored = 0, spooled = 0;
    for (let i = 0; i < 3; i++) {
      const r0 = await cacheRun(root, { clones: 1, concurrent: false, cache: false });
      without.push(r0.cpuMs);
      poW.push(r0.packObjectsCpuMs);
      const r = await cacheRun(root, { clones: 1, concurrent: false, cache: true });
      withC.push(r.cpuMs);
      poC.push(r.packObjectsCpuMs);
      stored += r.metrics.stored_bytes ?? 0;
      spooled = r.metrics.spooled_bytes ?? 0;
    }
    const a = median(without), b = median(withC);
    cacheRows.push({ name: 'pack-cache-norepeat', clones: 1, oneCloneCpuMs: a, cpuMs: b, ratio: b / a, onePackObjectsCpuMs: median(poW), packObjectsCpuMs: median(poC), packObjectsRatio: median(poC) / median(poW), identical: true, fsck: true, metrics: { stored_bytes: stored, spooled_bytes: spooled } });
    log(`  pack-cache-norepeat: ${a.toFixed(0)} ms without, ${b.toFixed(0)} ms with the cache = ${(b / a).toFixed(3)}x; stored ${stored} B (spooled ${spooled} B, then dropped)`);
  }
}

function renderCacheTable(rows) {
  if (!rows.length) return '';
  const f = (x, d = 0) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  let s = '\n| pack-objects cache | clones | server CPU ms, 1 clone without cache | server CPU ms | ratio | of which pack-objects ms (1 clone: ms) | pack-objects ratio | hits | joins | misses | bytes stored | bytes spooled | identical, fsck |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n';
  for (const x of rows) {
    const m = x.metrics ?? {};
    s += `| ${x.name} | ${x.clones} | ${f(x.oneCloneCpuMs)} | ${f(x.cpuMs)} | ${f(x.ratio, 2)} | ${f(x.packObjectsCpuMs)} (${f(x.onePackObjectsCpuMs)}) | ${f(x.packObjectsRatio, 2)} | ${f(m.hits)} | ${f(m.joins)} | ${f(m.misses)} | ${f(m.stored_bytes)} | ${f(m.spooled_bytes)} | ${x.identical && x.fsck ? 'yes' : `identical ${x.identical}, fsck ${x.fsck}`} |\n`;
  }
  return s;
}

/* ---------- cases ---------- */
const results = [];
/** `node -e 0` in this run: the floor any Node process starts from */
let nodeFloor;
/** serve's own CPU and its pack-objects' CPU on one HTTP clone of history */
let serveOverhead;
/** RSS of one serve process across requests to 50 repositories */
let soak;
const log = (s) => process.stderr.write(`${s}\n`);

/** one case (HTTP cases go through the wrapper in main() that also takes serve's peak RSS) */
const measure = (...args) => measureCase(...args);
/** `sides`: the servers compared, run in turn (A B A B …, or A B C, B C A, … for three) */
async function measureCase(name, fixture, once, { strace = true, runs = RUNS, sides = ['git', 'gitwire'] } = {}) {
  if (positionals.length && !positionals.some((p) => name.includes(p))) return;
  log(`case ${name} (${fixture})`);
  const samples = Object.fromEntries(sides.map((k) => [k, []]));
  for (const k of sides) await once(k, false); // warm-up
  for (let i = 0; i < runs; i++) {
    const order = sides.length === 2 ? (i % 2 ? [...sides].reverse() : sides) : sides.map((_, j) => sides[(i + j) % sides.length]);
    for (const k of order) samples[k].push(await once(k, false));
  }
  const sys = {};
  if (strace && HAVE_STRACE) for (const k of sides) sys[k] = (await once(k, true)) ?? {};
  const row = { name, fixture, runs };
  for (const k of sides) {
    const s = samples[k];
    row[k] = {
      wallMs: median(s.map((x) => x.wallMs)),
      cpuMs: median(s.map((x) => x.cpuMs ?? NaN)),
      rssKB: median(s.map((x) => x.rssKB ?? NaN)),
      rps: median(s.map((x) => x.rps ?? NaN)),
      writes: sys[k]?.writes ?? null,
      bytes: sys[k]?.bytes ?? null,
      perUnit: s[0]?.units ? (sys[k]?.writes ?? NaN) / s[0].units : undefined,
      ...(s[0]?.firstUs !== undefined ? { firstUs: median(s.map((x) => x.firstUs)), doneUs: median(s.map((x) => x.doneUs)) } : {}),
    };
  }
  results.push(row);
  const r = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b ? (a / b).toFixed(2) : '–');
  for (const k of sides.filter((x) => x !== 'gitwire')) {
    log(`  ${k === 'git' ? '' : `against ${k}: `}wall ${row[k].wallMs.toFixed(0)} / ${row.gitwire.wallMs.toFixed(0)} ms (x${r(row.gitwire.wallMs, row[k].wallMs)}), cpu ${row[k].cpuMs.toFixed(1)} / ${row.gitwire.cpuMs.toFixed(1)} ms (x${r(row.gitwire.cpuMs, row[k].cpuMs)}), rss x${r(row.gitwire.rssKB, row[k].rssKB)}, writes ${row[k].writes} / ${row.gitwire.writes}`);
  }
}

const lsRemote = (v, repo) => (kind, strace) => served((w) => ['-c', `protocol.version=${v}`, 'ls-remote', `--upload-pack=${w}`, repo], SERVERS[kind].upload, { strace });
const clone = (v, repo) => (kind, strace) => {
  const dest = join(TMP, `clone-${++seq}`);
  try { return served((w) => ['-c', `protocol.version=${v}`, 'clone', '-q', '--bare', '--no-local', `--upload-pack=${w}`, repo, dest], SERVERS[kind].upload, { strace }); }
  finally { rmSync(dest, { recursive: true, force: true }); }
};

async function main() {
  const t0 = Date.now();
  const load0 = loadavg()[0];
  if (positionals.length && positionals.every((p) => p === 'ssh')) {
    // the built-in SSH server against OpenSSH's sshd (bench/ssh.mjs)
    const { sshBench } = await import('./ssh.mjs');
    process.stdout.write(await sshBench());
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p === 'cluster')) {
    // three nodes with and without --redis (bench/cluster.mjs)
    const { clusterBench } = await import('./cluster.mjs');
    process.stdout.write(await clusterBench());
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p === 'flood')) {
    const { floodBench } = await import('./flood.mjs');
    process.stdout.write(`load average at the start: ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
    process.stdout.write(await floodBench({ durationS: Number(opt.duration ?? (QUICK ? 15 : 60)), clients: Number(opt.clients ?? 200) }));
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p === 'delta')) {
    const { deltaBench } = await import('./delta.mjs');
    process.stdout.write(await deltaBench());
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p === 'bundles')) {
    const { bundlesBench } = await import('./bundles.mjs');
    process.stdout.write(await bundlesBench({ clones: Number(opt.clones ?? 20) }));
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p === 'lfs')) {
    const { lfsBench } = await import('./lfs.mjs');
    process.stdout.write(await lfsBench());
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  if (positionals.length && positionals.every((p) => p.startsWith('pack-cache'))) {
    await packCacheCases(await fx.history());
    const table = renderCacheTable(cacheRows);
    process.stdout.write(table);
    const outDir = join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    const date = new Date().toISOString();
    const commit = (() => { try { return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim(); } catch { return 'unknown'; } })();
    writeFileSync(join(outDir, `pack-cache-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ machine: { date, commit, nproc: cpus().length, command: `npm run bench -- ${process.argv.slice(2).join(' ')}` }, packCache: cacheRows }, null, 2));
    rmSync(TMP, { recursive: true, force: true });
    return;
  }
  const refs11k = await fx.refs11k();
  const small = await fx.small();
  const hist = await fx.history();
  const inc = await fx.incremental();
  // (built only for a run with a case that reads it: a section run does not wait for a million refs)
  const needs1m = !positionals.length || positionals.some((p) => ['ls-remote', 'push-advertise', 'reftable'].some((c) => c.includes(p) || p.includes(c)));
  const refs1m = QUICK || !needs1m ? undefined : await fx.refs1m();

  await measure('ls-remote-v0', 'refs-11k', lsRemote(0, refs11k));
  await measure('ls-remote-v2', 'refs-11k', lsRemote(2, refs11k));
  if (refs1m) {
    await measure('ls-remote-v0', 'refs-1m', lsRemote(0, refs1m));
    await measure('ls-remote-v2', 'refs-1m', lsRemote(2, refs1m));
  }
  await (await import('./reftable.mjs')).reftableCases({ measure, timeWrap, TMP, fx, BIN, refs1m, small, log });
  await measure('startup-advertise', 'small (10 refs)', (kind, strace) => direct([...SERVERS[kind].upload.split(' '), '--advertise-refs', small], { strace }));
  // Node's own floor (`node -e 0`), measured in the same run: how far above it gitwire starts
  if (!positionals.length || positionals.some((p) => 'startup-advertise'.includes(p) || p.includes('floor'))) {
    // without NODE_EXTRA_CA_CERTS, as bin/gitwire starts node; with it (when this machine sets it), as any other node process starts
    const floor = (extraEnv) => {
      const s = [];
      for (let i = 0; i < RUNS + 1; i++) s.push(direct([process.execPath, '-e', '0'], { extraEnv }));
      return { cpuMs: median(s.slice(1).map((x) => x.cpuMs)), rssKB: median(s.slice(1).map((x) => x.rssKB)) };
    };
    nodeFloor = floor({ NODE_EXTRA_CA_CERTS: '' });
    log(`  node floor: ${nodeFloor.cpuMs.toFixed(1)} ms CPU, ${(nodeFloor.rssKB / 1024).toFixed(1)} MB RSS`);
    if (process.env.NODE_EXTRA_CA_CERTS) {
      nodeFloor.withExtraCaCerts = floor(undefined);
      log(`  node floor with NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS}: ${nodeFloor.withExtraCaCerts.cpuMs.toFixed(1)} ms CPU`);
    }
  }
  await measure('clone-v0', 'history', clone(0, hist), { runs: HEAVY });
  await measure('clone-v2', 'history', clone(2, hist), { runs: HEAVY });
  await measure('fetch-v2', 'incremental', (kind, strace) => {
    const copy = join(TMP, `inc-${++seq}`);
    execFileSync('cp', ['-al', inc.client, copy]);
    try { return served((w) => ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `--upload-pack=${w}`, inc.server, '+refs/heads/*:refs/heads/*'], SERVERS[kind].upload, { strace }); }
    finally { rmSync(copy, { recursive: true, force: true }); }
  });
  // push: the receiving side (git receive-pack vs gitwire receive-pack, with their index-pack and rev-list children)
  await measure('push-advertise', 'refs-11k', (kind, strace) => direct([...SERVERS[kind].receive.split(' '), '--advertise-refs', refs11k], { strace }));
  if (refs1m) await measure('push-advertise', 'refs-1m', (kind, strace) => direct([...SERVERS[kind].receive.split(' '), '--advertise-refs', refs1m], { strace }));
  await measure('push-history', 'history into an empty repository', (kind, strace) => {
    const dest = join(TMP, `push-${++seq}.git`);
    execFileSync('git', ['init', '-q', '--bare', dest], { env });
    try { return served((w) => ['-C', hist, 'push', '-q', `--receive-pack=${w}`, dest, 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], SERVERS[kind].receive, { strace }); }
    finally { rmSync(dest, { recursive: true, force: true }); }
  }, { runs: HEAVY });
  const oneBase = join(TMP, 'push-one-base.git');
  const oneClient = join(TMP, 'push-one-client');
  if (!existsSync(oneBase)) {
    execFileSync('git', ['clone', '-q', '--bare', hist, oneBase], { env });
    execFileSync('git', ['clone', '-q', '--no-checkout', hist, oneClient], { env });
    const head = execFileSync('git', ['-C', oneClient, 'rev-parse', 'HEAD'], { env }).toString().trim();
    const tree = execFileSync('git', ['-C', oneClient, 'rev-parse', 'HEAD^{tree}'], { env }).toString().trim();
    const c = execFileSync('git', ['-C', oneClient, 'commit-tree', '-p', head, '-m', 'one more', tree], { env }).toString().trim();
    execFileSync('git', ['-C', oneClient, 'update-ref', 'refs/heads/one-more', c], { env });
  }
  await measure('push-one-commit', 'history', (kind, strace) => {
    const dest = join(TMP, `push1-${++seq}.git`);
    execFileSync('cp', ['-al', oneBase, dest]);
    try { return served((w) => ['-C', oneClient, 'push', '-q', `--receive-pack=${w}`, dest, 'refs/heads/one-more:refs/heads/one-more'], SERVERS[kind].receive, { strace }); }
    finally { rmSync(dest, { recursive: true, force: true }); }
  });
  // cat-file
  const names = execFileSync('git', ['cat-file', '--batch-all-objects', '--unordered', '--batch-check=%(objectname)'], { cwd: hist, env, maxBuffer: 1 << 28 }).toString().split('\n').filter(Boolean);
  const pick = [];
  for (let i = 0; pick.length < 20000 && i < names.length; i += Math.max(1, Math.floor(names.length / 20000))) pick.push(names[i]);
  await measure('catfile-request-response', `history, ${pick.length} objects`, async (kind, strace) => {
    const r = await catfileRR([...SERVERS[kind].catfile, '--batch'], pick, { cwd: hist, strace });
    return { ...r, units: pick.length };
  }, { runs: HEAVY });
  await measure('catfile-batch-all-objects', 'history', (kind, strace) => direct([...SERVERS[kind].catfile, '--batch-all-objects', '--batch'], { cwd: hist, strace }), { runs: HEAVY, strace: !QUICK });
  await measure('catfile-batch-all-unordered', 'history', (kind, strace) => direct([...SERVERS[kind].catfile, '--batch-all-objects', '--unordered', '--batch'], { cwd: hist, strace }), { runs: HEAVY, strace: false });
  await measure('catfile-batch-check-all', 'history', (kind, strace) => direct([...SERVERS[kind].catfile, '--batch-all-objects', '--batch-check'], { cwd: hist, strace }), { runs: HEAVY, strace: false });
  if (!positionals.length || positionals.some((p) => 'catfile-big-blob'.includes(p))) {
    const big = bigBlobRepo();
    await measure('catfile-big-blob', '1 GiB blob, --batch', (kind, strace) => direct([...SERVERS[kind].catfile, '--batch'], { cwd: big.dir, input: `${big.oid}\n`, strace }), { runs: QUICK ? 1 : 3, strace: false });
  }

  if (!opt['no-http']) {
    const root = fx.FIXTURES;
    const servers = { git: await startHttp('git', root), gitwire: await startHttp('gitwire', root) };
    // the stack people deploy: nginx + fcgiwrap + git http-backend (bench/nginx.mjs)
    const noNginx = nginxMissing();
    if (noNginx) log(`  the HTTP rows run against the CGI runner only: ${noNginx}`);
    else servers.nginx = await startNginxStack(root, join(TMP, 'nginx'), { env });
    // peak RSS of each side's whole process tree over each run, sampled (bench/rss-sampler.mjs):
    // the CGI runner's children without the runner; serve with its helper and pack-objects;
    // nginx's master and workers with fcgiwrap, its CGIs and theirs
    const sampler = rssSampler(10);
    const rootsOf = (kind) => (kind === 'git' ? [-servers.git.p.pid] : kind === 'gitwire' ? [servers.gitwire.p.pid] : servers.nginx.pids());
    const sampled = (once) => async (kind, strace) => {
      sampler.watch(rootsOf(kind));
      const r = await once(kind, strace);
      return { ...r, rssKB: await sampler.peakKB() };
    };
    // the four rows of issue #27 run against both references; the row against nginx keeps the
    // case's name, the one against the CGI runner is "<name> (CGI runner)"
    const BOTH = new Set(['http-info-refs-rps', 'http-ls-refs-rps', 'http-clone-v2', 'http-clone-fanout-10', 'http-fetch-v2']);
    const measure = async (name, fixture, once, opts = {}) => {
      const both = !!servers.nginx && BOTH.has(name);
      await measureCase(name, fixture, sampled(once), { ...opts, sides: both ? ['nginx', 'git', 'gitwire'] : ['git', 'gitwire'] });
      const at = results.findIndex((x) => x.name === name);
      if (at < 0) return;
      const row = results[at];
      if (!both) { row.reference = 'cgi'; return; }
      results.splice(at, 1,
        { name, fixture, runs: row.runs, reference: 'nginx', git: row.nginx, gitwire: row.gitwire },
        { name: `${name} (CGI runner)`, fixture, runs: row.runs, reference: 'cgi', git: row.git, gitwire: row.gitwire });
    };
    try {
      const seconds = QUICK ? 2 : 10;
      // nginx's side: nginx and fcgiwrap (their own CPU and reaped children's), plus the CGIs',
      // which fcgiwrap does not reap (bench/nginx.mjs cgiCpuMs), added up as they finish
      let nginxCgiMs = 0;
      const nginxCpuMs = () => { nginxCgiMs += servers.nginx.cgiCpuMs(); return servers.nginx.pids().reduce((n, p) => n + procCpuMs(p), 0) + nginxCgiMs; };
      const cpuOf = (kind) => (kind === 'git' ? procChildCpuMs(servers.git.p.pid) : kind === 'gitwire' ? procCpuMs(servers.gitwire.p.pid) : nginxCpuMs());
      const rpsCase = (make) => async (kind) => {
        const c0 = cpuOf(kind);
        const r = await rps(servers[kind].port, make, seconds);
        return { rps: r, wallMs: 1000 / r, cpuMs: (cpuOf(kind) - c0) / (r * seconds) };
      };
      await measure('http-info-refs-rps', 'refs-11k', rpsCase((port) => httpReq(port, 'GET', '/refs-11k.git/info/refs?service=git-upload-pack', {})), { strace: false, runs: QUICK ? 2 : 3 });
      const lsBody = Buffer.from('0014command=ls-refs\n00010009peel\n0000');
      await measure('http-ls-refs-rps', 'refs-11k', rpsCase((port) => httpReq(port, 'POST', '/refs-11k.git/git-upload-pack', { 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' }, lsBody)), { strace: false, runs: QUICK ? 2 : 3 });
      await measure('http-clone-v2', 'history', async (kind) => {
        const dest = join(TMP, `hc-${++seq}`);
        const c0 = cpuOf(kind);
        const t = process.hrtime.bigint();
        const r = spawnSync('git', ['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${servers[kind].port}/history.git`, dest], { env, stdio: 'ignore' });
        const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
        rmSync(dest, { recursive: true, force: true });
        if (r.status !== 0) throw new Error('http clone failed');
        return { wallMs, cpuMs: cpuOf(kind) - c0 };
      }, { strace: false, runs: QUICK ? 1 : 3 });
      // the CI fan-out: 10 clones of history at once; server CPU per clone (issue #37: <= 0.2x nginx + http-backend)
      await measure('http-clone-fanout-10', 'history', async (kind) => {
        const dests = Array.from({ length: 10 }, () => join(TMP, `hf-${++seq}`));
        const c0 = cpuOf(kind);
        const t = process.hrtime.bigint();
        await Promise.all(dests.map((dest) => new Promise((resolve, reject) => {
          const c = spawn('git', ['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${servers[kind].port}/history.git`, dest], { env, stdio: 'ignore' });
          c.on('close', (code) => (code === 0 ? resolve() : reject(new Error('fan-out clone failed'))));
        })));
        const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
        const cpuMs = cpuOf(kind) - c0;
        for (const d of dests) rmSync(d, { recursive: true, force: true });
        return { wallMs: wallMs / 10, cpuMs: cpuMs / 10 };
      }, { strace: false, runs: QUICK ? 1 : 2 });
      // incremental fetch through the server: CPU per request against http-backend
      // each sample is FETCHES fetches, each into a fresh copy of the client: CPU comes from
      // /proc in 10 ms ticks, coarser than one fetch's ~40 ms, so one fetch per sample would
      // round every figure to a tick
      const FETCHES = QUICK ? 3 : 10;
      await measure('http-fetch-v2', 'incremental', async (kind) => {
        const copies = [];
        for (let i = 0; i < FETCHES; i++) {
          const copy = join(TMP, `hinc-${++seq}`);
          execFileSync('cp', ['-al', inc.client, copy]);
          copies.push(copy);
        }
        let wallMs = 0;
        const c0 = cpuOf(kind);
        for (const copy of copies) {
          const t = process.hrtime.bigint();
          const r = spawnSync('git', ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `http://127.0.0.1:${servers[kind].port}/incremental/server.git`, '+refs/heads/*:refs/heads/*'], { env, stdio: 'ignore' });
          wallMs += Number(process.hrtime.bigint() - t) / 1e6;
          if (r.status !== 0) throw new Error('http fetch failed');
        }
        const cpuMs = cpuOf(kind) - c0;
        for (const copy of copies) rmSync(copy, { recursive: true, force: true });
        return { wallMs: wallMs / FETCHES, cpuMs: cpuMs / FETCHES };
      }, { strace: false, runs: QUICK ? 2 : RUNS });
      // push over HTTP: history into an empty repository (git push through serve vs git http-backend)
      await measure('http-push-history', 'history into an empty repository', async (kind) => {
        const name = `http-push-${++seq}.git`;
        const dest = join(root, name);
        execFileSync('git', ['init', '-q', '--bare', dest], { env });
        execFileSync('git', ['-C', dest, 'config', 'http.receivepack', 'true'], { env });
        try {
          const c0 = cpuOf(kind);
          const t = process.hrtime.bigint();
          const r = spawnSync('git', ['-C', hist, 'push', '-q', `http://127.0.0.1:${servers[kind].port}/${name}`, 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'], { env, stdio: 'ignore' });
          const wallMs = Number(process.hrtime.bigint() - t) / 1e6;
          if (r.status !== 0) throw new Error('http push failed');
          return { wallMs, cpuMs: cpuOf(kind) - c0 };
        } finally { rmSync(dest, { recursive: true, force: true }); }
      }, { strace: false, runs: QUICK ? 1 : HEAVY });
      // one-commit pushes per second through the server: each request creates a new ref with a one-commit pack
      if (!positionals.length || positionals.some((p) => 'http-push-one-commit-rps'.includes(p))) {
        const pushRoot = join(root, 'push-rps.git');
        rmSync(pushRoot, { recursive: true, force: true });
        execFileSync('cp', ['-al', oneBase, pushRoot]);
        execFileSync('git', ['-C', pushRoot, 'config', 'http.receivepack', 'true'], { env });
        const head = execFileSync('git', ['-C', oneClient, 'rev-parse', 'HEAD'], { env }).toString().trim();
        const tip = execFileSync('git', ['-C', oneClient, 'rev-parse', 'refs/heads/one-more'], { env }).toString().trim();
        const pack = execFileSync('git', ['-C', oneClient, 'pack-objects', '--stdout', '--revs', '-q'], { env, input: `${tip}\n^${head}\n` });
        const pkt = (x) => { const b = Buffer.from(x); return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]); };
        let n = 0;
        const body = () => Buffer.concat([pkt(`${'0'.repeat(40)} ${tip} refs/heads/rps-${++n}\0report-status object-format=sha1 agent=bench`), Buffer.from('0000'), pack]);
        try {
          await measure('http-push-one-commit-rps', 'history', rpsCase((port) => httpReq(port, 'POST', '/push-rps.git/git-receive-pack', { 'Content-Type': 'application/x-git-receive-pack-request' }, body())), { strace: false, runs: QUICK ? 2 : 3 });
        } finally { rmSync(pushRoot, { recursive: true, force: true }); }
      }
      // serve's own CPU on a clone, above the pack-objects it runs (target: <= 10% of pack-objects' CPU)
      if (!positionals.length || positionals.some((p) => 'serve-overhead'.includes(p))) {
        const own = [], kids = [];
        for (let i = 0; i < (QUICK ? 2 : 3); i++) {
          const pid = servers.gitwire.p.pid;
          const o0 = procCpuMs(pid) - procChildCpuMs(pid), k0 = procChildCpuMs(pid);
          const dest = join(TMP, `ho-${++seq}`);
          spawnSync('git', ['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${servers.gitwire.port}/history.git`, dest], { env, stdio: 'ignore' });
          rmSync(dest, { recursive: true, force: true });
          own.push(procCpuMs(pid) - procChildCpuMs(pid) - o0);
          kids.push(procChildCpuMs(pid) - k0);
        }
        serveOverhead = { ownCpuMs: median(own), packObjectsCpuMs: median(kids) };
        log(`  serve overhead on a history clone: ${serveOverhead.ownCpuMs.toFixed(0)} ms in serve vs ${serveOverhead.packObjectsCpuMs.toFixed(0)} ms in pack-objects (${(100 * serveOverhead.ownCpuMs / serveOverhead.packObjectsCpuMs).toFixed(1)}%)`);
      }
      // fairness (issue #10): one client (or three) sends the abusive negotiation request (multi_ack_detailed,
      // one old common have, 4,000 unknown haves) over and over; two others fetch info/refs. Wall = the others'
      // p99 latency. The baseline row has no abusive client: the p99 the loaded machine gives anyway.
      {
        const gd = join(root, 'history.git');
        const revs = execFileSync('git', ['rev-list', 'HEAD'], { cwd: gd, env, maxBuffer: 1 << 28 }).toString().trim().split('\n');
        const p = (s) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
        let x = 1;
        const unknown = () => { let h = ''; for (let k = 0; k < 5; k++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; h += x.toString(16).padStart(8, '0'); } return h; };
        const abuse = Buffer.from(p(`want ${revs[0]} multi_ack_detailed side-band-64k\n`) + '0000' + p(`have ${revs[Math.floor(revs.length * 0.99)]}\n`)
          + Array.from({ length: 4000 }, () => p(`have ${unknown()}\n`)).join('') + '0000');
        const ct = { 'Content-Type': 'application/x-git-upload-pack-request' };
        // the same clients with no abusive one: what the loaded machine alone costs the p99
        const fairness = (abusers) => async (kind) => {
          const port = servers[kind].port;
          let stop = false;
          const abuser = Promise.all(Array.from({ length: abusers }, async () => { while (!stop) await httpReq(port, 'POST', '/history.git/git-upload-pack', ct, abuse); }));
          const lat = [];
          const until = Date.now() + (QUICK ? 3 : 10) * 1000;
          await Promise.all([0, 1].map(async () => {
            while (Date.now() < until) {
              const t = process.hrtime.bigint();
              await httpReq(port, 'GET', '/history.git/info/refs?service=git-upload-pack', {});
              lat.push(Number(process.hrtime.bigint() - t) / 1e6);
            }
          }));
          stop = true;
          await abuser;
          lat.sort((a, b) => a - b);
          return { wallMs: lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))] };
        };
        await measure('http-fairness-p99-baseline', `history, no abusive client`, fairness(0), { strace: false, runs: QUICK ? 1 : 3 });
        await measure('http-fairness-p99', `history, ${revs.length} commits, 1 abusive client`, fairness(1), { strace: false, runs: QUICK ? 1 : 3 });
        await measure('http-fairness-p99-3', `history, ${revs.length} commits, 3 abusive clients`, fairness(3), { strace: false, runs: QUICK ? 1 : 3 });
      }
    } finally {
      await sampler.close();
      await servers.git.stop();
      await servers.gitwire.stop();
      await servers.nginx?.stop();
    }
  }

  // 10,000 requests spread over 50 repositories through one serve process: RSS must stay flat
  if (!opt['no-http'] && (!positionals.length || positionals.some((p) => 'serve-50-repos'.includes(p)))) {
    const root50 = join(TMP, 'fifty');
    mkdirSync(root50);
    for (let i = 0; i < 50; i++) execFileSync('cp', ['-r', small, join(root50, `r${i}.git`)]);
    const srv = await startHttp('gitwire', root50);
    try {
      const total = QUICK ? 2000 : 10000;
      const samples = [];
      let done = 0;
      const t = Date.now();
      await Promise.all(Array.from({ length: 4 }, async (_, w) => {
        for (let i = w; i < total; i += 4) {
          await httpReq(srv.port, 'GET', `/r${i % 50}.git/info/refs?service=git-upload-pack`, {});
          if (++done % (total / 10) === 0) samples.push({ requests: done, rssKB: Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${srv.p.pid}/status`, 'utf8'))[1]) });
        }
      }));
      soak = { requests: total, repositories: 50, seconds: (Date.now() - t) / 1000, cpuMsPerRequest: procCpuMs(srv.p.pid) / total, samples };
      log(`  50 repositories, ${total} requests: RSS ${samples.map((x) => (x.rssKB / 1024).toFixed(0)).join(' → ')} MB, ${soak.cpuMsPerRequest.toFixed(2)} ms CPU per request`);
    } finally {
      await srv.stop();
    }
  }
  await packCacheCases(hist);

  const machine = {
    date: new Date().toISOString(), nproc: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30),
    git: execFileSync('git', ['--version']).toString().trim(), node: process.version,
    commit: (() => { try { return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim(); } catch { return 'unknown'; } })(),
    command: `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick: QUICK, runs: RUNS, strace: HAVE_STRACE, seconds: Math.round((Date.now() - t0) / 1000),
    loadAverage: { start: load0, end: loadavg()[0] },
    nodeFloor, serveOverhead, soak,
  };
  const table = renderTable(results, machine) + renderCacheTable(cacheRows);
  process.stdout.write(table);
  const outDir = join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  const json = JSON.stringify({ machine, results, packCache: cacheRows }, null, 2);
  writeFileSync(join(outDir, `${machine.date.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(outDir, QUICK ? 'latest-quick.json' : 'latest.json'), json);
  writeFileSync(join(outDir, QUICK ? 'chart-quick.svg' : 'chart.svg'), drawChart(results));
  if (!QUICK && !positionals.length) {
    // the generated part replaces the top of the file; the sections after the marker (per-area runs, notes) stay
    let kept = '';
    try { const old = readFileSync(join(ROOT, 'BENCHMARKS.md'), 'utf8'); const at = old.indexOf(KEPT_MARKER); if (at >= 0) kept = `\n${old.slice(at)}`; } catch { /* none yet */ }
    writeFileSync(join(ROOT, 'BENCHMARKS.md'), benchmarksHead(machine, table) + kept);
  }
  rmSync(TMP, { recursive: true, force: true });
}

/** BENCHMARKS.md up to the marker: the latest full run */
function benchmarksHead(m, table) {
  return `# Benchmarks

gitwire against git on one machine, in one run: \`npm run bench\` (bench/run.mjs). This file holds the
latest full run and, after it, the latest figures of each area's own bench. Earlier runs live in git
history, not here: \`git log -p BENCHMARKS.md\`.

## The latest full run

- date: ${m.date}, ${m.seconds} s; load average (1 min) ${m.loadAverage.start.toFixed(1)} at the start, ${m.loadAverage.end.toFixed(1)} at the end
- machine: ${m.nproc} cores, ${m.memGiB} GiB; ${m.git}; node ${m.node}
- command: \`${m.command}\`, on commit ${m.commit}; ${m.runs} counted runs per case after a warm-up, alternating (A B A B …), medians

![write calls and CPU ratio](bench/results/chart.svg)
${table}
`;
}

/** BENCHMARKS.md: what follows this line is kept by a full run (how to reproduce and read it, the per-area sections) */
const KEPT_MARKER = '<!-- kept by npm run bench: sections below -->';

function renderTable(rows, m) {
  const f = (x, d = 0) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const r = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b ? (a / b).toFixed(2) : '–');
  let s = `\n| case | fixture | wall ms git | wall ms gitwire | wall ratio | CPU ms git | CPU ms gitwire | CPU ratio | peak RSS MB git | peak RSS MB gitwire | RSS ratio | writes git | writes gitwire | bytes git | bytes gitwire |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n`;
  for (const x of rows) {
    const g = x.git, w = x.gitwire;
    const name = Number.isFinite(g.rps) ? `${x.name} (${f(g.rps)} vs ${f(w.rps)} req/s)` : x.name;
    const fixture = x.reference ? `${x.fixture}; git ${x.reference === 'nginx' ? 'behind nginx + fcgiwrap' : 'run by the CGI runner'}` : x.fixture;
    s += `| ${name} | ${fixture} | ${f(g.wallMs, 1)} | ${f(w.wallMs, 1)} | ${r(w.wallMs, g.wallMs)} | ${f(g.cpuMs, 1)} | ${f(w.cpuMs, 1)} | ${r(w.cpuMs, g.cpuMs)} | ${f(g.rssKB / 1024, 1)} | ${f(w.rssKB / 1024, 1)} | ${r(w.rssKB, g.rssKB)} | ${f(g.writes)} | ${f(w.writes)} | ${f(g.bytes)} | ${f(w.bytes)} |\n`;
  }
  const stack = rows.filter((x) => x.reference === 'nginx');
  if (stack.length) {
    // the goals: issue #27's, at most 0.5x git's CPU on small requests; issue #37's (the native
    // producer), at most 0.2x on a clone of history and per clone of the fan-out, 0.5x on the incremental fetch
    s += `\nHTTP against the stack people deploy (nginx + fcgiwrap + git http-backend), server CPU per request, every process of each stack counted:\n\n`;
    for (const x of stack) {
      const goal = /clone/.test(x.name) ? 0.2 : 0.5;
      const ratio = x.gitwire.cpuMs / x.git.cpuMs;
      s += `- ${x.name}: ${f(x.gitwire.cpuMs, 1)} ms against ${f(x.git.cpuMs, 1)} ms = ${r(x.gitwire.cpuMs, x.git.cpuMs)}x (goal ≤ ${goal}x: ${Number.isFinite(ratio) ? (ratio <= goal ? 'met' : 'missed') : '–'}); peak RSS ${f(x.gitwire.rssKB / 1024, 1)} against ${f(x.git.rssKB / 1024, 1)} MB\n`;
    }
  }
  const cat = rows.find((x) => x.name === 'catfile-request-response');
  if (cat && cat.git.perUnit !== undefined) s += `\ncat-file request/response: ${f(cat.git.perUnit, 2)} write calls per object for git, ${f(cat.gitwire.perUnit, 2)} for gitwire.\n`;
  if (cat && cat.git.firstUs !== undefined) s += `\ncat-file request/response, medians from a request's write: the answer's first byte ${f(cat.git.firstUs, 1)} µs for git, ${f(cat.gitwire.firstUs, 1)} for gitwire; its last byte ${f(cat.git.doneUs, 1)} and ${f(cat.gitwire.doneUs, 1)} µs.\n`;
  const start = rows.find((x) => x.name === 'startup-advertise');
  if (m.nodeFloor && start) {
    s += `\nNode's floor (\`node -e 0\`, without NODE_EXTRA_CA_CERTS as bin/gitwire starts it): ${f(m.nodeFloor.cpuMs, 1)} ms CPU, ${f(m.nodeFloor.rssKB / 1024, 1)} MB RSS; \`gitwire upload-pack --advertise-refs\` starts ${f(start.gitwire.cpuMs - m.nodeFloor.cpuMs, 1)} ms CPU and ${f((start.gitwire.rssKB - m.nodeFloor.rssKB) / 1024, 1)} MB above it.\n`;
    if (m.nodeFloor.withExtraCaCerts) s += `With this machine's NODE_EXTRA_CA_CERTS, any other node process starts at ${f(m.nodeFloor.withExtraCaCerts.cpuMs, 1)} ms CPU.\n`;
  }
  if (m.serveOverhead) s += `\nserve's own CPU on an HTTP clone of history: ${f(m.serveOverhead.ownCpuMs)} ms, against ${f(m.serveOverhead.packObjectsCpuMs)} ms in its pack-objects (${f(100 * m.serveOverhead.ownCpuMs / m.serveOverhead.packObjectsCpuMs, 1)}%).\n`;
  if (m.soak) s += `\nOne serve process, ${m.soak.requests} info/refs requests over ${m.soak.repositories} repositories (4 concurrent): RSS ${m.soak.samples.map((x) => f(x.rssKB / 1024)).join(' → ')} MB; ${f(m.soak.cpuMsPerRequest, 2)} ms CPU per request.\n`;
  s += `\n${m.quick ? 'quick run' : positionals.length ? 'section run' : 'full run'}: ${m.nproc} cores, ${m.git}, node ${m.node}, ${m.runs} runs per case\n`;
  return s;
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); rmSync(TMP, { recursive: true, force: true }); process.exit(1); });
