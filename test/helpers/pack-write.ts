/** Plans built from real git's view of a repository, and packs checked by real git (pack writer tests). */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Repository } from '../../src/repo/repository.js';
import type { PackFile } from '../../src/repo/pack.js';
import type { IdsPart, PackPlan, PlanPart, RanksPart } from '../../src/pack/produce/plan.js';
import { writePack, type WritePackOptions, type NativePackSource } from '../../src/pack/produce/write/index.js';
import { git, run } from './git.js';

export function openRepo(dir: string): Repository {
  return Repository.open(dir, { env: { ...process.env, GIT_DIR: undefined } });
}

/** The repository's packs (by .pack file name). */
export function packsOf(repo: Repository): PackFile[] {
  repo.odb.rescan();
  return repo.odb.sources.flatMap((s) => s.packs);
}

export function packNamed(repo: Repository, dir: string, name: string): PackFile {
  const p = packsOf(repo).find((x) => x.packPath === join(dir, name));
  if (!p) throw new Error(`no pack ${name}`);
  return p;
}

export function packFiles(objectsDir: string): string[] {
  return readdirSync(join(objectsDir, 'pack')).filter((n) => n.endsWith('.pack')).sort();
}

export function ranksPart(pack: PackFile, keep: (rank: number) => boolean = () => true): RanksPart {
  const n = pack.offsetsInPackOrder().length;
  const out: number[] = [];
  for (let r = 0; r < n; r++) if (keep(r)) out.push(r);
  // (as a single-pack bitmap names its pack: the one git's pack reuse takes from)
  return { kind: 'ranks', pack, ranks: Uint32Array.from(out), reuse: 'first' };
}

export function idsPart(hexes: string[]): IdsPart {
  return { kind: 'ids', ids: Buffer.from(hexes.join(''), 'hex'), count: hexes.length };
}

/** Ids `git rev-list --objects` lists for `args` (run in `cwd`). */
export function revListObjects(cwd: string, args: string[]): string[] {
  return git(['rev-list', '--objects', ...args], { cwd }).split('\n').filter(Boolean).map((l) => l.slice(0, l.indexOf(' ') < 0 ? l.length : l.indexOf(' ')));
}

export function planOf(parts: PlanPart[], clientHas?: (oid: Buffer) => boolean): PackPlan {
  let count = 0;
  for (const p of parts) count += p.kind === 'ids' ? p.count : p.ranks.length;
  // parts of ranks are what bitmaps give
  return { count, parts, clientHas, source: parts.some((p) => p.kind === 'ranks') ? 'bitmap' : 'walk' };
}

export interface Written { pack: Buffer; ok: boolean; stderr: string; src: NativePackSource }

/** Write a plan by pulling as the relay does (frame-block-like views), collecting the bytes and band 2. */
export async function writeAll(repo: Repository, plan: PackPlan, opts: Partial<WritePackOptions> = {}, viewSizes = [65515, 65515, 65515, 65515, 65515, 65515, 65515, 65515]): Promise<Written> {
  const src = writePack(repo, plan, { ofsDelta: true, progress: true, ...opts });
  let stderr = '';
  const errDone = (async () => { for await (const c of src.stderr) stderr += c.toString(); })();
  const block = Buffer.alloc(viewSizes.reduce((a, b) => a + b, 0));
  const views: Buffer[] = [];
  let at = 0;
  for (const n of viewSizes) { views.push(block.subarray(at, at + n)); at += n; }
  const out: Buffer[] = [];
  for (;;) {
    const n = await src.readInto(views);
    if (n === 0) break;
    out.push(Buffer.from(block.subarray(0, n)));
  }
  const r = await src.done;
  await errDone;
  return { pack: Buffer.concat(out), ok: r.ok, stderr, src };
}

/** `git index-pack --strict --stdin` into a fresh bare repository (or into `into`); its objects. */
export function indexPack(pack: Buffer, dir: string, opts: { format?: 'sha1' | 'sha256'; into?: string; fixThin?: boolean } = {}): { ok: boolean; stderr: string; objects: string[]; repo: string; types?: { ofs: number; ref: number; whole: number } } {
  const repo = opts.into ?? join(dir, `check-${Math.random().toString(36).slice(2)}.git`);
  if (!opts.into) git(['init', '-q', '--bare', ...(opts.format === 'sha256' ? ['--object-format=sha256'] : []), repo]);
  const r = run('git', ['index-pack', '--strict', '--stdin', ...(opts.fixThin ? ['--fix-thin'] : [])], { cwd: repo, input: pack });
  if (r.status !== 0) return { ok: false, stderr: r.stderr.toString(), objects: [], repo };
  const name = r.stdout.toString().trim().split(/\s+/).pop()!;
  const idx = join(repo, 'objects', 'pack', `pack-${name}.idx`);
  const shown = run('git', ['show-index', ...(opts.format === 'sha256' ? ['--object-format=sha256'] : [])], { cwd: repo, input: readFileSync(idx) });
  const rows = shown.stdout.toString().split('\n').filter(Boolean).map((l) => l.split(' '));
  const objects = rows.map((x) => x[1]!).sort();
  // entry types straight from the pack bytes at each offset (6: OFS_DELTA, 7: REF_DELTA)
  const types = { ofs: 0, ref: 0, whole: 0 };
  for (const x of rows) {
    // (objects that --fix-thin appended start where our trailer was: not ours)
    if (Number(x[0]) >= pack.length - (opts.format === 'sha256' ? 32 : 20)) continue;
    const t = (pack[Number(x[0])]! >> 4) & 7;
    if (t === 6) types.ofs++; else if (t === 7) types.ref++; else types.whole++;
  }
  return { ok: true, stderr: r.stderr.toString(), objects, repo, types };
}

