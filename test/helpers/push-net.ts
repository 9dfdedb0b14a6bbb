/** Network push helpers: git http-backend (bench/cgi.mjs) and git daemon as reference servers, and git run asynchronously. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ROOT, gitEnv } from './git.js';

export interface Outcome { code: number; stdout: string; stderr: string }

/** git, asynchronously (for servers that live in this process). */
export function gitAsync(args: string[], cwd?: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn('git', args, { cwd, env: { ...gitEnv, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stdout, stderr }); });
  });
}

export interface RefServer { port: number; child: ChildProcess; stop(): Promise<void> }

function stopper(child: ChildProcess): () => Promise<void> {
  return () => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** git http-backend as CGI behind a small node server (bench/cgi.mjs). */
export async function startHttpBackend(root: string): Promise<RefServer> {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'cgi.mjs'), root], { env: gitEnv, stdio: ['ignore', 'pipe', 'ignore'] });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"port":(\d+)/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (c) => reject(new Error(`cgi.mjs exited ${c}`)));
  });
  return { port, child, stop: stopper(child) };
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

/** git daemon for `root` (base path), every repository exported, receive-pack enabled. */
export async function startGitDaemon(root: string): Promise<RefServer> {
  const port = await freePort();
  const child = spawn('git', ['daemon', '--reuseaddr', '--listen=127.0.0.1', `--port=${port}`, `--base-path=${root}`, '--export-all', '--enable=receive-pack', root], { env: gitEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('git daemon did not start')), 10_000);
    const tryConnect = () => {
      const s = createServer();
      // the port is taken once git daemon listens
      s.once('error', () => { clearTimeout(timer); resolve(); });
      s.listen(port, '127.0.0.1', () => s.close(() => setTimeout(tryConnect, 100)));
    };
    tryConnect();
  });
  return { port, child, stop: stopper(child) };
}
