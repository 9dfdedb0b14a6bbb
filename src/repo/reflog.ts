/**
 * Reflogs as git's files backend writes them: `logs/<ref>`, one line per
 * update, `<old> <new> <ident> <time> <tz>\t<message>\n`, appended under
 * the ref's lock. Which refs get one follows core.logAllRefUpdates.
 */
import { appendFileSync, existsSync, mkdirSync, rmdirSync, unlinkSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import type { Config } from './config.js';
import { parseBool } from './config.js';

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
    return join(name === 'HEAD' || !name.startsWith('refs/') ? this.gitDir : this.commonDir, 'logs', name);
  }

  /** Append one entry when the ref has a log or should get one. */
  append(name: string, oldHex: string, newHex: string, ident: string, message: string): void {
    const p = this.path(name);
    if (!existsSync(p)) {
      if (!shouldAutocreateReflog(this.mode, this.bare, name)) return;
      mkdirSync(dirname(p), { recursive: true });
    }
    const msg = message.replace(/\n+/g, ' ').trim();
    appendFileSync(p, `${oldHex} ${newHex} ${ident}${msg ? `\t${msg}` : ''}\n`);
  }

  /** Remove a deleted ref's log and the directories it leaves empty. */
  remove(name: string): void {
    const p = this.path(name);
    try { unlinkSync(p); } catch { return; }
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
    try { rmdirSync(d); } catch { return; }
    d = dirname(d);
  }
}
