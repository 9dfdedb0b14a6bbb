/** Write discipline and failure behaviour of upload-pack (v0 and v2). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, run, tmp, BIN } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { uploadPack } from '../src/protocol/upload-pack.js';
import { MemorySink } from '../src/pktline/sink.js';

let t: ReturnType<typeof tmp>;
let repo: string;
let main: string;

before(() => {
  t = tmp();
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'big random', { 'r.bin': randomBytes(3 << 20) });
  for (let i = 0; i < 3000; i++) {
    // many refs, for write-count checks
  }
  repo = join(t.dir, 'repo.git');
  git(['clone', '-q', '--bare', '--no-local', w, repo]);
  main = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
  let refs = '';
  for (let i = 0; i < 3000; i++) refs += `${main} refs/heads/branch-${String(i).padStart(5, '0')}\n`;
  writeFileSync(join(repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${refs}`);
});
after(() => t.cleanup());

async function serve(input: Buffer, env: NodeJS.ProcessEnv = {}, opts: { advertiseRefs?: boolean; statelessRpc?: boolean; relayQuietMs?: number; packObjects?: 'git' | 'native' } = {}) {
  const sink = new MemorySink();
  await uploadPack({ directory: repo, input, output: sink, env: { ...gitEnv, ...env }, ...opts });
  return sink;
}

test('v0 advertisement leaves in at most ceil(bytes / 64 KiB) + 1 writes', async () => {
  const sink = await serve(Buffer.alloc(0), {}, { advertiseRefs: true });
  assert.ok(sink.stats.bytes > 150_000);
  assert.ok(sink.stats.writes <= Math.ceil(sink.stats.bytes / 65536) + 1, `${sink.stats.writes} writes for ${sink.stats.bytes} bytes`);
  assert.equal(sink.stats.writes, Math.ceil(sink.stats.bytes / 65536));
});

test('v2: capabilities, ls-refs and every response section leave in as few writes as their size allows', async () => {
  const V2 = { GIT_PROTOCOL: 'version=2', GIT_CONFIG_PARAMETERS: "'transfer.advertiseObjectInfo=true'" };
  const caps = await serve(Buffer.alloc(0), V2, { advertiseRefs: true });
  assert.equal(caps.stats.writes, 1);
  const ls = await serve(pkt(['command=ls-refs\n', '0001', 'peel\n', 'symrefs\n', '0000']), V2, { statelessRpc: true });
  assert.ok(ls.stats.writes <= Math.ceil(ls.stats.bytes / 65536) + 1, `${ls.stats.writes} writes for ${ls.stats.bytes}`);
  const acks = await serve(pkt(['command=fetch\n', '0001', `want ${main}\n`, ...Array.from({ length: 30 }, (_, i) => `have ${String(i).padStart(40, 'a')}\n`), `have ${main}\n`, 'wait-for-done\n', '0000']), V2, { statelessRpc: true });
  assert.equal(acks.stats.writes, 1, 'acknowledgments section in one write');
  assert.deepEqual(unpkt(acks.data), ['acknowledgments\n', `ACK ${main}\n`, '0000']);
  const oi = await serve(pkt(['command=object-info\n', '0001', 'size\n', `oid ${main}\n`, `oid ${main}\n`, '0000']), V2, { statelessRpc: true });
  assert.equal(oi.stats.writes, 1);
});

test('pack relay of git pack-objects: frames of up to 65515 bytes, written at least 2/3 full, header and data in one write', async () => {
  // (no quiet-time flushes here, so a loaded machine cannot make a frame go out early)
  const sink = await serve(pkt([`want ${main} side-band-64k ofs-delta no-progress\n`, '0000', 'done\n']), {}, { statelessRpc: true, relayQuietMs: 60_000, packObjects: 'git' });
  const writes = sink.chunks;
  // the pack frames: every write but the last few is one full-ish band-1 packet
  const frames = writes.filter((w) => w.length > 5 && w[4] === 1);
  assert.ok(frames.length > 30);
  const body = frames.slice(0, -1);
  for (const f of body) {
    const len = parseInt(f.subarray(0, 4).toString(), 16);
    assert.equal(len, f.length, 'one packet per write, header included');
    assert.ok(f.length - 5 >= Math.floor(65516 * 2 / 3) - 1, `frame of ${f.length - 5} bytes`);
    assert.ok(f.length - 5 <= 65515);
  }
  const packBytes = frames.reduce((n, f) => n + f.length - 5, 0);
  assert.ok(writes.length <= Math.ceil(packBytes / 43677) + 3, `${writes.length} writes for ${packBytes} pack bytes`);
  // the pack is what git sends
  const g = run('git', ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k ofs-delta no-progress\n`, '0000', 'done\n']) });
  const gitPack = Buffer.concat(unpkt(g.stdout).filter((l) => l.charCodeAt(0) === 1).map((l) => Buffer.from(l.slice(1), 'latin1')));
  const ours = Buffer.concat(unpkt(sink.data).filter((l) => l.charCodeAt(0) === 1).map((l) => Buffer.from(l.slice(1), 'latin1')));
  assert.ok(ours.equals(gitPack));
});

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch { return []; }
}
const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

test('the native producer\'s pack: whole 65515-byte frames, several to a write, and the objects git sends', async () => {
  const sink = await serve(pkt([`want ${main} side-band-64k ofs-delta no-progress\n`, '0000', 'done\n']), {}, { statelessRpc: true, relayQuietMs: 60_000 });
  // every write ends on a packet boundary; the band-1 packets are full but for the last
  const lens: number[] = [];
  for (const w of sink.chunks) {
    let at = 0;
    while (at < w.length) {
      const len = parseInt(w.subarray(at, at + 4).toString(), 16);
      assert.ok(len === 0 || (len >= 4 && at + len <= w.length), 'a write ends on a packet boundary');
      if (len > 4 && w[at + 4] === 1) lens.push(len - 5);
      at += len === 0 ? 4 : len;
    }
  }
  assert.ok(lens.length > 30);
  // (a frame block's last byte waits for the next block, so frames are full less at most that byte; the pack's
  // very last byte goes in a frame of its own once the pack is known to be whole)
  for (const l of lens.slice(0, -2)) assert.ok(l >= 65514 && l <= 65515, `a frame of ${l} bytes (${lens.join(' ')})`);
  const packBytes = lens.reduce((a, b) => a + b, 0);
  assert.ok(sink.chunks.length <= Math.ceil(packBytes / 65515 / 4) + 4, `${sink.chunks.length} writes for ${packBytes} pack bytes`);
  const g = run('git', ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k ofs-delta no-progress\n`, '0000', 'done\n']) });
  const gitPack = Buffer.concat(unpkt(g.stdout).filter((l) => l.charCodeAt(0) === 1).map((l) => Buffer.from(l.slice(1), 'latin1')));
  const ours = Buffer.concat(unpkt(sink.data).filter((l) => l.charCodeAt(0) === 1).map((l) => Buffer.from(l.slice(1), 'latin1')));
  const ids = (pack: Buffer, name: string) => {
    writeFileSync(join(t.dir, name), pack);
    execFileSync('git', ['index-pack', '--strict', join(t.dir, name)], { env: gitEnv });
    return run('git', ['show-index'], { input: readFileSync(join(t.dir, name.replace(/\.pack$/, '.idx'))) }).stdout.toString().split('\n').filter(Boolean).map((l) => l.split(' ')[1]).sort();
  };
  assert.deepEqual(ids(ours, 'ours.pack'), ids(gitPack, 'git.pack'));
});

for (const producer of ['git', 'native'] as const) test(`a client that disconnects mid-pack (${producer === 'git' ? 'pack-objects is killed' : 'native producer'}): gitwire exits promptly`, async () => {
  const p = spawn(BIN, ['upload-pack', '--stateless-rpc', repo], { env: { ...gitEnv, GITWIRE_PACK_OBJECTS: producer }, stdio: ['pipe', 'pipe', 'pipe'] });
  p.stdin.end(pkt([`want ${main} side-band-64k\n`, '0000', 'done\n']));
  let got = 0;
  let kids: number[] = [];
  await new Promise<void>((resolve) => {
    p.stdout.on('data', (d: Buffer) => {
      got += d.length;
      if (got > 1000) {
        const node = p.pid!;
        kids = children(node);
        p.stdout.destroy();
        resolve();
      }
    });
  });
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => { p.kill('SIGKILL'); resolve(-1); }, 10_000);
    p.on('exit', (c) => { clearTimeout(timer); resolve(c); });
  });
  assert.notEqual(code, -1, 'exited by itself');
  assert.notEqual(code, 0);
  if (producer === 'git') assert.ok(kids.length > 0, 'pack-objects was running');
  else assert.deepEqual(kids, [], 'no child for a native pack');
  await new Promise((r) => setTimeout(r, 200));
  for (const k of kids) assert.equal(alive(k), false, `child ${k} reaped`);
});

test('a killed pack-objects: band 3 abort, the last byte held back, exit non-zero; git clone fails cleanly', async () => {
  const hook = join(t.dir, 'hook.sh');
  writeFileSync(hook, '#!/bin/sh\n"$@" | head -c 100000\nexit 1\n');
  chmodSync(hook, 0o755);
  const env = { ...gitEnv, GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}'` };
  const r = run(BIN, ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k\n`, '0000', 'done\n']), env });
  assert.notEqual(r.status, 0);
  const lines = unpkt(r.stdout);
  const data = lines.filter((l) => l.charCodeAt(0) === 1).reduce((n, l) => n + l.length - 1, 0);
  assert.equal(data, 99999, 'everything but the held-back last byte');
  const errs = lines.filter((l) => l.charCodeAt(0) === 3);
  assert.deepEqual(errs, ['\x03aborting due to possible repository corruption on the remote side.']);
  assert.match(r.stderr.toString(), /fatal: git upload-pack: aborting due to possible repository corruption on the remote side\./);
  assert.ok(!lines.includes('0000'), 'no flush after a failed pack');
  // the real client reports the failure
  // (git clears GIT_CONFIG_PARAMETERS for local transports, so pass it in the command)
  const c = run('git', ['clone', '--upload-pack', `env "GIT_CONFIG_PARAMETERS='uploadpack.packObjectsHook=${hook}'" ${BIN} upload-pack`, `file://${repo}`, join(t.dir, 'failclone')], { env: gitEnv });
  assert.notEqual(c.status, 0);
  assert.match(c.stderr.toString(), /aborting due to possible repository corruption/);
  // a repository-local hook is ignored (protected config only)
  execFileSync('git', ['--git-dir', repo, 'config', 'uploadpack.packObjectsHook', hook]);
  const ok = run(BIN, ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k no-progress\n`, '0000', 'done\n']), env: gitEnv });
  execFileSync('git', ['--git-dir', repo, 'config', '--unset', 'uploadpack.packObjectsHook']);
  assert.equal(ok.status, 0);
});

test('keepalive packets during a silent pack-objects', async () => {
  const hook = join(t.dir, 'slow.sh');
  writeFileSync(hook, '#!/bin/sh\nsleep 2.5\nexec "$@"\n');
  chmodSync(hook, 0o755);
  const env = { ...gitEnv, GIT_CONFIG_PARAMETERS: `'uploadpack.packObjectsHook=${hook}' 'uploadpack.keepAlive=1'` };
  const r = run(BIN, ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k no-progress\n`, '0000', 'done\n']), env });
  assert.equal(r.status, 0, r.stderr.toString());
  const lines = unpkt(r.stdout);
  const keepalives = lines.filter((l) => l === '\x01').length;
  assert.ok(keepalives >= 2, `${keepalives} keepalives`);
  assert.equal(lines[lines.length - 1], '0000');
});

test('trace2 events in git\'s format', async () => {
  const f = join(t.dir, 'trace.json');
  run(BIN, ['upload-pack', '--stateless-rpc', repo], { input: pkt([`want ${main} side-band-64k no-progress session-id=abc\n`, '0000', 'done\n']), env: { ...gitEnv, GIT_TRACE2_EVENT: f } });
  const events = readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const kinds = events.map((e) => e.event);
  assert.ok(kinds.includes('version') && kinds.includes('start') && kinds.includes('exit'));
  assert.ok(events.some((e) => e.key === 'negotiated-version' && e.value === '0'));
  assert.ok(events.some((e) => e.key === 'client-sid' && e.value === 'abc'));
  // git writes fetch-info for protocol v2's fetch only
  assert.ok(!events.some((e) => e.key === 'fetch-info'));
  // deepen-since as a boolean and the filter as its type name (recorded from git 2.55.0's upload-pack, t5500)
  const f2 = join(t.dir, 'trace2.json');
  const env2 = { ...gitEnv, GIT_PROTOCOL: 'version=2', GIT_CONFIG_PARAMETERS: "'uploadpack.allowFilter=true'", GIT_TRACE2_EVENT: f2 };
  run(BIN, ['upload-pack', '--stateless-rpc', repo], { input: pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${main}\n`, 'deepen-since 1000000000\n', 'filter blob:limit=1k\n', 'done\n', '0000']), env: env2 });
  const fi = readFileSync(f2, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.key === 'fetch-info');
  assert.deepEqual(fi?.value, { haves: 0, wants: 1, 'want-refs': 0, depth: 0, shallows: 0, 'deepen-since': true, 'deepen-not': 0, 'deepen-relative': false, filter: 'blob:limit' });
});

test('--timeout: an idle client is dropped', async () => {
  const p = spawn(BIN, ['upload-pack', '--timeout=1', repo], { env: gitEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  p.stdout.resume();
  const t0 = Date.now();
  const code = await new Promise<number | null>((resolve) => p.on('exit', resolve));
  assert.ok(Date.now() - t0 < 5000);
  assert.equal(code, 128);
  assert.match(err, /timeout/);
  p.stdin.destroy();
});

test('a slow reader holds the advertisement back: what is buffered stays bounded', async () => {
  const { Writable } = await import('node:stream');
  const { StreamSink } = await import('../src/pktline/sink.js');
  const big = join(t.dir, 'many-refs.git');
  git(['init', '-q', '--bare', big]);
  writeFileSync(join(big, 'objects', 'info', 'alternates'), `${join(repo, 'objects')}\n`);
  let refs = '';
  for (let i = 0; i < 20000; i++) refs += `${main} refs/heads/b${String(i).padStart(6, '0')}\n`;
  writeFileSync(join(big, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${refs}`);
  let maxBuffered = 0, total = 0;
  const slow = new Writable({
    highWaterMark: 16 * 1024,
    write(chunk: Buffer, _enc, cb) {
      total += chunk.length;
      setTimeout(cb, 2);
    },
  });
  const sink = new StreamSink(slow);
  const orig = sink.write.bind(sink);
  sink.write = (b: Buffer) => { orig(b); maxBuffered = Math.max(maxBuffered, slow.writableLength); };
  for (const env of [{}, { GIT_PROTOCOL: 'version=2' }]) {
    maxBuffered = 0; total = 0;
    const input = env.GIT_PROTOCOL ? pkt(['command=ls-refs\n', '0000']) : Buffer.alloc(0);
    await uploadPack({ directory: big, input, output: sink, env: { ...gitEnv, ...env }, advertiseRefs: !env.GIT_PROTOCOL, statelessRpc: true });
    await new Promise<void>((r) => (slow.writableLength === 0 ? r() : slow.once('drain', () => r())));
    assert.ok(total > 1_000_000, `${total} bytes sent`);
    assert.ok(maxBuffered < 256 * 1024, `at most ${maxBuffered} bytes waited in the stream`);
  }
});

test('v2 fetch: packfile-uris, never advertised, is an unexpected line as in git 2.55', () => {
  // recorded from git 2.55.0 (t5702; git 2.39 took the line whatever its configuration); against the oracle too when it is there
  const input = pkt(['command=fetch\n', 'object-format=sha1\n', '0001', 'packfile-uris https\n', `want ${main}\n`, 'done\n', '0000']);
  const env = { ...gitEnv, GIT_PROTOCOL: 'version=2' };
  const ours = run(BIN, ['upload-pack', '--stateless-rpc', repo], { input, env });
  assert.equal(ours.status, 128);
  assert.equal(ours.stderr.toString(), "fatal: unexpected line: 'packfile-uris https'\n");
  assert.equal(ours.stdout.length, 0);
  const git255 = join(process.env.GITWIRE_GIT_2_55 ?? '/nonexistent', 'bin', 'git');
  if (existsSync(git255)) {
    const theirs = run(git255, ['upload-pack', '--stateless-rpc', repo], { input, env });
    assert.equal(ours.status, theirs.status);
    assert.equal(ours.stderr.toString(), theirs.stderr.toString());
  }
});
