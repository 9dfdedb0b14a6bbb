/**
 * Object pools, as Gitaly keeps them: a bare repository holding the
 * objects a source and its forks share, each member naming the pool's
 * `objects/` in its `objects/info/alternates`. docs/forks.md has the
 * model; in short:
 *
 * - What enters the pool never leaves it. Objects come in only when a
 *   repository is absorbed (at fork time): its packs are hard-linked into
 *   the pool's `objects/pack/` and each gets a `.keep`, and its loose
 *   objects are packed into one more kept pack. `git gc` and `git repack`
 *   (with `-a`, `-d`, `--prune=now`, cruft or geometric) never delete a
 *   kept pack, so no maintenance in the pool drops an object a member
 *   borrows. As a second line, `refs/pinned/<id>` in the pool names every
 *   ref tip it was given, so even without the `.keep` files the members'
 *   history stays reachable in the pool.
 * - A member's own maintenance never touches the pool: git repacks and
 *   deletes only local packs (`gc` passes `-l`; `repack -a -d` without
 *   `-l` copies borrowed objects in, which costs space, not objects).
 * - Members point at the pool, never at each other, so deleting a member
 *   (the source too) leaves the others whole.
 * - Alternates name the pool by its absolute path, so a member can be
 *   renamed anywhere on the file system without rewriting them.
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join, resolve } from 'node:path';
import { GitwireError } from '../errors.js';
import { quoteAlternate, readAlternates } from '../repo/alternates.js';
import type { ObjectFormat } from '../repo/repository.js';
import { spawnChild } from '../util/spawn.js';
import { withLock } from './pool-lock.js';

/** The directory pools are made in by default: next to the source, reserved from served names (transport/paths.ts). */
export { RESERVED_SEGMENT as POOLS_DIRNAME } from '../transport/paths.js';

/** The file in a pool's git directory that marks it as one (its content says what it is). */
const MARKER = 'gitwire-object-pool';
const KEEP_TEXT = 'gitwire object pool: objects members borrow, never repacked away\n';
/** a pack's files besides .pack, .idx and .keep that travel with it */
const PACK_EXTRAS = ['rev', 'mtimes', 'promisor', 'bitmap'] as const;
const PACK_IDX = /^(pack-[0-9a-f]{40}(?:[0-9a-f]{24})?)\.idx$/;

function adminError(msg: string, cause?: unknown): GitwireError {
  return new GitwireError('GW_REPO_ADMIN', msg, cause === undefined ? {} : { cause });
}

/** Is `gitDir` an object pool made by gitwire? */
export function isPool(gitDir: string): boolean {
  return existsSync(join(gitDir, MARKER));
}

/**
 * The pool (its git directory) that the object directory `objectsDir`
 * borrows from, or undefined when it borrows from none. Alternates that
 * name anything else are refused: a fork must not depend on a repository
 * that may be deleted.
 */
export function poolOfObjects(objectsDir: string, what: string): string | undefined {
  const alts = readAlternates(objectsDir);
  if (alts.unreadable.length) throw adminError(`${what}: objects/info/alternates has a line that cannot be read`);
  if (alts.dirs.length === 0) return undefined;
  const first = alts.dirs[0]!;
  if (alts.dirs.length === 1 && basename(first) === 'objects' && isPool(dirname(first))) return dirname(first);
  throw adminError(`${what} borrows objects from ${alts.dirs.join(', ')}, which is not a gitwire object pool; run 'git repack -a -d' in it first`);
}

