/**
 * How gitwire starts its children (pack-objects, index-pack, rev-list,
 * hooks): `spawnChild()` forks here, or, once `useSpawnHelper()` was called
 * (serve does), asks the small spawn helper process to fork, so that a
 * large server never stalls every client for a fork (see spawn-helper.ts).
 * Either way the caller gets the same `Child`: stdio streams, `exitCode`,
 * `signalCode`, `kill()`, and the 'exit', 'close' and 'error' events of
 * Node's ChildProcess, with the same order ('close' after exit and after
 * every piped output stream ended).
 */
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { rmSync } from 'node:fs';
import type { HelperReply, HelperStdio, KillMessage, SpawnMessage } from './spawn-helper.js';

/** What gitwire uses of a child process; Node's ChildProcess is one. */
export interface Child {
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  kill(signal?: NodeJS.Signals): boolean;
  /**
   * For a reader that reads stdout's socket itself (the relay's pushReader):
   * `take` gets the socket once it exists (undefined if none ever will);
   * stdout then only reports its end. Only children of the spawn helper have it.
   */
  adoptStdout?(take: (s: Socket | undefined) => void): boolean;
  on(event: 'close' | 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  on(event: 'error', listener: (err: NodeJS.ErrnoException) => void): this;
  once(event: 'close' | 'exit', listener: (code: number | null, signal: NodeJS.Signals | null) => void): this;
  once(event: 'error', listener: (err: NodeJS.ErrnoException) => void): this;
}

export interface SpawnChildOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** per fd 0, 1, 2: a pipe, nothing, or a file descriptor of this process to hand over */
  stdio: Array<'pipe' | 'ignore' | number>;
}

let helper: SpawnHelper | undefined;

/** Start children through the spawn helper from now on (idempotent). */
export function useSpawnHelper(): void { helper ??= new SpawnHelper(); }

/** Stop the spawn helper (children still running are killed by it); later spawns fork here. */
export function stopSpawnHelper(): void { helper?.stop(); helper = undefined; }

/** The running helper's pid and private directory (for tests and diagnostics). */
export function spawnHelperInfo(): { pid?: number; dir?: string } { return helper?.info() ?? {}; }

export function spawnChild(cmd: string, args: string[], o: SpawnChildOptions): Child {
  // a descriptor of this process cannot be handed over: fork here
  if (!helper || o.stdio.some((s) => typeof s === 'number')) return spawn(cmd, args, { cwd: o.cwd, env: o.env, stdio: o.stdio });
  return helper.spawn(cmd, args, o.cwd, o.env, o.stdio as HelperStdio[]);
}

class SpawnHelper {
  private proc: ChildProcess | undefined;
  /** the helper's private directory (its socket), removed here if the helper could not */
  private helperDir: string | undefined;
  private nextId = 1;
  private readonly children = new Map<number, RemoteChild>();
  /** keeps this process alive while a child runs, as a child of its own would (the helper's channel does not) */
  private alive: NodeJS.Timeout | undefined;

