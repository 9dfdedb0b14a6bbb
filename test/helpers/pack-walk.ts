/**
 * The oracle for object enumeration: what real `git pack-objects --revs
 * --stdout` packs for a request (bitmaps off, no deltas so the pack
 * indexes on its own), as sorted hex ids. git 2.55 when GITWIRE_GIT_2_55
 * names its prefix, else the git on PATH.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packObjectsArgs, packObjectsInput, type PackObjectsRequest } from '../../src/pack/pack-objects.js';
import { Repository } from '../../src/repo/repository.js';
import { walkPlan } from '../../src/pack/produce/enumerate/index.js';
import type { IdsPart, PackPlan } from '../../src/pack/produce/plan.js';
import { run } from './git.js';

const prefix = process.env.GITWIRE_GIT_2_55;
export const ORACLE_GIT = prefix && existsSync(join(prefix, 'bin', 'git')) ? join(prefix, 'bin', 'git') : 'git';
const oracleEnv: NodeJS.ProcessEnv = prefix && ORACLE_GIT !== 'git' ? { GIT_EXEC_PATH: join(prefix, 'libexec', 'git-core') } : {};

export function request(gitDir: string, r: Partial<PackObjectsRequest>): PackObjectsRequest {
  return { gitDir, wants: [], haves: [], extraEdges: [], shallow: [], useShallow: false, thin: false, progress: false, ofsDelta: true, includeTag: false, ...r };
}

let seq = 0;
/** Sorted hex ids of what git packs for `req`. */
export function gitPackSet(req: PackObjectsRequest, scratch: string, config: string[] = []): string[] {
  const cfg = ['-c', 'pack.useBitmaps=false', ...config.flatMap((c) => ['-c', c])];
  const args = [...cfg, ...packObjectsArgs({ ...req, progress: false }), '--depth=0', '--no-reuse-delta'];
  const r = run(ORACLE_GIT, args, { cwd: req.gitDir, input: packObjectsInput(req), env: { ...oracleEnv, GIT_DIR: req.gitDir } });
  if (r.status !== 0) throw new Error(`git pack-objects failed: ${r.stderr.toString()}`);
  const pack = join(scratch, `oracle-${process.pid}-${seq++}.pack`);
  writeFileSync(pack, r.stdout);
  const fmt = run(ORACLE_GIT, ['rev-parse', '--show-object-format'], { cwd: req.gitDir, env: { ...oracleEnv, GIT_DIR: req.gitDir } }).stdout.toString().trim();
  const ix = run(ORACLE_GIT, ['index-pack', `--object-format=${fmt}`, '-o', `${pack}.idx`, pack], { env: oracleEnv });
  if (ix.status !== 0) throw new Error(`git index-pack failed: ${ix.stderr.toString()}`);
  const si = run(ORACLE_GIT, ['show-index', `--object-format=${fmt}`], { input: readFileSync(`${pack}.idx`), env: oracleEnv });
  return si.stdout.toString().split('\n').filter(Boolean).map((l) => l.split(' ')[1]!).sort();
}


/** The plan's ids, in plan order. */
export function planIds(plan: PackPlan, hashLen: number): string[] {
  const out: string[] = [];
  for (const p of plan.parts) {
    const ids = (p as IdsPart).ids;
    for (let i = 0; i < (p as IdsPart).count; i++) out.push(ids.toString('hex', i * hashLen, (i + 1) * hashLen));
  }
  return out;
}

/** Our sorted ids for `req`. */
export async function walkSet(req: PackObjectsRequest): Promise<{ ids: string[]; plan: PackPlan; sorted: string[] }> {
  const repo = Repository.open(req.gitDir);
  try {
    const plan = await walkPlan(repo, req);
    const ids = planIds(plan, repo.hashLen);
    return { ids, plan, sorted: [...ids].sort() };
  } finally {
    repo.close();
  }
}
