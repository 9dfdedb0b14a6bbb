/**
 * Reflogs (`logs/<ref>`), read newest first, and read_ref_at() for
 * `<ref>@{<n>}`: the n-th prior value of a ref.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface ReflogEntry { old: Buffer; new: Buffer; time: number; tz: string; message: string }

function logPath(gitDir: string, commonDir: string, ref: string): string {
  const perWorktree = ref === 'HEAD' || !ref.startsWith('refs/') || /^refs\/(worktree|bisect|rewritten)\//.test(ref);
  return join(perWorktree ? gitDir : commonDir, 'logs', ref);
}

export function reflogExists(gitDir: string, commonDir: string, ref: string): boolean {
  const p = logPath(gitDir, commonDir, ref);
  try { return existsSync(p) && statSync(p).isFile(); } catch { return false; }
}

/** All entries, oldest first (a missing log reads as empty). */
export function readReflog(gitDir: string, commonDir: string, ref: string, hexLen: number): ReflogEntry[] {
  let raw: Buffer;
  try { raw = readFileSync(logPath(gitDir, commonDir, ref)); } catch { return []; }
  const out: ReflogEntry[] = [];
  let p = 0;
  while (p < raw.length) {
    let nl = raw.indexOf(10, p);
    if (nl < 0) nl = raw.length;
    const line = raw.subarray(p, nl);
    p = nl + 1;
    if (line.length < 2 * hexLen + 2 || line[hexLen] !== 0x20 || line[2 * hexLen + 1] !== 0x20) continue;
    const old = Buffer.from(line.toString('latin1', 0, hexLen), 'hex');
    const nw = Buffer.from(line.toString('latin1', hexLen + 1, 2 * hexLen + 1), 'hex');
    if (old.length * 2 !== hexLen || nw.length * 2 !== hexLen) continue;
    const rest = line.subarray(2 * hexLen + 2);
    const gt = rest.lastIndexOf(0x3e); // '>' ends the identity
    if (gt < 0) continue;
    const tab = rest.indexOf(9, gt);
    const when = rest.toString('utf8', gt + 1, tab < 0 ? rest.length : tab).trim().split(' ');
    out.push({ old, new: nw, time: Number(when[0] ?? 0), tz: when[1] ?? '+0000', message: tab < 0 ? '' : rest.toString('utf8', tab + 1) });
  }
  return out;
}

export type RefAtResult =
  | { found: true; oid: Buffer }
  /** fewer entries than asked for: `count` entries, and the oldest entry's old value */
  | { found: false; count: number; oldest?: Buffer };

/** read_ref_at() for a count: `current` is the ref's value now (what @{0} gives on an empty log). */
export function readRefAtCount(entries: ReflogEntry[], n: number, current: Buffer): RefAtResult {
  if (entries.length === 0) return n === 0 ? { found: true, oid: current } : { found: false, count: 0 };
  if (n === 0) return { found: true, oid: current };
  if (n < entries.length) return { found: true, oid: entries[entries.length - 1 - n]!.new };
  return { found: false, count: entries.length, oldest: entries[0]!.old };
}

/** read_ref_at() for a time: the value the ref had at `time` (the newest entry at or before it). */
export function readRefAtTime(entries: ReflogEntry[], time: number, current: Buffer): RefAtResult & { cutoff?: ReflogEntry } {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.time <= time) return { found: true, oid: i === entries.length - 1 ? current : e.new, cutoff: e };
  }
  if (!entries.length) return { found: false, count: 0 };
  return { found: false, count: entries.length, oldest: entries[0]!.old, cutoff: entries[0] };
}
