/**
 * receive-pack's advertisement (byte-identical to git's), its write
 * discipline (64 KiB buffering, one write for the report, hook output
 * coalesced per line), and the library callbacks.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitBuf, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { request, transcript } from './helpers/push.js';
import { receivePack, type ReceivePackOptions } from '../src/protocol/receive-pack.js';
import { MemorySink, type Sink, type SinkStats } from '../src/pktline/sink.js';

let t: ReturnType<typeof tmp>;
let repo: string;
let src: string;
let main: string;

before(() => {
  t = tmp('gitwire-rpio-');
  src = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'one', { 'a.txt': 'a\n' });
  git(['tag', '-a', '-m', 'tag', 'v1'], { cwd: src, env: { GIT_COMMITTER_DATE: '1700000100 +0000' } });
  commit(src, 'two', { 'b.txt': 'b\n' });
  repo = join(t.dir, 'repo.git');
  git(['clone', '-q', '--bare', src, repo]);
  main = git(['rev-parse', 'main'], { cwd: repo }).trim();
  let refs = '';
  for (let i = 0; i < 3000; i++) refs += `${main} refs/heads/branch-${String(i).padStart(5, '0')}\n`;
  refs += `${main} refs/hidden/secret\n${main} refs/namespaces/ns/refs/heads/inside\n${main} refs/tags/zz\n`;
  writeFileSync(join(repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${refs}`);
  git(['update-ref', 'refs/heads/loose', `${main}~1`], { cwd: repo });
  git(['update-ref', 'refs/heads/main', main], { cwd: repo });
  git(['update-ref', 'refs/tags/v1', git(['rev-parse', 'v1'], { cwd: src }).trim()], { cwd: repo });
});
after(() => t.cleanup());

const ENV = { ...gitEnv, GIT_USER_AGENT: 'git/2.55.0' };

function gitAdvertisement(dir: string, env: NodeJS.ProcessEnv = {}, args: string[] = []): Buffer {
  const r = spawnSync('git', ['receive-pack', '--advertise-refs', ...args, dir], { env: { ...ENV, ...env } });
  assert.equal(r.status, 0, r.stderr.toString());
  return r.stdout;
}

async function ours(o: Partial<ReceivePackOptions> & { directory: string }, env: NodeJS.ProcessEnv = {}, sink: Sink = new MemorySink()) {
  const res = await receivePack({ input: Buffer.alloc(0), output: sink, env: { ...ENV, ...env }, stderr: () => undefined, ...o });
  return { res, sink };
}

test('advertisement is byte-identical to git receive-pack --advertise-refs', async () => {
  const cases: Array<{ name: string; env?: NodeJS.ProcessEnv; config?: Array<[string, string]>; dir?: () => string }> = [
    { name: 'plain (3000 packed refs, loose ref, tags)' },
    { name: 'hideRefs', config: [['receive.hideRefs', 'refs/hidden'], ['transfer.hideRefs', 'refs/heads/branch-0001']] },
    { name: 'namespace', env: { GIT_NAMESPACE: 'ns' } },
    { name: 'protocol v1', env: { GIT_PROTOCOL: 'version=1' } },
    { name: 'protocol v2 asked (push stays v0)', env: { GIT_PROTOCOL: 'version=2' } },
    { name: 'options', config: [['receive.advertiseAtomic', 'false'], ['receive.advertisePushOptions', 'true'], ['repack.useDeltaBaseOffset', 'false']] },
    {
      name: 'empty repository', dir: () => { const d = join(t.dir, 'empty.git'); git(['init', '-q', '--bare', d]); return d; },
    },
    {
      name: 'alternates (.have)', dir: () => {
        const d = join(t.dir, 'alt.git');
        git(['init', '-q', '--bare', d]);
        writeFileSync(join(d, 'objects', 'info', 'alternates'), `${join(repo, 'objects')}\n`);
        return d;
      },
    },
    {
      name: 'shallow', dir: () => {
        const d = join(t.dir, 'shallow.git');
        git(['clone', '-q', '--bare', '--depth', '1', `file://${src}`, d]);
        return d;
      },
    },
  ];
  for (const c of cases) {
    const dir = c.dir ? c.dir() : join(t.dir, `adv-${c.name.replace(/\W+/g, '-')}.git`);
    if (!c.dir) cpSync(repo, dir, { recursive: true });
    for (const [k, v] of c.config ?? []) git(['config', k, v], { cwd: dir });
    const want = gitAdvertisement(dir, c.env);
    const { sink } = await ours({ directory: dir, advertiseRefs: true }, c.env);
    assert.equal((sink as MemorySink).data.toString('latin1'), want.toString('latin1'), c.name);
  }
});

test('the advertisement leaves in ceil(bytes / 64 KiB) + 1 writes at most', async () => {
  const { res, sink } = await ours({ directory: repo, advertiseRefs: true });
  const bytes = (sink as MemorySink).data.length;
  assert.ok(bytes > 3 * 65536, `big enough: ${bytes}`);
  assert.ok(res.writes <= Math.ceil(bytes / 65536) + 1, `${res.writes} writes for ${bytes} bytes`);
  for (const c of (sink as MemorySink).chunks.slice(0, -1)) assert.ok(c.length > 60000 && c.length <= 65536, `chunk ${c.length}`);
});

/** a sink that remembers each write */
class Recorder implements Sink {
  readonly stats: SinkStats = { writes: 0, bytes: 0 };
  readonly retains = false;
  readonly backedUp = false;
  readonly closed = false;
  readonly writes: Buffer[] = [];
  write(b: Buffer): void { this.stats.writes++; this.stats.bytes += b.length; this.writes.push(Buffer.from(b)); }
  drained(): Promise<void> { return Promise.resolve(); }
}

