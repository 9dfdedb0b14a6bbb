#!/usr/bin/env node
/**
 * Counting objects with reachability bitmaps (issue #37): bitmapPlan's
 * CPU and wall time for a full clone (every ref wanted) and an incremental
 * fetch (wants = <branch>, haves = <branch>~<behind>), with the bitmap
 * resident, and the bitmap's load (cold: not resident, the file in the
 * page cache) against a resident look-up. git's own count for the same
 * sets (`git rev-list --use-bitmap-index --objects`, user+sys) is printed
 * beside it. The minimum and median over the rounds are printed with the
 * load average (the machine is shared: the minimum is the least disturbed).
 *
 *   node bench/bitmap-count.mjs <bare repository with a bitmap> [--rounds N] [--branch B] [--behind K]
 *
 * Make the repository with `git clone --bare …` and `git repack -adb`
 * (a copy of git.git is the reference: ~400k objects).
 */
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '10' }, branch: { type: 'string', default: 'master' }, behind: { type: 'string', default: '300' } } });
const dir = positionals[0];
if (!dir) { console.error('usage: node bench/bitmap-count.mjs <repository> [--rounds N] [--branch B] [--behind K]'); process.exit(2); }
const root = resolve(new URL('..', import.meta.url).pathname);
const { Repository } = await import(`${root}/dist/repo/repository.js`);
const { bitmapPlan, openBitmap, residentBitmaps } = await import(`${root}/dist/pack/bitmap/index.js`);

const rounds = Number(values.rounds);
const gitOut = (args) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', maxBuffer: 1 << 30 }).trim();
const hex = (s) => Buffer.from(s, 'hex');
const tips = [...new Set(gitOut(['for-each-ref', '--format=%(objectname)']).split('\n'))].map(hex);
const tip = hex(gitOut(['rev-parse', values.branch]));
const old = hex(gitOut(['rev-parse', `${values.branch}~${values.behind}`]));
const base = { gitDir: dir, haves: [], extraEdges: [], shallow: [], useShallow: false, thin: false, progress: false, ofsDelta: true, includeTag: false };
const cases = {
  clone: { ...base, wants: tips },
  fetch: { ...base, wants: [tip], haves: [old], thin: true },
};

function stat(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0].toFixed(2)} median ${s[Math.floor(s.length / 2)].toFixed(2)}`;
}

async function timed(fn) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { r, wall, cpu: (c.user + c.system) / 1000 };
}

function gitRevList(args) {
  const res = execFileSync('sh', ['-c', `{ /usr/bin/time -f '%U %S %e' git -C "$0" rev-list --use-bitmap-index --objects ${args} > /dev/null; } 2>&1`, dir], { encoding: 'utf8' }).trim().split('\n').pop().split(' ').map(Number);
  return { cpu: (res[0] + res[1]) * 1000, wall: res[2] * 1000 };
}

console.log(`repository ${dir}; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
// load: cold (nothing resident) against resident
{
  const cold = [], warm = [];
  let bytes = 0;
  for (let i = 0; i < rounds; i++) {
    residentBitmaps.clear();
    const repo = Repository.open(dir);
    const a = await timed(() => openBitmap(repo.odb));
    const b = await timed(() => openBitmap(repo.odb));
    if (!a.r) throw new Error('no usable bitmap');
    cold.push(a.cpu); warm.push(b.wall);
    bytes = residentBitmaps.bytes;
    repo.close();
  }
  console.log(`bitmap load, cold: cpu ms ${stat(cold)}; resident look-up: wall ms ${stat(warm)}; resident bytes ${bytes}`);
}
const repo = Repository.open(dir);
for (const [name, req] of Object.entries(cases)) {
  await bitmapPlan(repo, req); // resident, caches warm
  const cpu = [], wall = [];
  let count = 0;
  for (let i = 0; i < rounds; i++) {
    const t = await timed(() => bitmapPlan(repo, req));
    cpu.push(t.cpu); wall.push(t.wall);
    count = t.r.count;
  }
  const g = [];
  for (let i = 0; i < Math.min(rounds, 5); i++) g.push(gitRevList(name === 'clone' ? '--all' : `${values.branch} ^${values.branch}~${values.behind}`).cpu);
  console.log(`${name}: ${count} objects; bitmapPlan cpu ms ${stat(cpu)}, wall ms ${stat(wall)}; git rev-list --use-bitmap-index cpu ms ${stat(g)}`);
}
console.log(`load average after ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
repo.close();
