/**
 * Driving `git pack-objects` with the arguments and stdin git's
 * upload-pack gives it.
 */
import { spawnChild, type Child } from '../util/spawn.js';

export interface PackObjectsRequest {
  gitDir: string;
  wants: Buffer[];
  haves: Buffer[];
  extraEdges: Buffer[];
  /** shallow grafts to pass as `--shallow <oid>` (only when useShallow) */
  shallow: Buffer[];
  useShallow: boolean;
  thin: boolean;
  progress: boolean;
  ofsDelta: boolean;
  includeTag: boolean;
  filter?: string;
  /** uploadpack.packObjectsHook, from protected config only */
  hook?: string;
  env?: NodeJS.ProcessEnv;
}

export function packObjectsArgs(r: PackObjectsRequest): string[] {
  const a: string[] = [];
  if (r.useShallow) a.push('--shallow-file', '');
  a.push('pack-objects', '--revs');
  if (r.thin) a.push('--thin');
  a.push('--stdout');
  if (r.useShallow) a.push('--shallow');
  if (r.progress) a.push('--progress');
  if (r.ofsDelta) a.push('--delta-base-offset');
  if (r.includeTag) a.push('--include-tag');
  if (r.filter) a.push(`--filter=${r.filter}`);
  return a;
}

/** The exact bytes written to pack-objects' stdin. */
export function packObjectsInput(r: PackObjectsRequest): Buffer {
  let s = '';
  if (r.useShallow) {
    const sorted = [...r.shallow].sort(Buffer.compare);
    for (const o of sorted) s += `--shallow ${o.toString('hex')}\n`;
  }
  for (const o of r.wants) s += `${o.toString('hex')}\n`;
  s += '--not\n';
  for (const o of r.haves) s += `${o.toString('hex')}\n`;
  for (const o of r.extraEdges) s += `${o.toString('hex')}\n`;
  s += '\n';
  return Buffer.from(s, 'latin1');
}

export function spawnPackObjects(r: PackObjectsRequest): Child {
  const args = packObjectsArgs(r);
  const env = { ...(r.env ?? process.env), GIT_DIR: r.gitDir };
  const child = r.hook
    ? spawnChild('/bin/sh', ['-c', `${r.hook} "$@"`, r.hook, 'git', ...args], { cwd: r.gitDir, env, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawnChild('git', args, { cwd: r.gitDir, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin!.on('error', () => { /* pack-objects died early: reported by its exit status */ });
  child.stdin!.end(packObjectsInput(r));
  return child;
}