  private start(): ChildProcess {
    const p = fork(fileURLToPath(new URL('./spawn-helper.js', import.meta.url)), [], {
      env: { ...process.env, GITWIRE_SPAWN_HELPER: '1' }, execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    p.on('message', (m: HelperReply, socket?: Socket) => this.onMessage(m, socket));
    p.on('error', () => undefined);
    // 'close', not 'exit': the messages still in the channel (exits, sockets) are handled first
    p.once('close', () => {
      if (this.proc === p) this.proc = undefined;
      for (const c of [...this.children.values()]) c.lost();
      if (this.helperDir) { try { rmSync(this.helperDir, { recursive: true, force: true }); } catch { /* gone */ } }
    });
    p.unref();
    p.channel?.unref();
    return p;
  }

  spawn(cmd: string, args: string[], cwd: string | undefined, env: NodeJS.ProcessEnv | undefined, stdio: HelperStdio[]): RemoteChild {
    this.proc ??= this.start();
    const id = this.nextId++;
    const child = new RemoteChild(stdio, (signal) => this.send({ t: 'kill', id, signal }), () => this.forget(id));
    this.children.set(id, child);
    this.alive ??= setInterval(() => undefined, 1 << 30);
    this.send({ t: 'spawn', id, cmd, args, cwd, env: env ?? process.env, stdio });
    return child;
  }

  private send(m: SpawnMessage | KillMessage): void {
    try { this.proc?.send(m); } catch { /* the helper is gone: its exit fails the children */ }
  }

  private forget(id: number): void {
    this.children.delete(id);
    if (this.children.size === 0 && this.alive) { clearInterval(this.alive); this.alive = undefined; }
  }

  private onMessage(m: HelperReply, socket?: Socket): void {
    if (m.t === 'hello') { this.helperDir = m.dir; return; }
    const c = this.children.get(m.id);
    if (!c) { socket?.destroy(); return; }
    switch (m.t) {
      case 'fd': if (socket) c.attach(m.index, socket); break;
      case 'spawned': c.pid = m.pid; break;
      case 'exit': c.exited(m.code, m.signal); break;
      case 'error': c.failed(m.code, m.message); break;
    }
  }

  info(): { pid?: number; dir?: string } { return { pid: this.proc?.pid, dir: this.helperDir }; }

  stop(): void {
    const p = this.proc;
    this.proc = undefined;
    p?.disconnect();
  }
}

/** A child forked by the helper, seen through stream facades until its sockets arrive. */
class RemoteChild extends EventEmitter implements Child {
  readonly stdin: PassThrough | null;
  readonly stdout: PassThrough | null;
  readonly stderr: PassThrough | null;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  pid: number | undefined;
  private hasExited = false;
  private closed = false;
  private openOutputs = 0;
  private adopter: ((s: Socket | undefined) => void) | undefined;
  private stdoutAttached = false;

  constructor(stdio: HelperStdio[], private readonly sendKill: (s: NodeJS.Signals) => void, private readonly onClosed: () => void) {
    super();
    const facade = (i: number) => (stdio[i] === 'pipe' ? new PassThrough({ highWaterMark: 256 * 1024 }) : null);
    this.stdin = facade(0);
    this.stdout = facade(1);
    this.stderr = facade(2);
    for (const out of [this.stdout, this.stderr]) {
      if (!out) continue;
      this.openOutputs++;
      out.once('close', () => { this.openOutputs--; this.maybeClose(); });
    }
  }

  attach(index: number, socket: Socket): void {
    socket.on('error', () => { /* the other side's status says what happened */ });
    const facade = index === 0 ? this.stdin : index === 1 ? this.stdout : index === 2 ? this.stderr : null;
    // closed by its user before its socket came: the child's end goes too (EOF or EPIPE for the child)
    if (!facade || facade.destroyed) { socket.destroy(); return; }
    if (index === 1) this.stdoutAttached = true;
    if (index === 0 && this.stdin) {
      const stdin = this.stdin;
      let flushed = false;
      stdin.once('end', () => { flushed = true; });
      // a facade destroyed before it was ended takes the child's stdin with it
      stdin.once('close', () => { if (!flushed) socket.destroy(); });
      socket.once('close', () => { if (!stdin.destroyed) stdin.destroy(); });
      stdin.pipe(socket);
      return;
    }
    const out = index === 1 ? this.stdout : index === 2 ? this.stderr : null;
    if (!out) { socket.destroy(); return; }
    out.once('close', () => socket.destroy());
    if (index === 1 && this.adopter) {
      // read by its adopter: the facade carries no data, only the end
      const take = this.adopter;
      this.adopter = undefined;
      socket.once('close', () => { if (!out.writableEnded && !out.destroyed) out.end(); });
      out.resume();
      take(socket);
      return;
    }
    socket.once('close', () => { if (!out.writableEnded && !out.destroyed) out.end(); });
    socket.pipe(out);
  }

  adoptStdout(take: (s: Socket | undefined) => void): boolean {
    const out = this.stdout;
    if (!out || this.adopter || this.stdoutAttached || out.readableFlowing !== null || out.readableLength > 0 || out.writableEnded) return false;
    this.adopter = take;
    return true;
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.hasExited) return false;
    this.sendKill(signal);
    return true;
  }

  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.hasExited) return;
    this.hasExited = true;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit('exit', code, signal);
    this.maybeClose();
  }

  /** the child could not be started */
  failed(code: string, message: string): void {
    if (this.hasExited) return;
    this.hasExited = true;
    this.exitCode = -2;
    this.endStreams();
    if (this.listenerCount('error')) this.emit('error', Object.assign(new Error(message), { code }));
    this.maybeClose();
  }

  /** the helper died: its child must not outlive it (an orphaned index-pack would go on writing) */
  lost(): void {
    if (!this.hasExited && this.pid !== undefined) { try { process.kill(this.pid, 'SIGKILL'); } catch { /* gone already */ } }
    if (!this.hasExited) { this.hasExited = true; this.signalCode = 'SIGKILL'; this.emit('exit', null, 'SIGKILL'); }
    this.endStreams();
    this.maybeClose();
  }

  private endStreams(): void {
    const take = this.adopter;
    this.adopter = undefined;
    take?.(undefined);
    this.stdin?.destroy();
    for (const out of [this.stdout, this.stderr]) if (out && !out.writableEnded) out.end();
  }

  private maybeClose(): void {
    if (this.closed || !this.hasExited) return;
    // as Node does (flushStdio): output nobody ever read is drained, so that 'close' can come
    for (const out of [this.stdout, this.stderr]) if (out && out.readableFlowing === null) out.resume();
    if (this.openOutputs > 0) return;
    this.closed = true;
    this.emit('close', this.exitCode, this.signalCode);
    this.onClosed();
  }
}
