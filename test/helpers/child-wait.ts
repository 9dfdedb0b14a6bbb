/**
 * Waiting on child processes in tests, never for ever.
 *
 * Node's 'close' comes once a child exited and every one of its stdio pipes
 * was closed: a process the child started (a git-remote-http, a hook, a
 * detached helper) that still holds one keeps it from coming, whatever
 * happened to the child. And 'exit' does not come for a child that ignores
 * the signal it was sent. Either way a promise waiting on them, and the test
 * file with it, would wait silently for ever (with the pipe's handle keeping
 * the event loop alive even after node:test gave up on the test).
 *
 * So every wait here has a deadline. When it passes, the child, its
 * descendants, its process group (clients are spawned detached, so that an
 * orphan they left is still found) and every other process holding one of
 * its pipes get SIGKILL;
 * a little later the pipes' ends in this process are destroyed whatever is
 * left. The wait then settles, and says what it found: which processes were
 * still there, which held the pipes. Processes are found through /proc
 * (Linux, as the tests are).
 *
 * And the last net: a child the helpers started that still runs (or holds its
 * pipes) a while after the last test of the file ended, when a test that
 * timed out or threw skipped its stops, is killed and named, and the file
 * fails: it ends instead of hanging the run.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { after } from 'node:test';
import { spawnSync, type ChildProcess } from 'node:child_process';

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

export interface ProcInfo { pid: number; ppid: number; pgid: number; cmd: string }

/** every process, as /proc lists it (none where there is no /proc) */
export function processes(): ProcInfo[] {
  const out: ProcInfo[] = [];
  let names: string[];
  try { names = readdirSync('/proc'); } catch { return out; }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // after the command name in parentheses (which may hold anything): state, parent, process group
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      out.push({ pid: Number(name), ppid: Number(f[1]), pgid: Number(f[2]), cmd: (cmd || stat.slice(stat.indexOf('('), stat.lastIndexOf(')') + 1)).slice(0, 160) });
    } catch { /* gone meanwhile */ }
  }
  return out;
}

/** `pid`'s descendants (not itself), parents before their children */
export function descendantsOf(pid: number, all: ProcInfo[] = processes()): ProcInfo[] {
  const out: ProcInfo[] = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift()!;
    for (const c of all) if (c.ppid === p && c.pid !== pid) { out.push(c); queue.push(c.pid); }
  }
  return out;
}

/** the /proc names ('pipe:[N]', 'socket:[N]') of the child's stdio streams still open in this process */
function streamIds(child: ChildProcess): string[] {
  const ids: string[] = [];
  for (const s of child.stdio) {
    const fd = (s as unknown as { _handle?: { fd?: number } } | null)?._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) continue;
    try { ids.push(readlinkSync(`/proc/self/fd/${fd}`)); } catch { /* closed meanwhile */ }
  }
  return ids;
}

/**
 * Processes other than this one holding the other end of any of `ids`. A pipe is one
 * inode at both ends; Node's stdio "pipes" are socket pairs, two inodes, and only the
 * kernel's socket diagnostics (ss) say which is whose peer.
 */
function holders(ids: string[], all: ProcInfo[]): ProcInfo[] {
  const pids = new Set<number>();
  const pipes = new Set(ids.filter((i) => i.startsWith('pipe:')));
  if (pipes.size) {
    for (const p of all) {
      if (p.pid === process.pid) continue;
      let fds: string[];
      try { fds = readdirSync(`/proc/${p.pid}/fd`); } catch { continue; }
      for (const fd of fds) {
        try { if (pipes.has(readlinkSync(`/proc/${p.pid}/fd/${fd}`))) { pids.add(p.pid); break; } } catch { /* closed meanwhile */ }
      }
    }
  }
  const sockets = new Set(ids.map((i) => /^socket:\[(\d+)\]$/.exec(i)?.[1]).filter((i) => i !== undefined));
  if (sockets.size) {
    // u_str ESTAB 0 0 * <inode> * <peer inode> users:(("sleep",pid=123,fd=1),…)
    const ss = spawnSync('ss', ['-xpn'], { encoding: 'utf8', timeout: 10_000 });
    for (const line of (ss.stdout ?? '').split('\n')) {
      const m = /^\S+\s+\S+\s+\d+\s+\d+\s+\S+\s+\d+\s+\S+\s+(\d+)\s+(.*)$/.exec(line);
      if (!m || !sockets.has(m[1]!)) continue;
      for (const u of m[2]!.matchAll(/pid=(\d+)/g)) if (Number(u[1]) !== process.pid) pids.add(Number(u[1]));
    }
  }
  return all.filter((p) => pids.has(p.pid));
}

