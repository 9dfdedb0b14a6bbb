/**
 * Creating a bare repository without running git: the files `git init
 * --bare` writes that a server needs (HEAD, config, description,
 * info/exclude, objects/info, objects/pack, refs/heads, refs/tags), for
 * either object format and either ref format. A reftable repository gets
 * what git 2.45+ writes: a one-table stack holding HEAD's symref, `HEAD`
 * and `refs/heads` as stubs that old gits stop at. Making it natively
 * means any installed git serves an equal result (git 2.39's `git init
 * --bare` points HEAD at master and cannot make reftable at all).
 *
 * Atomic: the repository is made in a temporary directory beside the
 * target and renamed into place, so no request ever sees half of one; of
 * two creators racing for one path, one rename wins and the other finds
 * the winner's repository there (`exclusive: false` takes it, the default
 * says GW_REPO_EXISTS).
 */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { GitwireError } from '../errors.js';
import { isGitDirectory } from '../repo/discover.js';
import { checkRefnameFormat } from '../repo/refname.js';
import { writeTable } from '../repo/refs/reftable/writer.js';
import { RefValue, DEFAULT_BLOCK_SIZE, DEFAULT_RESTART_INTERVAL } from '../repo/refs/reftable/basics.js';
import { tableName } from '../repo/refs/reftable/transaction.js';

export interface CreateOptions {
  /** sha1 (default) or sha256 */
  objectFormat?: 'sha1' | 'sha256';
  /** files (default) or reftable */
  refFormat?: 'files' | 'reftable';
  /** the branch HEAD names (default `main`) */
  initialBranch?: string;
  /** false: a repository already at `path` is the answer (created: false); true (default): GW_REPO_EXISTS */
  exclusive?: boolean;
  /** make missing parent directories (default true) */
  parents?: boolean;
}

export interface Created {
  /** the repository's directory (absolute) */
  path: string;
  /** false: another creator's repository was found there (exclusive: false) */
  created: boolean;
}

export const DEFAULT_INITIAL_BRANCH = 'main';

/** The `config` of a new bare repository (as git init writes it, less what only a work tree reads). */
function configText(objectFormat: 'sha1' | 'sha256', refFormat: 'files' | 'reftable'): string {
  const v1 = objectFormat !== 'sha1' || refFormat !== 'files';
  let s = `[core]\n\trepositoryformatversion = ${v1 ? 1 : 0}\n\tfilemode = true\n\tbare = true\n`;
  if (v1) {
    s += '[extensions]\n';
    if (objectFormat !== 'sha1') s += `\tobjectformat = ${objectFormat}\n`;
    if (refFormat !== 'files') s += `\trefstorage = ${refFormat}\n`;
  }
  return s;
}

/** Write the repository's files into the (new, empty) directory `dir`. */
function populate(dir: string, o: Required<Pick<CreateOptions, 'objectFormat' | 'refFormat' | 'initialBranch'>>): void {
  const head = `refs/heads/${o.initialBranch}`;
  for (const d of ['objects/info', 'objects/pack', 'info', 'refs']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'config'), configText(o.objectFormat, o.refFormat));
  writeFileSync(join(dir, 'description'), 'Unnamed repository; edit this file \'description\' to name the repository.\n');
  writeFileSync(join(dir, 'info', 'exclude'), '# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with \'#\' are comments.\n');
  if (o.refFormat === 'files') {
    mkdirSync(join(dir, 'refs', 'heads'));
    mkdirSync(join(dir, 'refs', 'tags'));
    writeFileSync(join(dir, 'HEAD'), `ref: ${head}\n`);
    return;
  }
  // git's refs_create_refdir_stubs: what a git without reftable finds, and stops at
  writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/.invalid\n');
  writeFileSync(join(dir, 'refs', 'heads'), 'this repository uses the reftable format\n');
  mkdirSync(join(dir, 'reftable'));
  const hashLen = o.objectFormat === 'sha256' ? 32 : 20;
  const table = writeTable([{ name: Buffer.from('HEAD'), updateIndex: 1, type: RefValue.Symref, target: Buffer.from(head) }], [], 1, 1, hashLen,
    { blockSize: DEFAULT_BLOCK_SIZE, restartInterval: DEFAULT_RESTART_INTERVAL });
  const name = tableName(1, 1);
  writeFileSync(join(dir, 'reftable', name), table);
  writeFileSync(join(dir, 'reftable', 'tables.list'), `${name}\n`);
}

/**
 * Create a bare repository at `path` (see the file's comment). Throws
 * GW_REPO_EXISTS when something is there already (unless `exclusive:
 * false` and it is a repository), GW_USAGE on a bad option.
 */
export function createRepository(path: string, opts: CreateOptions = {}): Created {
  const target = resolve(path);
  const o = {
    objectFormat: opts.objectFormat ?? 'sha1',
    refFormat: opts.refFormat ?? 'files',
    initialBranch: opts.initialBranch ?? DEFAULT_INITIAL_BRANCH,
  } as const;
  if (o.objectFormat !== 'sha1' && o.objectFormat !== 'sha256') throw new GitwireError('GW_USAGE', `unknown hash algorithm '${String(o.objectFormat)}'`);
  if (o.refFormat !== 'files' && o.refFormat !== 'reftable') throw new GitwireError('GW_USAGE', `unknown ref storage format '${String(o.refFormat)}'`);
  if (!checkRefnameFormat(`refs/heads/${o.initialBranch}`) || o.initialBranch === 'HEAD' || o.initialBranch.startsWith('-')) {
    throw new GitwireError('GW_USAGE', `invalid initial branch name: '${o.initialBranch}'`);
  }
  const exists = () => new GitwireError('GW_REPO_EXISTS', `'${path}' already exists`, { data: { path: target } });
  if (isGitDirectory(target)) {
    if (opts.exclusive === false) return { path: target, created: false };
    throw exists();
  }
  const parent = dirname(target);
  const tmp = join(parent, `.${basename(target)}.creating-${randomBytes(6).toString('hex')}`);
  // a delete or rename elsewhere removes emptied directories up to the root (delete.ts): a parent made
  // just now may be gone before the temporary directory is in it, so that is tried again
  for (let attempt = 1; ; attempt++) {
    try { mkdirSync(tmp, { recursive: opts.parents !== false }); break; } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || opts.parents === false || attempt >= 10) throw e;
    }
  }
  try {
    populate(tmp, o);
    try {
      renameSync(tmp, target);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // ENOTEMPTY / EEXIST: something is there (another creator won the race); ENOTDIR: a file is there
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR' && code !== 'EISDIR') throw e;
      if (opts.exclusive === false && isGitDirectory(target)) return { path: target, created: false };
      throw exists();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { path: target, created: true };
}
