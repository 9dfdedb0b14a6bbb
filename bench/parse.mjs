/** Parsing what the harness measures with: strace logs and /usr/bin/time figures. */

/** `/usr/bin/time -f '%e %U %S %M'` (or bench/rusage.py's finer figures) → wall s, user s, sys s, max RSS KiB. */
export function parseTime(text) {
  const lines = text.trim().split('\n').filter((l) => /^\d+(\.\d+)?\s+\d+(\.\d+)?\s+\d+(\.\d+)?\s+\d+$/.test(l.trim()));
  if (!lines.length) throw new Error(`no /usr/bin/time figures in: ${JSON.stringify(text.slice(0, 200))}`);
  const [wall, user, sys, rss] = lines[lines.length - 1].trim().split(/\s+/).map(Number);
  return { wallMs: Math.round(wall * 1e6) / 1e3, cpuMs: Math.round((user + sys) * 1e6) / 1e3, rssKB: rss };
}

const CALL = /^(\d+)\s+(\w+)\((.*)$/;
const RESUMED = /^(\d+)\s+<\.\.\. (\w+) resumed>.*?=\s+(-?\d+)/;
const WRITES = new Set(['write', 'writev', 'sendmsg', 'sendto', 'pwrite64']);

/**
 * Count write-family calls on `fd` in an `strace -f -o` log, leaving out
 * processes that exec'd pack-objects (the pack generator is git's in both
 * cases: we count the serving process itself).
 */
export function parseStrace(text, fd = 1) {
  const excluded = new Set();
  const pending = new Map();
  let writes = 0, bytes = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    let m = RESUMED.exec(line);
    if (m) {
      const p = pending.get(m[1]);
      if (p && p === m[2] && Number(m[3]) > 0) bytes += Number(m[3]);
      pending.delete(m[1]);
      continue;
    }
    m = CALL.exec(line);
    if (!m) continue;
    const [, pid, call, rest] = m;
    if (call === 'execve') {
      if (/"pack-objects"/.test(rest)) excluded.add(pid);
      continue;
    }
    if (!WRITES.has(call) || excluded.has(pid)) continue;
    const fdm = /^(\d+),/.exec(rest);
    if (!fdm || Number(fdm[1]) !== fd) continue;
    writes++;
    if (/<unfinished \.\.\.>$/.test(line)) { pending.set(pid, call); continue; }
    const r = /=\s+(-?\d+)(\s+\w+.*)?$/.exec(line);
    if (r && Number(r[1]) > 0) bytes += Number(r[1]);
  }
  return { writes, bytes };
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  if (!n) return NaN;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
