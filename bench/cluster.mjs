/**
 * `npm run bench -- cluster`: three `gitwire serve` nodes over one root and
 * one pack-cache directory, with and without `--redis` (a redis-server
 * started here on loopback), in one run:
 *
 * - fan-out: 30 identical concurrent clones of the history fixture, spread
 *   round-robin over the three nodes: pack-objects runs (counted by an
 *   uploadpack.packObjectsHook), total server CPU (the three nodes' process
 *   trees: serve, its spawn helper, pack-objects), the slowest clone's wall.
 *   Goal: with --redis one run, and CPU <= 0.5x of the independent nodes.
 * - incremental fetch through one node with fleet limits in Redis against
 *   the same limits counted in-process: client wall and server CPU per
 *   fetch (serve's own from schedstat, and redis-server's), medians of runs
 *   in rotated order, with a second in-process node as the control (what
 *   two identical nodes differ by). Goal: <= 1 ms and <= 5% added.
 *
 * Writes the table to stdout.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, ownCpuMs, treeCpuMs } from './proc.mjs';
import * as fx from './fixtures.mjs';
import { median } from './parse.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const RUNS = Number(process.env.CLUSTER_BENCH_RUNS ?? 15);
const CLONES = 30;
/** fetches per sample of the incremental fetch */
const FETCHES = Number(process.env.CLUSTER_BENCH_FETCHES ?? 10);
/** CLUSTER_BENCH_ONLY=fetch: only the incremental fetch rows */
const FETCH_ONLY = process.env.CLUSTER_BENCH_ONLY === 'fetch';
const env = fx.env;


async function listening(port) {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((r) => { const s = connect(port, '127.0.0.1'); s.once('connect', () => { s.destroy(); r(true); }); s.once('error', () => r(false)); });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}

function serve(root, args, extraEnv = {}) {
  const child = spawn(BIN, ['serve', root, '--http', '0', '--quiet', ...args], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d.toString();
      const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(buf);
      if (m) resolve({ child, port: Number(m[1]), stop: () => new Promise((r) => { if (child.exitCode !== null) return r(); child.once('exit', r); child.kill('SIGTERM'); }) });
    });
    child.once('exit', (c) => reject(new Error(`serve exited ${c}`)));
  });
}

function gitAsync(args, cwd) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const c = spawn('git', args, { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d) => { err += d; });
    c.on('close', (code) => resolve({ code, err, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
  });
}

