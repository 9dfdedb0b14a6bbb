/**
 * What gitolite and Soft Serve users type at a git host over SSH, besides
 * git's own commands (docs/ssh.md):
 *
 *     ssh git@host info                lists the repositories the key's user may fetch or push
 *     ssh git@host repo create NAME    creates NAME.git (an `admin` rule naming the user)
 *     ssh git@host repo delete NAME    deletes it (the same)
 *     ssh git@host help                these lines
 *
 * `info` answers as gitolite's does: a greeting, a blank line, then one
 * line per repository, ` R W A` columns (fetch, push, admin; a space where
 * the user may not) before a tab and the name, sorted by name. Under
 * --auth-rules a repository the user may not fetch is not listed; without
 * rules every key may fetch and push everything, and nobody is admin.
 * The walk is bounded (INFO_MAX_REPOSITORIES listed, INFO_MAX_DIRECTORIES
 * read, MAX_DEPTH deep below the root) and says when it stopped short.
 */
import { opendir } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { realpathSync } from 'node:fs';
import { GitwireError } from '../../errors.js';
import { version } from '../../version.js';
import { isGitDirectory, locateRepository } from '../../repo/discover.js';
import { createRepository, type CreateOptions } from '../../admin/create.js';
import { deleteRepository, TRASH } from '../../admin/delete.js';
import { CreationBudget } from '../../admin/budget.js';
import { MAX_DEPTH, newRepositoryName, newRepositoryPath, shown } from '../../admin/names.js';
import type { AuthRules } from '../auth-rules.js';
import { RESERVED_SEGMENT, locateUnderRoot } from '../paths.js';
import { ruleNames } from './authorize.js';
import type { SshCommandAnswer, SshCommandRequest } from './server.js';

export const INFO_MAX_REPOSITORIES = 10_000;
export const INFO_MAX_DIRECTORIES = 100_000;

export interface SshCommandOptions extends Pick<CreateOptions, 'objectFormat' | 'refFormat' | 'initialBranch'> {
  root: string;
  /** --auth-rules; without them every key may fetch and push, and nobody may create or delete */
  rules?: AuthRules;
  /** creations a user may make (shared with push-to-create) */
  budget?: CreationBudget;
  /** what is logged of a repository created or deleted */
  log?(fields: { action: 'create' | 'delete'; repository: string; user: string; path: string }): void;
}

const HELP = `gitwire over SSH: git clone/fetch/push, and
  info                  the repositories you may fetch (R), push (W) or administer (A)
  repo create <name>    create <name>.git (needs an admin rule)
  repo delete <name>    delete it (needs an admin rule)
  help                  this text
`;

const fail = (message: string, outcome: SshCommandAnswer['outcome'], repository?: string): SshCommandAnswer =>
  ({ stderr: `fatal: ${message}\n`, code: 128, outcome, ...(repository !== undefined ? { repository } : {}) });

