/**
 * `npm run bench -- delta`: the native delta search (src/pack/produce/delta)
 * against git's, on the same blobs: successive versions of a few files of
 * git.git (read from a clone of git.git named by GIT_MIRROR or GITWIRE_GIT_MIRROR),
 * written as loose objects into a fresh bare repository.
 *
 * - git: the time of `git pack-objects --threads=1 --window=10 --depth=50`'s
 *   prepare-pack region (trace2: object sizes, then the delta search,
 *   reading each loose object), one thread, the fastest of alternating runs;
 *   the oracle git 2.55 when GITWIRE_GIT_2_55 names one that has
 *   one, else the git on PATH;
 * - ours: searchDeltas() over the same objects, each load() reading and
 *   inflating its loose object (wall and CPU);
 * - total delta bytes of each (the representation sizes: delta or whole);
 * - createDelta() throughput on consecutive versions (target MB/s, index
 *   build included);
 * - what handing the blobs to a worker_thread would cost (postMessage
 *   there and back), against the search itself;
 * - include-tag halfway over 50,000 annotated tags (includeTagRows()), from
 *   one bitmapped pack and from loose objects: git's search and CPU
 *   against our whole request's, pack bytes, the event loop's longest wait
 *   (these rows need no git.git clone).
 * Writes a markdown table to stdout, with the load average.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { inflateSync } from 'node:zlib';
import { median } from './parse.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MIRROR = process.env.GIT_MIRROR ?? process.env.GITWIRE_GIT_MIRROR ?? '';
const RUNS = Number(process.env.DELTA_BENCH_RUNS ?? 5);
const FILES = [
  ['builtin/pack-objects.c', 40], ['diff-delta.c', 20], ['Makefile', 40], ['pack-bitmap.c', 30],
  ['upload-pack.c', 40], ['refs/files-backend.c', 30], ['Documentation/config/pack.adoc', 20], ['t/t5300-pack-object.sh', 20],
];
const GIT_ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C' };

function packNameHash(name) {
  let hash = 0;
  for (const c of Buffer.from(name)) {
    if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) continue;
    hash = ((hash >>> 2) + (c << 24)) >>> 0;
  }
  return hash;
}

const ORACLE = process.env.GITWIRE_GIT_2_55 ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : 'git';
const GIT = existsSync(ORACLE) ? ORACLE : 'git';

/**
 * git pack-objects: the wall time of its prepare-pack region (trace2), and
 * the CPU of the whole process (rusage; the search is nearly all of it:
 * the deltas are cached, so writing deflates ~3% of the bytes)
 */
