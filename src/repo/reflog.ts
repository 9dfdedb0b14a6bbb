/**
 * Reflogs as git's files backend keeps them: `logs/<ref>`, one line per
 * update, `<old> <new> <ident> <time> <tz>\t<message>\n`, appended under
 * the ref's lock (which refs get one follows core.logAllRefUpdates), and
 * read back newest first for `<ref>@{<n>}` (read_ref_at()).
 */
import { mkdir } from 'node:fs/promises';
import { fsPath } from '../util/byte-name.js';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import type { Config } from './config.js';
import { parseBool } from './config.js';

export interface ReflogEntry { old: Buffer; new: Buffer; time: number; tz: string; message: string }

/** Where a ref's log lives: per-worktree refs under the git dir, the rest under the common dir. */
export function logPath(gitDir: string, commonDir: string, ref: string): string {
  const perWorktree = ref === 'HEAD' || !ref.startsWith('refs/') || /^refs\/(worktree|bisect|rewritten)\//.test(ref);
  return join(perWorktree ? gitDir : commonDir, 'logs', ref);
}

export function reflogExists(gitDir: string, commonDir: string, ref: string): boolean {
  const p = logPath(gitDir, commonDir, ref);
  try { return existsSync(fsPath(p)) && statSync(fsPath(p)).isFile(); } catch { return false; }
}

/** All entries, oldest first (a missing log reads as empty). */
export function readReflog(gitDir: string, commonDir: string, ref: string, hexLen: number): ReflogEntry[] {
  let raw: Buffer;
  try { raw = readFileSync(fsPath(logPath(gitDir, commonDir, ref))); } catch { return []; }
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

export type LogAllRefUpdates = 'unset' | 'false' | 'true' | 'always';

export function logAllRefUpdates(config: Config): LogAllRefUpdates {
  const v = config.get('core.logallrefupdates');
  if (v === undefined) return 'unset';
  if (v !== null && v.toLowerCase() === 'always') return 'always';
  return parseBool(v, 'core.logallrefupdates') ? 'true' : 'false';
}

/** should_autocreate_reflog(), with git's default (on unless bare). */
export function shouldAutocreateReflog(mode: LogAllRefUpdates, bare: boolean, name: string): boolean {
  const m = mode === 'unset' ? (bare ? 'false' : 'true') : mode;
  if (m === 'always') return true;
  if (m === 'false') return false;
  return name.startsWith('refs/heads/') || name.startsWith('refs/remotes/') || name.startsWith('refs/notes/') || name === 'HEAD';
}

/** git's timezone format, e.g. +0100 */
function tzString(offsetMin: number): string {
  const sign = offsetMin >= 0 ? '+' : '-';
  const a = Math.abs(offsetMin);
  return `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}${String(a % 60).padStart(2, '0')}`;
}

/** The date part of an ident: GIT_COMMITTER_DATE in git's raw forms (`<secs> <tz>`, `@<secs> <tz>`), else now. */
function identDate(env: NodeJS.ProcessEnv): string {
  const d = env.GIT_COMMITTER_DATE?.trim();
  if (d) {
    const m = /^@?(\d+)(?:\s+([+-]\d{4}))?$/.exec(d);
    if (m) return `${m[1]} ${m[2] ?? '+0000'}`;
    const t = Date.parse(d);
    if (!Number.isNaN(t)) {
      const tz = /([+-]\d{2}):?(\d{2})$/.exec(d);
      return `${Math.floor(t / 1000)} ${tz ? `${tz[1]}${tz[2]}` : '+0000'}`;
    }
  }
  const now = new Date();
  return `${Math.floor(now.getTime() / 1000)} ${tzString(-now.getTimezoneOffset())}`;
}

/** git_committer_info(0): `Name <email> <time> <tz>` from the environment, config, then the system. */
export function committerIdent(config: Config, env: NodeJS.ProcessEnv): string {
  let user = 'unknown';
  try { user = userInfo().username; } catch { /* no passwd entry */ }
  const name = env.GIT_COMMITTER_NAME ?? config.get('user.name') ?? user;
  let email = env.GIT_COMMITTER_EMAIL ?? config.get('user.email') ?? env.EMAIL;
  if (!email) {
    const h = hostname();
    email = `${user}@${h.includes('.') ? h : `${h}.(none)`}`;
  }
  return `${name} <${email}> ${identDate(env)}`;
}

export class Reflogs {
  constructor(readonly commonDir: string, readonly gitDir: string, readonly mode: LogAllRefUpdates, readonly bare: boolean) {}

  path(name: string): string {
    return logPath(this.gitDir, this.commonDir, name);
  }

  /** Append one entry when the ref has a log or should get one. */
  append(name: string, oldHex: string, newHex: string, ident: string, message: string): void {
    const p = this.path(name);
    if (!existsSync(fsPath(p))) {
      if (!shouldAutocreateReflog(this.mode, this.bare, name)) return;
      mkdirSync(fsPath(dirname(p)), { recursive: true });
    }
    const msg = message.replace(/\n+/g, ' ').trim();
    appendFileSync(fsPath(p), `${oldHex} ${newHex} ${ident}${msg ? `\t${msg}` : ''}\n`);
  }

  /** For a deep name: the directories of a log to be created, made on the thread pool ahead of append(). */
  async prepareDeep(name: string): Promise<void> {
    const p = this.path(name);
    if (!shouldAutocreateReflog(this.mode, this.bare, name)) return;
    await mkdir(fsPath(dirname(p)), { recursive: true });
  }

  /** Remove a deleted ref's log and the directories it leaves empty. */
  remove(name: string): void {
    const p = this.path(name);
    try { unlinkSync(fsPath(p)); } catch { return; }
    removeEmptyParents(p, join(this.commonDir, 'logs', 'refs'));
  }
}

/**
 * try_remove_empty_parents(): rmdir upwards until a directory is not
 * empty, sparing `refsRoot` and its immediate subdirectories (refs/heads).
 */
export function removeEmptyParents(file: string, refsRoot: string): void {
  let d = dirname(file);
  while (d.startsWith(`${refsRoot}/`) && d.slice(refsRoot.length + 1).includes('/')) {
    try { rmdirSync(fsPath(d)); } catch { return; }
    d = dirname(d);
  }
}
