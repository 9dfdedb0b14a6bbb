/**
 * The pack-objects cache: keys, the directory store, hits, misses and
 * joins (bytes identical to a direct pack-objects), and its failures.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt, demux } from './helpers/pkt.js';
import { keyForRequest, packCacheKey } from '../src/pack/cache.js';
import { DirectoryStore, ENTRY_HEADER_BYTES, type PackSpool } from '../src/pack/cache.js';
import { PackCache, TrailerCheck, type Lease, type Producer } from '../src/pack/cache.js';
import { packObjectsArgs, packObjectsInput, spawnPackObjects, type PackObjectsRequest } from '../src/pack/pack-objects.js';
import type { PackSource } from '../src/pack/relay.js';
import { uploadPack } from '../src/protocol/upload-pack.js';
import { MemorySink } from '../src/pktline/sink.js';

let t: ReturnType<typeof tmp>;
let repo: string;
let head: string;
let first: string;
let direct: Buffer;

function request(over: Partial<PackObjectsRequest> = {}): PackObjectsRequest {
  return {
    gitDir: repo, wants: [Buffer.from(head, 'hex')], haves: [], extraEdges: [], shallow: [], useShallow: false,
    thin: false, progress: false, ofsDelta: true, includeTag: false, env: gitEnv, ...over,
  };
}

const fakeRepo = (commonDir = '/srv/a.git', format: 'sha1' | 'sha256' = 'sha1', cfg: Array<{ key: string; value: string | null }> = []) =>
  ({ commonDir, format, config: { each: () => cfg } });

before(() => {
  t = tmp('gitwire-pack-cache-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  first = commit(w, 'one', { 'a.txt': 'a\n'.repeat(1000) });
  // incompressible: a pack of ~1.2 MiB, large enough for the slow-reader test
  commit(w, 'random', { 'r1.bin': randomBytes(600 << 10), 'r2.bin': randomBytes(600 << 10) });
  head = commit(w, 'three', { 'a.txt': 'b\n'.repeat(1000) });
  repo = join(t.dir, 'repo.git');
  git(['clone', '-q', '--bare', '--no-local', w, repo]);
  // one thread: pack-objects' output is then the same bytes every run
  git(['--git-dir', repo, 'config', 'pack.threads', '1']);
  direct = runDirect(request());
});
after(() => t.cleanup());

/** pack-objects run directly, outside gitwire */
function runDirect(r: PackObjectsRequest): Buffer {
  return execFileSync('git', packObjectsArgs(r), { cwd: repo, env: { ...gitEnv, GIT_DIR: repo }, input: packObjectsInput(r), maxBuffer: 1 << 28 });
}

function produce(r = request(), counter?: { n: number }): () => Promise<Producer> {
  return async () => { if (counter) counter.n++; return { child: spawnPackObjects(r) }; };
}

