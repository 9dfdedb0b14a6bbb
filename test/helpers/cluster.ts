/**
 * Three `gitwire serve` nodes over one root and one cache directory, a real
 * redis-server and haproxy in front (the configuration of docs/cluster.md,
 * its addresses and ports replaced by loopback ones), all on free ports and
 * stopped by PID.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ROOT, gitEnv } from './git.js';
import { freePort } from './push-net.js';
import { startServe, type ServerProc } from './server-process.js';
import { finished, noteLine, stopChild, track } from './child-wait.js';
import { writeKnownHosts, type SshKit } from './ssh.js';

export const HAVE_REDIS = spawnSync('redis-server', ['--version']).status === 0;
export const HAVE_HAPROXY = spawnSync('haproxy', ['-v']).status === 0;

export interface Proc { child: ChildProcess; port: number; stop(signal?: NodeJS.Signals): Promise<void> }

function stopper(child: ChildProcess, what: string): (signal?: NodeJS.Signals) => Promise<void> {
  return (signal = 'SIGTERM') => stopChild(child, what, { signal, exitMs: 20_000 }).then(() => undefined);
}

/** Resolves once something accepts connections on `port` (or rejects after `ms`). */
export async function listening(port: number, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`nothing listens on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** redis-server on `port` (a free one unless given: a restart reuses the port), nothing saved; `extra`: more of its arguments. */
export async function startRedis(dir: string, port?: number, extra: string[] = []): Promise<Proc> {
  const p = port ?? await freePort();
  const child = track(spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra], { stdio: 'ignore' }), `redis-server on ${p}`);
  const proc: Proc = { child, port: p, stop: stopper(child, `redis-server on ${p}`) };
  try { await listening(p); } catch (e) { await proc.stop('SIGKILL'); throw e; }
  return proc;
}

export interface Backends { http: number[]; git: number[]; ssh?: number[] }

/** docs/cluster.md's haproxy configuration, for loopback: its frontends on `front`, its servers the nodes'. */
export function haproxyConfig(front: { http: number; git: number; ssh?: number }, nodes: Backends): string {
  const doc = readFileSync(join(ROOT, 'docs', 'cluster.md'), 'utf8');
  const m = /```haproxy\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/cluster.md has no haproxy block');
  let cfg = m[1]!;
  cfg = cfg.replace('bind :80\n', `bind 127.0.0.1:${front.http}\n`).replace('bind :9418\n', `bind 127.0.0.1:${front.git}\n`)
    .replace('bind :22\n', `bind 127.0.0.1:${front.ssh ?? 0}\n`);
  cfg = cfg.replace(/server node(\d) 10\.0\.0\.\d+:(8080|9418|2222)/g, (_all, n: string, port: string) => {
    const i = Number(n) - 1;
    const p = port === '8080' ? nodes.http[i] : port === '9418' ? nodes.git[i] : nodes.ssh?.[i];
    return `server node${n} 127.0.0.1:${p ?? 1}`;
  });
  if (!front.ssh) cfg = cfg.replace(/frontend git_ssh[\s\S]*$/, '');
  return cfg;
}

/** `edit`: a change to the documented configuration (a test of what a line does) */
export async function startHaproxy(dir: string, nodes: Backends, edit: (cfg: string) => string = (c) => c): Promise<Proc & { http: number; git: number; ssh?: number }> {
  const front = { http: await freePort(), git: await freePort(), ssh: nodes.ssh ? await freePort() : undefined };
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, edit(haproxyConfig(front, nodes)));
  const child = track(spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] }), `haproxy on ${front.http}`);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const proc = { child, port: front.http, ...front, stop: stopper(child, `haproxy on ${front.http}`) };
  try {
    await listening(front.http);
    await listening(front.git);
    if (front.ssh) await listening(front.ssh);
  } catch (e) {
    await proc.stop('SIGKILL');
    throw new Error(`haproxy did not start: ${(e as Error).message}\n${err}`);
  }
  return proc;
}