/** Write `text` to `path` through a temporary file and rename(2): readers see the old or the new file. */
export function writeAtomic(path: string, text: string | Buffer): void {
  const tmp = `${path}.gitwire-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    writeSync(fd, typeof text === 'string' ? Buffer.from(text) : text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try { renameSync(tmp, path); } catch (e) { try { unlinkSync(tmp); } catch { /* gone */ } throw e; }
}

/** The configuration of a bare repository of `format` (what `git init --bare` writes). */
export function bareConfig(format: ObjectFormat, extra = ''): string {
  const v = format === 'sha1' ? 0 : 1;
  const ext = format === 'sha1' ? '' : `[extensions]\n\tobjectformat = ${format}\n`;
  return `[core]\n\trepositoryformatversion = ${v}\n\tfilemode = true\n\tbare = true\n${ext}${extra}`;
}

/** Lay out an empty bare repository at `dir` (which must not exist yet). */
export function layBareRepository(dir: string, config: string, head: string): void {
  mkdirSync(dir);
  for (const d of ['objects/pack', 'objects/info', 'refs/heads', 'refs/tags']) mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'config'), config);
  writeFileSync(join(dir, 'description'), 'Unnamed repository; edit this file \'description\' to name the repository.\n');
  // HEAD last: until it exists, nothing takes the directory for a repository
  writeFileSync(join(dir, 'HEAD'), head);
}

/** Make a new, empty pool under `poolsDir`; returns its git directory. */
export function createPool(poolsDir: string, format: ObjectFormat): string {
  try { mkdirSync(poolsDir, { recursive: true }); } catch (e) { throw adminError(`cannot make the pool directory '${poolsDir}': ${(e as Error).message}`, e); }
  const name = `${randomBytes(16).toString('hex')}.git`;
  const tmp = join(poolsDir, `.tmp-${name}`);
  const dir = join(poolsDir, name);
  // gitwire never auto-gcs a pool; a kept pack is not copied into a new one by a
  // repack there (no doubling), so no bitmap could cover everything: none asked for
  const extra = '[gc]\n\tauto = 0\n[repack]\n\tpackKeptObjects = false\n\twriteBitmaps = false\n';
  try {
    layBareRepository(tmp, bareConfig(format, extra), 'ref: refs/heads/main\n');
    writeFileSync(join(tmp, MARKER), 'This repository is a gitwire object pool (docs/forks.md). Repositories name its objects/\nin their objects/info/alternates: do not delete it while any does.\n');
    renameSync(tmp, dir);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw adminError(`cannot make an object pool in '${poolsDir}': ${(e as Error).message}`, e);
  }
  return dir;
}

/** link(2) `from` to `to`; a copy across file systems; nothing when `to` exists (a pack's name is its content). */
function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'EXDEV' && code !== 'EPERM') throw e;
    const tmp = `${to}.gitwire-copy-${process.pid}`;
    copyFileSync(from, tmp);
    renameSync(tmp, to);
  }
}

/**
 * Hard-link each complete pack of `fromPack` into `toPack` with a `.keep`:
 * the `.pack` and its companions first, then the `.keep`, the `.idx` last
 * (git finds a pack by its `.idx`, so no reader sees it unkept or partial).
 * Returns the bases linked (already present ones included).
 */
function linkPacks(fromPack: string, toPack: string): string[] {
  let names: string[];
  try { names = readdirSync(fromPack); } catch { return []; }
  const present = new Set(names);
  const bases: string[] = [];
  for (const n of names) {
    const m = PACK_IDX.exec(n);
    if (!m || !present.has(`${m[1]}.pack`)) continue;
    const base = m[1]!;
    bases.push(base);
    if (existsSync(join(toPack, `${base}.idx`)) && existsSync(join(toPack, `${base}.keep`))) continue;
    linkOrCopy(join(fromPack, `${base}.pack`), join(toPack, `${base}.pack`));
    for (const ext of PACK_EXTRAS) {
      if (!present.has(`${base}.${ext}`)) continue;
      // git reads one bitmap; before 2.4x it warns about each other one, on every fetch
      if (ext === 'bitmap' && hasBitmap(toPack)) continue;
      linkOrCopy(join(fromPack, `${base}.${ext}`), join(toPack, `${base}.${ext}`));
    }
    if (!existsSync(join(toPack, `${base}.keep`))) writeFileSync(join(toPack, `${base}.keep`), KEEP_TEXT);
    linkOrCopy(join(fromPack, `${base}.idx`), join(toPack, `${base}.idx`));
  }
  return bases;
}

function hasBitmap(packDir: string): boolean {
  try { return readdirSync(packDir).some((f) => f.endsWith('.bitmap')); } catch { return false; }
}

/** The loose objects of `objectsDir`, as hex ids. */
function looseObjects(objectsDir: string, hexLen: number): string[] {
  const out: string[] = [];
  const rest = new RegExp(`^[0-9a-f]{${hexLen - 2}}$`);
  let dirs: string[];
  try { dirs = readdirSync(objectsDir); } catch { return out; }
  for (const d of dirs) {
    if (!/^[0-9a-f]{2}$/.test(d)) continue;
    let files: string[];
    try { files = readdirSync(join(objectsDir, d)); } catch { continue; }
    for (const f of files) if (rest.test(f)) out.push(d + f);
  }
  return out;
}

function runGit(args: string[], env: NodeJS.ProcessEnv, input: string): Promise<string> {
  return new Promise((done, fail) => {
    let child;
    try {
      child = spawnChild('git', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (e) { fail(e as Error); return; }
    const out: Buffer[] = [], err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.stdin!.on('error', () => undefined);
    child.on('error', (e: Error) => fail(e));
    child.on('close', (code: number | null) => {
      if (code === 0) done(Buffer.concat(out).toString());
      else fail(adminError(`git ${args.filter((a) => !a.startsWith('--git-dir')).join(' ')} failed: ${Buffer.concat(err).toString().trim() || `exit ${code}`}`));
    });
    child.stdin!.end(input);
  });
}

/** The environment for git run on one repository: none of the caller's repository variables. */
export function gitEnvFor(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_INDEX_FILE', 'GIT_NAMESPACE', 'GIT_QUARANTINE_PATH']) delete out[k];
  return out;
}

export interface AbsorbOptions {
  /** the member's git (common) directory */
  gitDir: string;
  /** the member's object directory */
  objectsDir: string;
  hexLen: number;
  /** ref tips (hex) to pin in the pool */
  tips: Iterable<string>;
  env: NodeJS.ProcessEnv;
}

/**
 * Take a member's objects into the pool (under the pool's lock): its packs
 * linked and kept, its loose objects packed and kept, and its tips pinned.
 * A pack that a concurrent repack removes between listing and linking
 * makes the pass start again (the repack wrote the objects somewhere new).
 * Returns the pack bases the member and the pool now share.
 */
export async function absorbIntoPool(pool: string, o: AbsorbOptions): Promise<string[]> {
  return withLock(join(pool, 'gitwire-pool.lock'), { what: `object pool ${pool}` }, async () => {
    const poolPack = join(pool, 'objects', 'pack');
    let bases: string[] = [];
    for (let attempt = 0; ; attempt++) {
      try { bases = linkPacks(join(o.objectsDir, 'pack'), poolPack); break; } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw adminError(`cannot link the packs of ${o.gitDir} into ${pool}: ${(e as Error).message}`, e);
      }
    }
    const loose = looseObjects(o.objectsDir, o.hexLen);
    if (loose.length) {
      const tmp = join(pool, 'objects', `.tmp-absorb-${process.pid}-${randomBytes(4).toString('hex')}`);
      mkdirSync(tmp);
      try {
        // run in the pool, reading the member's objects as an alternate: git need not
        // understand the member's own repository (a reftable one, say) or its configuration
        const env = { ...gitEnvFor(o.env), GIT_ALTERNATE_OBJECT_DIRECTORIES: quoteAlternate(resolve(o.objectsDir)) };
        await runGit([`--git-dir=${pool}`, 'pack-objects', '-q', join(tmp, 'pack')], env, `${loose.join('\n')}\n`);
        linkPacks(tmp, poolPack);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    }
    pinTips(pool, o.tips, o.hexLen);
    return bases;
  });
}

/**
 * `refs/pinned/<id>` for each tip, merged into the pool's packed-refs
 * (taken with git's `packed-refs.lock`). Pins are never removed while the
 * pool lives: they are the second guard after the `.keep` files.
 */
function pinTips(pool: string, tips: Iterable<string>, hexLen: number): void {
  const file = join(pool, 'packed-refs');
  const refs = new Map<string, string>();
  let old = '';
  try { old = readFileSync(file, 'latin1'); } catch { /* none yet */ }
  for (const line of old.split('\n')) {
    if (line.length > hexLen && line[hexLen] === ' ' && !line.startsWith('#')) refs.set(line.slice(hexLen + 1), line.slice(0, hexLen));
  }
  const before = refs.size;
  for (const t of tips) if (t.length === hexLen) refs.set(`refs/pinned/${t}`, t);
  if (refs.size === before) return;
  const names = [...refs.keys()].sort((a, b) => Buffer.compare(Buffer.from(a, 'latin1'), Buffer.from(b, 'latin1')));
  // no `peeled` trait: git peels a pinned tag itself when it needs to
  const text = `# pack-refs with: sorted \n${names.map((n) => `${refs.get(n)!} ${n}\n`).join('')}`;
  const lock = `${file}.lock`;
  const fd = openSync(lock, 'wx', 0o644);
  try {
    writeSync(fd, Buffer.from(text, 'latin1'));
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    try { unlinkSync(lock); } catch { /* gone */ }
    throw e;
  }
  closeSync(fd);
  renameSync(lock, file);
}

/** Point `objectsDir` at the pool (objects/info/alternates, written atomically). */
export function linkMember(objectsDir: string, pool: string): void {
  mkdirSync(join(objectsDir, 'info'), { recursive: true });
  writeAtomic(join(objectsDir, 'info', 'alternates'), `${quoteAlternate(resolve(pool, 'objects'))}\n`);
}

/**
 * After the pool took a member's packs: the member's own `.bitmap` of each
 * shared pack goes (the pool's bitmap, which is at most one, serves it
 * through the alternates), so git never finds two bitmaps. The member's duplicate packs
 * stay until its next `git gc` (which packs only local objects): a request
 * under way never loses a pack it listed.
 */
export function dropSharedBitmaps(objectsDir: string, pool: string, bases: string[]): void {
  if (!hasBitmap(join(pool, 'objects', 'pack'))) return;
  for (const base of bases) {
    try { unlinkSync(join(objectsDir, 'pack', `${base}.bitmap`)); } catch { /* none */ }
  }
}