const show = (ps: ProcInfo[]) => ps.map((p) => `${p.pid} (parent ${p.ppid}) ${p.cmd}`).join('; ');

function killAll(pids: Iterable<number>): void {
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
}

/**
 * SIGKILL for the child, its descendants, its process group when it leads one (`group`:
 * spawned with `detached`, so that an orphan it left is still found), and every process
 * holding one of its pipes. Returns what it found, as words ('' when nothing was left).
 */
export function killLeftovers(child: ChildProcess, group = false): string {
  const all = processes();
  const running = !hasExited(child) && child.pid !== undefined;
  const below = child.pid === undefined ? [] : descendantsOf(child.pid, all);
  const members = group && child.pid !== undefined ? all.filter((p) => p.pgid === child.pid && p.pid !== child.pid && !below.includes(p)) : [];
  const ids = streamIds(child);
  const held = holders(ids, all).filter((p) => p.pid !== child.pid);
  if (group && child.pid !== undefined) { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* no such group left */ } }
  killAll(new Set([...(running ? [child.pid!] : []), ...below.map((p) => p.pid), ...held.map((p) => p.pid)]));
  const words: string[] = [];
  if (running) words.push(`pid ${child.pid} still running`);
  if (below.length) words.push(`its descendants: ${show(below)}`);
  if (members.length) words.push(`its process group: ${show(members)}`);
  if (held.length) words.push(`its pipes held by: ${show(held)}`);
  else if (ids.length && !running && !below.length && !members.length) words.push(`its pipes (${ids.join(', ')}) still open, by no process found`);
  return words.join('; ');
}

function destroyStdio(child: ChildProcess): void {
  for (const s of child.stdio) s?.destroy();
}

/** the children the helpers started, until their 'close' (with what they are, and whether each leads its own group) */
const live = new Map<ChildProcess, { what: string; group: boolean }>();

/** how long after the file's last test its own after() hooks have to stop what they started (env: for the test of this net) */
const LEFT_AFTER_MS = Number(process.env.GITWIRE_TEST_LEFT_AFTER_MS) || 90_000;

/** Count `child` among this file's children (see the last net above); returns it. */
export function track<C extends ChildProcess>(child: C, what: string, group = false): C {
  if (live.has(child) || child.pid === undefined) return child;
  live.set(child, { what, group });
  child.once('close', () => live.delete(child));
  return child;
}

// (only in a file run by `node --test`: imported anywhere else, node:test would start a report of its own)
if (process.env.NODE_TEST_CONTEXT) after(() => {
  if (live.size === 0) return;
  const timer = setTimeout(() => {
    if (live.size === 0) return;
    process.exitCode = 1;
    for (const [child, { what, group }] of live) {
      process.stderr.write(`[test helper] ${LEFT_AFTER_MS / 1000} s after this file's last test, ${what} (pid ${child.pid}) was ${hasExited(child) ? 'gone, its pipes still open' : 'still running'}: ${killLeftovers(child, group) || 'nothing found'}; killed\n`);
      destroyStdio(child);
    }
    live.clear();
  }, LEFT_AFTER_MS);
  // the net itself keeps nothing alive: a file whose children all ended exits at once
  timer.unref();
});

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** the deadline passed (or the pipes stayed open after the exit): what was killed and left is in `note` */
  timedOut: boolean;
  /** what was found still there, as words ('' when the child finished normally) */
  note: string;
  /** the child could not be started */
  error?: Error;
}