async function drain(src: PackSource, opts: { bytesPerSec?: number; stopAfter?: number } = {}): Promise<{ bytes: Buffer; ok: boolean; retryable?: boolean; progress: string }> {
  const parts: Buffer[] = [];
  let n = 0;
  let progress = '';
  const prog = (async () => { if (src.stderr) for await (const p of src.stderr) progress += p.toString(); })();
  const t0 = Date.now();
  for await (const c of src.stdout!) {
    parts.push(Buffer.from(c));
    n += c.length;
    if (opts.stopAfter !== undefined && n >= opts.stopAfter) { await src.abort(); break; }
    if (opts.bytesPerSec) {
      const due = t0 + (n / opts.bytesPerSec) * 1000;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  }
  const res = await src.done;
  await prog;
  return { bytes: Buffer.concat(parts), ok: res.ok, retryable: res.retryable, progress };
}

function newCache(dir: string, o: Partial<ConstructorParameters<typeof PackCache>[0]> = {}): PackCache {
  mkdirSync(dir, { recursive: true });
  return new PackCache({ dir, minOccurrences: 0, ...o });
}

const KEY = (s: string) => packCacheKey({ repository: s, args: [], stdin: Buffer.alloc(0), objectFormat: 'sha1' });

/* ---------- keys ---------- */

test('key: differs when any input differs; progress, protocol and namespace do not count', () => {
  const base = request();
  const k = (r: PackObjectsRequest, rp = fakeRepo()) => keyForRequest(r, rp);
  const k0 = k(base);
  assert.match(k0, /^[0-9a-f]{64}$/);
  assert.equal(k(request()), k0, 'stable');
  const other = Buffer.from(first, 'hex');
  const differing: Record<string, string> = {
    want: k(request({ wants: [base.wants[0]!, other] })),
    have: k(request({ haves: [other] })),
    filter: k(request({ filter: 'blob:none' })),
    'filter spec': k(request({ filter: 'blob:limit=1k' })),
    depth: k(request({ useShallow: true, shallow: [other] })),
    thin: k(request({ thin: true })),
    'ofs-delta': k(request({ ofsDelta: false })),
    'include-tag': k(request({ includeTag: true })),
    hook: k(request({ hook: 'cat' })),
    repository: k(base, fakeRepo('/srv/b.git')),
    'object format': k(base, fakeRepo('/srv/a.git', 'sha256')),
    'pack config': k(base, fakeRepo('/srv/a.git', 'sha1', [{ key: 'pack.window', value: '5' }])),
    alternates: k(request({ env: { ...gitEnv, GIT_ALTERNATE_OBJECT_DIRECTORIES: '/x' } })),
  };
  const seen = new Set([k0]);
  for (const [name, key] of Object.entries(differing)) {
    assert.ok(!seen.has(key), `${name} changes the key`);
    seen.add(key);
  }
  assert.equal(k(request({ progress: true })), k0, '--progress only changes stderr');
  assert.equal(k(request({ env: { ...gitEnv, GIT_PROTOCOL: 'version=2' } })), k0, 'protocol version is not an input');
  assert.equal(k(request({ env: { ...gitEnv, GIT_NAMESPACE: 'foo' } })), k0, 'the namespace is already in the wants');
  assert.equal(k(base, fakeRepo('/srv/a.git', 'sha1', [{ key: 'uploadpack.allowfilter', value: 'true' }])), k0, 'unrelated config');
});

test('key: fields are length-prefixed (no collisions by concatenation)', () => {
  const a = packCacheKey({ repository: '/a', args: ['b', 'c'], stdin: Buffer.from('x'), objectFormat: 'sha1' });
  const b = packCacheKey({ repository: '/a', args: ['b\0c'], stdin: Buffer.from('x'), objectFormat: 'sha1' });
  const c = packCacheKey({ repository: '/ab', args: ['c'], stdin: Buffer.from('x'), objectFormat: 'sha1' });
  assert.equal(a, b, 'args joined by NUL (a NUL cannot occur in an argument)');
  assert.notEqual(a, c);
});

test('trailer check: accepts a real pack, rejects a flipped byte and a truncation', () => {
  const ok = new TrailerCheck('sha1');
  for (let i = 0; i < direct.length; i += 7777) ok.update(direct.subarray(i, i + 7777));
  assert.equal(ok.ok(), true);
  const bad = Buffer.from(direct);
  bad.writeUInt8(bad[1000]! ^ 1, 1000);
  const c1 = new TrailerCheck('sha1');
  c1.update(bad);
  assert.equal(c1.ok(), false);
  const c2 = new TrailerCheck('sha1');
  c2.update(direct.subarray(0, direct.length - 100));
  assert.equal(c2.ok(), false);
});

/* ---------- the directory store ---------- */

async function putEntry(store: DirectoryStore, key: string, bytes: Buffer): Promise<void> {
  const s = await store.create(key);
  await s.write([bytes], 0);
  await s.commit(bytes.length, bytes.subarray(-20));
  await s.close();
}

test('store: expiry after max-age, size bound with least-recently-used eviction', async () => {
  const dir = join(t.dir, 'store1');
  mkdirSync(dir);
  const store = new DirectoryStore(dir);
  const k1 = KEY('1'), k2 = KEY('2'), k3 = KEY('3');
  await putEntry(store, k1, Buffer.alloc(1000, 1));
  await putEntry(store, k2, Buffer.alloc(1000, 2));
  assert.equal(store.bytes, 2000);
  // k1 used more recently than k2
  await new Promise((r) => setTimeout(r, 5));
  const p1 = await store.open(k1, 60_000);
  assert.ok(p1);
  await p1.close();
  const pr = await store.prune({ maxAgeMs: 60_000, maxBytes: 2500, reserve: 1000 });
  assert.deepEqual(pr, { expired: 0, evicted: 1 });
  assert.equal(await store.open(k2, 60_000), undefined, 'least recently used went');
  await putEntry(store, k3, Buffer.alloc(1000, 3));
  assert.equal(store.bytes, 2000);
  // age k3 by an hour: expired for open and for prune
  const old = (Date.now() - 3_600_000) / 1000;
  utimesSync(join(dir, `${k3}.pack`), old, old);
  assert.equal(await store.open(k3, 60_000), undefined);
  const pr2 = await store.prune({ maxAgeMs: 60_000, maxBytes: 1 << 30, now: Date.now() + 120_000 });
  assert.equal(pr2.expired, 1, 'k1 is past max-age two minutes from now');
  assert.equal(store.bytes, 0);
  assert.deepEqual(readdirSync(dir), []);
  // a fresh store learns what is on disk
  await putEntry(store, k1, Buffer.alloc(500, 1));
  const again = new DirectoryStore(dir);
  await again.scan();
  assert.equal(again.bytes, 500);
});

/* ---------- hits, misses, joins ---------- */

test('miss then hit: both readers get the direct pack; min-occurrences 0 stores the first', async () => {
  const cache = newCache(join(t.dir, 'c-hit'));
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const runs = { n: 0 };
    const a = (await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: true }))!;
    assert.equal(a.outcome, 'miss');
    const ra = await drain(a.source);
    assert.equal(ra.ok, true);
    assert.ok(ra.bytes.equals(direct), 'miss reader: the direct pack');
    await waitFor(() => cache.stats.stored === 1);
    const b = (await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: true }))!;
    assert.equal(b.outcome, 'hit');
    const rb = await drain(b.source);
    assert.equal(rb.ok, true);
    assert.ok(rb.bytes.equals(direct), 'hit reader: the direct pack');
    assert.match(rb.progress, /^Reusing cached pack: 1\.\d\d MiB, done\.\n$/);
    const quiet = (await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: false }))!;
    assert.equal((await drain(quiet.source)).progress, '', 'no-progress: no progress lines');
    assert.equal(runs.n, 1, 'pack-objects ran once');
    assert.equal(cache.stats.hits, 2);
    assert.equal(cache.stats.misses, 1);
    assert.equal(cache.stats.bytesServed, 2 * direct.length);
    assert.equal(cache.stats.bytesGenerated, direct.length);
  } finally { cache.close(); }
});

