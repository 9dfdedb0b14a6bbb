/**
 * Bundles on a server (`serve --bundles`, ServeOptions.bundles): the offer
 * each upload-pack request gets (the bundle-uri list, and whether a clone
 * started from the bundle), the download route's answer, and, in `auto`
 * mode, when a repository's bundle is made and remade.
 *
 * When (auto): a repository gets its first bundle once it has had
 * `clones` clones (fetches with no haves) within `clonesWindowMs`; the
 * bundle is remade once the repository's advertised refs differ from the
 * bundle's and the bundle is `remakeAfterMs` old or `remakePushes` pushes behind, or at once when they
 * dropped some of its history (a ref deleted, a force push: it is withdrawn,
 * the older ones too, since it holds what a clone no longer gets); checked at most every
 * `checkEveryMs` per repository, on a clone; a make that failed is tried
 * again no sooner than that either. Making runs off the request
 * path, one bundle at a time per process (the producer yields on its time
 * budget); with a shared coordinator (--redis) a node makes a repository's
 * bundle only under the fleet-wide lease `bundle:<dir>` (one holder; its
 * TTL is renewed while the work runs and lapses when the node dies), and
 * the others find the finished file on the shared storage.
 */
import { readdirSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { appendFile, open, rename, truncate, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Coordinator } from '../cluster/coordinator.js';
import type { BundleOffer } from '../protocol/v2/bundle-uri.js';
import { Repository } from '../repo/repository.js';
import { MAX_HEADER_BYTES, parseBundleHeaderSliced, type BundleRef } from './header.js';
import { makeBundle, type MadeBundle } from './make.js';
import { anonymousRefs, viewKey } from './refs.js';
import { sendBundleFile, type FileAnswer } from './serve-file.js';
import { BUNDLE_SUBDIR, bundleDir, DEFAULT_GRACE_MS, listBundles, pruneBundles, servableBundle, tempName, type StoredBundle } from './store.js';
import { isAncestor } from '../repo/reach.js';
import { Slicer } from '../util/budget.js';

export type BundlesMode = 'off' | 'serve' | 'auto';

export interface BundleServiceOptions {
  /** `serve`: offer bundles that are there (made by `gitwire bundle create`); `auto`: make them too */
  mode: Exclude<BundlesMode, 'off'>;
  /**
   * The absolute URL bundles are downloaded from by clients of SSH and
   * git:// (gitwire's HTTP listener as they reach it, e.g.
   * `https://git.example.com`): `<url>/<name>/info/bundles/<file>`. Without
   * it those clients get an empty list. HTTP clients get a URL relative to
   * the one they cloned (their git resolves it), whatever this says.
   */
  baseUrl?: string;
  /** the served root (names in absolute URLs) */
  root?: string;
  /** auto: clones within clonesWindowMs that make the first bundle (default 3 in 10 minutes) */
  clones?: number;
  clonesWindowMs?: number;
  /** auto: a bundle behind the refs is remade once this old (default 6 hours) */
  remakeAfterMs?: number;
  /**
   * auto: or once this many pushes that moved refs came after it, whatever
   * its age (default 50). Counted in the bundle directory (a byte a push),
   * so every node of a fleet on the same storage, and a restart, sees them.
   */
  remakePushes?: number;
  /** auto: how often a repository with a bundle is looked at (default 10 minutes) */
  checkEveryMs?: number;
  /**
   * auto: a repository whose packs (objects/pack/*.pack) are smaller than
   * this gets no bundle (default 16 MiB, DEFAULT_MIN_BYTES): a clone of it
   * costs little, and a bundle per repository is what a client walking
   * every name would otherwise get made. 0: every repository.
   */
  minBytes?: number;
  /**
   * auto: bytes of bundles this process makes in an hour at most (default
   * 4 GiB, DEFAULT_BUDGET_BYTES); a make that would go past it waits for a
   * later check (one make is always allowed in an empty hour). 0: no limit.
   */
  budgetBytes?: number;
  /** how long a superseded bundle stays downloadable (default 15 minutes) */
  graceMs?: number;
  /**
   * the environment upload-pack runs with (ServeOptions.env; default the
   * process's): repositories are opened with it, so a bundle holds what a
   * fetch through this server sees (its hideRefs from GIT_CONFIG_*), and a
   * server in a namespace (GIT_NAMESPACE) serves no bundle of the whole
   */
  env?: NodeJS.ProcessEnv;
  /** the fleet's coordinator: one node makes a repository's bundle */
  coordinator?: Coordinator;
  /** one line per bundle made (or failed), for the server's log */
  log?: (line: BundleLogLine) => void;
  /**
   * Keep bundles in an S3-compatible bucket (bundle/s3.ts, `--bundle-store
   * s3://bucket/prefix`): made here, uploaded, offered by a signed URL;
   * needs `root` (the key names the repository) and mode `auto`.
   */
  s3?: import('../lfs/store/s3.js').S3StoreOptions;
}

export interface BundleLogLine {
  event: 'bundle';
  /** the repository's git directory */
  directory: string;
  outcome: 'made' | 'failed' | 'leased-elsewhere' | 'up-to-date' | 'skipped';
  /** skipped: why (the packs are under minBytes, or the hour's budget is spent) */
  reason?: 'small' | 'budget';
  name?: string;
  bytes?: number;
  refs?: number;
  objects?: number;
  /** how the pack was found: bitmap or walk */
  source?: string;
  durationMs?: number;
  removed?: string[];
  error?: string;
}

/** Totals for metrics (transport/metrics.ts). */
export interface BundleStats {
  made: number;
  madeBytes: number;
  failed: number;
  downloads: number;
  downloadBytes: number;
  /** clones (fetches) that started from the offered bundle, and clones that did not while one was offered */
  taken: number;
  notTaken: number;
  /** creation time (ms) of the newest bundle this process made or offered */
  newestMs: number;
  /** makes not done: the repository's packs are under minBytes, or the hour's budget was spent */
  skippedSmall: number;
  skippedBudget: number;
}

const HEADER_CACHE = 32;
const VALID_CACHE = 4096;
/** auto's defaults (docs/serving.md) */
export const DEFAULT_MIN_BYTES = 16 * 1024 * 1024;
export const DEFAULT_BUDGET_BYTES = 4 * 1024 ** 3;
/**
 * Repositories each per-repository map (clones seen, last check, last
 * failure) holds at most: entries past their window go first, then the
 * oldest. A client walking a million repository names grows none of them.
 */
export const MAX_TRACKED = 10_000;
const HOUR_MS = 3600_000;

interface Tips { refs: BundleRef[]; set: Set<string> }

export class BundleService {
  readonly stats: BundleStats = { made: 0, madeBytes: 0, failed: 0, downloads: 0, downloadBytes: 0, taken: 0, notTaken: 0, newestMs: 0, skippedSmall: 0, skippedBudget: 0 };
  private readonly clones = new Map<string, number[]>();
  private readonly lastCheck = new Map<string, number>();
  /** when a repository's last make failed or was skipped (it is tried again a check's interval later) */
  private readonly failedAt = new Map<string, number>();
  /** bytes of the bundles made in the last hour, with when (the budget) */
  private made: Array<{ at: number; bytes: number }> = [];
  private readonly queue = new Set<string>();
  private running: Promise<void> | undefined;
  /** null: the header could not be read */
  private readonly tips = new Map<string, Tips | null>();
  private readonly loading = new Map<string, Promise<Tips | undefined>>();
  /** whether a file (fileKey) is a bundle: kept for more files than their refs are */
  private readonly valid = new Map<string, boolean>();
  private closed = false;
  private readonly ac = new AbortController();
  private bucket?: import('./s3.js').BundleBucket;

  constructor(readonly opts: BundleServiceOptions) {}

  private async s3(): Promise<import('./s3.js').BundleBucket | undefined> {
    if (!this.opts.s3) return undefined;
    if (!this.bucket) { const { BundleBucket } = await import('./s3.js'); this.bucket = new BundleBucket(this.opts.s3); }
    return this.bucket;
  }

  /**
   * The offer for one upload-pack request. `filtered`: the request has a ref
   * filter (it sees less than the anonymous view): no offer, no bundle.
   */
  offer(where: { transport: 'http' | 'ssh' | 'git'; dir: string; filtered: boolean }): BundleOffer | undefined {
    if (where.filtered) return undefined;
    return {
      list: (repo) => this.list(repo, where),
      started: (repo, haves) => this.started(repo, haves),
    };
  }

  private async list(repo: Repository, where: { transport: 'http' | 'ssh' | 'git'; dir: string }): Promise<string[]> {
    // a file is offered only once read (its header parses, its pack begins as one): once per file, then cached
    const b = await this.current(repo);
    if (!b) return [];
    let uri: string;
    const bucket = await this.s3();
    if (bucket) {
      // signed for this request: the client downloads from the bucket
      const name = this.opts.root ? nameUnder(this.opts.root, repo.commonDir) : undefined;
      if (name === undefined) return [];
      uri = await bucket.url(bucket.key(name, b.name));
    } else if (where.transport === 'http') {
      // resolved by the client against the URL it fetches from (bundle-uri.c: relative_url(baseURI, …))
      uri = `info/bundles/${b.name}`;
    } else {
      const base = this.opts.baseUrl?.replace(/\/+$/, '');
      const name = base && this.opts.root ? nameUnder(this.opts.root, repo.commonDir) : undefined;
      if (!base || name === undefined) return [];
      uri = `${base}/${name.split('/').map(encodeURIComponent).join('/')}/info/bundles/${b.name}`;
    }
    this.stats.newestMs = Math.max(this.stats.newestMs, b.token * 1000);
    // keys as git's upload-pack sends them from config: lower case (bundle-uri.c compares the subkey
    // with "creationtoken"; `creationToken` is ignored); the heuristic's value is case-sensitive
    return ['bundle.version=1', 'bundle.mode=all', 'bundle.heuristic=creationToken', `bundle.gitwire.uri=${uri}`, `bundle.gitwire.creationtoken=${b.token}`];
  }

  private started(repo: Repository, haves: readonly Buffer[]): 'taken' | 'not-taken' | undefined {
    // when to look: a file of the view is there (the look finds whether it is a bundle, and makes one over it if not)
    const files = candidates(repo);
    const listed = files[0];
    if (this.opts.mode === 'auto') this.consider(repo.commonDir, listed, haves.length === 0);
    if (!listed) return undefined;
    const b = this.currentCached(files);
    // read off the request path (the list and the download start it): a header may hold 300,000 refs
    const set = b && this.tipsCached(b)?.set;
    if (set && haves.some((h) => set.has(h.toString('hex')))) { this.stats.taken++; return 'taken'; }
    if (haves.length === 0) { this.stats.notTaken++; return 'not-taken'; }
    return undefined;
  }

  /**
   * The refs in a bundle's header, read and parsed giving the event loop
   * away; cached per file as it is now (name, size, time), a header that
   * cannot be read too (it is not read again on every request).
   */
  private tipsOf(b: StoredBundle): Promise<Tips | undefined> {
    const key = fileKey(b);
    if (this.tips.has(key)) return Promise.resolve(this.tips.get(key) ?? undefined);
    let p = this.loading.get(key);
    if (!p) {
      // with a bucket the file here is the header alone: its pack is the bucket's
      p = readHeaderRefs(b.file, !this.opts.s3).then((refs) => {
        const v = refs ? { refs, set: new Set(refs.map((r) => r.hex)) } : null;
        if (this.tips.size >= HEADER_CACHE) this.tips.delete(this.tips.keys().next().value!);
        this.tips.set(key, v);
        if (this.valid.size >= VALID_CACHE) this.valid.delete(this.valid.keys().next().value!);
        this.valid.set(key, v !== null);
        return v ?? undefined;
      }).finally(() => this.loading.delete(key));
      this.loading.set(key, p);
    }
    return p;
  }

  /** The header's refs when they are read already; else starts reading them for the next request. */
  private tipsCached(b: StoredBundle): Tips | undefined {
    const key = fileKey(b);
    if (!this.tips.has(key)) { void this.tipsOf(b); return undefined; }
    return this.tips.get(key) ?? undefined;
  }

  /**
   * The bundle to offer: the newest of the repository's current view that
   * is a bundle (its header parses, its pack starts with a pack's
   * signature, version and a count). A file of a bundle's name that is
   * not one (garbage, a header past the read limit, a pack that does not
   * begin) is neither advertised, served, nor kept as the current one.
   */
  private async current(repo: Pick<Repository, 'config' | 'commonDir'>): Promise<StoredBundle | undefined> {
    for (const b of candidates(repo)) {
      // known (a bundle or not) without its refs: many repositories' lists do not each read a header again
      const known = this.valid.get(fileKey(b));
      if (known ?? !!await this.tipsOf(b)) return b;
    }
    return undefined;
  }

  /** As current(), without waiting: a file not read yet is unknown (its read is started) and ends the look. */
  private currentCached(files: readonly StoredBundle[]): StoredBundle | undefined {
    for (const b of files) {
      const known = this.valid.get(fileKey(b));
      if (known === undefined) { void this.tipsOf(b); return undefined; }
      if (known) return b;
    }
    return undefined;
  }

  /** auto: count a clone, and queue a make or a check when it is time. */
  private consider(dir: string, b: StoredBundle | undefined, clone: boolean): void {
    const now = Date.now();
    if (!b) {
      if (!clone) return;
      // a make that failed (a full disk, a damaged repository) is tried again no sooner than a check would be
      const failed = this.failedAt.get(dir);
      if (failed !== undefined && now - failed < (this.opts.checkEveryMs ?? 10 * 60_000)) return;
      const window = this.opts.clonesWindowMs ?? 10 * 60_000;
      const times = (this.clones.get(dir) ?? []).filter((t) => now - t < window);
      times.push(now);
      // set anew: the map's order is last use, the oldest first
      this.clones.delete(dir);
      if (times.length >= (this.opts.clones ?? 3)) { this.enqueue(dir); return; }
      setBounded(this.clones, dir, times, (v) => now - v[v.length - 1]! >= window);
      return;
    }
    const every = this.opts.checkEveryMs ?? 10 * 60_000;
    if (now - (this.lastCheck.get(dir) ?? 0) < every) return;
    this.lastCheck.delete(dir);
    setBounded(this.lastCheck, dir, now, (v) => now - v >= every);
    // looked at however young: a bundle holding a deleted or rewound ref is withdrawn now, not once it is old
    this.enqueue(dir);
  }

  /**
   * auto: refs of the repository at `gitDir` moved (a push): one more push
   * the current bundle is behind. Only where a bundle was made (its
   * directory is there); a failure to count is not the push's.
   */
  pushed(gitDir: string): void {
    if (this.opts.mode !== 'auto' || this.closed) return;
    appendFile(join(gitDir, BUNDLE_SUBDIR, PUSHES_FILE), '.', { flag: 'a' }).catch(() => undefined);
  }

  private enqueue(dir: string): void {
    if (this.closed) return;
    this.queue.add(dir);
    this.running ??= this.drain().finally(() => { this.running = undefined; });
  }

  /** Make queued bundles one at a time. */
  private async drain(): Promise<void> {
    while (!this.closed) {
      const dir = this.queue.values().next().value;
      if (dir === undefined) return;
      this.queue.delete(dir);
      await this.makeFor(dir);
    }
  }

  /** Make (or remake) `dir`'s bundle now, unless it is up to date or another node holds the lease. */
  async makeFor(dir: string): Promise<BundleLogLine> {
    const t0 = performance.now();
    const lease = this.opts.coordinator ? await this.opts.coordinator.tryLease(`bundle:${dir}`, 1).catch(() => undefined) : undefined;
    if (this.opts.coordinator && !lease) return this.note({ event: 'bundle', directory: dir, outcome: 'leased-elsewhere' });
    try {
      const repo = this.open(dir);
      const cur = await this.current(repo);
      let withdrawn: string[] = [];
      if (cur) {
        const had = (await this.tipsOf(cur))?.refs;
        const now = (await anonymousRefs(repo)).refs;
        const grace = this.opts.graceMs ?? DEFAULT_GRACE_MS;
        if (had && sameRefs(had, now)) {
          const removed = pruneBundles(bundleDir(repo), cur.view, grace, Date.now(), cur.name);
          return this.note({ event: 'bundle', directory: dir, outcome: 'up-to-date', name: cur.name, ...(removed.length ? { removed } : {}) });
        }
        if (had && await dropsHistory(repo, had, now)) {
          // it holds what a clone no longer gets (a branch deleted, a force push): no client is given it from now on
          withdrawn = withdrawBundles(bundleDir(repo));
        } else if (Date.now() - cur.token * 1000 < (this.opts.remakeAfterMs ?? 6 * 3600_000) && pushesSince(dir) < (this.opts.remakePushes ?? 50)) {
          // behind, not yet old enough (nor pushes enough behind) to remake: clients fetch the rest
          pruneBundles(bundleDir(repo), cur.view, grace, Date.now(), cur.name);
          return { event: 'bundle', directory: dir, outcome: 'up-to-date', name: cur.name };
        }
      }
      // worth making, and within the hour's budget? (a skip is looked at again a check's interval later, as a failure)
      const skip = this.skipReason(repo);
      if (skip) {
        if (skip.reason === 'small') this.stats.skippedSmall++; else this.stats.skippedBudget++;
        this.noteFailed(dir);
        return this.note({ event: 'bundle', directory: dir, outcome: 'skipped', reason: skip.reason, bytes: skip.bytes, ...(withdrawn.length ? { removed: withdrawn } : {}) });
      }
      // the pushes since: counted afresh from here (those during the making are behind the new bundle)
      await truncate(join(bundleDir(repo), PUSHES_FILE)).catch(() => undefined);
      const bucket = await this.s3();
      const name = bucket ? (this.opts.root ? nameUnder(this.opts.root, repo.commonDir) : undefined) : undefined;
      if (bucket && name === undefined) throw new Error('--bundle-store: the repository is not under the served root (the key names it)');
      // with a bucket: made aside, uploaded, then its header alone put in the directory (what is current, and its refs)
      const made = await makeBundle(repo, { signal: this.ac.signal, ...(bucket ? { dir: join(bundleDir(repo), STAGING) } : {}) });
      if (bucket) await publishToBucket(bucket, bucket.key(name!, made.name), made, bundleDir(repo));
      this.failedAt.delete(dir);
      this.made.push({ at: Date.now(), bytes: made.bytes });
      this.stats.made++;
      this.stats.madeBytes += made.bytes;
      this.stats.newestMs = Math.max(this.stats.newestMs, made.token * 1000);
      // the older ones go once the grace period after this one's appearance is over (a later check)
      const removed = [...withdrawn, ...pruneBundles(bundleDir(repo), made.view, this.opts.graceMs ?? DEFAULT_GRACE_MS)];
      if (bucket) for (const r of removed) if (r.endsWith('.bundle')) await bucket.remove(bucket.key(name!, r)).catch(() => undefined);
      return this.note({
        event: 'bundle', directory: dir, outcome: 'made', name: made.name, bytes: made.bytes, refs: made.refs.length,
        objects: made.pack.objects, source: made.pack.source, durationMs: Math.round(performance.now() - t0), ...(removed.length ? { removed } : {}),
      });
    } catch (e) {
      this.stats.failed++;
      this.noteFailed(dir);
      return this.note({ event: 'bundle', directory: dir, outcome: 'failed', error: e instanceof Error ? e.message : String(e), durationMs: Math.round(performance.now() - t0) });
    } finally {
      lease?.release();
    }
  }

  private noteFailed(dir: string): void {
    const now = Date.now();
    const every = this.opts.checkEveryMs ?? 10 * 60_000;
    this.failedAt.delete(dir);
    setBounded(this.failedAt, dir, now, (v) => now - v >= every);
  }

  /** Why `repo` gets no bundle now: its packs are under minBytes, or the hour's budget is spent; with the packs' bytes. */
  private skipReason(repo: Repository): { reason: 'small' | 'budget'; bytes: number } | undefined {
    const bytes = packBytes(repo.commonDir);
    if (bytes < (this.opts.minBytes ?? DEFAULT_MIN_BYTES)) return { reason: 'small', bytes };
    const budget = this.opts.budgetBytes ?? DEFAULT_BUDGET_BYTES;
    if (budget <= 0) return undefined;
    const now = Date.now();
    this.made = this.made.filter((m) => now - m.at < HOUR_MS);
    const used = this.made.reduce((n, m) => n + m.bytes, 0);
    if (used > 0 && used + bytes > budget) return { reason: 'budget', bytes };
    return undefined;
  }

  private open(dir: string, env = this.opts.env): Repository {
    return Repository.open(dir, { strict: true, ...(env ? { env } : {}) });
  }

  private note(l: BundleLogLine): BundleLogLine {
    try { this.opts.log?.(l); } catch { /* a throwing logger must not stop the maker */ }
    return l;
  }

  /**
   * Answer a download of bundle `name` of the repository at `dir` (the
   * transport has authenticated, authorized and resolved it, and refused a
   * request with a ref filter). Only the current view's bundles are served,
   * the view as upload-pack sees it with `env` (the transport's, else the
   * service's): none in a namespace, where a fetch sees less than a bundle holds.
   */
  async download(req: IncomingMessage, res: ServerResponse, dir: string, name: string, env?: NodeJS.ProcessEnv): Promise<FileAnswer> {
    let b: StoredBundle | undefined;
    // with a bucket the files here are headers only: clients download from the bucket
    if (this.opts.s3) return { status: 404, bytesOut: 0, outcome: 'not-found' };
    try {
      const repo = this.open(dir, env ?? this.opts.env);
      b = repo.namespace ? undefined : servableBundle(repo, name);
    } catch { b = undefined; }
    // only a file that is a bundle (read once per file, then cached): a garbage file of a bundle's name is not served
    if (!b || !(this.valid.get(fileKey(b)) ?? !!await this.tipsOf(b))) return { status: 404, bytesOut: 0, outcome: 'not-found' };
    const a = await sendBundleFile(req, res, b.file);
    if ((a.status === 200 || a.status === 206) && req.method !== 'HEAD') { this.stats.downloads++; this.stats.downloadBytes += a.bytesOut; }
    return a;
  }

  /** Wait for the bundle being made (tests, shutdown), after stopping the rest. */
  async idle(): Promise<void> { await this.running; }

  async close(): Promise<void> {
    this.closed = true;
    this.queue.clear();
    this.ac.abort();
    await this.running;
  }
}

/** where a bundle bound for the bucket is made (a directory the listing does not look into) */
const STAGING = '.staging';

/** Upload `made`, then put its header under its name in `dir` and drop the staged file. */
async function publishToBucket(bucket: import('./s3.js').BundleBucket, key: string, made: MadeBundle, dir: string): Promise<void> {
  try {
    await bucket.upload(key, made.file, made.bytes);
    const headerBytes = made.bytes - made.pack.bytes;
    const head = Buffer.alloc(headerBytes);
    const fh = await open(made.file, 'r');
    try { await fh.read(head, 0, headerBytes, 0); } finally { await fh.close(); }
    const tmp = join(dir, tempName(made.name));
    await writeFile(tmp, head);
    await rename(tmp, join(dir, made.name));
  } finally {
    await unlink(made.file).catch(() => undefined);
  }
}

/**
 * Whether a bundle made of `had` holds history a clone of `now` does not
 * get: a ref of it deleted or moved to a commit that does not descend
 * from its tip (a force push), its tip no ref's value now. A fast-forward
 * (the usual push) is not: the bundle is only behind.
 */
async function dropsHistory(repo: Repository, had: readonly BundleRef[], now: readonly BundleRef[]): Promise<boolean> {
  const cur = new Map(now.map((r) => [r.name, r.hex]));
  const values = new Set(now.map((r) => r.hex));
  const slicer = new Slicer();
  for (const r of had) {
    const at = cur.get(r.name);
    if (at === r.hex || values.has(r.hex)) continue;
    if (at === undefined) return true;
    if (!await isAncestor(repo, Buffer.from(r.hex, 'hex'), Buffer.from(at, 'hex'), slicer)) return true;
  }
  return false;
}

/** Remove every bundle in `dir` (a download under way keeps its open file); the names removed. */
function withdrawBundles(dir: string): string[] {
  const removed: string[] = [];
  for (const b of listBundles(dir)) {
    try { unlinkSync(b.file); removed.push(b.name); } catch { /* gone already */ }
  }
  return removed;
}

function sameRefs(a: readonly BundleRef[], b: readonly BundleRef[]): boolean {
  if (a.length !== b.length) return false;
  const m = new Map(a.map((r) => [r.name, r.hex]));
  return b.every((r) => m.get(r.name) === r.hex);
}

/**
 * A bundle's header refs, read from the file's start (undefined when it is
 * not a readable bundle); with `pack`, also undefined unless the pack after
 * the header begins as one: `PACK`, version 2 or 3, a count of at least one
 * object (the bundle has refs), and room for the count's trailer.
 */
async function readHeaderRefs(file: string, pack: boolean): Promise<BundleRef[] | undefined> {
  let fh: FileHandle;
  try { fh = await open(file, 'r'); } catch { return undefined; }
  try {
    let buf = Buffer.alloc(64 * 1024);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        if (buf.length >= MAX_HEADER_BYTES) return undefined;
        const bigger = Buffer.alloc(buf.length * 4);
        buf.copy(bigger);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      // the empty line ends the header: looked for from where this read began (the line before may end in it)
      const from = Math.max(0, n - 1);
      n += bytesRead;
      if (buf.subarray(from, n).includes('\n\n')) break;
      if (bytesRead === 0) return undefined;
    }
    const h = await parseBundleHeaderSliced(buf.subarray(0, n));
    if (h.refs.length === 0) return undefined;
    if (pack) {
      const head = Buffer.alloc(12);
      const { bytesRead } = await fh.read(head, 0, 12, h.length);
      if (bytesRead < 12 || !head.subarray(0, 4).equals(PACK_SIGNATURE)) return undefined;
      const version = head.readUInt32BE(4);
      if (version !== 2 && version !== 3) return undefined;
      if (head.readUInt32BE(8) === 0) return undefined;
      const trailer = h.objectFormat === 'sha256' ? 32 : 20;
      if ((await fh.stat()).size < h.length + 12 + trailer) return undefined;
    }
    return h.refs;
  } catch {
    return undefined;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** The repository's name under `root` as a client names it over HTTP (`group/name`), or undefined. */
function nameUnder(root: string, commonDir: string): string | undefined {
  let r: string, d: string;
  try { r = realpathSync(root); d = realpathSync(commonDir); } catch { return undefined; }
  if (!d.startsWith(`${r}/`)) return undefined;
  return d.slice(r.length + 1);
}

const PACK_SIGNATURE = Buffer.from('PACK');
/**
 * Files of the view looked at for the current bundle, newest first: 16 at most
 * (a directory of many files that are no bundle is not read whole on each
 * request, nor do they push each other out of the header cache).
 */
const CANDIDATES = 16;

function candidates(repo: Pick<Repository, 'config' | 'commonDir'>): StoredBundle[] {
  const view = viewKey(repo);
  return listBundles(bundleDir(repo)).filter((b) => b.view === view).slice(0, CANDIDATES);
}

/** A stored bundle's identity: path, size, time and inode (a file replaced or rewritten is read again). */
function fileKey(b: StoredBundle): string {
  return `${b.file}\0${b.bytes}\0${b.mtimeMs}\0${b.ino}`;
}

/**
 * Set `key` in `map`, held to MAX_TRACKED entries: past the cap, entries
 * `stale` says are past their window go, then the oldest (the map's order
 * is insertion: callers delete before they set).
 */
function setBounded<V>(map: Map<string, V>, key: string, value: V, stale: (v: V) => boolean): void {
  map.set(key, value);
  if (map.size <= MAX_TRACKED) return;
  for (const [k, v] of map) if (stale(v)) map.delete(k);
  // still full: the oldest tenth goes (a sweep per tenth of the cap, not per insert)
  if (map.size > MAX_TRACKED * 0.9) for (const k of map.keys()) { if (map.size <= MAX_TRACKED * 0.9) break; map.delete(k); }
}

/** Bytes of the packs of the repository at `gitDir` (what a clone of it is about; loose objects and alternates left out). */
function packBytes(gitDir: string): number {
  const dir = join(gitDir, 'objects', 'pack');
  let n = 0;
  let names: string[] = [];
  try { names = readdirSync(dir); } catch { return 0; }
  for (const name of names) {
    if (!name.endsWith('.pack')) continue;
    n += statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
  }
  return n;
}

/** The file pushes are counted in (a byte each), in the bundle directory. */
const PUSHES_FILE = 'pushes';

/** How many pushes moved the refs of the repository at `gitDir` since its bundle was made. */
function pushesSince(gitDir: string): number {
  return statSync(join(gitDir, BUNDLE_SUBDIR, PUSHES_FILE), { throwIfNoEntry: false })?.size ?? 0;
}
