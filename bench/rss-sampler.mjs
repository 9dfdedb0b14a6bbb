/**
 * Peak RSS of whole process trees (a server and everything it runs, its
 * short-lived children included), sampled from /proc in a worker thread,
 * so that it goes on while the bench's main thread blocks in spawnSync.
 * Each sample is the sum of the resident sets (statm) of every process
 * under the roots; shared pages (a binary's text) count once per process,
 * as in each process's own RSS. The kernel keeps no peak for a sum of
 * processes, and children (fcgiwrap's CGIs, reaped by the kernel) leave
 * none behind, hence sampling: a peak that lasts less than the interval
 * can be missed, on both sides alike.
 *
 *   const s = rssSampler(10); s.watch([pid, -pid2, …]); … await s.peakKB(); s.close();
 *   (-pid2: the tree under pid2, without pid2 itself)
 */
import { Worker } from 'node:worker_threads';

const MAX_ROOTS = 16;

const WORKER = `
const { workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const { roots, ctl, peak, interval } = workerData;
const PAGE_KB = 4;
const kids = (pid) => { try { return readFileSync('/proc/' + pid + '/task/' + pid + '/children', 'latin1').split(' ').filter(Boolean).map(Number); } catch { return []; } };
const rss = (pid) => { try { return Number(readFileSync('/proc/' + pid + '/statm', 'latin1').split(' ')[1]) * PAGE_KB; } catch { return 0; } };
const tree = (pid) => { let kb = rss(pid); for (const c of kids(pid)) kb += tree(c); return kb; };
let gen = -1;
const tick = () => {
  if (Atomics.load(ctl, 1) === 1) return process.exit(0);
  const g = Atomics.load(ctl, 0);
  if (g !== gen) { gen = g; peak[0] = 0; }
  let kb = 0;
  // a negative root: its descendants without itself
  for (let i = 0; i < roots.length && roots[i] !== 0; i++) kb += roots[i] > 0 ? tree(roots[i]) : kids(-roots[i]).reduce((n, c) => n + tree(c), 0);
  if (kb > peak[0]) peak[0] = kb;
};
setInterval(tick, interval);
`;

export function rssSampler(intervalMs = 10) {
  const roots = new Int32Array(new SharedArrayBuffer(4 * MAX_ROOTS));
  const ctl = new Int32Array(new SharedArrayBuffer(8));
  const peak = new Float64Array(new SharedArrayBuffer(8));
  const w = new Worker(WORKER, { eval: true, workerData: { roots, ctl, peak, interval: intervalMs } });
  w.unref();
  return {
    /** the roots whose trees are summed */
    watch(pids) {
      if (pids.length > MAX_ROOTS) throw new Error('too many roots');
      roots.fill(0);
      pids.forEach((p, i) => { roots[i] = p; });
      Atomics.add(ctl, 0, 1);
    },
    /** start a new peak */
    reset() { Atomics.add(ctl, 0, 1); },
    /** the highest sum since the last watch() or reset(), in KiB (one interval after it, at least) */
    async peakKB() { await new Promise((r) => setTimeout(r, 2 * intervalMs)); return peak[0]; },
    close() { Atomics.store(ctl, 1, 1); return w.terminate(); },
  };
}
