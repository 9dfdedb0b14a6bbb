/**
 * An anonymous flood and one known user (issue #40): `clients` anonymous
 * clients, each from its own loopback address (127.0.0.2, 127.0.0.3, …),
 * each doing what a shallow clone does (GET info/refs, POST ls-refs, POST
 * fetch with `deepen 1`) in a closed loop for `duration` seconds, while
 * one authenticated user runs `git fetch` of a branch that moves one commit
 * before each fetch (so each fetch makes a small pack). Anonymous clients
 * honour `Retry-After` on a 429 (as git ≥ 2.54 does with http.maxRetries);
 * a request with no complete answer within ANON_TIMEOUT_MS is a timeout.
 *
 * Rows: the user alone; `gitwire serve` with its defaults; `gitwire serve`
 * with docs/limits.md's recipe for a public server; nginx + fcgiwrap +
 * git http-backend (bench/nginx.mjs; the user is one more client there:
 * that stack has no per-user limits). Figures: the user's fetch p50/p99,
 * anonymous requests by outcome, the server's peak RSS (whole process
 * tree, sampled), the load average before and after.
 *
 *   npm run bench -- flood [--duration 60] [--clients 200]
 */
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { nginxMissing, startNginxStack } from './nginx.mjs';
import { rssSampler } from './rss-sampler.mjs';
import { spawnServe } from './serve-process.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C',
  GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com',
};
const git = (args, opts = {}) => execFileSync('git', args, { env, maxBuffer: 1 << 28, ...opts }).toString();

/** an anonymous request with no complete answer after this long is counted as a timeout (and given up) */
export const ANON_TIMEOUT_MS = 10_000;
const USER = 'alice', PASSWORD = 'bench-password';
const AUTH = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

/**
 * docs/limits.md's recipe, as flags (the test for the docs reads the same
 * block from the page): a pack cache so that identical shallow clones are
 * one pack-objects run, two pack-objects at once with users ahead in the
 * queue, anonymous clients at one request every 2 s (burst 3: one shallow
 * clone is 3 requests) and one request at a time each, at most 8
 * anonymous requests at work in all, users at 20, and new anonymous work
 * refused while the event loop lags by 50 ms.
 */
export const RECIPE = ['--max-packs', '2', '--anonymous-rate', '0.5', '--anonymous-burst', '3', '--anonymous-concurrency', '1', '--anonymous-max-work', '8', '--user-rate', '20', '--user-burst', '40', '--saturation-delay', '50'];

/** A repository of `commits` commits over `files` files, with `moving` at commit `start`. */
function buildRepo(dir, { commits = 400, files = 300 } = {}) {
  git(['init', '-q', '--bare', '-b', 'main', dir]);
  let mark = 0, s = '';
  const body = (i, c) => `${`file ${i} line ${c} `.repeat(40)}\n`.repeat(20);
  for (let c = 1; c <= commits; c++) {
    const msg = `commit ${c}\n`;
    s += `commit refs/heads/main\nmark :${++mark}\ncommitter Bench <bench@example.com> ${1600000000 + c * 60} +0000\ndata ${msg.length}\n${msg}${c > 1 ? `from :${mark - 1}\n` : ''}`;
    const touched = c === 1 ? Array.from({ length: files }, (_, i) => i) : [c % files, (c * 7) % files];
    for (const i of touched) { const b = body(i, c); s += `M 100644 inline src/f${i}.txt\ndata ${Buffer.byteLength(b)}\n${b}\n`; }
    s += '\n';
  }
  git(['fast-import', '--quiet'], { cwd: dir, input: s });
  git(['repack', '-adq', '-b'], { cwd: dir });
  return git(['rev-list', '--reverse', 'main'], { cwd: dir }).trim().split('\n');
}

function pct(xs, p) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