async function waitFor(f: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!f()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('min-occurrences 1: a key seen once is not stored, a repeat is', async () => {
  const dir = join(t.dir, 'c-minocc');
  const cache = newCache(dir, { minOccurrences: 1 });
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    const ra = await drain(a.source);
    assert.equal(ra.ok, true);
    assert.ok(ra.bytes.equals(direct));
    await waitFor(() => cache.running === 0);
    assert.equal(cache.stats.stored, 0);
    assert.equal(cache.stats.bytesSpooled, 0, 'a first sighting is never written to disk');
    assert.deepEqual(readdirSync(dir), [], 'nothing stored, no spool left');
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'miss');
    assert.equal((await drain(b.source)).ok, true);
    await waitFor(() => cache.stats.stored === 1);
    for (let i = 0; i < 3; i++) {
      const c = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
      assert.equal(c.outcome, 'hit');
      assert.ok((await drain(c.source)).bytes.equals(direct));
    }
    assert.equal(cache.stats.bytesSpooled, direct.length, 'five sequential fetches wrote one pack to disk');
  } finally { cache.close(); }
});

test('joins: concurrent identical requests share one pack-objects; a slow reader (100 KB/s) does not slow the others', async () => {
  const cache = newCache(join(t.dir, 'c-join'), { minOccurrences: 1 });
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const runs = { n: 0 };
    const leases: Lease[] = [];
    for (let i = 0; i < 4; i++) leases.push((await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: true }))!);
    assert.deepEqual(leases.map((l) => l.outcome), ['miss', 'join', 'join', 'join']);
    const t0 = Date.now();
    const fastDone: number[] = [];
    const slow = drain(leases[3]!.source, { bytesPerSec: 100_000 });
    const fast = leases.slice(0, 3).map((l) => drain(l.source).then((r) => { fastDone.push(Date.now() - t0); return r; }));
    const rs = await Promise.all(fast);
    const slowAtFastEnd = Date.now() - t0;
    for (const r of rs) { assert.equal(r.ok, true); assert.ok(r.bytes.equals(direct)); }
    assert.ok(slowAtFastEnd < 5000, `fast readers finished in ${slowAtFastEnd} ms while the slow one needs > 10 s`);
    // the producer is done before the slow reader: its pack is already stored (the key was joined)
    await waitFor(() => cache.stats.stored === 1);
    const rslow = await slow;
    assert.equal(rslow.ok, true);
    assert.ok(rslow.bytes.equals(direct), 'slow reader: the same pack');
    assert.match(rslow.progress, /Joining a pack-objects run in progress\n.*Reusing shared pack: 1\.\d\d MiB, done\.\n/s);
    assert.equal(runs.n, 1);
    assert.equal(cache.stats.joins, 3);
  } finally { cache.close(); }
});

