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
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { cpus, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as fx from './fixtures.mjs';
import { median, parseStrace, parseTime } from './parse.mjs';
import { drawChart } from './chart.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const { values: opt, positionals } = parseArgs({
  allowPositionals: true,
  options: { quick: { type: 'boolean' }, runs: { type: 'string' }, 'no-strace': { type: 'boolean' }, 'no-http': { type: 'boolean' } },
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
  git: { upload: 'git upload-pack', catfile: ['git', 'cat-file'] },
  gitwire: { upload: `${BIN} upload-pack`, catfile: [BIN, 'cat-file'] },
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
function direct(argv, { input, cwd, strace = false } = {}) {
  const cmd = argv.map(q).join(' ');
  const w = strace ? straceWrap(cmd) : timeWrap(cmd);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('sh', ['-c', w.cmd], { cwd, env, input, stdio: [input ? 'pipe' : 'ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  return { ...w.read(), wallMs };
}

/** Request/response cat-file driver: one name, wait for the whole answer, next. */
async function catfileRR(argv, names, { cwd, strace = false }) {
  const cmd = argv.map(q).join(' ');
  const w = strace ? straceWrap(cmd) : timeWrap(cmd);
  const t0 = process.hrtime.bigint();
  const p = spawn('sh', ['-c', w.cmd], { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  let buf = Buffer.alloc(0);
  let wake = null;
  p.stdout.on('data', (d) => { buf = buf.length ? Buffer.concat([buf, d]) : d; if (wake) { const f = wake; wake = null; f(); } });
  const need = async (n) => { while (buf.length < n) await new Promise((r) => { wake = r; }); };
  for (const name of names) {
    p.stdin.write(`${name}\n`);
    await need(1);
    let nl;
    while ((nl = buf.indexOf(10)) < 0) await new Promise((r) => { wake = r; });
    const header = buf.toString('latin1', 0, nl);
    const size = Number(header.split(' ')[2]);
    const total = nl + 1 + size + 1;
    await need(total);
    buf = buf.subarray(total);
  }
  p.stdin.end();
  await new Promise((r) => p.on('exit', r));
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return { ...w.read(), wallMs };
}

/* ---------- HTTP servers ---------- */
function procCpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const tick = 100;
    return ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / tick;
  } catch { return NaN; }
}
function procChildCpuMs(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
  } catch { return NaN; }
}
function peakRssKB(pid) {
  try { return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]); } catch { return NaN; }
}
async function startHttp(kind, root) {
  const args = kind === 'gitwire' ? [BIN, 'serve', root, '--http', '0', '--quiet', '--export-all'] : [join(ROOT, 'bench', 'cgi.mjs'), root];
  const p = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
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

/* ---------- cases ---------- */
const results = [];
const log = (s) => process.stderr.write(`${s}\n`);

async function measure(name, fixture, once, { strace = true, runs = RUNS } = {}) {
  if (positionals.length && !positionals.some((p) => name.includes(p))) return;
  log(`case ${name} (${fixture})`);
  const samples = { git: [], gitwire: [] };
  await once('git', false); await once('gitwire', false); // warm-up
  for (let i = 0; i < runs; i++) {
    const order = i % 2 ? ['gitwire', 'git'] : ['git', 'gitwire'];
    for (const k of order) samples[k].push(await once(k, false));
  }
  const sys = {};
  if (strace && HAVE_STRACE) for (const k of ['git', 'gitwire']) sys[k] = (await once(k, true)) ?? {};
  const row = { name, fixture, runs };
  for (const k of ['git', 'gitwire']) {
    const s = samples[k];
    row[k] = {
      wallMs: median(s.map((x) => x.wallMs)),
      cpuMs: median(s.map((x) => x.cpuMs ?? NaN)),
      rssKB: median(s.map((x) => x.rssKB ?? NaN)),
      rps: median(s.map((x) => x.rps ?? NaN)),
      writes: sys[k]?.writes ?? null,
      bytes: sys[k]?.bytes ?? null,
      perUnit: s[0]?.units ? (sys[k]?.writes ?? NaN) / s[0].units : undefined,
    };
  }
  results.push(row);
  const r = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b ? (a / b).toFixed(2) : '–');
  log(`  wall ${row.git.wallMs.toFixed(0)} / ${row.gitwire.wallMs.toFixed(0)} ms (x${r(row.gitwire.wallMs, row.git.wallMs)}), cpu x${r(row.gitwire.cpuMs, row.git.cpuMs)}, rss x${r(row.gitwire.rssKB, row.git.rssKB)}, writes ${row.git.writes} / ${row.gitwire.writes}`);
}

const lsRemote = (v, repo) => (kind, strace) => served((w) => ['-c', `protocol.version=${v}`, 'ls-remote', `--upload-pack=${w}`, repo], SERVERS[kind].upload, { strace });
const clone = (v, repo) => (kind, strace) => {
  const dest = join(TMP, `clone-${++seq}`);
  try { return served((w) => ['-c', `protocol.version=${v}`, 'clone', '-q', '--bare', '--no-local', `--upload-pack=${w}`, repo, dest], SERVERS[kind].upload, { strace }); }
  finally { rmSync(dest, { recursive: true, force: true }); }
};

async function main() {
  const t0 = Date.now();
  const refs11k = await fx.refs11k();
  const small = await fx.small();
  const hist = await fx.history();
  const inc = await fx.incremental();
  const refs1m = QUICK ? undefined : await fx.refs1m();

  await measure('ls-remote-v0', 'refs-11k', lsRemote(0, refs11k));
  await measure('ls-remote-v2', 'refs-11k', lsRemote(2, refs11k));
  if (refs1m) {
    await measure('ls-remote-v0', 'refs-1m', lsRemote(0, refs1m));
    await measure('ls-remote-v2', 'refs-1m', lsRemote(2, refs1m));
  }
  await measure('startup-advertise', 'small (10 refs)', (kind, strace) => direct([...SERVERS[kind].upload.split(' '), '--advertise-refs', small], { strace }));
  await measure('clone-v0', 'history', clone(0, hist), { runs: HEAVY });
  await measure('clone-v2', 'history', clone(2, hist), { runs: HEAVY });
  await measure('fetch-v2', 'incremental', (kind, strace) => {
    const copy = join(TMP, `inc-${++seq}`);
    execFileSync('cp', ['-al', inc.client, copy]);
    try { return served((w) => ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `--upload-pack=${w}`, inc.server, '+refs/heads/*:refs/heads/*'], SERVERS[kind].upload, { strace }); }
    finally { rmSync(copy, { recursive: true, force: true }); }
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

  if (!opt['no-http']) {
    const root = fx.FIXTURES;
    const servers = { git: await startHttp('git', root), gitwire: await startHttp('gitwire', root) };
    try {
      const seconds = QUICK ? 2 : 10;
      const cpuOf = (kind) => (kind === 'git' ? procChildCpuMs(servers.git.p.pid) : procCpuMs(servers.gitwire.p.pid));
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
      // fairness (issue #10): one client sends the abusive negotiation request (multi_ack_detailed, one old
      // common have, 4,000 unknown haves) over and over; two others fetch info/refs. Wall = the others' p99 latency.
      {
        const gd = join(root, 'history.git');
        const revs = execFileSync('git', ['rev-list', 'HEAD'], { cwd: gd, env, maxBuffer: 1 << 28 }).toString().trim().split('\n');
        const p = (s) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
        let x = 1;
        const unknown = () => { let h = ''; for (let k = 0; k < 5; k++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; h += x.toString(16).padStart(8, '0'); } return h; };
        const abuse = Buffer.from(p(`want ${revs[0]} multi_ack_detailed side-band-64k\n`) + '0000' + p(`have ${revs[Math.floor(revs.length * 0.99)]}\n`)
          + Array.from({ length: 4000 }, () => p(`have ${unknown()}\n`)).join('') + '0000');
        const ct = { 'Content-Type': 'application/x-git-upload-pack-request' };
        await measure('http-fairness-p99', `history, ${revs.length} commits, 1 abusive client`, async (kind) => {
          const port = servers[kind].port;
          let stop = false;
          const abuser = (async () => { while (!stop) await httpReq(port, 'POST', '/history.git/git-upload-pack', ct, abuse); })();
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
        }, { strace: false, runs: QUICK ? 1 : 3 });
      }
      for (const row of results.filter((x) => x.name.startsWith('http-'))) row.gitwire.rssKB = peakRssKB(servers.gitwire.p.pid);
    } finally {
      await servers.git.stop();
      await servers.gitwire.stop();
    }
  }

  const machine = {
    date: new Date().toISOString(), nproc: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30),
    git: execFileSync('git', ['--version']).toString().trim(), node: process.version,
    commit: (() => { try { return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim(); } catch { return 'unknown'; } })(),
    command: `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    quick: QUICK, runs: RUNS, strace: HAVE_STRACE, seconds: Math.round((Date.now() - t0) / 1000),
  };
  const table = renderTable(results, machine);
  process.stdout.write(table);
  const outDir = join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  const json = JSON.stringify({ machine, results }, null, 2);
  writeFileSync(join(outDir, `${machine.date.replace(/[:.]/g, '-')}.json`), json);
  writeFileSync(join(outDir, QUICK ? 'latest-quick.json' : 'latest.json'), json);
  writeFileSync(join(outDir, QUICK ? 'chart-quick.svg' : 'chart.svg'), drawChart(results));
  if (!QUICK && !positionals.length) {
    writeFileSync(join(ROOT, 'BENCHMARKS.md'), `# Benchmarks\n\nThe latest full run of \`npm run bench\`: gitwire against git on the same machine, in the same run, alternating (A B A B …), ${RUNS} counted runs after a warm-up, medians.\n\n- date: ${machine.date}\n- machine: ${machine.nproc} cores, ${machine.memGiB} GiB\n- ${machine.git}, node ${machine.node}\n- command: \`${machine.command}\` (${machine.seconds} s), on commit ${machine.commit}\n\n![write calls and CPU ratio](bench/results/chart.svg)\n\n${table}\n## How to read it\n\n- **serving side**: the upload-pack process tree (for git: \`git upload-pack\`, for gitwire: \`bin/gitwire upload-pack\`), both running the same \`git pack-objects\`; CPU is user+sys of that tree, RSS its peak (\`bench/rusage.py\`: \`wait4\` on the tree, in microseconds; \`/usr/bin/time\` where python3 is missing).\n- **write calls**: \`write\`/\`writev\`/\`sendmsg\` on the client pipe made by the serving process itself, not by pack-objects (\`strace -f\`); bytes are what those calls wrote.\n- **wall** is the whole operation as the user sees it (for clones and fetches that includes the client's own work, identical on both sides).\n- **HTTP**: gitwire serve against \`git http-backend\` run per request as a CGI program; requests/second with 4 concurrent clients; server CPU per request (for git: the CGI children only, the runner's own CPU left out).\n`);
  }
  rmSync(TMP, { recursive: true, force: true });
}

function renderTable(rows, m) {
  const f = (x, d = 0) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const r = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b ? (a / b).toFixed(2) : '–');
  let s = `\n| case | fixture | wall ms git | wall ms gitwire | wall ratio | CPU ms git | CPU ms gitwire | CPU ratio | peak RSS MB git | peak RSS MB gitwire | RSS ratio | writes git | writes gitwire | bytes git | bytes gitwire |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n`;
  for (const x of rows) {
    const g = x.git, w = x.gitwire;
    const name = Number.isFinite(g.rps) ? `${x.name} (${f(g.rps)} vs ${f(w.rps)} req/s)` : x.name;
    s += `| ${name} | ${x.fixture} | ${f(g.wallMs, 1)} | ${f(w.wallMs, 1)} | ${r(w.wallMs, g.wallMs)} | ${f(g.cpuMs, 1)} | ${f(w.cpuMs, 1)} | ${r(w.cpuMs, g.cpuMs)} | ${f(g.rssKB / 1024, 1)} | ${f(w.rssKB / 1024, 1)} | ${r(w.rssKB, g.rssKB)} | ${f(g.writes)} | ${f(w.writes)} | ${f(g.bytes)} | ${f(w.bytes)} |\n`;
  }
  const cat = rows.find((x) => x.name === 'catfile-request-response');
  if (cat && cat.git.perUnit !== undefined) s += `\ncat-file request/response: ${f(cat.git.perUnit, 2)} write calls per object for git, ${f(cat.gitwire.perUnit, 2)} for gitwire.\n`;
  s += `\n${m.quick ? 'quick run' : 'full run'}: ${m.nproc} cores, ${m.git}, node ${m.node}, ${m.runs} runs per case\n`;
  return s;
}

main().catch((e) => { process.stderr.write(`${e.stack}\n`); rmSync(TMP, { recursive: true, force: true }); process.exit(1); });
