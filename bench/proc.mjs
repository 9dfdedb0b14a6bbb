/**
 * Process-tree figures from /proc for the benches that run servers
 * (bench/ssh.mjs, bench/cluster.mjs): CPU and RSS of a process and every
 * descendant, live or reaped.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';

export const freePort = () => new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });

function procTimes(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ms = (i) => (Number(f[i]) * 1000) / 100;
  return { self: ms(11) + ms(12), reaped: ms(13) + ms(14) };
}

export function children(pid) {
  const out = [];
  try { for (const t of readdirSync(`/proc/${pid}/task`)) for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c)); } catch { /* gone */ }
  return out;
}

/** CPU of one process (all its threads, not its children) in ms, from schedstat: nanoseconds, not /proc's 10 ms ticks */
export function ownCpuMs(pid) {
  let ns = 0;
  try { for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]); } catch { /* gone */ }
  return ns / 1e6;
}

/** CPU of a process tree: its own, its reaped children's, its live descendants' */
export function treeCpuMs(pid) {
  try { const t = procTimes(pid); return t.self + t.reaped + children(pid).reduce((n, c) => n + (treeCpuMs(c) || 0), 0); } catch { return 0; }
}

export const rssKB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
export const treeRssKB = (pid) => rssKB(pid) + children(pid).reduce((n, c) => n + treeRssKB(c), 0);