function gitPack(args, opts) {
  const perf = join(opts.dir, 'perf');
  const ru = join(opts.dir, 'rusage');
  rmSync(perf, { force: true });
  const r = spawnSync('python3', [join(ROOT, 'bench', 'rusage.py'), '-o', ru, GIT, 'pack-objects', ...args], { cwd: opts.cwd, input: opts.input, env: { ...GIT_ENV, GIT_TRACE2_PERF: perf }, maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`pack-objects ${args.join(' ')}: ${r.stderr}`);
  const line = readFileSync(perf, 'utf8').split('\n').find((l) => l.includes('region_leave') && l.includes('label:prepare-pack'));
  const f = line.split('|').map((x) => x.trim());
  const [, user, sys] = readFileSync(ru, 'utf8').trim().split(' ').map(Number);
  return { prepare: Number(f[6]), cpu: user + sys, name: r.stdout.toString().trim() };
}

function loose(repo, oid) {
  const raw = inflateSync(readFileSync(join(repo, 'objects', oid.slice(0, 2), oid.slice(2))));
  return raw.subarray(raw.indexOf(0) + 1);
}

/**
 * include-tag over many annotated tags (test/attack-native-requests.test.ts's
 * repository): 200 commits, TAGS tags spread over them, one bitmapped pack;
 * and the same objects loose. The request: a want halfway (main~100) with
 * include-tag, no haves. git: pack-objects' prepare-pack region (wall) and
 * its whole CPU, one thread; ours: the whole request in this process (plan,
 * candidates, search, write), its CPU, the search's wall, and the longest
 * the event loop waited meanwhile. Pack bytes of each.
 */
async function includeTagRows() {
  const TAGS = Number(process.env.DELTA_BENCH_TAGS ?? 50_000);
  const { Repository } = await import(pathToFileURL(join(ROOT, 'dist/repo/repository.js')).href);
  const { bitmapPlan } = await import(pathToFileURL(join(ROOT, 'dist/pack/bitmap/index.js')).href);
  const { walkPlan } = await import(pathToFileURL(join(ROOT, 'dist/pack/produce/enumerate/index.js')).href);
  const { writePack } = await import(pathToFileURL(join(ROOT, 'dist/pack/produce/write/index.js')).href);
  const { windowSearch } = await import(pathToFileURL(join(ROOT, 'dist/pack/produce/delta/writer-seam.js')).href);
  const { Slicer } = await import(pathToFileURL(join(ROOT, 'dist/util/budget.js')).href);
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-delta-tags-'));
  try {
    const packed = join(dir, 'tags.git');
    const loose = join(dir, 'tags-loose.git');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', packed], { env: GIT_ENV });
    const parts = [];
    for (let c = 0; c < 200; c++) parts.push(`commit refs/heads/main\nmark :${c + 1}\ncommitter C <c@example.com> ${1700000000 + c} +0000\ndata 3\nx${c % 10}\nM 644 inline top.txt\ndata ${String(c).length + 1}\n${c}\n\n`);
    for (let i = 0; i < TAGS; i++) parts.push(`tag t${String(i).padStart(5, '0')}\nfrom :${(i % 200) + 1}\ntagger T <t@example.com> 1700000000 +0000\ndata 4\nmsg\n`);
    execFileSync('git', ['fast-import', '--quiet'], { cwd: packed, input: parts.join(''), env: GIT_ENV, maxBuffer: 1 << 28 });
    execFileSync('git', ['repack', '-adbq'], { cwd: packed, env: GIT_ENV });
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', loose], { env: GIT_ENV });
    const pack = readdirSync(join(packed, 'objects', 'pack')).find((n) => n.endsWith('.pack'));
    execFileSync('git', ['unpack-objects', '-q'], { cwd: loose, input: readFileSync(join(packed, 'objects', 'pack', pack)), env: GIT_ENV, maxBuffer: 1 << 28 });
    const refs = execFileSync('git', ['for-each-ref', '--format=create %(refname) %(objectname)'], { cwd: packed, env: GIT_ENV, maxBuffer: 1 << 28 });
    execFileSync('git', ['update-ref', '--stdin'], { cwd: loose, input: refs, env: GIT_ENV });
    const want = execFileSync('git', ['rev-parse', 'main~100'], { cwd: packed, env: GIT_ENV }).toString().trim();

    const ours = async (repoDir) => {
      const repo = Repository.open(repoDir, { env: { ...process.env, GIT_DIR: undefined } });
      const req = { gitDir: repoDir, wants: [Buffer.from(want, 'hex')], haves: [], extraEdges: [], shallow: [], useShallow: false, thin: false, progress: false, ofsDelta: true, includeTag: true };
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      const c0 = process.cpuUsage();
      const slicer = new Slicer();
      let plan = await bitmapPlan(repo, req, { slicer, warn: () => {} });
      plan ??= await walkPlan(repo, req, { slicer, warn: () => {} });
      const inner = windowSearch({ hashLen: repo.hashLen, slicer, config: repo.config });
      let searchMs = 0, candidates = 0, searchHold = 0;
      const deltaSearch = async (input) => {
        h.reset();
        const t0 = performance.now();
        candidates = input.candidates.length;
        try { return await inner(input); } finally {
          searchMs = performance.now() - t0;
          // a hold is recorded when the monitor's timer runs again: let it
          await new Promise((r) => setTimeout(r, 5));
          searchHold = h.max / 1e6;
        }
      };
      const src = writePack(repo, plan, { ofsDelta: true, progress: false, slicer, deltaSearch });
      const buf = Buffer.alloc(1 << 18);
      while (await src.readInto([buf]) > 0) { /* counted in stats */ }
      await src.done;
      const c = process.cpuUsage(c0);
      h.disable();
      return { cpu: (c.user + c.system) / 1e6, searchMs, searchHold, candidates, bytes: src.stats.bytes };
    };
    const rows = [];
    for (const [label, repoDir] of [['one bitmapped pack', packed], ['loose objects', loose]]) {
      const g = [], o = [];
      for (let r = 0; r < RUNS; r++) {
        const out = join(dir, `g${r}`);
        g.push(gitPack(['--revs', '--include-tag', '--delta-base-offset', '-q', '--threads=1', out], { cwd: repoDir, input: `${want}\n`, dir }));
        o.push(await ours(repoDir));
      }
      const gitBytes = statSync(join(dir, `g0-${g[0].name}.pack`)).size;
      const best = (xs, f) => Math.min(...xs.map(f));
      const om = o.reduce((a, b) => (a.cpu <= b.cpu ? a : b));
      rows.push(`| ${label}: the search, wall s (git: prepare-pack) | ${best(g, (x) => x.prepare).toFixed(3)} | ${best(o, (x) => x.searchMs / 1000).toFixed(3)} (${om.candidates} candidates) | |`);
      rows.push(`| ${label}: CPU s of the whole request (git: pack-objects) | ${best(g, (x) => x.cpu).toFixed(3)} | ${om.cpu.toFixed(3)} | ${(om.cpu / best(g, (x) => x.cpu)).toFixed(2)}x |`);
      rows.push(`| ${label}: pack bytes | ${gitBytes} | ${om.bytes} | ${(om.bytes / gitBytes).toFixed(4)}x |`);
      rows.push(`| ${label}: longest event-loop wait during the search, ms | | ${best(o, (x) => x.searchHold).toFixed(0)} | |`);
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function deltaBench() {
  const head = ['| delta search | git pack-objects (--threads=1) | gitwire | ratio |', '|---|---:|---:|---:|'];
  const tagRows = await includeTagRows();
  if (!MIRROR) {
    const la = loadavg().map((x) => x.toFixed(2)).join(' ');
    return `${[`| include-tag at main~100 over ${Number(process.env.DELTA_BENCH_TAGS ?? 50_000)} annotated tags | git pack-objects (--threads=1) | gitwire | ratio |`, head[1], ...tagRows].join('\n')}\n\ngit: ${GIT}; load average at the end: ${la}; ${RUNS} runs, the fastest of each. (The rows on git.git file histories need GIT_MIRROR: a clone of git.git.)\n`;
  }
  const { createDelta, searchDeltas, searchDeltasThreaded, newDeltaStats } = await import(pathToFileURL(join(ROOT, 'dist/pack/produce/delta/index.js')).href);
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-delta-bench-'));
  try {
    const repo = join(dir, 'r.git');
    execFileSync('git', ['init', '-q', '--bare', repo], { env: GIT_ENV });
    const blobs = [];
    const seen = new Set();
    for (const [path, n] of FILES) {
      const commits = execFileSync('git', ['-C', MIRROR, 'log', '--format=%H', `-n${n}`, 'v2.55.0', '--', path]).toString().trim().split('\n').filter(Boolean);
      for (const c of commits) {
        let data;
        try { data = execFileSync('git', ['-C', MIRROR, 'show', `${c}:${path}`], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }); } catch { continue; }
        const file = join(dir, 'v');
        writeFileSync(file, data);
        const oid = execFileSync('git', ['hash-object', '-w', file], { cwd: repo, env: GIT_ENV }).toString().trim();
        if (seen.has(oid)) continue;
        seen.add(oid);
        blobs.push({ oid, path, data });
      }
    }
    const total = blobs.reduce((a, b) => a + b.data.length, 0);
    const input = blobs.map((b) => `${b.oid} ${b.path}\n`).join('');

    const gitWall = [], gitCpu = [], ourWall = [], ourCpu = [];
    let gitRep = 0;
    const objs = blobs.map((b) => ({ type: 3, size: b.data.length, nameHash: packNameHash(b.path), load: () => loose(repo, b.oid) }));
    let ourRep = 0, stats;
    for (let r = 0; r < RUNS; r++) {
      const g = gitPack(['-q', '--threads=1', '--window=10', '--depth=50', join(dir, `p${r}`)], { cwd: repo, input, dir });
      gitWall.push(g.prepare);
      gitCpu.push(g.cpu);
      if (r === 0) {
        for (const line of execFileSync('git', ['verify-pack', '-v', join(dir, `p0-${g.name}.idx`)], { env: GIT_ENV, maxBuffer: 1 << 28 }).toString().split('\n')) {
          const f = line.split(/\s+/);
          if (f.length >= 5 && /^[0-9a-f]{40}$/.test(f[0])) gitRep += Number(f[2]);
        }
      }
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      stats = newDeltaStats();
      const choices = await searchDeltas(objs, { stats });
      ourWall.push((performance.now() - t0) / 1000);
      const c1 = process.cpuUsage(c0);
      ourCpu.push((c1.user + c1.system) / 1e6);
      if (r === 0) choices.forEach((c, i) => { ourRep += c ? c.deltaSize : blobs[i].data.length; });
    }
    // the fastest run of each: on a shared machine the others are the ones that waited
    const gitSearch = Math.min(...gitWall);
    const ourSearch = Math.min(...ourWall);

    // one pair at a time: each version against the one before it
    const pairs = [];
    for (let i = 1; i < blobs.length; i++) if (blobs[i].path === blobs[i - 1].path) pairs.push([blobs[i - 1].data, blobs[i].data]);
    const rates = [];
    for (let r = 0; r < RUNS; r++) {
      let bytes = 0;
      const c0 = process.cpuUsage();
      for (const [a, b] of pairs) { createDelta(a, b); bytes += b.length; }
      const c = process.cpuUsage(c0);
      rates.push(bytes / (c.user + c.system));
    }

    // the same search on a worker thread: wall, and how busy the loop was meanwhile
    const wWall = [], wElu = [], lElu = [];
    for (let r = 0; r < RUNS; r++) {
      let e0 = performance.eventLoopUtilization();
      let t0 = performance.now();
      await searchDeltasThreaded(objs, { workerMinBytes: 0 });
      wWall.push((performance.now() - t0) / 1000);
      wElu.push(performance.eventLoopUtilization(e0).utilization);
      e0 = performance.eventLoopUtilization();
      t0 = performance.now();
      await searchDeltas(objs);
      lElu.push(performance.eventLoopUtilization(e0).utilization);
    }

    // a worker: the blobs there and the deltas back cost a copy each way
    const worker = new Worker('const { parentPort } = require("node:worker_threads"); parentPort.on("message", (m) => parentPort.postMessage(m));', { eval: true });
    const sends = [];
    for (let r = 0; r < RUNS; r++) {
      const t0 = performance.now();
      await new Promise((resolve) => { worker.once('message', resolve); worker.postMessage(blobs.map((b) => b.data)); });
      sends.push((performance.now() - t0) / 1000);
    }
    await worker.terminate();

    const la = loadavg().map((x) => x.toFixed(2)).join(' ');
    const rows = [
      ...head,
      `| ${blobs.length} blobs, ${(total / 1e6).toFixed(1)} MB, loose: the search, wall s (one thread) | ${gitSearch.toFixed(3)} | ${ourSearch.toFixed(3)} (CPU ${Math.min(...ourCpu).toFixed(3)}) | ${(ourSearch / gitSearch).toFixed(2)}x |`,
      `| CPU s: git's whole pack-objects; our search | ${Math.min(...gitCpu).toFixed(3)} | ${Math.min(...ourCpu).toFixed(3)} | ${(Math.min(...ourCpu) / Math.min(...gitCpu)).toFixed(2)}x |`,
      `| search throughput, MB of objects per s | ${(total / 1e6 / gitSearch).toFixed(1)} | ${(total / 1e6 / ourSearch).toFixed(1)} | |`,
      `| delta bytes (whole objects counted whole) | ${gitRep} | ${ourRep} | ${(ourRep / gitRep).toFixed(4)}x |`,
      `| deltas made / attempted | | ${stats.deltas} / ${stats.attempts} | |`,
      `| createDelta() on ${pairs.length} consecutive versions, target MB per CPU s (index build included) | | ${Math.max(...rates).toFixed(1)} | |`,
      `| on a worker thread: wall s; the loop's utilization meanwhile (on the loop: ${(median(lElu) * 100).toFixed(0)}%) | | ${Math.min(...wWall).toFixed(3)}; ${(median(wElu) * 100).toFixed(0)}% | |`,
      `| blobs to a worker and back (postMessage copies), s | | ${median(sends).toFixed(3)} (${((median(sends) / ourSearch) * 100).toFixed(1)}% of the search) | |`,
      `| **include-tag at main~100 over ${Number(process.env.DELTA_BENCH_TAGS ?? 50_000)} annotated tags** | | | |`,
      ...tagRows,
    ];
    return `${rows.join('\n')}\n\ngit: ${GIT}; load average at the end: ${la}; ${RUNS} runs, the fastest of each (worker copies: median).\n`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) process.stdout.write(await deltaBench());
