/**
 * Children started through the spawn helper (what `serve` uses): the same
 * streams, exit codes, signals, errors and event order as Node's own
 * ChildProcess; forked by the helper, not by this process; none outlives
 * the server or the helper.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { spawnChild, spawnHelperInfo, useSpawnHelper, stopSpawnHelper, type Child } from '../src/util/spawn.js';
import { pushReader } from '../src/pack/relay.js';

useSpawnHelper();
after(() => stopSpawnHelper());

function collect(s: NodeJS.ReadableStream | null): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    if (!s) return resolve(Buffer.alloc(0));
    s.on('data', (d: Buffer) => parts.push(d));
    s.on('end', () => resolve(Buffer.concat(parts)));
  });
}
const closed = (c: Child) => new Promise<[number | null, NodeJS.Signals | null]>((resolve) => c.once('close', (code, signal) => resolve([code, signal])));
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('stdin to stdout through the helper: 8 MiB round trip, exit 0, close after the output ended', async () => {
  const data = randomBytes(8 << 20);
  const c = spawnChild('cat', [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = collect(c.stdout);
  let ended = false;
  c.stdout!.once('end', () => { ended = true; });
  const order: string[] = [];
  c.once('exit', () => order.push('exit'));
  const done = closed(c).then((r) => { order.push('close'); assert.ok(ended, 'stdout ended before close'); return r; });
  c.stdin!.end(data);
  assert.deepEqual(await done, [0, null]);
  assert.deepEqual(order, ['exit', 'close']);
  assert.ok((await out).equals(data));
  assert.equal(c.exitCode, 0);
});

test('the child is forked by the helper, not by this process', async () => {
  const c = spawnChild('/bin/sh', ['-c', 'echo $PPID'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const done = closed(c);
  const ppid = Number((await collect(c.stdout)).toString());
  await done;
  assert.ok(ppid > 1 && ppid !== process.pid, `parent ${ppid}, this process ${process.pid}`);
});

test('exit codes, stderr, kill with a signal', async () => {
  const c = spawnChild('/bin/sh', ['-c', 'echo oops >&2; exit 3'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const err = collect(c.stderr);
  assert.deepEqual(await closed(c), [3, null]);
  assert.equal((await err).toString(), 'oops\n');

  const s = spawnChild('sleep', ['30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  s.stdout!.resume();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(s.kill('SIGTERM'), true);
  assert.deepEqual(await closed(s), [null, 'SIGTERM']);
  assert.equal(s.signalCode, 'SIGTERM');
  assert.equal(s.kill('SIGTERM'), false, 'nothing left to kill');
});

test('a command that cannot run emits error (ENOENT), then close', async () => {
  const c = spawnChild('/nonexistent/gitwire-no-such-command', [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const err = new Promise<NodeJS.ErrnoException>((resolve) => c.once('error', resolve));
  const done = closed(c);
  c.stdout!.resume(); c.stderr!.resume();
  c.stdin!.end('ignored');
  assert.equal((await err).code, 'ENOENT');
  await done;
  assert.notEqual(c.exitCode, 0);
});

test('a child writing more than it is read is held back, not buffered whole', async () => {
  const c = spawnChild('head', ['-c', String(64 << 20), '/dev/zero'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const done = closed(c);
  await new Promise((r) => setTimeout(r, 500));
  // nothing read yet: the facade and the socket hold a bounded amount
  assert.ok(c.stdout!.readableLength <= 1 << 20, `${c.stdout!.readableLength} bytes buffered`);
  assert.equal(c.exitCode, null, 'the child waits for its reader');
  let n = 0;
  for await (const chunk of c.stdout!) n += (chunk as Buffer).length;
  assert.equal(n, 64 << 20);
  assert.deepEqual(await done, [0, null]);
});

test('children die with the server that started them', async () => {
  // a server process that starts `sleep` through the helper, prints its pid, and is then killed hard
  const script = `
    const { spawnChild, useSpawnHelper } = await import(${JSON.stringify(new URL('../src/util/spawn.js', import.meta.url).href)});
    useSpawnHelper();
    const c = spawnChild('/bin/sh', ['-c', 'echo $$; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    c.stdout.on('data', (d) => process.stdout.write(d));
    setInterval(() => {}, 1000);
  `;
  const server = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve) => server.stdout.once('data', (d: Buffer) => resolve(Number(d.toString()))));
  assert.ok(alive(pid));
  server.kill('SIGKILL');
  let gone = false;
  for (let i = 0; i < 100 && !gone; i++) { await new Promise((r) => setTimeout(r, 100)); gone = !alive(pid); }
  assert.ok(gone, `child ${pid} outlived its server`);
});

test("the relay's push reader takes over a helper child's stdout socket (no stream in between)", async () => {
  const data = randomBytes(3 << 20);
  const c = spawnChild('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  const reader = pushReader(c);
  assert.ok(reader, 'a push reader for a child of the helper');
  const done = closed(c);
  const parts: Buffer[] = [];
  const ended = new Promise<Error | undefined>((resolve) => reader.start((b) => parts.push(Buffer.from(b)), resolve));
  c.stdin!.end(data);
  assert.equal(await ended, undefined);
  assert.ok(Buffer.concat(parts).equals(data));
  assert.deepEqual(await done, [0, null]);
  assert.equal(c.stdout!.readableFlowing, true, 'the facade only reported the end');
});

test('a push reader for a child that never starts ends at once', async () => {
  const c = spawnChild('/nonexistent/gitwire-no-such-command', [], { stdio: ['pipe', 'pipe', 'pipe'] });
  c.once('error', () => undefined);
  c.stderr!.resume();
  const reader = pushReader(c)!;
  const done = closed(c);
  await new Promise<void>((resolve) => reader.start(() => assert.fail('no data'), () => resolve()));
  await done;
});

test('stdin destroyed before its socket arrives: the child sees the end and the child closes', async () => {
  const c = spawnChild('cat', [], { stdio: ['pipe', 'pipe', 'ignore'] });
  const done = closed(c);
  c.stdout!.resume();
  c.stdin!.write('partial');
  c.stdin!.destroy(); // what ingestPack does when the client goes away mid-pack
  assert.deepEqual(await done, [0, null]);
});

test('a spawn that throws in the helper (a NUL in an argument) is an error, then close', async () => {
  const c = spawnChild('echo', ['a\0b'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const err = new Promise<NodeJS.ErrnoException>((resolve) => c.once('error', resolve));
  const done = closed(c);
  assert.ok((await err).message.length > 0);
  await done;
  // and the helper goes on serving
  const d = spawnChild('/bin/sh', ['-c', 'exit 7'], { stdio: ['ignore', 'ignore', 'ignore'] });
  assert.deepEqual(await closed(d), [7, null]);
});

test('twenty children at once, killed right after the spawn or read to the end', async () => {
  const kids = Array.from({ length: 20 }, (_, i) => {
    const data = randomBytes(256 << 10);
    const c = spawnChild(i % 5 === 4 ? 'sleep' : 'cat', i % 5 === 4 ? ['30'] : [], { stdio: ['pipe', 'pipe', 'ignore'] });
    const done = closed(c);
    const out = collect(c.stdout);
    if (i % 5 === 4) { c.stdin!.end(); assert.equal(c.kill('SIGKILL'), true); } else c.stdin!.end(data);
    return { i, data, done, out };
  });
  for (const k of kids) {
    if (k.i % 5 === 4) assert.deepEqual(await k.done, [null, 'SIGKILL']);
    else { assert.deepEqual(await k.done, [0, null]); assert.ok((await k.out).equals(k.data), `child ${k.i}`); }
  }
});

test('a helper that dies takes its children with it, its directory is removed, and the next spawn starts a new one', async () => {
  const c = spawnChild('/bin/sh', ['-c', 'echo $PPID $$; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const done = closed(c);
  const line = await new Promise<string>((resolve) => c.stdout!.once('data', (d: Buffer) => resolve(d.toString())));
  const [helperPid, childPid] = line.trim().split(' ').map(Number) as [number, number];
  const info = spawnHelperInfo();
  assert.equal(info.pid, helperPid);
  assert.ok(info.dir && existsSync(info.dir), 'the helper made its directory');
  process.kill(helperPid, 'SIGKILL');
  assert.deepEqual(await done, [null, 'SIGKILL']);
  let gone = false;
  for (let i = 0; i < 50 && !gone; i++) { gone = !alive(childPid); if (!gone) await new Promise((r) => setTimeout(r, 100)); }
  assert.ok(gone, 'the orphan was killed');
  assert.equal(existsSync(info.dir), false, 'the dead helper\'s directory is removed');
  const d = spawnChild('/bin/sh', ['-c', 'echo $PPID'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const dd = closed(d);
  const ppid = Number((await collect(d.stdout)).toString());
  await dd;
  assert.notEqual(ppid, helperPid);
  assert.notEqual(ppid, process.pid);
});
