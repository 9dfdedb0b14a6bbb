/**
 * Push test helpers: twin server repositories (one served by gitwire, one
 * by git receive-pack), the same push to each, and the state to compare.
 */
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createHash } from 'node:crypto';
import { BIN, git, gitEnv } from './git.js';
import { finished, noteLine } from './child-wait.js';

export type Impl = 'gitwire' | 'git';
export const IMPLS: Impl[] = ['gitwire', 'git'];

export function receivePackArg(impl: Impl): string[] {
  return impl === 'gitwire' ? [`--receive-pack=${BIN} receive-pack`] : [];
}

export interface PushOutcome { code: number; stdout: string; stderr: string }

/** `git push` from `client` to `server` through one implementation. */
export function push(impl: Impl, client: string, server: string, args: string[], env: NodeJS.ProcessEnv = {}): PushOutcome {
  const r = spawnSync('git', ['push', ...receivePackArg(impl), server, ...args], { cwd: client, env: { ...gitEnv, ...env }, encoding: 'utf8' });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** The client's view with the server path and progress removed: `To …` status lines, errors, remote: lines. */
export function normalizeClient(s: string, server: string): string {
  return s.split(server).join('<SERVER>')
    .split('\n')
    .map((l) => l.replace(/^.*\r/, ''))
    .filter((l) => !/^remote: (Resolving deltas|Checking connectivity|Unpacking objects|Total |Counting|Compressing|Writing)/.test(l))
    .filter((l) => !/^(Enumerating|Counting|Compressing|Writing|Total|Delta compression|Unpacking) /.test(l))
    .filter((l) => !/^remote: *$/.test(l))
    .join('\n');
}

/** refs (with symrefs), reflogs, packed-refs' names and shallow of a server repository */
export function serverState(dir: string): { refs: string; head: string; reflogs: Record<string, string>; shallow: string; packedRefs: string } {
  const refs = git(['for-each-ref', '--format=%(objectname) %(refname) %(symref)'], { cwd: dir });
  let head = '';
  try { head = readFileSync(join(dir, 'HEAD'), 'utf8'); } catch { /* none */ }
  const reflogs: Record<string, string> = {};
  const logs = join(dir, 'logs');
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p); else reflogs[relative(logs, p)] = readFileSync(p, 'utf8');
    }
  };
  walk(logs);
  let shallow = '';
  try { shallow = readFileSync(join(dir, 'shallow'), 'utf8'); } catch { /* none */ }
  let packedRefs = '';
  try { packedRefs = readFileSync(join(dir, 'packed-refs'), 'utf8'); } catch { /* none */ }
  return { refs, head, reflogs, shallow, packedRefs };
}

export function fsck(dir: string): { code: number; out: string } {
  const r = spawnSync('git', ['fsck', '--strict', '--no-progress'], { cwd: dir, env: gitEnv, encoding: 'utf8' });
  return { code: r.status ?? -1, out: r.stdout + r.stderr };
}

/** Every file under objects/ (names only) — to prove nothing was left behind. */
export function objectFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p); else out.push(relative(dir, p));
    }
  };
  walk(join(dir, 'objects'));
  return out.sort();
}

// ---- raw requests -----------------------------------------------------

export function pkt(s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s) : s;
  return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]);
}

export function emptyPack(format: 'sha1' | 'sha256' = 'sha1'): Buffer {
  const h = Buffer.from('5041434b0000000200000000', 'hex');
  return Buffer.concat([h, createHash(format === 'sha1' ? 'sha1' : 'sha256').update(h).digest()]);
}

/** A push request: commands (first with capabilities), flush, then the pack. */
export function request(cmds: string[], caps: string, pack?: Buffer, extra: Buffer[] = []): Buffer {
  const out: Buffer[] = [];
  cmds.forEach((c, i) => out.push(pkt(i === 0 ? `${c}\0${caps}` : c)));
  out.push(Buffer.from('0000'), ...extra);
  if (pack) out.push(pack);
  return Buffer.concat(out);
}

export interface RawOutcome { code: number; stdout: Buffer; stderr: string }

/** `<impl> receive-pack --stateless-rpc <dir>` with `input` on stdin */
export async function rawReceivePack(impl: Impl, dir: string, input: Buffer, env: NodeJS.ProcessEnv = {}, extraArgs: string[] = [], timeoutMs = 300_000): Promise<RawOutcome> {
  const [cmd, args] = impl === 'gitwire' ? [BIN, ['receive-pack', ...extraArgs, dir]] : ['git', ['receive-pack', ...extraArgs, dir]];
  const child = spawn(cmd, args, { env: { ...gitEnv, ...env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const out: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => { err += b.toString(); });
  child.stdin.on('error', () => { /* exited early */ });
  child.stdin.end(input);
  // past the deadline it and what it started (hooks, index-pack) are killed; stderr's last line says what was left
  const f = await finished(child, `${impl} receive-pack`, { timeoutMs, group: true });
  return { code: f.code ?? -1, stdout: Buffer.concat(out), stderr: err + noteLine(f) };
}

/** pkt-lines as text (`0000` for flush), sideband frames unwrapped */
export function transcript(b: Buffer): string[] {
  const out: string[] = [];
  let i = 0;
  while (i + 4 <= b.length) {
    const n = parseInt(b.toString('latin1', i, i + 4), 16);
    if (n === 0) { out.push('0000'); i += 4; continue; }
    out.push(b.toString('utf8', i + 4, i + n));
    i += n;
  }
  return out;
}

/** processes whose command line mentions `needle` (leaked children) */
export function processesMentioning(needle: string): string[] {
  const r = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l.includes(needle) && !l.includes('ps -eo'));
}
