/**
 * Repositories with reachability bitmaps, made by real git at test time,
 * and the oracle for what a pack holds: `git pack-objects --revs --stdout`
 * fed what upload-pack feeds it, its pack indexed by `git index-pack` and
 * listed by `git show-index`.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { git, gitEnv } from './git.js';
import { packObjectsInput, type PackObjectsRequest } from '../../src/pack/pack-objects.js';
import type { PackPlan } from '../../src/pack/produce/plan.js';

/** git 2.55 built from source, when GITWIRE_GIT_2_55 names its prefix (tests never require it). */
export const GIT_2_55 = process.env.GITWIRE_GIT_2_55 && existsSync(join(process.env.GITWIRE_GIT_2_55, 'bin', 'git')) ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : undefined;

export function gitWith(bin: string, args: string[], cwd: string, input?: string | Buffer): Buffer {
  return execFileSync(bin, args, { cwd, input, env: gitEnv, maxBuffer: 1 << 30 });
}

function content(i: number, seed: number, lines: number): string {
  let s = '';
  for (let k = 0; k < lines; k++) s += `line ${k} of ${seed}: ${(k * 7919 + seed * 31 + i) % 1009}\n`;
  return s;
}

/**
 * A fast-import stream: `n` commits on main from `from` (a mark or ref),
 * a few files each in several directories, blobs of growing sizes under
 * big/, a side branch merged back halfway. Marks start at `mark0`.
 */
export function history(opts: { n: number; mark0: number; branch: string; from?: string; time0: number; seed: number; side?: boolean }): string {
  let s = '';
  let mark = opts.mark0;
  let prev = opts.from;
  let sideTip: string | undefined;
  for (let i = 0; i < opts.n; i++) {
    const m = `:${++mark}`;
    const t = opts.time0 + i * 60;
    const msg = `commit ${opts.seed}.${i}\n`;
    s += `commit refs/heads/${opts.branch}\nmark ${m}\ncommitter C O Mitter <c@example.com> ${t} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}`;
    if (prev) s += `from ${prev}\n`;
    if (opts.side && sideTip && i === Math.floor(opts.n * 0.75)) s += `merge ${sideTip}\n`;
    const files: Array<[string, string]> = [
      [`dir${i % 5}/f${i % 7}.txt`, content(i, opts.seed, 20 + (i % 9))],
      [`dir${(i + 2) % 5}/sub${i % 3}/g${i % 4}.c`, content(i, opts.seed + 1, 8)],
      ['top.txt', content(i, opts.seed + 2, 5)],
    ];
    if (i % 4 === 0) files.push([`big/b${i % 6}.bin`, content(i, opts.seed + 3, 40 + i * 3)]);
    for (const [path, data] of files) s += `M 100644 inline ${path}\ndata ${Buffer.byteLength(data)}\n${data}\n`;
    prev = m;
    if (opts.side && i === Math.floor(opts.n / 2)) {
      // a side branch of three commits from here
      let sp = m;
      for (let k = 0; k < 3; k++) {
        const sm = `:${++mark}`;
        const smsg = `side ${opts.seed}.${k}\n`;
        s += `commit refs/heads/side\nmark ${sm}\ncommitter C O Mitter <c@example.com> ${t + 10 + k} +0000\ndata ${Buffer.byteLength(smsg)}\n${smsg}from ${sp}\n`;
        const d = content(k, opts.seed + 9, 12);
        s += `M 100644 inline side/s${k}.txt\ndata ${Buffer.byteLength(d)}\n${d}\n`;
        sp = sm;
      }
      sideTip = sp;
    }
  }
  return s;
}

export interface BitmapRepoOptions {
  objectFormat?: 'sha1' | 'sha256';
  /** commits on main */
  commits?: number;
  /** how the bitmap is written */
  layout?: 'pack' | 'midx-one' | 'midx-many';
  lookupTable?: boolean;
  hashCache?: boolean;
  /** objects added after the bitmap: a pack without bitmap and loose objects */
  after?: boolean;
  /** the git binary that writes the bitmap (default: the installed one) */
  gitBin?: string;
}

/** A bare repository with a bitmap as `opts` says. */
export function makeBitmapRepo(dir: string, name: string, opts: BitmapRepoOptions = {}): string {
  const repo = join(dir, name);
  const bin = opts.gitBin ?? 'git';
  gitWith(bin, ['init', '-q', '--bare', '-b', 'main', ...(opts.objectFormat ? [`--object-format=${opts.objectFormat}`] : []), repo], dir);
  const n = opts.commits ?? 40;
  gitWith(bin, ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], repo, history({ n, mark0: 0, branch: 'main', time0: 1700000000, seed: 1, side: true }));
  git(['branch', 'old', 'main~10'], { cwd: repo });
  git(['tag', 'light', 'main~5'], { cwd: repo });
  git(['tag', '-a', '-m', 'annotated', 'v1', 'main~3'], { cwd: repo });
  git(['tag', '-a', '-m', 'outer', 'v1-outer', 'v1'], { cwd: repo });
  git(['tag', '-a', '-m', 'tree tag', 'treetag', 'main~7^{tree}'], { cwd: repo });
  git(['tag', '-a', '-m', 'blob tag', 'blobtag', 'main~2:top.txt'], { cwd: repo });
  const cfg = ['-c', `pack.writeBitmapLookupTable=${opts.lookupTable ?? false}`, '-c', `pack.writeBitmapHashCache=${opts.hashCache ?? true}`];
  const layout = opts.layout ?? 'pack';
  if (layout === 'pack') gitWith(bin, [...cfg, 'repack', '-adbq'], repo);
  else if (layout === 'midx-one') gitWith(bin, [...cfg, 'repack', '-adq', '--write-midx', '--write-bitmap-index'], repo);
  else {
    // several packs: history in three slices, then one midx bitmap over them
    gitWith(bin, ['-c', 'repack.writeBitmaps=false', 'repack', '-adq'], repo);
    gitWith(bin, ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], repo, history({ n: 6, mark0: 1000, branch: 'main', from: 'refs/heads/main^0', time0: 1700100000, seed: 2 }));
    gitWith(bin, ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], repo, history({ n: 5, mark0: 2000, branch: 'topic', from: 'refs/heads/old^0', time0: 1700200000, seed: 3 }));
    gitWith(bin, [...cfg, 'multi-pack-index', 'write', '--bitmap'], repo);
  }
  if (opts.after) addAfter(repo, bin);
  return repo;
}