export interface ClusterOpts {
  root: string;
  /** the shared pack-cache directory (none: no --pack-cache) */
  cache?: string;
  /** redis URL, or undefined for three uncoordinated nodes */
  redis?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  ssh?: SshKit;
}

/** One node: HTTP and git:// (and SSH with a kit) on free ports, pushes on. */
export function startNode(o: ClusterOpts): Promise<ServerProc> {
  // git:// and SSH come only through haproxy, which opens each with a PROXY header, HTTP with X-Forwarded-For (docs/cluster.md)
  // no drain on stop (haproxy probes /readyz): a test that wants one passes its own --drain-delay, which wins
  const args = ['--http', '0', '--git', '0', '--export-all', '--enable', 'receive-pack', '--proxy-protocol', '127.0.0.1', '--trust-proxy', '127.0.0.1', '--drain-delay', '0', ...(o.cache ? ['--pack-cache', o.cache] : []), ...(o.redis ? ['--redis', o.redis] : []), ...(o.args ?? [])];
  if (o.ssh) args.push('--ssh', '0', '--ssh-keys', o.ssh.keys, '--ssh-host-key', o.ssh.hostKey);
  return startServe(o.root, args, o.env);
}

export interface Cluster {
  nodes: ServerProc[];
  lb: Proc & { http: number; git: number; ssh?: number };
  stop(): Promise<void>;
}

/** Three nodes (the first alone, so a new SSH host key is made once) and haproxy in front. */
export async function startCluster(dir: string, o: ClusterOpts): Promise<Cluster> {
  const nodes: ServerProc[] = [];
  try {
    nodes.push(await startNode(o));
    nodes.push(...await Promise.all([startNode(o), startNode(o)]));
    const lb = await startHaproxy(dir, {
      http: nodes.map((n) => n.httpPort!), git: nodes.map((n) => n.gitPort!), ssh: o.ssh ? nodes.map((n) => n.sshPort!) : undefined,
    });
    if (o.ssh && lb.ssh) writeKnownHosts(o.ssh, lb.ssh);
    return {
      nodes, lb,
      stop: async () => {
        await lb.stop();
        // a node a test killed is not waited for again
        await Promise.all(nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null).map((n) => n.stop()));
      },
    };
  } catch (e) {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    throw e;
  }
}

/** A pack-objects hook (uploadpack.packObjectsHook, through the nodes' environment) logging each run's start and end. */
export function hookScript(dir: string, sleep = 1): { env: NodeJS.ProcessEnv; log: string } {
  const log = join(dir, 'hook.log');
  const hook = join(dir, 'hook.sh');
  writeFileSync(hook, `#!/bin/sh\necho "start $$ $(date +%s%N)" >> '${log}'\nsleep ${sleep}\n"$@"\ns=$?\necho "end $$ $(date +%s%N)" >> '${log}'\nexit $s\n`, { mode: 0o755 });
  writeFileSync(log, '');
  return { env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'uploadpack.packObjectsHook', GIT_CONFIG_VALUE_0: hook }, log };
}

/** The hook's runs: start and end times (ns), by process id. */
export function hookRuns(log: string): Array<{ pid: string; start: bigint; end?: bigint }> {
  const runs = new Map<string, { pid: string; start: bigint; end?: bigint }>();
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const m = /^(start|end) (\d+) (\d+)$/.exec(line);
    if (!m) continue;
    if (m[1] === 'start') runs.set(m[2]!, { pid: m[2]!, start: BigInt(m[3]!) });
    else { const r = runs.get(m[2]!); if (r) r.end = BigInt(m[3]!); }
  }
  return [...runs.values()];
}

/** git, asynchronously, with stderr kept; past `timeoutMs` killed with what it started (code null, stderr says what was left). */
export async function gitRun(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const c = spawn('git', args, { cwd: opts.cwd, env: { ...gitEnv, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stderr = '', stdout = '';
  c.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  c.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const f = await finished(c, `git ${args.join(' ')}`, { timeoutMs: opts.timeoutMs ?? 300_000, group: true });
  return { code: f.code, stderr: stderr + (f.error ? `\n[test helper] git did not start: ${f.error.message}\n` : '') + noteLine(f), stdout };
}