export async function clusterBench() {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) {
    process.stderr.write('cluster bench: redis-server not found (Debian redis-server); skipped\n');
    return '';
  }
  const T = mkdtempSync(join(tmpdir(), 'gitwire-cluster-bench-'));
  const hist = await fx.history();
  const inc = await fx.incremental();
  const srv = join(T, 'srv');
  mkdirSync(srv);
  execFileSync('cp', ['-a', hist, join(srv, 'history.git')]);
  execFileSync('cp', ['-a', inc.server, join(srv, 'inc.git')]);
  const redisPort = await freePort();
  const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', T], { stdio: 'ignore' });
  const rows = [];
  try {
    await listening(redisPort);
    const hookLog = join(T, 'hook.log');
    const hook = join(T, 'hook.sh');
    writeFileSync(hook, `#!/bin/sh\necho run >> '${hookLog}'\nexec "$@"\n`);
    chmodSync(hook, 0o755);
    const hookEnv = { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'uploadpack.packObjectsHook', GIT_CONFIG_VALUE_0: hook };

    // fan-out, each mode on a fresh cache directory
    const fanout = async (coordinated) => {
      const cache = join(T, `cache-${coordinated ? 'redis' : 'local'}`);
      rmSync(cache, { recursive: true, force: true });
      writeFileSync(hookLog, '');
      const args = ['--pack-cache', cache, ...(coordinated ? ['--redis', `redis://127.0.0.1:${redisPort}`] : [])];
      const nodes = [];
      for (let i = 0; i < 3; i++) nodes.push(await serve(srv, args, hookEnv));
      try {
        const cpu0 = nodes.map((n) => treeCpuMs(n.child.pid));
        const rs = await Promise.all(Array.from({ length: CLONES }, (_, i) => gitAsync(['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${nodes[i % 3].port}/history.git`, join(T, `fan-${coordinated}-${i}`)])));
        const cpu = nodes.reduce((n, x, i) => n + treeCpuMs(x.child.pid) - cpu0[i], 0);
        const bad = rs.filter((r) => r.code !== 0);
        if (bad.length) throw new Error(`clone failed: ${bad[0].err}`);
        const runs = readFileSync(hookLog, 'utf8').split('\n').filter(Boolean).length;
        return { runs, cpuMs: Math.round(cpu), slowestMs: Math.round(Math.max(...rs.map((r) => r.ms))) };
      } finally {
        await Promise.all(nodes.map((n) => n.stop()));
        for (let i = 0; i < CLONES; i++) rmSync(join(T, `fan-${coordinated}-${i}`), { recursive: true, force: true });
      }
    };
    if (!FETCH_ONLY) {
      await fanout(false); // warm-up (fixture pages, the bundle)
      const local = await fanout(false);
      const coord = await fanout(true);
      rows.push(['fan-out 30 clones / 3 nodes', 'pack-objects runs', String(local.runs), String(coord.runs), '']);
      rows.push(['', 'server CPU ms (3 nodes)', String(local.cpuMs), String(coord.cpuMs), `${(coord.cpuMs / local.cpuMs).toFixed(2)}x`]);
      rows.push(['', 'slowest clone wall ms', String(local.slowestMs), String(coord.slowestMs), `${(coord.slowestMs / local.slowestMs).toFixed(2)}x`]);
    }

    // incremental fetch: fleet limits in Redis against the same limits in-process
    const limits = ['--max-packs-per-repo', '4', '--max-packs-per-client', '4'];
    // a second node without --redis is the control: two identical nodes differ by this much
    // (which process runs where, start order), the floor under which a difference is noise
    const byKind = { local: await serve(srv, limits), redis: await serve(srv, [...limits, '--redis', `redis://127.0.0.1:${redisPort}`]), control: await serve(srv, limits) };
    const kinds = ['local', 'redis', 'control'];
    const fresh = () => ({ ms: [], cpu: [], own: [], redis: [], total: [] });
    const sample = { local: fresh(), redis: fresh(), control: fresh() };
    try {
      // a sample is FETCHES fetches, each into a fresh copy: CPU comes in 10 ms ticks, a
      // quarter of one fetch, and 5 % of a fetch is 2 ms
      const once = async (kind) => {
        const node = byKind[kind];
        const copies = [];
        for (let i = 0; i < FETCHES; i++) {
          const c = join(T, `inc-${kind}-${i}`);
          rmSync(c, { recursive: true, force: true });
          // hard links where the fixtures and the temporary directory share a filesystem (fetch
          // replaces files by rename, never writes into one), else a copy
          try { execFileSync('cp', ['-al', inc.client, c], { stdio: 'ignore' }); } catch { rmSync(c, { recursive: true, force: true }); execFileSync('cp', ['-a', inc.client, c]); }
          copies.push(c);
        }
        const cpu0 = treeCpuMs(node.child.pid), own0 = ownCpuMs(node.child.pid), redis0 = ownCpuMs(redis.pid);
        let ms = 0;
        for (const c of copies) {
          const r = await gitAsync(['fetch', '-q', `http://127.0.0.1:${node.port}/inc.git`, '+refs/heads/*:refs/remotes/o/*'], c);
          if (r.code !== 0) throw new Error(`fetch failed: ${r.err}`);
          ms += r.ms;
        }
        const cpu = (treeCpuMs(node.child.pid) - cpu0) / FETCHES, rcpu = (ownCpuMs(redis.pid) - redis0) / FETCHES;
        sample[kind].cpu.push(cpu);
        sample[kind].own.push((ownCpuMs(node.child.pid) - own0) / FETCHES);
        // redis-server's CPU over the same fetches (its idle ticks too, in both columns)
        sample[kind].redis.push(rcpu);
        sample[kind].total.push(cpu + rcpu);
        sample[kind].ms.push(ms / FETCHES);
        for (const c of copies) rmSync(c, { recursive: true, force: true });
      };
      for (const k of kinds) await once(k);
      for (const k of kinds) sample[k] = fresh();
      // each run in a rotated order: each node is first, second and third equally often
      for (let i = 0; i < RUNS; i++) for (let j = 0; j < kinds.length; j++) await once(kinds[(i + j) % kinds.length]);
    } finally {
      for (const k of kinds) await byKind[k].stop();
    }
    const ml = median(sample.local.ms), mr = median(sample.redis.ms);
    const cl = median(sample.local.cpu), cr = median(sample.redis.cpu);
    rows.push([`incremental fetch (${RUNS} runs of ${FETCHES})`, 'client wall ms per fetch, median', ml.toFixed(1), mr.toFixed(1), `${(mr - ml >= 0 ? '+' : '')}${(mr - ml).toFixed(1)} ms`]);
    rows.push(['', 'server CPU ms per fetch, median', cl.toFixed(1), cr.toFixed(1), `${(((cr - cl) / cl) * 100).toFixed(0)}%`]);
    const pct = (a, b) => `${b - a >= 0 ? '+' : ''}${(((b - a) / a) * 100).toFixed(1)}%`;
    const ol = median(sample.local.own), or = median(sample.redis.own);
    rows.push(['', "serve's own CPU ms per fetch (schedstat), median", ol.toFixed(2), or.toFixed(2), `${or - ol >= 0 ? '+' : ''}${(or - ol).toFixed(2)} ms`]);
    const rl = median(sample.local.redis), rr = median(sample.redis.redis);
    rows.push(['', 'redis-server CPU ms per fetch (schedstat), median', rl.toFixed(2), rr.toFixed(2), `${rr - rl >= 0 ? '+' : ''}${(rr - rl).toFixed(2)} ms`]);
    const tl = median(sample.local.total), tr = median(sample.redis.total);
    rows.push(['', 'server + redis-server CPU ms per fetch, median', tl.toFixed(1), tr.toFixed(1), pct(tl, tr)]);
    const mc = median(sample.control.ms), oc = median(sample.control.own), tc = median(sample.control.total);
    rows.push(['control: a 2nd node without --redis', 'client wall ms per fetch, median', ml.toFixed(1), mc.toFixed(1), `${mc - ml >= 0 ? '+' : ''}${(mc - ml).toFixed(1)} ms`]);
    rows.push(['(in the --redis column)', "serve's own CPU ms per fetch (schedstat), median", ol.toFixed(2), oc.toFixed(2), `${oc - ol >= 0 ? '+' : ''}${(oc - ol).toFixed(2)} ms`]);
    rows.push(['', 'server + redis-server CPU ms per fetch, median', tl.toFixed(1), tc.toFixed(1), pct(tl, tc)]);
  } finally {
    redis.kill('SIGTERM');
    await new Promise((r) => (redis.exitCode !== null ? r() : redis.once('exit', r)));
    rmSync(T, { recursive: true, force: true });
  }
  const head = ['case', 'measure', 'in-process (no --redis)', '--redis', 'redis / in-process'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(w[i])).join(' | ')} |\n`;
  return `\n## Several nodes (bench/cluster.mjs)\n\n${line(head)}${line(w.map((n) => '-'.repeat(n)))}${rows.map(line).join('')}`;
}
