/**
 * The spawn helper: a small process that forks children (pack-objects,
 * index-pack, rev-list, hooks) on behalf of a long-lived server.
 *
 * Node's spawn() forks, and fork() copies the page tables of the whole
 * process while the event loop waits: in a server holding 200 MB that is
 * ~35 ms per child during which no other client is served. This process
 * stays small, so its forks are cheap, and they block only it.
 *
 * For each child the helper makes one connected Unix socket pair per piped
 * stdio stream (it connects to its own listening socket): the child gets
 * one end, the server gets the other over the IPC channel. Messages (JSON):
 *   server → helper: {t:'spawn', id, cmd, args, cwd, env, stdio}, {t:'kill', id, signal}
 *   helper → server: {t:'fd', id, index} + socket, {t:'spawned', id, pid},
 *                    {t:'exit', id, code, signal}, {t:'error', id, code, message}
 * When the server goes away, every child still running is killed.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { createServer, connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type HelperStdio = 'pipe' | 'ignore';
export interface SpawnMessage { t: 'spawn'; id: number; cmd: string; args: string[]; cwd?: string; env?: NodeJS.ProcessEnv; stdio: HelperStdio[] }
export interface KillMessage { t: 'kill'; id: number; signal: NodeJS.Signals }
export type HelperReply =
  | { t: 'hello'; dir: string }
  | { t: 'fd'; id: number; index: number }
  | { t: 'spawned'; id: number; pid: number }
  | { t: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { t: 'error'; id: number; code: string; message: string };

function main(): void {
  const rawSend = process.send!.bind(process);
  // after the server is gone a send throws (ERR_IPC_CHANNEL_CLOSED): nothing to tell then
  const send = ((m: HelperReply, handle?: Socket, cb?: () => void): boolean => {
    if (!process.connected) { cb?.(); return false; }
    try { return handle ? rawSend(m, handle, undefined, cb) : rawSend(m); } catch { cb?.(); return false; }
  });
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-spawn-'));
  const path = join(dir, 'pair');
  // the server removes the directory if this process dies without doing so itself
  send({ t: 'hello', dir } satisfies HelperReply);
  type Waiter = { take: (s: Socket) => void; fail: (e: Error) => void };
  const accepted: Waiter[] = [];
  const server = createServer({ pauseOnConnect: true }, (s) => { const w = accepted.shift(); if (w) w.take(s); else s.destroy(); });
  server.on('error', (e) => { for (const w of accepted.splice(0)) w.fail(e); });
  const children = new Map<number, ChildProcess>();
  const cleanup = () => { try { rmSync(dir, { recursive: true, force: true }); } catch { /* gone */ } };

  /** a connected pair: `child` for the child's stdio, `server` (never read here) for the server */
  const pair = () => new Promise<{ child: Socket; server: Socket }>((resolve, reject) => {
    const c = connect(path);
    const w: Waiter = { take: (srv) => resolve({ child: c, server: srv }), fail: reject };
    accepted.push(w);
    // a failed connect must not leave its waiter to take the next spawn's connection
    c.once('error', (e) => { const i = accepted.indexOf(w); if (i >= 0) accepted.splice(i, 1); reject(e); });
  });

  // one spawn at a time, once listening: pairs are matched to connections in order
  let queue = new Promise<void>((resolve) => server.listen(path, () => resolve()));
  const handle = async (m: SpawnMessage) => {
    const pairs: Array<{ child: Socket; server: Socket } | undefined> = [];
    try {
      for (const s of m.stdio) pairs.push(s === 'pipe' ? await pair() : undefined);
    } catch (e) {
      for (const p of pairs) { p?.child.destroy(); p?.server.destroy(); }
      send({ t: 'error', id: m.id, code: 'EHELPER', message: (e as Error).message } satisfies HelperReply);
      return;
    }
    const stdio: StdioOptions = pairs.map((p) => p?.child ?? 'ignore');
    let child: ChildProcess;
    try {
      child = spawn(m.cmd, m.args, { cwd: m.cwd, env: m.env, stdio });
    } catch (e) {
      // thrown, not emitted (a NUL in an argument, E2BIG, …): the child never existed
      for (const p of pairs) p?.server.destroy();
      const err = e as NodeJS.ErrnoException;
      send({ t: 'error', id: m.id, code: err.code ?? 'ESPAWN', message: err.message } satisfies HelperReply);
      return;
    } finally {
      // the child holds its own ends now; this process must never read from them
      for (const p of pairs) p?.child.destroy();
    }
    if (child.pid === undefined) {
      for (const p of pairs) p?.server.destroy();
      child.once('error', (e: NodeJS.ErrnoException) => send({ t: 'error', id: m.id, code: e.code ?? 'ESPAWN', message: e.message } satisfies HelperReply));
      return;
    }
    children.set(m.id, child);
    child.on('error', () => { /* a failed kill: the exit status tells the rest */ });
    child.once('exit', (code, signal) => {
      children.delete(m.id);
      send({ t: 'exit', id: m.id, code, signal } satisfies HelperReply);
    });
    // the pid first: if this process dies now, the server can still kill the child
    send({ t: 'spawned', id: m.id, pid: child.pid } satisfies HelperReply);
    for (let i = 0; i < pairs.length; i++) {
      const p = pairs[i];
      if (p) await new Promise<void>((resolve) => send({ t: 'fd', id: m.id, index: i } satisfies HelperReply, p.server, () => resolve()));
    }
  };

  process.on('message', (m: SpawnMessage | KillMessage) => {
    if (m.t === 'spawn') queue = queue.then(() => handle(m)).catch(() => undefined);
    else if (m.t === 'kill') queue = queue.then(() => { try { children.get(m.id)?.kill(m.signal); } catch { /* a bad signal name */ } });
  });
  // the server is gone: so are its children (reaped here, not left to init), then this process
  let ending = false;
  const end = () => {
    if (ending) return;
    ending = true;
    try { server.close(); } catch { /* not listening yet */ }
    cleanup();
    const left = [...children.values()];
    if (left.length === 0) process.exit(0);
    let n = left.length;
    for (const c of left) { c.once('exit', () => { if (--n === 0) process.exit(0); }); try { c.kill('SIGKILL'); } catch { /* gone */ } }
    // kept alive on purpose: whatever is still open here, this process ends
    setTimeout(() => process.exit(0), 5000);
  };
  process.on('disconnect', end);
  // a send the channel could not take (EPIPE: the server died as this process started, before its
  // hello) is an 'error' event on process, fatal unless handled: it means the server is gone
  process.on('error', end);
  // and should 'disconnect' not come (a helper outlived a killed server, holding the test runner's
  // stderr and every socket it had open), the channel's state and the parent's pid say so
  const parent = process.ppid;
  setInterval(() => { if (!process.connected || process.ppid !== parent) end(); }, 1000).unref();
}

if (process.send && process.env.GITWIRE_SPAWN_HELPER === '1') main();
