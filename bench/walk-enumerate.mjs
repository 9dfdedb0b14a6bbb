#!/usr/bin/env node
/**
 * Object enumeration without bitmaps (#37 part 2): walkPlan in this
 * process against `git pack-objects --revs --stdout` (bitmaps off) on the
 * same request, for a full clone of the default branch and an incremental
 * fetch (wants HEAD, haves HEAD~300). git's figure is its
 * "enumerate-objects" region (GIT_TRACE2_PERF); ours is wall and CPU time
 * of walkPlan with a fresh Repository each run. Load average printed.
 *
 *   node bench/walk-enumerate.mjs <bare repository> [--runs N] [--behind K]
 *
 * Needs a build (npx tsc -p tsconfig.json).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const { walkPlan } = await import(join(ROOT, 'build/src/pack/produce/enumerate/index.js'));
const { Repository } = await import(join(ROOT, 'build/src/repo/repository.js'));
const { packObjectsArgs, packObjectsInput } = await import(join(ROOT, 'build/src/pack/pack-objects.js'));

const { values: opt, positionals } = parseArgs({ allowPositionals: true, options: { runs: { type: 'string' }, behind: { type: 'string' } } });
const gitDir = positionals[0];
if (!gitDir) { console.error('usage: walk-enumerate.mjs <bare repository> [--runs N] [--behind K]'); process.exit(2); }
const RUNS = Number(opt.runs ?? 3);
const BEHIND = Number(opt.behind ?? 300);
const rev = (r) => Buffer.from(execFileSync('git', ['--git-dir', gitDir, 'rev-parse', r]).toString().trim(), 'hex');
const base = { gitDir, wants: [], haves: [], extraEdges: [], shallow: [], useShallow: false, thin: false, progress: false, ofsDelta: true, includeTag: false };
const cases = [
  { name: 'full clone (HEAD)', req: { ...base, wants: [rev('HEAD')] } },
  { name: `incremental (HEAD, have HEAD~${BEHIND}), thin`, req: { ...base, wants: [rev('HEAD')], haves: [rev(`HEAD~${BEHIND}`)], thin: true } },
];

/** git's enumerate-objects region (ms, wall) and the whole pack-objects run's CPU (ms, rusage: enumeration plus writing) */
function gitEnumerate(req) {
  const ru = join(tmpdir(), `walk-enumerate-${process.pid}.ru`);
  const r = spawnSync('python3', [join(ROOT, 'bench/rusage.py'), 'x', ru, 'git', '-c', 'pack.useBitmaps=false', ...packObjectsArgs(req)], {
    input: packObjectsInput(req), env: { ...process.env, GIT_DIR: gitDir, GIT_TRACE2_PERF: '1', GIT_TRACE2_PERF_BRIEF: '1' }, maxBuffer: 1 << 30, stdio: ['pipe', 'ignore', 'pipe'],
  });
  const [, user, sys] = readFileSync(ru, 'latin1').trim().split(' ').map(Number);
  gitCpu.push((user + sys) * 1000);
  // "... | region_leave | r0 | 12.345678 | ... | pack-objects | label:enumerate-objects"
  const line = r.stderr.toString().split('\n').find((l) => l.includes('region_leave') && l.includes('enumerate-objects'));
  const f = line?.split('|').map((s) => s.trim());
  return f ? Number(f[f.findIndex((x) => /^[0-9.]+$/.test(x) && x.includes('.')) + 1] ?? NaN) * 1000 : NaN;
}
let gitCpu = [];

const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
console.log(`repository ${gitDir}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const c of cases) {
  const ours = [], cpu = [], theirs = [];
  gitCpu = [];
  let count = 0, rss = 0;
  for (let i = 0; i < RUNS; i++) {
    theirs.push(gitEnumerate(c.req));
    const repo = Repository.open(gitDir);
    const t0 = performance.now(), c0 = process.cpuUsage();
    const plan = await walkPlan(repo, c.req);
    const c1 = process.cpuUsage(c0);
    ours.push(performance.now() - t0);
    cpu.push((c1.user + c1.system) / 1000);
    count = plan.count;
    rss = Math.max(rss, process.memoryUsage().rss);
    repo.close();
  }
  console.log(`${c.name}: ${count} objects; walkPlan ${med(ours).toFixed(0)} ms wall, ${med(cpu).toFixed(0)} ms CPU (median of ${RUNS}); git enumerate-objects ${med(theirs).toFixed(0)} ms wall, whole pack-objects ${med(gitCpu).toFixed(0)} ms CPU; rss ${(rss / 2 ** 20).toFixed(0)} MiB`);
}
console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