/** Objects after the bitmap: a new pack (fast-import) and loose objects on top. */
export function addAfter(repo: string, bin = 'git'): void {
  gitWith(bin, ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'], repo, history({ n: 3, mark0: 5000, branch: 'main', from: 'refs/heads/main^0', time0: 1700300000, seed: 4 }));
  const blob = git(['hash-object', '-w', '--stdin'], { cwd: repo, input: 'loose blob\n' }).trim();
  const tree = git(['mktree'], { cwd: repo, input: `100644 blob ${blob}\tloose.txt\n040000 tree ${git(['rev-parse', 'main^{tree}'], { cwd: repo }).trim()}\tprev\n` }).trim();
  const c = git(['commit-tree', tree, '-p', 'main', '-m', 'loose'], { cwd: repo }).trim();
  git(['update-ref', 'refs/heads/main', c], { cwd: repo });
  git(['tag', '-a', '-m', 'new tag', 'v2', c], { cwd: repo });
}

export function rev(repo: string, what: string): Buffer {
  return Buffer.from(git(['rev-parse', what], { cwd: repo }).trim(), 'hex');
}

export function request(repo: string, r: Partial<PackObjectsRequest>): PackObjectsRequest {
  return {
    gitDir: repo, wants: [], haves: [], extraEdges: [], shallow: [], useShallow: false,
    thin: false, progress: false, ofsDelta: true, includeTag: false, ...r,
  };
}

let seq = 0;

/** The objects `git pack-objects` packs for `req` (its --thin left out: it changes deltas, not the set). */
export function oracleSet(repo: string, req: PackObjectsRequest, bin = 'git'): Set<string> {
  const args = ['pack-objects', '--revs', '--stdout'];
  if (req.includeTag) args.push('--include-tag');
  if (req.filter) args.push(`--filter=${req.filter}`);
  const pack = gitWith(bin, args, repo, packObjectsInput(req));
  const base = join(repo, `oracle-${process.pid}-${++seq}`);
  writeFileSync(`${base}.pack`, pack);
  gitWith(bin, ['index-pack', '-o', `${base}.idx`, `${base}.pack`], repo);
  const fmt = git(['rev-parse', '--show-object-format'], { cwd: repo }).trim();
  const out = execFileSync('sh', ['-c', `git show-index --object-format=${fmt} < "${base}.idx"; rm -f "${base}.pack" "${base}.idx"`], { cwd: repo, env: gitEnv }).toString();
  const set = new Set<string>();
  for (const line of out.split('\n')) { const f = line.split(' '); if (f[1]) set.add(f[1]); }
  return set;
}

/** The plan's objects as hex ids. */
export function planSet(plan: PackPlan): Set<string> {
  const out = new Set<string>();
  for (const p of plan.parts) {
    if (p.kind === 'ranks') {
      const order = p.pack.positionsInPackOrder();
      for (const r of p.ranks) out.add(p.pack.index.oid(order[r]!).toString('hex'));
    } else {
      const hl = p.ids.length / p.count;
      for (let i = 0; i < p.count; i++) out.add(p.ids.subarray(i * hl, (i + 1) * hl).toString('hex'));
    }
  }
  return out;
}

/** Every ref's id (the wants of a full clone). */
export function allTips(repo: string): Buffer[] {
  const ids = new Set(git(['for-each-ref', '--format=%(objectname)'], { cwd: repo }).trim().split('\n'));
  return [...ids].map((h) => Buffer.from(h, 'hex'));
}

/** The .bitmap file of the repository (the one git uses). */
export function bitmapPath(repo: string): string {
  const dir = join(repo, 'objects', 'pack');
  const names = readdirSync(dir);
  const m = names.find((x) => x.startsWith('multi-pack-index-') && x.endsWith('.bitmap'));
  if (m) return join(dir, m);
  const p = names.find((x) => x.endsWith('.bitmap'));
  if (!p) throw new Error(`no bitmap in ${dir}`);
  return join(dir, p);
}

export function diff(a: Set<string>, b: Set<string>): { onlyA: string[]; onlyB: string[] } {
  return { onlyA: [...a].filter((x) => !b.has(x)), onlyB: [...b].filter((x) => !a.has(x)) };
}
