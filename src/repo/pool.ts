/**
 * A pool of open repositories for long-running servers (`gitwire serve`,
 * the library's handlers): config, the pack list, index handles and the
 * commit cache survive between requests instead of being rebuilt by each.
 *
 * Each acquire revalidates with a few stats, as git's packed-refs snapshot
 * and reprepare_packed_git do: when a config file, `objects/pack`, the
 * alternates file or `commondir` changed, the next request gets a freshly
 * opened repository and the old one is closed once its last lease ends.
 * Refs: each request reads through its own snapshot (Repository.forRequest):
 * loose refs listed once, then `packed-refs` pinned. The open packed-refs
 * is kept in the pooled repository between requests and revalidated by a
 * stat of the file, so a request after a `pack-refs` or ref update sees
 * the new file, and a request under way keeps the one it started with.
 *
 * `revalidateMs` (default 0) makes the pool trust what it saw for that
 * long, as an NFS client with `actimeo` trusts cached attributes: within
 * the interval an acquire skips the stats, and every request reads refs
 * from one ref snapshot shared by the interval (taken by its first
 * request). A change another server made is then seen only when the
 * interval ends, or at once when invalidate() names the repository (what
 * a cluster's invalidation does); this server's own ref transactions read
 * and lock the live refs either way.
 *
 * The pool is bounded by entry count and by an estimate of the bytes each
 * entry holds (its index files and commit cache); least recently used
 * entries without leases are closed first.
 */
import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { locateRepository } from './discover.js';
import { Repository, type OpenOptions } from './repository.js';
import type { RefStore } from './refs/ref-store.js';

/** Environment variables that change what Repository.open sees. */
const ENV_KEYS = [
  'GIT_NAMESPACE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'GIT_CONFIG_NOSYSTEM', 'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG_GLOBAL', 'HOME', 'XDG_CONFIG_HOME',
] as const;

export interface PoolOptions {
  /** most repositories kept open (default 64) */
  maxEntries?: number;
  /** most bytes kept open, estimated (default 256 MiB) */
  maxBytes?: number;
  /**
   * trust a pooled repository and one ref snapshot of it for this many ms
   * before looking at the files again (default 0: every request looks)
   */
  revalidateMs?: number;
}

/** One trusted interval's ref snapshot, shared by the requests in it. */
interface Trusted {
  refs: RefStore;
  /** the snapshot's own close, run once the interval is over and no request uses it */
  closeRefs: () => void;
  until: number;
  users: number;
  over: boolean;
}

export interface Lease {
  readonly repo: Repository;
  /** give the repository back; call exactly once */
  release(): void;
}

interface Entry {
  key: string;
  repo: Repository;
  stamp: string;
  leases: number;
  /** replaced by a newer entry: close when the last lease ends */
  stale: boolean;
  bytes: number;
  lastUsed: number;
  /** when the files were last looked at (revalidateMs > 0) */
  checkedAt: number;
  trusted?: Trusted;
}