/** the anonymous clients, in a worker so that the user's timings are not taken on a busy loop */
const LOAD = `
const { workerData, parentPort } = require('node:worker_threads');
const { request } = require('node:http');
const { port, clients, durationMs, timeoutMs, head } = workerData;
const pkt = (s) => (s.length + 4).toString(16).padStart(4, '0') + s;
const LS = Buffer.from(pkt('command=ls-refs\\n') + pkt('agent=git/2.55.0\\n') + '0001' + pkt('peel\\n') + pkt('symrefs\\n') + pkt('ref-prefix HEAD\\n') + pkt('ref-prefix refs/heads/\\n') + '0000');
const FETCH = Buffer.from(pkt('command=fetch\\n') + pkt('agent=git/2.55.0\\n') + '0001' + pkt('thin-pack\\n') + pkt('no-progress\\n') + pkt('ofs-delta\\n') + pkt('deepen 1\\n') + pkt('want ' + head + '\\n') + pkt('done\\n') + '0000');
const OPS = [
  { name: 'info/refs', method: 'GET', path: '/repo.git/info/refs?service=git-upload-pack', headers: { 'Git-Protocol': 'version=2' } },
  { name: 'ls-refs', method: 'POST', path: '/repo.git/git-upload-pack', body: LS, headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Length': String(LS.length) } },
  { name: 'shallow-fetch', method: 'POST', path: '/repo.git/git-upload-pack', body: FETCH, headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request', 'Content-Length': String(FETCH.length) } },
];
const stats = {};
for (const o of OPS) stats[o.name] = { ok: 0, r429: 0, r429NoRetryAfter: 0, timeout: 0, error: 0, other: 0, okMs: [] };
const end = Date.now() + durationMs;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function once(op, localAddress) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    let done = false;
    const finish = (r) => { if (!done) { done = true; clearTimeout(timer); resolve({ ...r, ms: performance.now() - t0 }); } };
    const req = request({ host: '127.0.0.1', port, method: op.method, path: op.path, headers: op.headers, localAddress, agent: false }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => finish({ status: res.statusCode, retryAfter: res.headers['retry-after'] }));
      res.on('error', () => finish({ error: true }));
    });
    const timer = setTimeout(() => { req.destroy(); finish({ timeout: true }); }, timeoutMs);
    req.on('error', () => finish({ error: true }));
    req.end(op.body);
  });
}
async function client(i) {
  const localAddress = '127.0.' + (Math.floor((i + 2) / 256)) + '.' + ((i + 2) % 256);
  let k = i % OPS.length;
  // spread the starts over the first second
  await sleep((i * 1000) / clients);
  while (Date.now() < end) {
    const op = OPS[k++ % OPS.length];
    const r = await once(op, localAddress);
    const st = stats[op.name];
    if (r.timeout) st.timeout++;
    else if (r.error) { st.error++; await sleep(100); }
    else if (r.status === 200) { st.ok++; if (st.okMs.length < 20000) st.okMs.push(r.ms); }
    else if (r.status === 429) {
      const s = Number(r.retryAfter);
      if (!(s >= 0)) { st.r429NoRetryAfter++; await sleep(1000); } else { st.r429++; await sleep(s * 1000); }
      k--; // the same request again, as git's retry does
    } else { st.other++; await sleep(100); }
  }
}
Promise.all(Array.from({ length: clients }, (_, i) => client(i))).then(() => parentPort.postMessage(stats));
`;

