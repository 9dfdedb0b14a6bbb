/**
 * The object-reading engine against git: every object of every fixture,
 * sorted and --unordered, contents and header-only formats; deep delta
 * chains, REF_DELTA packs, a multi-pack-index, alternates; cache bounds,
 * lazy in-place indexes and rescan counting; large blobs streamed in
 * bounded memory (RSS checked in a child process).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitBuf, gitEnv, run, tmp, BIN, ROOT } from './helpers/git.js';
import { makeRichRepo, makeAlternateRepo, commit } from './helpers/fixtures.js';
import { Repository } from '../src/repo/repository.js';
import { ObjectDatabase } from '../src/repo/odb.js';
import { PackFile, packWindows } from '../src/repo/pack.js';
import { PacketWriter } from '../src/pktline/writer.js';
import { MemorySink } from '../src/pktline/sink.js';
import { BatchEngine } from '../src/catfile/batch.js';
import { ObjectService } from '../src/catfile/service.js';

let t: ReturnType<typeof tmp>;
const fixtures: Record<string, string> = {};

/** A file edited 200 times, repacked with --depth=50: delta chains 50 deep. */
function makeDeepRepo(dir: string): string {
  const repo = join(dir, 'deep');
  git(['init', '-q', '-b', 'main', repo]);
  let fi = '';
  let body = '';
  for (let l = 0; l < 200; l++) body += `line ${l} ${'x'.repeat(l % 37)}\n`;
  const lines = body.split('\n');
  for (let i = 1; i <= 200; i++) {
    lines[(i * 13) % 200] = `edit ${i} ${'y'.repeat(i % 23)}`;
    const content = lines.join('\n');
    const msg = `edit ${i}\n`;
    fi += `commit refs/heads/main\ncommitter C <c@example.com> ${1700000000 + i} +0000\ndata ${msg.length}\n${msg}${i > 1 ? '' : ''}M 100644 inline file.txt\ndata ${Buffer.byteLength(content)}\n${content}\n`;
  }
  git(['fast-import', '--quiet'], { cwd: repo, input: fi });
  git(['repack', '-adfq', '--depth=50', '--window=250'], { cwd: repo });
  return repo;
}

/** Three packs written without --delta-base-offset (REF_DELTA entries), under a multi-pack-index. */
function makeRefDeltaMidx(dir: string, source: string): string {
  const repo = join(dir, 'refmidx');
  git(['clone', '-q', '--no-local', source, repo]);
  for (let i = 0; i < 2; i++) {
    for (let j = 0; j < 3; j++) commit(repo, `ref ${i} ${j}`, { 'a.txt': `${'changed line\n'.repeat(50)}${i} ${j}\n`, [`r${i}.txt`]: `${i}\n`.repeat(300 + j) });
    const base = git(['rev-parse', 'HEAD~3'], { cwd: repo }).trim();
    git(['pack-objects', '-q', '--revs', join(repo, '.git/objects/pack/pack')], { cwd: repo, input: `HEAD\n^${base}\n` });
    git(['prune-packed'], { cwd: repo });
  }
  git(['multi-pack-index', 'write'], { cwd: repo });
  return repo;
}

before(() => {
  t = tmp('gitwire-odb-');
  fixtures.rich = makeRichRepo(t.dir);
  fixtures.alt = makeAlternateRepo(t.dir, fixtures.rich);
  const d256 = join(t.dir, 's256');
  mkdirSync(d256);
  fixtures.sha256 = makeRichRepo(d256, { objectFormat: 'sha256' });
  fixtures.deep = makeDeepRepo(t.dir);
  fixtures.refmidx = makeRefDeltaMidx(t.dir, fixtures.rich);
  fixtures.rev = makeRevRepo(t.dir, fixtures.deep);
});

/** A copy of `source` repacked with git's .rev reverse-index files (the default since git 2.41). */
function makeRevRepo(dir: string, source: string): string {
  const repo = join(dir, 'rev');
  git(['clone', '-q', '--no-local', source, repo]);
  git(['-c', 'pack.writeReverseIndex=true', 'repack', '-adq', '--depth=50', '--window=250'], { cwd: repo });
  return repo;
}
after(() => t.cleanup());