/** A file's stamp, '-' when it is absent (most watched files are: no ENOENT thrown for them). */
function statStamp(path: string): string {
  try {
    const st = statSync(path, { bigint: true, throwIfNoEntry: false });
    return st ? `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : '-';
  } catch {
    return '-';
  }
}

function envKey(env: NodeJS.ProcessEnv): string {
  const parts: string[] = [];
  for (const k of ENV_KEYS) parts.push(env[k] ?? '\u0001');
  const n = Number(env.GIT_CONFIG_COUNT);
  if (Number.isInteger(n) && n > 0 && n < 1000) {
    for (let i = 0; i < n; i++) parts.push(env[`GIT_CONFIG_KEY_${i}`] ?? '', env[`GIT_CONFIG_VALUE_${i}`] ?? '');
  }
  return parts.join('\0');
}

/** The files and directories whose change means the repository must be reopened. */
function watched(repo: Repository): string[] {
  const env = repo.env;
  const out = new Set<string>();
  for (const e of repo.config.entries) if (e.origin !== 'command line') out.add(e.origin);
  out.add(join(repo.commonDir, 'config'));
  out.add(join(repo.gitDir, 'commondir'));
  out.add(env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig');
  if (env.GIT_CONFIG_GLOBAL === undefined) {
    const home = env.HOME ?? homedir();
    out.add(env.XDG_CONFIG_HOME ? join(env.XDG_CONFIG_HOME, 'git', 'config') : join(home, '.config', 'git', 'config'));
    out.add(join(home, '.gitconfig'));
  }
  for (const s of repo.odb.sources) {
    out.add(join(s.objectsDir, 'pack'));
    out.add(join(s.objectsDir, 'info', 'alternates'));
  }
  return [...out];
}

function stampOf(paths: string[]): string {
  return paths.map(statStamp).join('|');
}

export class RepositoryPool {
  private readonly entries = new Map<string, Entry>();
  /** entries replaced while leased, closed when their last lease ends */
  private readonly retired = new Set<Entry>();
  private readonly watchedPaths = new WeakMap<Repository, string[]>();
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly revalidateMs: number;
  /** counters for tests and metrics */
  readonly stats = { hits: 0, opens: 0, reopens: 0, evictions: 0 };

  constructor(opts: PoolOptions = {}) {
    this.maxEntries = opts.maxEntries ?? 64;
    this.maxBytes = opts.maxBytes ?? 256 * 1024 * 1024;
    const r = opts.revalidateMs ?? 0;
    if (!Number.isFinite(r) || r < 0) throw new RangeError(`revalidateMs: expected a number of ms >= 0, not ${r}`);
    this.revalidateMs = r;
  }

  get size(): number { return this.entries.size; }

  /** Estimated bytes held by the open repositories. */
  get bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.bytes;
    return n;
  }

  /** Open (or reuse) the repository at `dir`, as Repository.open would. */
  acquire(dir: string, opts: OpenOptions = {}): Lease {
    const env = opts.env ?? process.env;
    const loc = locateRepository(dir, opts.strict ?? false);
    const key = `${loc.gitDir}\0${envKey(env)}`;
    let e = this.entries.get(key);
    const now = Date.now();
    if (e && this.revalidateMs > 0 && now - e.checkedAt < this.revalidateMs) this.stats.hits++;
    else if (e) {
      const paths = this.watchedPaths.get(e.repo)!;
      e.checkedAt = now;
      if (stampOf(paths) !== e.stamp) {
        this.entries.delete(key);
        this.retire(e);
        this.stats.reopens++;
        e = undefined;
      } else this.stats.hits++;
    }
    if (!e) {
      const repo = new Repository(loc.gitDir, loc.commonDir, env);
      const paths = watched(repo);
      this.watchedPaths.set(repo, paths);
      e = { key, repo, stamp: stampOf(paths), leases: 0, stale: false, bytes: 0, lastUsed: 0, checkedAt: now };
      this.entries.set(key, e);
      this.stats.opens++;
    } else {
      // most recently used last
      this.entries.delete(key);
      this.entries.set(key, e);
    }
    e.leases++;
    e.lastUsed = now;
    const entry = e;
    const trusted = this.revalidateMs > 0 ? this.trustedOf(entry, now) : undefined;
    let released = false;
    return {
      repo: trusted ? trustedView(entry.repo, trusted.refs) : entry.repo,
      release: () => {
        if (released) return;
        released = true;
        if (trusted) { trusted.users--; settleTrusted(trusted); }
        entry.leases--;
        entry.bytes = estimateBytes(entry.repo);
        if (entry.stale) { if (entry.leases === 0) { this.retired.delete(entry); entry.repo.close(); } return; }
        this.trim();
      },
    };
  }

  /** The ref snapshot of `e`'s current interval (a new one once the last is over), with this lease counted. */
  private trustedOf(e: Entry, now: number): Trusted {
    let t = e.trusted;
    if (!t || now >= t.until) {
      if (t) { t.over = true; settleTrusted(t); }
      const refs = e.repo.refs.snapshot();
      const closeRefs = refs.close.bind(refs);
      // the requests of the interval end their views (Repository.endRequest); the snapshot outlives each
      Object.defineProperty(refs, 'close', { value: () => undefined });
      t = { refs, closeRefs, until: now + this.revalidateMs, users: 0, over: false };
      e.trusted = t;
    }
    t.users++;
    return t;
  }

  private retire(e: Entry): void {
    const t = e.trusted;
    e.trusted = undefined;
    if (t) { t.over = true; settleTrusted(t); }
    e.stale = true;
    if (e.leases === 0) e.repo.close();
    else this.retired.add(e);
  }

  /** Close least recently used idle entries until within bounds. */
  private trim(): void {
    let bytes = this.bytes;
    for (const e of this.entries.values()) {
      if (this.entries.size <= this.maxEntries && bytes <= this.maxBytes) break;
      if (e.leases > 0) continue;
      this.entries.delete(e.key);
      bytes -= e.bytes;
      e.repo.close();
      this.stats.evictions++;
    }
  }

  /**
   * Drop the pooled repository at `dir` (its git or common directory), or
   * every one when `dir` is undefined: the next request opens it afresh.
   * For a change this process cannot see by a stat, such as a push through
   * another server over a filesystem that caches attributes (cluster/).
   */
  invalidate(dir?: string): void {
    for (const [key, e] of this.entries) {
      if (dir !== undefined && e.repo.gitDir !== dir && e.repo.commonDir !== dir) continue;
      this.entries.delete(key);
      this.retire(e);
    }
  }

  /** Close every idle repository (and leased ones as their leases end). */
  close(): void {
    for (const e of this.entries.values()) this.retire(e);
    this.entries.clear();
  }
}

function settleTrusted(t: Trusted): void {
  if (t.over && t.users === 0) { t.users = -1; t.closeRefs(); }
}

/** `repo` whose requests (forRequest) all read `refs`. */
function trustedView(repo: Repository, refs: RefStore): Repository {
  const view = Object.create(repo) as Repository;
  Object.defineProperty(view, 'forRequest', {
    value: () => {
      const r = Object.create(repo) as Repository;
      Object.defineProperty(r, 'refs', { value: refs, enumerable: true });
      return r;
    },
  });
  return view;
}

/** What an open repository holds in memory, roughly. */
function estimateBytes(repo: Repository): number {
  return 16 * 1024 + repo.memoryEstimate();
}