test('the report is one write; hook output leaves at most one band-2 frame per line; library callbacks', async () => {
  const dir = join(t.dir, 'io.git');
  cpSync(repo, dir, { recursive: true });
  mkdirSync(join(dir, 'hooks'), { recursive: true });
  const hook = join(dir, 'hooks', 'post-receive');
  writeFileSync(hook, '#!/bin/sh\nprintf "one\\ntwo\\n"; printf "three\\n" >&2; sleep 0.05; echo four\n');
  chmodSync(hook, 0o755);
  const tip = commit(src, 'three', { 'c.txt': 'c\n' });
  const pack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${tip}\n^${main}\n` });
  const body = request([`${main} ${tip} refs/heads/main`, `${main} ${tip} refs/heads/branch-00001`, `${'0'.repeat(40)} ${tip} refs/heads/new`],
    'report-status side-band-64k quiet object-format=sha1 agent=x', pack);
  const seen: string[] = [];
  const sink = new Recorder();
  const { res } = await ours({
    directory: dir, statelessRpc: true, input: body,
    authorizePush: (info, updates) => {
      seen.push(`authorize ${updates.map((u) => `${u.kind}:${u.ref}`).join(',')} quarantine=${!!info.quarantinePath}`);
      return { reject: { 'refs/heads/branch-00001': 'protected branch' } };
    },
    onPush: (_info, results) => { seen.push(`pushed ${results.map((r) => `${r.ref}=${r.ok ? 'ok' : r.reason}`).join(',')}`); },
  }, {}, sink);
  assert.deepEqual(seen, [
    'authorize update:refs/heads/main,update:refs/heads/branch-00001,create:refs/heads/new quarantine=true',
    'pushed refs/heads/main=ok,refs/heads/branch-00001=protected branch,refs/heads/new=ok',
  ]);
  assert.equal(res.updated, 2);
  // exactly one write holds the report, whole
  const reportWrites = sink.writes.filter((w) => w.includes('unpack ok'));
  assert.equal(reportWrites.length, 1);
  const frames = transcript(reportWrites[0]!);
  assert.equal(frames.length, 1);
  assert.deepEqual(transcript(Buffer.from(frames[0]!.slice(1), 'utf8')), ['unpack ok\n', 'ok refs/heads/main\n', 'ng refs/heads/branch-00001 protected branch\n', 'ok refs/heads/new\n', '0000']);
  // hook output: 4 lines, at most 4 band-2 frames, each ending at a line end
  const band2 = sink.writes.flatMap((w) => transcript(w)).filter((f) => f.startsWith('\x02'));
  const text = band2.map((f) => f.slice(1)).join('');
  assert.equal(text, 'one\ntwo\nthree\nfour\n');
  assert.ok(band2.length <= 4 && band2.length >= 1, `${band2.length} frames`);
  for (const f of band2) assert.ok(f.endsWith('\n'));
  assert.equal(git(['rev-parse', 'refs/heads/branch-00001'], { cwd: dir }).trim(), main);
  assert.equal(git(['rev-parse', 'refs/heads/new'], { cwd: dir }).trim(), tip);
  // the final flush closes the sideband stream
  assert.equal(sink.writes.at(-1)!.toString(), '0000');
});