export interface FinishOptions {
  /** from now until the child must have exited and closed its pipes */
  timeoutMs: number;
  /** how long its pipes may stay open after it exited (something it started holds them) */
  afterExitMs?: number;
  /** how long after the kill before this process drops its ends of the pipes */
  graceMs?: number;
  /** the child leads its own process group (spawned with `detached`): the group is killed too */
  group?: boolean;
}

/**
 * The child's 'close' (exit, and every stdio pipe closed), or, past the deadline,
 * what was left: never a promise that waits for ever. Stdout and stderr must be
 * read (or ignored) by the caller; this only waits.
 */
export function finished(child: ChildProcess, what: string, o: FinishOptions): Promise<Finished> {
  track(child, what, o.group);
  const afterExitMs = o.afterExitMs ?? 10_000, graceMs = o.graceMs ?? 3000;
  return new Promise((resolve) => {
    let done = false, note = '', timedOut = false;
    const timers: NodeJS.Timeout[] = [];
    const settle = (r: Omit<Finished, 'timedOut' | 'note'>) => {
      if (done) return;
      done = true;
      for (const t of timers) clearTimeout(t);
      resolve({ ...r, timedOut, note });
    };
    const cut = (why: string) => {
      if (done || timedOut) return;
      timedOut = true;
      note = `${what}: ${why}; killed: ${killLeftovers(child, o.group) || 'nothing left'}`;
      timers.push(setTimeout(() => {
        // still no 'close': something outside our reach holds a pipe (or the kill did not take)
        note += `; ${graceMs} ms after the kill: ${killLeftovers(child, o.group) || 'nothing left'}; gave up on its pipes`;
        destroyStdio(child);
        settle({ code: child.exitCode, signal: child.signalCode });
      }, graceMs));
    };
    child.once('close', (code, signal) => settle({ code, signal }));
    child.once('error', (e) => {
      // not started (no pid): no 'close' is certain to follow
      if (child.pid === undefined) { destroyStdio(child); settle({ code: null, signal: null, error: e }); }
    });
    const exited = () => { timers.push(setTimeout(() => cut(`exited, but its pipes were still open ${afterExitMs} ms later`), afterExitMs)); };
    if (hasExited(child)) {
      // its 'close' may have come already (Node's 'close' waits for its outputs, not for stdin)
      if (child.stdio.every((s, i) => i === 0 || !s || s.closed)) { settle({ code: child.exitCode, signal: child.signalCode }); return; }
      exited();
    } else child.once('exit', exited);
    timers.push(setTimeout(() => cut(`not finished after ${o.timeoutMs} ms`), o.timeoutMs));
  });
}

/** `finished()`'s note as a line for the end of a captured stderr ('' when there is none) */
export const noteLine = (f: Finished): string => (f.note ? `\n[test helper] ${f.note}\n` : '');

export interface StopOptions {
  signal?: NodeJS.Signals;
  /** how long the child has to exit after the signal before SIGKILL (a server's shutdown grace, and more) */
  exitMs?: number;
  /** the child's descendants get the signal too (reference servers: git daemon's connection children) */
  tree?: boolean;
}

/**
 * Stop a server child: `signal`, then its exit; past `exitMs` SIGKILL for it and
 * everything it started. Resolves with its exit code once it exited and its
 * pipes closed; rejects, after killing what was left, if it had to be killed
 * or its pipes stayed open after its exit (something it started outlived it).
 */
export async function stopChild(child: ChildProcess, what: string, o: StopOptions = {}): Promise<number | null> {
  const exitMs = o.exitMs ?? 60_000;
  const gone = hasExited(child);
  const f = finished(child, what, { timeoutMs: exitMs, afterExitMs: 10_000 });
  if (!gone) {
    const targets = [child.pid!, ...(o.tree && child.pid !== undefined ? descendantsOf(child.pid).map((p) => p.pid) : [])];
    for (const pid of targets) { try { process.kill(pid, o.signal ?? 'SIGTERM'); } catch { /* gone */ } }
  }
  const r = await f;
  if (r.timedOut) throw new Error(`stopping ${what} (pid ${child.pid}) with ${o.signal ?? 'SIGTERM'}: ${r.note}`);
  return r.code;
}