/** SshOptions.commands for `gitwire serve`: info, repo create, repo delete, help. */
export function sshCommands(o: SshCommandOptions): (req: SshCommandRequest) => Promise<SshCommandAnswer | undefined> {
  const budget = o.budget ?? new CreationBudget();
  const may = (user: string, names: string[], access: 'fetch' | 'push' | 'admin') =>
    (o.rules ? names.some((n) => o.rules!.allows(user, n, access)) : access !== 'admin');
  return async (req) => {
    const words = req.command.trim().split(/[ \t]+/);
    const [cmd, sub, ...args] = words;
    if (cmd === 'help' && words.length === 1) return { stdout: HELP, code: 0 };
    if (cmd === 'info' && words.length === 1) return { stdout: await info(req.user), code: 0 };
    if (cmd !== 'repo') return undefined;
    if ((sub !== 'create' && sub !== 'delete') || args.length !== 1) {
      return fail(`usage: repo create <name> | repo delete <name>`, 'bad-argument');
    }
    return sub === 'create' ? create(req, args[0]!) : remove(req, args[0]!);
  };

  async function info(user: string): Promise<string> {
    const lines: string[] = [];
    let truncated = false;
    await walk(o.root, (dir, rel) => {
      const names = ruleNames(o.root, dir);
      if (!may(user, names, 'fetch')) return true;
      // a name on disk with a control character (a tab, a newline) must not forge a line
      lines.push(` R ${may(user, names, 'push') ? 'W' : ' '} ${may(user, names, 'admin') ? 'A' : ' '}\t${rel.replace(/[\x00-\x1f\x7f]/g, '?')}`);
      if (lines.length >= INFO_MAX_REPOSITORIES) { truncated = true; return false; }
      return true;
    }, () => { truncated = true; });
    lines.sort((a, b) => (a.slice(a.indexOf('\t')) < b.slice(b.indexOf('\t')) ? -1 : 1));
    return `hello ${user}, this is gitwire ${version()}\n\n${lines.join('\n')}${lines.length ? '\n' : ''}${truncated ? `(listing stopped at its bound: ${INFO_MAX_REPOSITORIES} repositories, ${INFO_MAX_DIRECTORIES} directories)\n` : ''}`;
  }

  async function create(req: SshCommandRequest, arg: string): Promise<SshCommandAnswer> {
    let name: string, dir: string;
    try { name = newRepositoryName(arg); } catch (e) { return fail((e as Error).message, 'GW_REPO_NAME'); }
    if (!may(req.user, [name], 'admin')) return fail(`${req.user} may not create '${name}' (no admin rule names them for it)`, 'denied', name);
    try { dir = newRepositoryPath(o.root, name); } catch (e) {
      if (e instanceof GitwireError && e.code === 'GW_REPO_EXISTS') return fail(`repository '${name}' already exists`, 'GW_REPO_EXISTS', name);
      return fail((e as Error).message, 'GW_REPO_NAME', name);
    }
    if (exists(join(o.root, name))) return fail(`repository '${name}' already exists`, 'GW_REPO_EXISTS', name);
    if (!budget.take(req.user)) return fail(`${req.user} may create no more repositories now (${budget.perMinute} a minute); try again in ${budget.retryAfter(req.user)} s`, 'rate-limited', name);
    try {
      const made = createRepository(dir, { objectFormat: o.objectFormat, refFormat: o.refFormat, initialBranch: o.initialBranch });
      o.log?.({ action: 'create', repository: name, user: req.user, path: made.path });
    } catch (e) {
      budget.refund(req.user);
      if (e instanceof GitwireError && e.code === 'GW_REPO_EXISTS') return fail(`repository '${name}' already exists`, 'GW_REPO_EXISTS', name);
      throw e;
    }
    return { stderr: `Created repository '${name}'\n`, code: 0, repository: name };
  }

  async function remove(req: SshCommandRequest, arg: string): Promise<SshCommandAnswer> {
    const notThere = fail(`'${shown(arg)}' does not appear to be a git repository`, 'not-found', shown(arg));
    if (arg.includes('\0')) return notThere;
    const dir = locateUnderRoot(o.root, arg)?.dir;
    if (!dir) return notThere;
    const names = ruleNames(o.root, dir);
    const name = names[names.length - 1]!;
    // one the user may not see is not there; one they may see but not administer says so
    if (!may(req.user, names, 'fetch')) return notThere;
    if (!may(req.user, names, 'admin')) return fail(`${req.user} may not delete '${name}' (no admin rule names them for it)`, 'denied', name);
    let realRoot = o.root;
    try { realRoot = realpathSync(o.root); } catch { /* as given */ }
    if (relative(realRoot, dir) === '') return fail(`'${name}' is the served root itself; it is not deleted over SSH`, 'denied', name);
    try {
      await deleteRepository(dir, { root: o.root, pool: { invalidate: (d?: string) => { if (d !== undefined) req.forget(d); } } });
    } catch (e) {
      if (e instanceof GitwireError && e.code === 'GW_NOT_A_REPO') return fail(e.message.replace(dir, shown(arg)), 'GW_NOT_A_REPO', name);
      throw e;
    }
    o.log?.({ action: 'delete', repository: name, user: req.user, path: dir });
    return { stderr: `Deleted repository '${name}'\n`, code: 0, repository: name };
  }
}

/** A repository at `path` as a request would find it (`name`, `name.git`, `name/.git`). */
function exists(path: string): boolean {
  try { locateRepository(path); return true; } catch { return false; }
}

/**
 * The repositories under `root`, breadth first: `found(dir, name)` for
 * each (false stops the walk), `short()` when a bound stopped it. Hidden
 * entries (a leading `.`: trash, temporary directories) are skipped, and
 * a repository's own directory is not entered.
 */
async function walk(root: string, found: (dir: string, name: string) => boolean, short: () => void): Promise<void> {
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return; }
  let level = [realRoot];
  let read = 0;
  for (let depth = 0; depth <= MAX_DEPTH && level.length; depth++) {
    const next: string[] = [];
    for (const d of level) {
      if (++read > INFO_MAX_DIRECTORIES) { short(); return; }
      let it;
      try { it = await opendir(d); } catch { continue; }
      for await (const e of it) {
        // object pools (`@pools`) are never served, so never listed
        if (!e.isDirectory() || e.name.startsWith('.') || e.name === RESERVED_SEGMENT || TRASH.test(e.name)) continue;
        const p = join(d, e.name);
        const bare = isGitDirectory(p);
        const tree = !bare && isGitDirectory(join(p, '.git'));
        if (bare || tree) {
          const rel = relative(realRoot, p).split(sep).join('/').replace(/\.git$/, '');
          if (!found(bare ? p : join(p, '.git'), rel)) { short(); return; }
        } else next.push(p);
      }
    }
    level = next;
  }
}
