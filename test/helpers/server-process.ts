/** Run `bin/gitwire serve` as a child process (the git client runs synchronously in tests). */
import { spawn, type ChildProcess } from 'node:child_process';
import { BIN, gitEnv } from './git.js';
import { killLeftovers, stopChild, track } from './child-wait.js';

export interface ServerProc { child: ChildProcess; httpPort?: number; gitPort?: number; sshPort?: number; metricsPort?: number; logs: string[]; stop(signal?: NodeJS.Signals): Promise<number | null> }

/** `prefix`: a command the server runs under (e.g. `prlimit --fsize=…`), which execs it */
export async function startServe(root: string, args: string[], env: NodeJS.ProcessEnv = {}, prefix: string[] = []): Promise<ServerProc> {
  const argv = [...prefix, BIN, 'serve', root, ...args];
  const child = track(spawn(argv[0]!, argv.slice(1), { env: { ...gitEnv, ...env }, stdio: ['ignore', 'pipe', 'inherit'] }), `gitwire serve ${args.join(' ')}`);
  const logs: string[] = [];
  const wantHttp = args.includes('--http');
  const wantGit = args.includes('--git');
  const wantMetrics = args.includes('--metrics');
  const wantSsh = args.includes('--ssh');
  const proc: ServerProc = {
    child, logs,
    // its exit within 60 s (more than serve's shutdown grace), else it and what it started are
    // killed and stop() rejects naming them; also if something it started outlived it holding its stdout
    stop: (signal = 'SIGTERM') => stopChild(child, `gitwire serve ${args.join(' ')}`, { signal }),
  };
  await new Promise<void>((resolve, reject) => {
    let buf = '';
    // a server that never says it listens is stopped: it would keep the test process alive
    const onExit = (c: number | null, sig: NodeJS.Signals | null) => { clearTimeout(timer); reject(new Error(`server exited ${c ?? sig}: ${logs.join('\n')}`)); };
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      reject(new Error(`server did not start within 30 s (${killLeftovers(child) || 'nothing left'}): ${logs.join('\n')}`));
    }, 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        logs.push(line);
        const m = /"url":"(http|git|ssh):\/\/[^:]+:(\d+)\//.exec(line);
        if (m) {
          if (m[1] === 'http') proc.httpPort = Number(m[2]); else if (m[1] === 'ssh') proc.sshPort = Number(m[2]); else proc.gitPort = Number(m[2]);
        }
        const mm = /"metrics":"http:\/\/.*:(\d+)\/metrics"/.exec(line);
        if (mm) proc.metricsPort = Number(mm[1]);
        if ((m || mm) && (!wantHttp || proc.httpPort) && (!wantGit || proc.gitPort) && (!wantSsh || proc.sshPort) && (!wantMetrics || proc.metricsPort)) { clearTimeout(timer); child.off('exit', onExit); resolve(); }
      }
    });
    child.once('exit', onExit);
  });
  return proc;
}
