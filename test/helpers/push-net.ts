/** Network push helpers: git http-backend (bench/cgi.mjs) and git daemon as reference servers, and git run asynchronously. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ROOT, gitEnv } from './git.js';
import { finished, killLeftovers, noteLine, stopChild, track } from './child-wait.js';

export interface Outcome { code: number; stdout: string; stderr: string }

/**
 * git, asynchronously (for servers that live in this process). Past `timeoutMs` git, what it
 * started and whatever holds its pipes are killed: the outcome then has code -1 (or git's own)
 * and a last stderr line saying what was left.
 */
export async function gitAsync(args: string[], cwd?: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Outcome> {
  // its own process group: a kill reaches what it started (git-remote-http, send-pack, ssh) even once orphaned
  const child = spawn('git', args, { cwd, env: { ...gitEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '', stderr = '';
  child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
  child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
  const f = await finished(child, `git ${args.join(' ')}`, { timeoutMs, group: true });
  return { code: f.code ?? -1, stdout, stderr: stderr + (f.error ? `\n[test helper] git did not start: ${f.error.message}\n` : '') + noteLine(f) };
}

export interface RefServer { port: number; child: ChildProcess; stop(): Promise<void> }

/** git http-backend as CGI behind a small node server (bench/cgi.mjs). */
export async function startHttpBackend(root: string): Promise<RefServer> {
  const child = track(spawn(process.execPath, [join(ROOT, 'bench', 'cgi.mjs'), root], { env: gitEnv, stdio: ['ignore', 'pipe', 'ignore'] }), `cgi.mjs ${root}`);
  let buf = '';
  const port = await new Promise<number>((resolve, reject) => {
    const fail = (why: string) => { clearTimeout(timer); reject(new Error(`cgi.mjs ${why} (${killLeftovers(child) || 'nothing left'}): ${buf}`)); };
    const onExit = (c: number | null, sig: NodeJS.Signals | null) => fail(`exited ${c ?? sig}`);
    const timer = setTimeout(() => { child.off('exit', onExit); fail('did not say it listens within 30 s'); }, 30_000);
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"port":(\d+)/.exec(buf);
      if (m) { clearTimeout(timer); child.off('exit', onExit); resolve(Number(m[1])); }
    });
    child.once('exit', onExit);
  });
  // its requests' git http-backend children go with it
  return { port, child, stop: () => stopChild(child, `cgi.mjs ${root}`, { tree: true, exitMs: 20_000 }).then(() => undefined) };
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/**
 * git daemon for `root` (base path), every repository exported, receive-pack enabled, on a
 * free port. Ready once it says so (--verbose: "Ready to rumble", after it bound its socket):
 * probing the port by listening on it could take it from under the starting daemon, which then
 * failed to bind and exited. A port taken meanwhile by another process: another port.
 */
export async function startGitDaemon(root: string): Promise<RefServer> {
  const tried: string[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const child = track(spawn('git', ['daemon', '--verbose', '--reuseaddr', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${root}`, '--export-all', '--enable=receive-pack', root], { env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] }), `git daemon on ${port}`);
    // read for as long as it runs (it logs every connection): a full pipe would block it
    let err = '';
    child.stderr.on('data', (d: Buffer) => { err = (err + d.toString()).slice(-16_384); });
    const ready = await new Promise<boolean>((resolve, reject) => {
      const onExit = (c: number | null, sig: NodeJS.Signals | null) => { clearTimeout(timer); child.stderr.off('data', onData); tried.push(`port ${port}: exited ${c ?? sig}: ${err.trim()}`); resolve(false); };
      const onData = () => { if (/Ready to rumble/.test(err)) { clearTimeout(timer); child.stderr.off('data', onData); child.off('close', onExit); resolve(true); } };
      const timer = setTimeout(() => { child.off('close', onExit); reject(new Error(`git daemon did not start within 30 s (${killLeftovers(child) || 'nothing left'}): ${err}`)); }, 30_000);
      child.stderr.on('data', onData);
      // 'close', not 'exit': its last words (why it could not listen) are read by then
      child.once('close', onExit);
    });
    // `git daemon` is git running git-daemon as its child: a SIGTERM to git alone, soon after the start,
    // left git-daemon running (7 of 40 stops right after "Ready to rumble"), holding this process's pipe
    if (ready) return { port, child, stop: () => stopChild(child, `git daemon on ${port}`, { tree: true, exitMs: 20_000 }).then(() => undefined) };
    if (!/unable to allocate any listen sockets|Address already in use/.test(err)) break;
  }
  throw new Error(`git daemon did not start: ${tried.join('\n')}`);
}