/** pack-objects, then the wrapper lingers: the run is still going (not joinable past the window) after its last byte */
function lingeringProduce(runs: { n: number }): () => Promise<Producer> {
  return async () => {
    runs.n++;
    const child = spawn('/bin/sh', ['-c', 'git pack-objects --revs --stdout --delta-base-offset; s=$?; sleep 0.5; exit $s'], { cwd: repo, env: { ...gitEnv, GIT_DIR: repo }, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin!.end(`${head}\n--not\n\n`);
    return { child };
  };
}

test('a first sighting can be joined only while its bytes fit the join window; a later identical request runs its own pack-objects, which is stored', async () => {
  for (const window of [1024, undefined]) {
    const dir = join(t.dir, `c-window-${window ?? 'default'}`);
    const cache = newCache(dir, { minOccurrences: 1, joinWindowBytes: window });
    try {
      const key = keyForRequest(request(), fakeRepo(repo));
      const runs = { n: 0 };
      const a = (await cache.acquire(key, { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
      assert.equal(a.outcome, 'miss');
      const ra = drain(a.source);
      await waitFor(() => cache.stats.bytesGenerated >= direct.length);
      const b = (await cache.acquire(key, { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
      const rs = await Promise.all([ra, drain(b.source)]);
      for (const r of rs) { assert.equal(r.ok, true); assert.ok(r.bytes.equals(direct)); }
      await waitFor(() => cache.stats.stored === 1);
      assert.equal(cache.stats.bytesSpooled, direct.length, 'one pack written to disk');
      if (window === 1024) {
        assert.equal(b.outcome, 'miss', 'past the window: its own run');
        assert.equal(runs.n, 2);
      } else {
        assert.equal(b.outcome, 'join', 'within the window: joined, and the run spooled from its first byte');
        assert.equal(runs.n, 1);
      }
    } finally { cache.close(); }
  }
});

test('the requester reads its run pushed: paused mid-pack while a join makes the run spool, resumed, it gets the whole pack from the spool', async () => {
  const cache = newCache(join(t.dir, 'c-push'), { minOccurrences: 1 });
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const runs = { n: 0 };
    const a = (await cache.acquire(key, { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
    assert.equal(a.outcome, 'miss');
    const push = a.source.push;
    assert.ok(push, 'the requester of a run is a push source');
    const parts: Buffer[] = [];
    let paused = false;
    const ended = new Promise<void>((resolve) => push.start((b) => {
      parts.push(Buffer.from(b));
      if (!paused) { paused = true; push.pause(); }
    }, () => resolve()));
    await waitFor(() => cache.stats.bytesGenerated >= direct.length);
    assert.equal(parts.length, 1, 'nothing is pushed while paused');
    const b = (await cache.acquire(key, { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'join');
    const rb = drain(b.source);
    await waitFor(() => cache.stats.bytesSpooled >= direct.length);
    push.resume();
    await ended;
    assert.ok(Buffer.concat(parts).equals(direct), 'the requester: the direct pack');
    assert.equal((await a.source.done).ok, true);
    const r = await rb;
    assert.equal(r.ok, true);
    assert.ok(r.bytes.equals(direct));
    await waitFor(() => cache.stats.stored === 1);
    assert.equal(runs.n, 1);
  } finally { cache.close(); }
});

test('past the join window, a requester alone reads its run pushed straight through, and pauses and resumes correctly', async () => {
  const cache = newCache(join(t.dir, 'c-through'), { minOccurrences: 1, joinWindowBytes: 1024 });
  try {
    const a = (await cache.acquire(KEY('through'), { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    const push = a.source.push!;
    const parts: Buffer[] = [];
    let n = 0;
    await new Promise<void>((resolve) => push.start((b) => {
      parts.push(Buffer.from(b));
      // pause every other chunk for a moment, as backpressure would
      if (n++ % 2 === 0) { push.pause(); setTimeout(() => push.resume(), 5); }
    }, () => resolve()));
    assert.ok(Buffer.concat(parts).equals(direct));
    assert.equal((await a.source.done).ok, true);
    assert.equal(cache.stats.bytesSpooled, 0);
  } finally { cache.close(); }
});

test('a reader that disconnects leaves the others alone; when all leave a first-seen key, pack-objects is killed', async () => {
  const cache = newCache(join(t.dir, 'c-leave'), { minOccurrences: 1 });
  try {
    // a producer slow enough to be caught mid-pack: the hook-like wrapper sleeps, then pack-objects
    const r = request();
    const slowProduce = async (): Promise<Producer> => {
      const child = spawn('/bin/sh', ['-c', 'sleep 0.3; exec git pack-objects --revs --stdout --delta-base-offset'], { cwd: repo, env: { ...gitEnv, GIT_DIR: repo }, stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin!.end(`${head}\n--not\n\n`);
      return { child };
    };
    const key = keyForRequest(r, fakeRepo(repo));
    const a = (await cache.acquire(key, { produce: slowProduce, objectFormat: 'sha1', progress: false }))!;
    const b = (await cache.acquire(key, { produce: slowProduce, objectFormat: 'sha1', progress: false }))!;
    const [ra, rb] = await Promise.all([drain(a.source, { stopAfter: 1 }), drain(b.source)]);
    assert.equal(ra.ok, false, 'the reader that left');
    assert.equal(rb.ok, true);
    assert.ok(rb.bytes.equals(direct));
    await waitFor(() => cache.running === 0);
    // everyone leaves a key seen for the first time: nobody needs the run
    const key2 = keyForRequest(request({ thin: true }), fakeRepo(repo));
    const c = (await cache.acquire(key2, { produce: slowProduce, objectFormat: 'sha1', progress: false }))!;
    await c.source.abort();
    await waitFor(() => cache.running === 0);
    assert.equal(cache.stats.abandoned, 1);
    assert.equal(cache.stats.stored, 1, 'only the joined key was stored');
  } finally { cache.close(); }
});

test('everyone leaves a key that will be stored: pack-objects finishes for the cache', async () => {
  const cache = newCache(join(t.dir, 'c-finish'), { minOccurrences: 0 });
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    await drain(a.source, { stopAfter: 1 });
    await waitFor(() => cache.stats.stored === 1);
    assert.equal(cache.stats.abandoned, 0);
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'hit');
    assert.ok((await drain(b.source)).bytes.equals(direct));
  } finally { cache.close(); }
});

test('producer killed mid-pack: the requester fails like a direct fetch, joiners may retry; nothing stored', async () => {
  const cache = newCache(join(t.dir, 'c-kill'));
  try {
    let child: ReturnType<typeof spawn> | undefined;
    const halfThenDie = async (): Promise<Producer> => {
      // writes 200 KiB of the pack, then is killed
      child = spawn('/bin/sh', ['-c', 'git pack-objects --revs --stdout --delta-base-offset | head -c 204800; sleep 30'], { cwd: repo, env: { ...gitEnv, GIT_DIR: repo }, stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin!.end(`${head}\n--not\n\n`);
      return { child };
    };
    const key = KEY('killed');
    const a = (await cache.acquire(key, { produce: halfThenDie, objectFormat: 'sha1', progress: false }))!;
    const b = (await cache.acquire(key, { produce: halfThenDie, objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'join');
    const pa = drain(a.source);
    const pb = drain(b.source);
    await waitFor(() => cache.stats.bytesGenerated >= 204800);
    child!.kill('SIGKILL');
    const [ra, rb] = await Promise.all([pa, pb]);
    assert.equal(ra.ok, false);
    assert.equal(ra.retryable, false, 'its own pack-objects died: as a direct fetch');
    assert.equal(rb.ok, false);
    assert.equal(rb.retryable, true, 'a joiner may start over directly');
    await waitFor(() => cache.running === 0);
    assert.equal(cache.stats.stored, 0);
    assert.deepEqual(readdirSync(join(t.dir, 'c-kill')), []);
  } finally { cache.close(); }
});

/* ---------- faults in the store ---------- */

/** A directory store whose spools fail after `limit` bytes (a disk filling up). */
class FullDiskStore extends DirectoryStore {
  constructor(dir: string, readonly limit: number) { super(dir); }
  override async create(key: string): Promise<PackSpool> {
    const s = await super.create(key);
    let n = 0;
    return {
      ...s,
      write: async (bufs, pos) => {
        for (const b of bufs) n += b.length;
        if (n > this.limit) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return s.write(bufs, pos);
      },
    };
  }
}

test('disk full mid-entry: attached readers still get the whole pack, nothing is stored, the failure is counted', async () => {
  const dir = join(t.dir, 'c-full');
  mkdirSync(dir);
  const logs: string[] = [];
  const cache = new PackCache({ store: new FullDiskStore(dir, 300 << 10), minOccurrences: 0, log: (m) => logs.push(m) });
  try {
    const key = keyForRequest(request(), fakeRepo(repo));
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    const [ra, rb] = await Promise.all([drain(a.source), drain(b.source, { bytesPerSec: 2_000_000 })]);
    assert.ok(ra.ok && rb.ok);
    assert.ok(ra.bytes.equals(direct));
    assert.ok(rb.bytes.equals(direct));
    await waitFor(() => cache.running === 0);
    assert.equal(cache.stats.fallbacks.write, 1);
    assert.equal(cache.stats.stored, 0);
    assert.ok(logs.some((l) => /ENOSPC/.test(l)), 'logged');
    assert.deepEqual(readdirSync(dir), [], 'the partial spool is gone');
    // the next request produces afresh
    const c = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(c.outcome, 'miss');
    assert.ok((await drain(c.source)).bytes.equals(direct));
  } finally { cache.close(); }
});

test('an unwritable or missing cache directory: a first sighting does not touch it, a repeat is bypassed (direct pack-objects), a join is served from memory', async () => {
  const file = join(t.dir, 'not-a-dir');
  writeFileSync(file, '');
  const cache = new PackCache({ dir: join(file, 'cache') });
  try {
    const first = (await cache.acquire(KEY('x'), { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(first.outcome, 'miss');
    assert.ok((await drain(first.source)).bytes.equals(direct));
    await waitFor(() => cache.running === 0);
    const lease = await cache.acquire(KEY('x'), { produce: produce(), objectFormat: 'sha1', progress: false });
    assert.equal(lease, undefined);
    assert.equal(cache.stats.bypasses, 1);
    assert.equal(cache.stats.fallbacks.create, 1);
    // two at once for a new key: the joiner's spool cannot be created; both read the run from memory
    const runs = { n: 0 };
    const a = (await cache.acquire(KEY('y'), { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
    const b = (await cache.acquire(KEY('y'), { produce: lingeringProduce(runs), objectFormat: 'sha1', progress: false }))!;
    assert.deepEqual([a.outcome, b.outcome], ['miss', 'join']);
    const rs = await Promise.all([drain(a.source), drain(b.source)]);
    for (const r of rs) { assert.equal(r.ok, true); assert.ok(r.bytes.equals(direct)); }
    assert.equal(runs.n, 1);
    assert.equal(cache.stats.fallbacks.create, 2);
    assert.equal(cache.stats.stored, 0);
  } finally { cache.close(); }
});

/** Store one entry for `r` with a fresh cache over `dir`; its file. */
async function storeOne(dir: string, r = request()): Promise<string> {
  const key = keyForRequest(r, fakeRepo(repo));
  const c = newCache(dir);
  try {
    await drain((await c.acquire(key, { produce: produce(r), objectFormat: 'sha1', progress: false }))!.source);
    await waitFor(() => c.stats.stored === 1);
  } finally { c.close(); }
  return join(dir, `${key}.pack`);
}

/** Flip one byte of `file` in place (same inode and size) and put its mtime back. */
function flipInPlace(file: string, at: number): void {
  const st = statSync(file);
  const fd = openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    b[0] = readFileSync(file)[at]! ^ 0x40;
    writeSync(fd, b, 0, 1, at);
  } finally { closeSync(fd); }
  utimesSync(file, st.atime, st.mtime);
}

test('an entry damaged after it was served (a byte flipped in place, mtime restored) fails its streaming check, is removed and produced again', async () => {
  const dir = join(t.dir, 'c-flip');
  const file = await storeOne(dir);
  const key = keyForRequest(request(), fakeRepo(repo));
  const cache = newCache(dir);
  try {
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(a.outcome, 'hit');
    assert.ok((await drain(a.source)).bytes.equals(direct), 'served intact once');
    flipInPlace(file, ENTRY_HEADER_BYTES + (direct.length >> 1));
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'hit');
    const rb = await drain(b.source);
    assert.equal(rb.ok, false, 'the bytes sent failed the trailer check');
    assert.equal(rb.retryable, true);
    assert.equal(cache.stats.fallbacks.corrupt, 1);
    await waitFor(() => readdirSync(dir).length === 0);
    const runs = { n: 0 };
    const c = (await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: false }))!;
    assert.equal(c.outcome, 'miss', 'removed: produced again');
    assert.ok((await drain(c.source)).bytes.equals(direct));
    await waitFor(() => cache.stats.stored === 1);
    assert.ok(readFileSync(file).subarray(ENTRY_HEADER_BYTES).equals(direct), 'stored again, intact');
    const d = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(d.outcome, 'hit');
    assert.equal((await drain(d.source)).ok, true);
    assert.equal(runs.n, 1);
  } finally { cache.close(); }
});

test('a hit whose client leaves early is checked to the end anyway: a damaged entry is removed', async () => {
  const dir = join(t.dir, 'c-leave-early');
  const file = await storeOne(dir);
  const key = keyForRequest(request(), fakeRepo(repo));
  flipInPlace(file, ENTRY_HEADER_BYTES + direct.length - 1000);
  const cache = newCache(dir);
  try {
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(a.outcome, 'hit');
    const ra = await drain(a.source, { stopAfter: 1 });
    assert.equal(ra.ok, false);
    // at once: the next request waits for the verdict, and gets a fresh pack
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'miss');
    assert.equal(cache.stats.fallbacks.corrupt, 1);
    assert.ok((await drain(b.source)).bytes.equals(direct));
    await waitFor(() => cache.stats.stored === 1);
  } finally { cache.close(); }
  // an intact entry whose client leaves stays
  const file2 = join(dir, `${key}.pack`);
  const c2 = newCache(dir);
  try {
    await drain((await c2.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!.source, { stopAfter: 1 });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(c2.stats.fallbacks.corrupt, 0);
    assert.ok(readFileSync(file2).subarray(ENTRY_HEADER_BYTES).equals(direct));
  } finally { c2.close(); }
});

test('an entry is served only for its own key: another entry copied over it, a raw pack, a truncation are refused, removed and produced again', async () => {
  const rOther = request({ thin: true, haves: [Buffer.from(first, 'hex')] });
  const otherDir = join(t.dir, 'c-other');
  const otherFile = await storeOne(otherDir, rOther);
  const key = keyForRequest(request(), fakeRepo(repo));
  for (const damage of ['other entry', 'raw pack', 'truncate'] as const) {
    const dir = join(t.dir, `c-bind-${damage.replace(' ', '-')}`);
    const file = await storeOne(dir);
    if (damage === 'other entry') copyFileSync(otherFile, file);
    else if (damage === 'raw pack') writeFileSync(file, runDirect(rOther));
    else writeFileSync(file, readFileSync(file).subarray(0, -1000));
    const cache = newCache(dir);
    try {
      const runs = { n: 0 };
      const b = (await cache.acquire(key, { produce: produce(request(), runs), objectFormat: 'sha1', progress: false }))!;
      assert.equal(b.outcome, 'miss', damage);
      assert.equal(cache.stats.fallbacks.corrupt, 1, damage);
      const rb = await drain(b.source);
      assert.ok(rb.ok && rb.bytes.equals(direct), `${damage}: the direct pack`);
      assert.equal(runs.n, 1);
      await waitFor(() => cache.stats.stored === 1);
      assert.ok(readFileSync(file).subarray(ENTRY_HEADER_BYTES).equals(direct), `${damage}: stored again, intact`);
    } finally { cache.close(); }
  }
});

/** A store whose reads can go bad after the entry was stored (bit rot under a stable identity). */
class RottingStore extends DirectoryStore {
  rot = false;
  override async open(key: string, maxAgeMs: number) {
    const p = await super.open(key, maxAgeMs);
    if (!p) return p;
    // byte 100 flipped as it is read, by either way of reading (the relay reads frame payloads in place with readv)
    const flip = (bufs: Buffer[], pos: number, n: number) => {
      if (!this.rot || pos !== 0 || n <= 100) return;
      let at = 100;
      for (const b of bufs) { if (at < b.length) { b[at]! ^= 1; return; } at -= b.length; }
    };
    return {
      ...p,
      read: async (buf: Buffer, pos: number) => { const n = await p.read(buf, pos); flip([buf], pos, n); return n; },
      readv: async (bufs: Buffer[], pos: number) => { const n = await p.readv!(bufs, pos); flip(bufs, pos, n); return n; },
    };
  }
}

test('an entry that goes bad after it was served fails at the end, never looks complete', async () => {
  const dir = join(t.dir, 'c-late');
  mkdirSync(dir);
  const key = keyForRequest(request(), fakeRepo(repo));
  const store = new RottingStore(dir);
  const cache = new PackCache({ store, minOccurrences: 0 });
  try {
    const a = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    await drain(a.source);
    await waitFor(() => cache.stats.stored === 1);
    assert.equal((await drain((await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!.source)).ok, true);
    store.rot = true;
    const b = (await cache.acquire(key, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(b.outcome, 'hit', 'served without reading it first');
    const rb = await drain(b.source);
    assert.equal(rb.ok, false, 'the streaming check caught it');
    assert.equal(rb.retryable, true);
    assert.equal(cache.stats.fallbacks.corrupt, 1);
  } finally { cache.close(); }
});

/* ---------- through upload-pack ---------- */

function fetchRequest(wantHex: string, extra: string[] = []): Buffer {
  return pkt(['command=fetch\n', '0001', 'ofs-delta\n', ...extra, `want ${wantHex}\n`, 'done\n', '0000']);
}

async function fetchV2(cache: PackCache | undefined, extra: string[] = []): Promise<{ sink: MemorySink; error?: unknown }> {
  const sink = new MemorySink();
  try {
    await uploadPack({ directory: repo, input: fetchRequest(head, extra), output: sink, env: { ...gitEnv, GIT_PROTOCOL: 'version=2' }, statelessRpc: true, packCache: cache });
    return { sink };
  } catch (e) {
    return { sink, error: e };
  }
}

test('upload-pack: a joiner whose producer died before anything was sent retries directly and gets a good pack', async () => {
  const dir = join(t.dir, 'c-retry');
  mkdirSync(dir);
  const cache = new PackCache({ dir, minOccurrences: 0 });
  try {
    // the key upload-pack computes for this fetch; a dying producer takes it first
    const r = request({ progress: true });
    const key = keyForRequest(r, { commonDir: repo, format: 'sha1', config: { each: () => [{ key: 'pack.threads', value: '1' }] } });
    const dying = async (): Promise<Producer> => {
      const child = spawn('/bin/sh', ['-c', 'sleep 0.5; exit 1'], { stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin!.end();
      return { child };
    };
    const first = (await cache.acquire(key, { produce: dying, objectFormat: 'sha1', progress: false }))!;
    const firstRun = drain(first.source);
    const { sink, error } = await fetchV2(cache);
    assert.equal(error, undefined);
    const d = demux(sink.data);
    assert.ok(d.pack.equals(direct), 'the retried pack is the direct one');
    assert.equal(d.errors, '');
    assert.equal(cache.stats.fallbacks.retry, 1);
    assert.equal((await firstRun).ok, false);
  } finally { cache.close(); }
});

test('upload-pack: hit through uploadPack is byte-identical to a fetch without the cache', async () => {
  const dir = join(t.dir, 'c-up');
  mkdirSync(dir);
  const cache = new PackCache({ dir, minOccurrences: 0 });
  try {
    const plain = demux((await fetchV2(undefined, ['no-progress\n'])).sink.data);
    const miss = await fetchV2(cache, ['no-progress\n']);
    await waitFor(() => cache.stats.stored === 1);
    const hit = await fetchV2(cache, ['no-progress\n']);
    const withProgress = await fetchV2(cache);
    assert.ok(demux(miss.sink.data).pack.equals(plain.pack));
    const dh = demux(hit.sink.data);
    assert.ok(dh.pack.equals(plain.pack));
    assert.equal(dh.progress, '', 'no-progress honoured on a hit');
    assert.deepEqual(dh.sections, plain.sections);
    assert.match(demux(withProgress.sink.data).progress, /Reusing cached pack: 1\.\d\d MiB, done\./);
    assert.equal(cache.stats.hits, 2);
  } finally { cache.close(); }
});

test('upload-pack: an entry that goes bad while it streams ends in band 3 without its last byte, as a corrupt repository would', async () => {
  const dir = join(t.dir, 'c-rot-up');
  mkdirSync(dir);
  const store = new RottingStore(dir);
  const cache = new PackCache({ store, minOccurrences: 0 });
  try {
    const plain = demux((await fetchV2(undefined, ['no-progress\n'])).sink.data);
    await fetchV2(cache, ['no-progress\n']);
    await waitFor(() => cache.stats.stored === 1);
    store.rot = true;
    const { sink, error } = await fetchV2(cache, ['no-progress\n']);
    assert.ok(error, 'the fetch fails');
    const d = demux(sink.data);
    assert.match(d.errors, /aborting due to possible repository corruption on the remote side/);
    assert.ok(d.pack.length < plain.pack.length, 'the pack never looks complete');
  } finally { cache.close(); }
});

test('PackCache: max-age expires an entry, the size bound evicts the least recently used, a pack larger than the bound is not stored', async () => {
  const dir = join(t.dir, 'c-bounds');
  const keyA = keyForRequest(request(), fakeRepo(repo));
  const rB = request({ thin: true, haves: [Buffer.from(first, 'hex')] });
  const keyB = keyForRequest(rB, fakeRepo(repo));
  const size = direct.length;
  const cache = newCache(dir, { maxBytes: Math.floor(size * 1.5), maxAgeMs: 60_000 });
  try {
    await drain((await cache.acquire(keyA, { produce: produce(), objectFormat: 'sha1', progress: false }))!.source);
    await waitFor(() => cache.stats.stored === 1);
    await drain((await cache.acquire(keyB, { produce: produce(rB), objectFormat: 'sha1', progress: false }))!.source);
    await waitFor(() => cache.stats.stored === 2);
    assert.equal(cache.stats.evictions, 1, 'A made room for B');
    assert.deepEqual(readdirSync(dir).sort(), [`${keyB}.pack`]);
    const again = (await cache.acquire(keyA, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(again.outcome, 'miss', 'evicted: produced again');
    await drain(again.source);
    await waitFor(() => cache.stats.stored === 3);
    assert.deepEqual(readdirSync(dir), [`${keyA}.pack`]);
  } finally { cache.close(); }
  // max-age: the same directory read by a cache with a short max-age
  const short = newCache(dir, { maxAgeMs: 150, maxBytes: size * 4 });
  try {
    await new Promise((r) => setTimeout(r, 300));
    const l = (await short.acquire(keyA, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    assert.equal(l.outcome, 'miss', 'expired: produced again');
    await drain(l.source);
    await waitFor(() => short.stats.stored === 1);
    await short.prune(Date.now() + 1000);
    assert.ok(short.stats.expirations >= 1);
  } finally { short.close(); }
  // a bound smaller than the pack: readers are served, nothing is stored
  const tiny = newCache(join(t.dir, 'c-tiny'), { maxBytes: 1000 });
  try {
    const l = (await tiny.acquire(keyA, { produce: produce(), objectFormat: 'sha1', progress: false }))!;
    const r = await drain(l.source);
    assert.ok(r.ok && r.bytes.equals(direct));
    await waitFor(() => tiny.running === 0);
    assert.equal(tiny.stats.stored, 0);
    assert.equal(tiny.stats.fallbacks['too-large'], 1);
    assert.deepEqual(readdirSync(join(t.dir, 'c-tiny')), []);
  } finally { tiny.close(); }
});