/** The user's fetches until `until`: wall ms of each `git fetch` (and failures). */
async function userLoop(url, repo, userDir, revs, start, until, auth) {
  const times = [];
  let failures = 0, i = start, lastError = '';
  while (Date.now() < until) {
    if (i >= revs.length) {
      // back to the start: the user's ref is moved back too, so the next fetch has one commit to fetch
      i = start;
      git(['update-ref', 'refs/heads/moving', revs[i - 1]], { cwd: userDir });
    }
    git(['update-ref', 'refs/heads/moving', revs[i++]], { cwd: repo });
    const t0 = process.hrtime.bigint();
    const ok = await new Promise((resolve) => {
      const c = spawn('git', [...(auth ? ['-c', `http.extraHeader=Authorization: ${AUTH}`] : []), '-c', 'protocol.version=2', 'fetch', '-q', url, '+refs/heads/moving:refs/heads/moving'], { cwd: userDir, env, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (d) => { err += d; });
      c.on('close', (code) => { if (code !== 0) lastError = err.trim().split('\n').pop(); resolve(code === 0); });
    });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (ok) times.push(ms); else failures++;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { times, failures, lastError };
}

async function startGitwire(root, args) {
  const { p, port, metricsPort } = await spawnServe(BIN, root, args, env);
  /** the server's own count of refusals by reason (anonymous clients) */
  const refusals = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const out = {};
    for (const m of text.matchAll(/^gitwire_client_limit_decisions_total\{class="anonymous",result="(\w+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
    return out;
  };
  return { port, pids: () => [p.pid], refusals, stop: () => new Promise((r) => { p.once('exit', r); p.kill('SIGTERM'); }) };
}

async function row(name, server, { repo, userDir, revs, start, durationMs, clients, head, auth }) {
  const rss = rssSampler(50);
  rss.watch(server.pids());
  const load0 = loadavg();
  let anon;
  if (clients > 0) {
    const w = new Worker(LOAD, { eval: true, workerData: { port: server.port, clients, durationMs, timeoutMs: ANON_TIMEOUT_MS, head } });
    anon = new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
  }
  // the user starts once the flood is under way
  await new Promise((r) => setTimeout(r, clients > 0 ? 2000 : 0));
  const user = await userLoop(`http://127.0.0.1:${server.port}/repo.git`, repo, userDir, revs, start, Date.now() + durationMs - (clients > 0 ? 2000 : 0), auth);
  const anonStats = anon ? await anon : undefined;
  const refusals = server.refusals ? await server.refusals() : undefined;
  const peakKB = await rss.peakKB();
  await rss.close();
  const load1 = loadavg();
  return { name, user: { n: user.times.length, p50: pct(user.times, 50), p99: pct(user.times, 99), max: Math.max(...user.times), failures: user.failures, lastError: user.lastError }, anon: anonStats, refusals, peakRssMB: peakKB / 1024, load: [load0[0], load1[0]] };
}

function renderRows(rows, { clients, durationMs }) {
  const f = (x) => (Number.isFinite(x) ? x.toFixed(0) : '—');
  let s = `\n## Flood: ${clients} anonymous clients (info/refs, ls-refs, shallow fetch; each its own 127.0.x.y) for ${durationMs / 1000} s, one user fetching\n\n`;
  s += '| setup | user fetches | user p50 ms | user p99 ms | user failed | anon ok | anon 429 (Retry-After) | anon timeouts | anon errors | anon ok p99 ms | server peak RSS MB | load 1-min before → after |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n';
  for (const r of rows) {
    const a = r.anon ? Object.values(r.anon) : [];
    const sum = (k) => a.reduce((n, x) => n + x[k], 0);
    const okMs = a.flatMap((x) => x.okMs);
    s += `| ${r.name} | ${r.user.n} | ${f(r.user.p50)} | ${f(r.user.p99)} | ${r.user.failures} | ${r.anon ? sum('ok') : '—'} | ${r.anon ? `${sum('r429')}${sum('r429NoRetryAfter') ? ` (+${sum('r429NoRetryAfter')} without)` : ''}` : '—'} | ${r.anon ? sum('timeout') : '—'} | ${r.anon ? sum('error') + sum('other') : '—'} | ${r.anon ? f(pct(okMs, 99)) : '—'} | ${r.peakRssMB.toFixed(0)} | ${r.load[0].toFixed(2)} → ${r.load[1].toFixed(2)} |\n`;
  }
  for (const r of rows) {
    if (r.refusals && Object.keys(r.refusals).length) s += `\n${r.name.replace(/ \(.*/, '')}: anonymous decisions by the server: ${Object.entries(r.refusals).map(([k, v]) => `${k} ${v}`).join(', ')}\n`;
  }
  const failing = rows.filter((r) => r.user.failures && r.user.lastError);
  for (const r of failing) s += `\n${r.name}: the user's last failure: ${r.user.lastError}\n`;
  return s;
}

export async function floodBench({ durationS = 60, clients = 200, only } = {}) {
  const T = mkdtempSync(join(tmpdir(), 'gitwire-flood-'));
  const stacks = [];
  try {
    const root = join(T, 'root');
    mkdirSync(root);
    const repo = join(root, 'repo.git');
    process.stderr.write('flood: building the repository\n');
    const revs = buildRepo(repo);
    const start = Math.floor(revs.length / 2);
    git(['update-ref', 'refs/heads/moving', revs[start - 1]], { cwd: repo });
    const head = git(['rev-parse', 'main'], { cwd: repo }).trim();
    const userDir = join(T, 'user.git');
    git(['clone', '-q', '--bare', '--no-local', repo, userDir]);
    const pw = join(T, 'htpasswd');
    const bcrypt = createRequire(import.meta.url)('bcryptjs');
    writeFileSync(pw, `${USER}:${bcrypt.hashSync(PASSWORD, 10)}\n`);
    const cache = join(T, 'pack-cache');
    const durationMs = durationS * 1000;
    const ctx = { repo, userDir, revs, start, durationMs, clients, head };
    const rows = [];
    const want = (n) => !only || only.split(',').some((o) => n.toLowerCase().includes(o.toLowerCase()));
    const gw = async (name, args, c = clients) => {
      if (!want(name)) return;
      process.stderr.write(`flood: ${name}\n`);
      const s = await startGitwire(root, ['--htpasswd', pw, ...args]);
      stacks.push(s);
      try { rows.push(await row(name, s, { ...ctx, clients: c, auth: true })); } finally { await s.stop(); stacks.pop(); }
    };
    await gw('gitwire, the user alone', [], 0);
    await gw('gitwire serve, defaults', []);
    // GITWIRE_FLOOD_RECIPE: other flags in place of the recipe's (to try settings)
    const recipe = process.env.GITWIRE_FLOOD_RECIPE ? process.env.GITWIRE_FLOOD_RECIPE.split(/\s+/).filter(Boolean) : RECIPE;
    await gw(`gitwire serve, ${recipe === RECIPE ? 'docs/limits.md recipe' : 'GITWIRE_FLOOD_RECIPE'} (${recipe.join(' ')} --pack-cache DIR)`, [...recipe, '--pack-cache', cache]);
    if (want('nginx')) {
      const missing = nginxMissing();
      if (missing) process.stderr.write(`flood: nginx row skipped: ${missing}\n`);
      else {
        process.stderr.write('flood: nginx + fcgiwrap + http-backend\n');
        const n = await startNginxStack(root, join(T, 'nginx'), { env });
        stacks.push(n);
        try { rows.push(await row('nginx + fcgiwrap (4 children) + http-backend', n, { ...ctx, auth: false })); } finally { await n.stop(); stacks.pop(); }
      }
    }
    let out = renderRows(rows, { clients, durationMs });
    out += `\n${cpus().length} cores; load average when the run ended: ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`;
    const outDir = join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    const date = new Date().toISOString();
    writeFileSync(join(outDir, `flood-${date.replace(/[:.]/g, '-')}.json`), JSON.stringify({ date, clients, durationS, recipe: RECIPE, rows: rows.map((r) => ({ ...r, anon: r.anon && Object.fromEntries(Object.entries(r.anon).map(([k, v]) => [k, { ...v, okMs: undefined, okP50: pct(v.okMs, 50), okP99: pct(v.okMs, 99) }])) })) }, null, 2));
    return out;
  } finally {
    for (const s of stacks) await s.stop();
    rmSync(T, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { parseArgs } = await import('node:util');
  const { values } = parseArgs({ options: { duration: { type: 'string' }, clients: { type: 'string' }, only: { type: 'string' } } });
  process.stdout.write(await floodBench({ durationS: Number(values.duration ?? 60), clients: Number(values.clients ?? 200), only: values.only }));
}