function cmp(dir: string, args: string[], label: string): void {
  const g = run('git', ['cat-file', ...args], { cwd: dir });
  const m = run(BIN, ['cat-file', ...args], { cwd: dir });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${label}: stderr`);
  assert.equal(m.status, g.status, `${label}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${label}: stdout differs (${m.stdout.length} vs ${g.stdout.length} bytes)`);
}

const FULL = '--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk) %(deltabase)';

test('the deep fixture really has delta chains 50 long', () => {
  const pack = readdirSync(join(fixtures.deep!, '.git/objects/pack')).find((f) => f.endsWith('.idx'))!;
  const out = git(['verify-pack', '-v', join(fixtures.deep!, '.git/objects/pack', pack)]);
  assert.match(out, /chain length = 50: \d+ object/);
});

test('a pack\'s .rev file gives pack order when it is right, and is ignored when it is not', () => {
  const packDir = join(fixtures.rev!, '.git/objects/pack');
  const rev = readdirSync(packDir).find((f) => f.endsWith('.rev'));
  assert.ok(rev, 'git wrote a .rev file');
  const unordered = ['--batch-all-objects', '--unordered', '--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectsize:disk)'];
  cmp(fixtures.rev!, unordered, '.rev as written');
  const right = run(BIN, ['cat-file', ...unordered], { cwd: fixtures.rev! }).stdout;
  const rightCheck = run(BIN, ['cat-file', '--batch-all-objects', '--batch-check'], { cwd: fixtures.rev! }).stdout;
  // two entries swapped: the order it gives is not the pack's (offsets not increasing), so it is not
  // used and the answers stay right (git trusts the file: it reports bad offsets and lists that order)
  const path = join(packDir, rev);
  const good = readFileSync(path);
  const bad = Buffer.from(good);
  bad.copy(bad, 12, 16, 20);
  good.copy(bad, 16, 12, 16);
  chmodSync(path, 0o644);
  try {
    writeFileSync(path, bad);
    const m = run(BIN, ['cat-file', ...unordered], { cwd: fixtures.rev! });
    assert.equal(m.status, 0);
    assert.ok(m.stdout.equals(right), 'a bad .rev is ignored');
    assert.ok(run(BIN, ['cat-file', '--batch-all-objects', '--batch-check'], { cwd: fixtures.rev! }).stdout.equals(rightCheck));
    assert.ok(!run('git', ['cat-file', ...unordered], { cwd: fixtures.rev! }).stdout.equals(right), 'git does use the file');
  } finally {
    writeFileSync(path, good);
  }
});

test('pack order from the one-pass bucket sort and from the radix passes is the same, and git\'s', () => {
  const dir = fixtures.deep!;
  const want = git(['cat-file', '--batch-all-objects', '--unordered', '--batch-check=%(objectname)'], { cwd: dir });
  const order = () => {
    const r = Repository.open(dir, { env: gitEnv });
    try { return [...r.odb.allObjectsUnordered()].map((o) => `${o.toString('hex')}\n`).join(''); } finally { r.close(); }
  };
  assert.equal(order(), want, 'bucket sort');
  const saved = PackFile.sortMoves;
  PackFile.sortMoves = -1;
  try { assert.equal(order(), want, 'radix passes'); } finally { PackFile.sortMoves = saved; }
});

for (const name of ['rich', 'alt', 'sha256', 'deep', 'refmidx', 'rev']) {
  test(`every object of ${name}: --batch, --batch-check and every atom, sorted and --unordered, like git`, () => {
    const dir = fixtures[name]!;
    for (const order of [[], ['--unordered']]) {
      cmp(dir, ['--batch-all-objects', ...order, '--batch'], `${name} --batch ${order}`);
      cmp(dir, ['--batch-all-objects', ...order, '--batch-check'], `${name} --batch-check ${order}`);
      cmp(dir, ['--batch-all-objects', ...order, FULL], `${name} atoms ${order}`);
      cmp(dir, ['--batch-all-objects', ...order, '--batch=%(objectname) %(objectsize:disk) %(deltabase)'], `${name} --batch atoms ${order}`);
    }
    // one at a time, by name (random access through the delta-base cache)
    const all = git(['cat-file', '--batch-all-objects', '--unordered', '--batch-check=%(objectname)'], { cwd: dir });
    const reversed = all.split('\n').filter(Boolean).reverse().join('\n') + '\n';
    const g = run('git', ['cat-file', '--batch'], { cwd: dir, input: reversed });
    const m = run(BIN, ['cat-file', '--batch'], { cwd: dir, input: reversed });
    assert.ok(m.stdout.equals(g.stdout), `${name}: by name, reversed pack order`);
    const gc = run('git', ['cat-file', FULL], { cwd: dir, input: reversed });
    const mc = run(BIN, ['cat-file', FULL], { cwd: dir, input: reversed });
    assert.equal(mc.stdout.toString(), gc.stdout.toString(), `${name}: header-only by name`);
  });
}

test('a multi-pack-index answers lookups; REF_DELTA entries resolve in every pack', () => {
  const repo = Repository.open(fixtures.refmidx!, { env: gitEnv });
  assert.ok(repo.odb.sources[0]!.packs.length >= 3);
  const oids = git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { cwd: fixtures.refmidx! }).split('\n').filter(Boolean);
  for (const h of oids) assert.ok(repo.odb.read(Buffer.from(h, 'hex')), h);
  assert.ok(repo.odb.midxHits > 0);
  let refDeltas = 0;
  for (const p of repo.odb.sources[0]!.packs) for (let i = 0; i < p.index.count; i++) if (p.header(p.index.offset(i)).type === 7) refDeltas++;
  assert.ok(refDeltas > 0, 'some entries are REF_DELTA');
  repo.close();
});

test('the delta-base cache and the pack windows stay within core.deltaBaseCacheLimit and core.packedGitLimit', () => {
  const dir = fixtures.deep!;
  const env = { GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'core.deltaBaseCacheLimit', GIT_CONFIG_VALUE_0: '16k', GIT_CONFIG_KEY_1: 'core.packedGitLimit', GIT_CONFIG_VALUE_1: '64k' };
  const savedLimit = packWindows.cache.limit, savedMax = packWindows.cache.maxEntry, savedConf = packWindows.configured;
  try {
    const repo = Repository.open(dir, { env: { ...gitEnv, ...env } });
    assert.equal(repo.odb.cache.limit, 16 * 1024);
    assert.equal(packWindows.cache.limit, 64 * 1024);
    const oids = git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { cwd: dir }).split('\n').filter(Boolean);
    const parts: Buffer[] = [];
    for (const h of oids) {
      const o = repo.odb.read(Buffer.from(h, 'hex'))!;
      parts.push(Buffer.from(`${h} ${['', 'commit', 'tree', 'blob', 'tag'][o.type]} ${o.data.length}\n`), Buffer.from(o.data), Buffer.from('\n'));
      assert.ok(repo.odb.cache.bytes <= 16 * 1024, `delta-base cache ${repo.odb.cache.bytes}`);
      assert.ok(packWindows.cache.bytes <= 64 * 1024, `windows ${packWindows.cache.bytes}`);
    }
    assert.ok(Buffer.concat(parts).equals(gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: dir })));
    // the CLI honours the same settings and still answers like git
    const m = run(BIN, ['cat-file', '--batch-all-objects', '--batch'], { cwd: dir, env });
    assert.ok(m.stdout.equals(gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: dir })));
    repo.close();
  } finally {
    packWindows.cache.limit = savedLimit;
    packWindows.cache.maxEntry = savedMax;
    packWindows.configured = savedConf;
  }
});

test('indexes are opened on the first lookup that needs them and read in pages, not whole', () => {
  const dir = join(t.dir, 'many');
  git(['init', '-q', '--bare', dir]);
  let fi = '';
  for (let i = 0; i < 20000; i++) { const d = `blob number ${i}\n`; fi += `blob\ndata ${d.length}\n${d}`; }
  git(['fast-import', '--quiet'], { cwd: dir, input: fi }); // one pack of 20,000 blobs
  const repo = Repository.open(dir, { env: gitEnv });
  const pack = repo.odb.sources[0]!.packs[0]!;
  assert.equal(pack.indexOpened, false, 'opening the repository reads no index');
  const some = git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { cwd: dir }).split('\n')[12345]!;
  assert.ok(repo.odb.info(Buffer.from(some, 'hex')));
  assert.equal(pack.indexOpened, true);
  const size = fsSize(join(dir, 'objects', 'pack'), '.idx');
  assert.ok(size > 500_000, `index is ${size} bytes`);
  assert.ok(pack.index.buf.bytesRead <= 8 * 4096, `one lookup read ${pack.index.buf.bytesRead} bytes of a ${size}-byte index`);
  repo.close();
});

function fsSize(dir: string, ext: string): number {
  const f = readdirSync(dir).find((n) => n.endsWith(ext))!;
  return (require_fs().statSync(join(dir, f)) as { size: number }).size;
}
import * as fsAll from 'node:fs';
const require_fs = () => fsAll;

test('unknown ids cost at most two pack-directory scans; quick lookups none; new packs are still found', () => {
  const dir = fixtures.rich!;
  let scans = 0;
  const readdir = (d: string) => { scans++; return fsAll.readdirSync(d); };
  const odb = new ObjectDatabase(join(dir, '.git', 'objects'), 20, [], { readdir });
  const afterOpen = scans;
  for (let i = 0; i < 200; i++) assert.equal(odb.info(createHash('sha1').update(`nope ${i}`).digest()), undefined);
  assert.ok(scans - afterOpen <= 2, `${scans - afterOpen} scans for 200 unknown ids`);
  const before2 = scans;
  for (let i = 0; i < 200; i++) assert.equal(odb.has(createHash('sha1').update(`quick ${i}`).digest(), { quick: true }), false);
  assert.equal(scans, before2, 'quick lookups never scan');
  // a pack that appears later is found by a normal lookup (the directory changed)
  const work = join(t.dir, 'rich-new');
  git(['clone', '-q', dir, work]);
  const newest = commit(work, 'fresh', { 'fresh.txt': 'fresh\n' });
  const packed = gitBuf(['pack-objects', '--revs', '--stdout'], { cwd: work, input: `${newest}\n^origin/main\n` });
  run('git', ['index-pack', '--stdin'], { cwd: dir, input: packed });
  assert.equal(odb.has(Buffer.from(newest, 'hex'), { quick: true }), false, 'quick: not rescanned');
  assert.ok(odb.has(Buffer.from(newest, 'hex')), 'normal: rescanned and found');
  odb.close();
});

/** A child process that writes a blob through the batch engine or ObjectService.stream and reports its peak RSS. */
function childScript(): string {
  const f = join(t.dir, 'child.mjs');
  writeFileSync(f, `
import { Repository } from ${JSON.stringify(join(ROOT, 'build', 'src', 'repo', 'repository.js'))};
import { BatchEngine } from ${JSON.stringify(join(ROOT, 'build', 'src', 'catfile', 'batch.js'))};
import { ObjectService } from ${JSON.stringify(join(ROOT, 'build', 'src', 'catfile', 'service.js'))};
import { PacketWriter } from ${JSON.stringify(join(ROOT, 'build', 'src', 'pktline', 'writer.js'))};
import { FdSink } from ${JSON.stringify(join(ROOT, 'build', 'src', 'pktline', 'sink.js'))};
const [dir, mode, name] = process.argv.slice(2);
if (mode === 'batch') {
  const repo = Repository.open(dir);
  const w = new PacketWriter(new FdSink(1));
  const e = new BatchEngine(repo, w, { mode: 'contents', buffer: false, inputDelim: '\\n', outputDelim: '\\n', followSymlinks: false });
  e.feed(name + '\\n');
  e.end();
} else {
  const svc = ObjectService.open(dir);
  const w = new FdSink(1);
  for await (const c of svc.stream(name, 1 << 20)) w.write(c);
}
process.stderr.write(JSON.stringify({ maxRssKB: process.resourceUsage().maxRSS }));
`);
  return f;
}

async function runChild(script: string, dir: string, mode: string, name: string): Promise<{ md5: string; bytes: number; maxRssKB: number }> {
  const p = spawn(process.execPath, [script, dir, mode, name], { env: gitEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  const h = createHash('md5');
  let bytes = 0;
  let err = '';
  p.stdout.on('data', (d: Buffer) => { h.update(d); bytes += d.length; });
  p.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  const code = await new Promise((r) => p.on('exit', r));
  assert.equal(code, 0, err);
  return { md5: h.digest('hex'), bytes, ...JSON.parse(err) as { maxRssKB: number } };
}

async function gitMd5(dir: string, args: string[], input: string): Promise<string> {
  const p = spawn('git', args, { cwd: dir, env: gitEnv, stdio: ['pipe', 'pipe', 'inherit'] });
  const h = createHash('md5');
  p.stdout.on('data', (d: Buffer) => h.update(d));
  p.stdin.end(input);
  await new Promise((r) => p.on('exit', r));
  return h.digest('hex');
}

test('a 256 MiB blob streams through --batch and ObjectService.stream in bounded memory, loose and packed', async () => {
  const dir = join(t.dir, 'big');
  git(['init', '-q', '-b', 'main', dir]);
  // compressible but not trivial content, written in pieces
  const size = 256 * 1024 * 1024;
  const fd = fsAll.openSync(join(dir, 'big.bin'), 'w');
  const block = Buffer.alloc(1 << 20);
  for (let i = 0; i < block.length; i++) block[i] = (i * 7 + (i >> 9)) & 0xff;
  for (let off = 0; off < size; off += block.length) { block.writeUInt32BE(off, 0); fsAll.writeSync(fd, block); }
  fsAll.closeSync(fd);
  git(['add', 'big.bin'], { cwd: dir, env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.bigFileThreshold', GIT_CONFIG_VALUE_0: '1g' } });
  git(['commit', '-q', '-m', 'big'], { cwd: dir });
  fsAll.rmSync(join(dir, 'big.bin'));
  const oid = git(['rev-parse', 'HEAD:big.bin'], { cwd: dir }).trim();
  const script = childScript();
  // The child alone (modules loaded, no object read) peaks at 54 MiB on Node 20.20, 58 MiB on 24.22.
  // Streaming measured 58-62 MiB and 69-78 MiB. Before --batch reused its two chunk buffers and
  // stream() handed its chunks' memory back (inflate.ts cursorChunks), Node 24 let 80-110 MiB of
  // dead 1 MiB chunks pile up (137-168 MiB peak; Node 20: 90-97 MiB).
  const bound = 100 * 1024;
  for (const layout of ['loose', 'packed']) {
    if (layout === 'packed') {
      git(['-c', 'core.bigFileThreshold=1m', 'repack', '-adq'], { cwd: dir });
      git(['prune-packed'], { cwd: dir });
    }
    assert.equal(fsAll.existsSync(join(dir, '.git', 'objects', oid.slice(0, 2), oid.slice(2))), layout === 'loose', layout);
    const expected = await gitMd5(dir, ['cat-file', '--batch'], `${oid}\n`);
    const b = await runChild(script, dir, 'batch', oid);
    assert.equal(b.md5, expected, `${layout}: --batch output identical to git`);
    assert.ok(b.maxRssKB < bound, `${layout}: --batch peak RSS ${b.maxRssKB} KiB for a ${size >> 20} MiB blob`);
    const rawMd5 = await gitMd5(dir, ['cat-file', 'blob', oid], '');
    const s = await runChild(script, dir, 'stream', oid);
    assert.equal(s.bytes, size);
    assert.equal(s.md5, rawMd5, `${layout}: ObjectService.stream content`);
    assert.ok(s.maxRssKB < bound, `${layout}: stream peak RSS ${s.maxRssKB} KiB`);
  }
});

test('corrupt pack data is a typed error, never a crash', () => {
  const dir = join(t.dir, 'corrupt');
  git(['clone', '-q', '--no-local', fixtures.deep!, dir]);
  git(['repack', '-adq'], { cwd: dir });
  const packDir = join(dir, '.git', 'objects', 'pack');
  const packFile = join(packDir, readdirSync(packDir).find((f) => f.endsWith('.pack'))!);
  fsAll.chmodSync(packFile, 0o644);
  const buf = fsAll.readFileSync(packFile);
  for (let i = 200; i < buf.length - 40; i += 97) buf[i] = buf[i]! ^ 0x55;
  fsAll.writeFileSync(packFile, buf);
  const repo = Repository.open(dir, { env: gitEnv });
  const sink = new MemorySink();
  const engine = new BatchEngine(repo, new PacketWriter(sink), { mode: 'contents', buffer: true, inputDelim: '\n', outputDelim: '\n', followSymlinks: false });
  assert.throws(() => engine.all(false), (e: Error & { code?: string }) => e.code === 'GW_OBJECT_CORRUPT');
  repo.close();
});

test('ObjectService.stream yields the content of small and deltified objects too', async () => {
  const svc = ObjectService.open(fixtures.deep!, gitEnv);
  const content = gitBuf(['cat-file', 'blob', 'HEAD~30:file.txt'], { cwd: fixtures.deep! });
  const parts: Buffer[] = [];
  for await (const c of svc.stream('HEAD~30:file.txt', 100)) { assert.ok(c.length <= 100); parts.push(Buffer.from(c)); }
  assert.ok(Buffer.concat(parts).equals(content));
  svc.close();
});
