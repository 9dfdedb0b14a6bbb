/**
 * The native pack writer (src/pack/produce/write/): plans made from real
 * git's view of fixture repositories, packs judged by `git index-pack
 * --strict` and `git fsck --strict`, object sets compared with the plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeFileSync, writeSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitBuf, run, tmp } from './helpers/git.js';
import { commit, makeRichRepo } from './helpers/fixtures.js';
import { idsPart, indexPack, openRepo, packFiles, packNamed, planOf, ranksPart, revListObjects, writeAll } from './helpers/pack-write.js';

const sorted = (a: string[]) => [...a].sort();

function fsckStrict(repo: string): void {
  const r = run('git', ['fsck', '--strict', '--no-dangling'], { cwd: repo });
  assert.equal(r.status, 0, r.stderr.toString());
}

/** A client that has what `rev` reaches (and nothing else). */
function clientAt(dir: string, src: string, rev: string, format?: 'sha256'): string {
  const c = join(dir, `client-${Math.random().toString(36).slice(2)}.git`);
  git(['init', '-q', '--bare', ...(format ? ['--object-format=sha256'] : []), c]);
  git(['fetch', '-q', src, `${rev}:refs/tags/base`], { cwd: c });
  return c;
}

/** Size of git's own pack for the same objects (pack-objects reading the ids on stdin). */
function gitPackSize(repoDir: string, ids: string[], extra: string[] = []): number {
  return gitBuf(['pack-objects', '--stdout', '-q', ...extra], { cwd: repoDir, input: ids.join('\n') + '\n' }).length;
}

test('pack writer: a whole pack goes out byte for byte (one part of ranks); index-pack --strict and fsck accept it', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const repo = openRepo(dir);
    const [name] = packFiles(join(dir, '.git/objects'));
    const pack = packNamed(repo, join(dir, '.git/objects/pack'), name!);
    const w = await writeAll(repo, planOf([ranksPart(pack)]));
    assert.equal(w.ok, true, w.stderr);
    assert.ok(w.pack.equals(readFileSync(pack.packPath)), 'the output is the pack itself');
    const ix = indexPack(w.pack, t.dir);
    assert.equal(ix.ok, true, ix.stderr);
    assert.deepEqual(ix.objects, sorted(revListObjects(dir, ['--all'])));
    fsckStrict(ix.repo);
    const n = ix.objects.length;
    assert.match(w.stderr, new RegExp(`^Total ${n} \\(delta 0\\), reused 0 \\(delta 0\\), pack-reused ${n} \\(from 1\\)\\n$`));
    assert.ok(ix.types!.ofs > 0, 'it keeps OFS_DELTA entries');
  } finally { t.cleanup(); }
});

test('pack writer: a whole pack is hashed on its first send only; later sends of the same open pack read it without hashing, until its file changes in place', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const repo = openRepo(dir);
    const [name] = packFiles(join(dir, '.git/objects'));
    const pack = packNamed(repo, join(dir, '.git/objects/pack'), name!);
    // (writable, so that it can be damaged in place below; the mode's change is before the first send)
    chmodSync(pack.packPath, 0o644);
    const file = readFileSync(pack.packPath);
    const first = await writeAll(repo, planOf([ranksPart(pack)]));
    assert.equal(first.ok, true, first.stderr);
    assert.equal(first.src.stats.verbatimHashed, file.length - 20, 'the first send hashes the whole body');
    const second = await writeAll(repo, planOf([ranksPart(pack)]));
    assert.equal(second.ok, true, second.stderr);
    assert.equal(second.src.stats.verbatimHashed, 0, 'a verified pack is not hashed again');
    assert.ok(second.pack.equals(file), 'the output is the pack itself, trailer included');
    assert.equal(indexPack(second.pack, t.dir).ok, true);
    // another open copy of the repository hashes its own once
    const other = openRepo(dir);
    const third = await writeAll(other, planOf([ranksPart(packNamed(other, join(dir, '.git/objects/pack'), name!))]));
    assert.equal(third.src.stats.verbatimHashed, file.length - 20);
    // a byte changed in place, its mtime put back (same inode, size and mtime; only its ctime moves):
    // hashed again, and the damage is caught
    const st = statSync(pack.packPath, { bigint: true });
    const at = Math.floor(file.length * 0.6);
    const fd = openSync(pack.packPath, 'r+');
    writeSync(fd, Buffer.from([file[at]! ^ 0x40]), 0, 1, at);
    closeSync(fd);
    execFileSync('touch', ['-m', '-d', `@${st.mtimeNs / 1000000000n}.${String(st.mtimeNs % 1000000000n).padStart(9, '0')}`, pack.packPath]);
    assert.equal(statSync(pack.packPath, { bigint: true }).mtimeNs, st.mtimeNs);
    const fourth = await writeAll(repo, planOf([ranksPart(pack)]));
    assert.equal(fourth.ok, false);
    assert.match(fourth.stderr, /^fatal: /m);
    assert.ok((fourth.src.stats.verbatimHashed ?? 0) > 0);
    assert.equal(indexPack(fourth.pack, t.dir).ok, false, 'what went out is not a pack');
  } finally { t.cleanup(); }
});

test('pack writer: without ofs-delta every delta goes as REF_DELTA', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const repo = openRepo(dir);
    const pack = packNamed(repo, join(dir, '.git/objects/pack'), packFiles(join(dir, '.git/objects'))[0]!);
    const w = await writeAll(repo, planOf([ranksPart(pack)]), { ofsDelta: false });
    assert.equal(w.ok, true, w.stderr);
    const ix = indexPack(w.pack, t.dir);
    assert.equal(ix.ok, true, ix.stderr);
    assert.equal(ix.types!.ofs, 0);
    assert.ok(ix.types!.ref > 0);
    assert.deepEqual(ix.objects, sorted(revListObjects(dir, ['--all'])));
    fsckStrict(ix.repo);
    // git's own REF_DELTA pack of the same objects is as large, give or take the headers
    const ratio = w.pack.length / gitPackSize(dir, revListObjects(dir, ['--all']));
    assert.ok(ratio < 1.1, `size ratio ${ratio}`);
  } finally { t.cleanup(); }
});

test('pack writer: ids from several packs and loose objects; deltas whose base is not sent go whole; object set as planned', async (tc) => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir); // an OFS pack, a REF_DELTA pack, loose objects, a 1.2 MiB blob
    const repo = openRepo(dir);
    for (const ofsDelta of [true, false]) {
      // an incremental fetch: everything after v1.0 (bases in v1.0 are not sent)
      const ids = revListObjects(dir, ['--all', '^v1.0']);
      const w = await writeAll(repo, planOf([idsPart(ids)]), { ofsDelta });
      assert.equal(w.ok, true, w.stderr);
      // index-pack --strict checks links: the client has v1.0's objects
      const ix = indexPack(w.pack, t.dir, { into: clientAt(t.dir, dir, 'refs/tags/v1.0') });
      assert.equal(ix.ok, true, ix.stderr);
      assert.deepEqual(ix.objects, sorted(ids));
      fsckStrict(ix.repo);
      if (!ofsDelta) assert.equal(ix.types!.ofs, 0);
      const ratio = w.pack.length / gitPackSize(dir, ids);
      tc.diagnostic(`incremental (ofsDelta=${ofsDelta}): ${w.pack.length} bytes, ${ratio.toFixed(3)}x git's pack-objects`);
    }
  } finally { t.cleanup(); }
});

function text(n: number, seed: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += `line ${i} of file ${seed} ${(i * 7919 + seed) % 1000}\n`;
  return s;
}

test('pack writer: thin pack: deltas against objects the client has go as REF_DELTA; index-pack --fix-thin completes it; not thin: whole', async (tc) => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'thin');
    git(['init', '-q', '-b', 'main', dir]);
    commit(dir, 'one', { 'a.txt': text(400, 1), 'b.txt': text(300, 2) });
    git(['tag', 'one'], { cwd: dir });
    // the new versions are smaller: git's delta search makes them deltas of the old ones
    commit(dir, 'two', { 'a.txt': text(390, 1) + 'x\n', 'b.txt': text(290, 2) + 'y\n' });
    git(['repack', '-adfq'], { cwd: dir });
    const repo = openRepo(dir);
    const have = new Set(revListObjects(dir, ['one']));
    const ids = revListObjects(dir, ['main', '^one']);
    const w = await writeAll(repo, planOf([idsPart(ids)], (oid) => have.has(oid.toString('hex'))));
    assert.equal(w.ok, true, w.stderr);
    const plain = indexPack(w.pack, t.dir);
    assert.equal(plain.ok, false, 'without the bases it does not index');
    const client = clientAt(t.dir, dir, 'refs/tags/one');
    const ix = indexPack(w.pack, t.dir, { into: client, fixThin: true });
    assert.equal(ix.ok, true, ix.stderr);
    for (const id of ids) assert.ok(ix.objects.includes(id), id);
    assert.ok(ix.types!.ref >= 2, 'REF_DELTA entries against client objects');
    fsckStrict(client);
    const ratio = w.pack.length / gitPackSize(dir, ['main', '^one'], ['--revs', '--thin']);
    tc.diagnostic(`thin incremental: ${ratio.toFixed(3)}x git's pack-objects --thin`);
    // the same request, not thin: those deltas go whole
    const whole = await writeAll(repo, planOf([idsPart(ids)]));
    assert.equal(whole.ok, true, whole.stderr);
    const ix2 = indexPack(whole.pack, t.dir, { into: clientAt(t.dir, dir, 'refs/tags/one') });
    assert.equal(ix2.ok, true, ix2.stderr);
    assert.deepEqual(ix2.objects, sorted(ids));
    assert.equal(ix2.types!.ref + ix2.types!.ofs, 0);
  } finally { t.cleanup(); }
});

test('pack writer: two packs holding the same objects, parts from both: deltas only point back, no cycle', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const objects = join(dir, '.git/objects');
    const [first] = packFiles(objects);
    // a second pack of the same objects made another way (its deltas differ)
    const all = revListObjects(dir, ['--all']);
    git(['pack-objects', '-q', '--no-reuse-delta', '--window=3', '--depth=2', join(objects, 'pack/pack')], { cwd: dir, input: [...all].reverse().join('\n') + '\n' });
    const repo = openRepo(dir);
    const names = packFiles(objects);
    assert.equal(names.length, 2);
    const p1 = packNamed(repo, join(objects, 'pack'), first!);
    const p2 = packNamed(repo, join(objects, 'pack'), names.find((n) => n !== first)!);
    // odd ranks of pack 1's order from pack 1, the rest from pack 2 (each object once)
    const part1 = ranksPart(p1, (r) => r % 2 === 1);
    const inPart1 = new Set<string>();
    for (const r of part1.ranks) inPart1.add(p1.index.oid(p1.positionsInPackOrder()[r]!).toString('hex'));
    const part2 = ranksPart(p2, (r) => !inPart1.has(p2.index.oid(p2.positionsInPackOrder()[r]!).toString('hex')));
    for (const parts of [[part1, part2], [part2, part1]]) {
      for (const ofsDelta of [true, false]) {
        const w = await writeAll(repo, planOf(parts), { ofsDelta });
        assert.equal(w.ok, true, w.stderr);
        const ix = indexPack(w.pack, t.dir);
        assert.equal(ix.ok, true, ix.stderr);
        assert.deepEqual(ix.objects, sorted(all));
        fsckStrict(ix.repo);
      }
    }
  } finally { t.cleanup(); }
});

test('pack writer: a big blob (> 8 MiB) loose and packed streams through; SHA-256 repository', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'big');
    git(['init', '-q', '-b', 'main', '--object-format=sha256', dir]);
    const big = Buffer.alloc(9 * 1024 * 1024);
    let x = 12345;
    for (let i = 0; i < big.length; i += 4) { x = (x * 1103515245 + 12345) >>> 0; big.writeUInt32LE(x, i); }
    commit(dir, 'one', { 'big.bin': big, 'a.txt': 'a\n' });
    git(['repack', '-adq'], { cwd: dir });
    big.writeUInt32LE(7, 100);
    commit(dir, 'two', { 'big.bin': big, 'a.txt': 'b\n' }); // loose, big
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['--all']);
    const w = await writeAll(repo, planOf([idsPart(ids)]));
    assert.equal(w.ok, true, w.stderr);
    const ix = indexPack(w.pack, t.dir, { format: 'sha256' });
    assert.equal(ix.ok, true, ix.stderr);
    assert.deepEqual(ix.objects, sorted(ids));
    fsckStrict(ix.repo);
  } finally { t.cleanup(); }
});

test('pack writer: objects borrowed through alternates', async () => {
  const t = tmp();
  try {
    const src = makeRichRepo(t.dir);
    const dir = join(t.dir, 'borrower');
    git(['clone', '-q', '--shared', src, dir]);
    commit(dir, 'own', { 'own.txt': 'mine\n' });
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['HEAD']);
    const w = await writeAll(repo, planOf([idsPart(ids)]));
    assert.equal(w.ok, true, w.stderr);
    const ix = indexPack(w.pack, t.dir);
    assert.equal(ix.ok, true, ix.stderr);
    assert.deepEqual(ix.objects, sorted(ids));
  } finally { t.cleanup(); }
});

test('pack writer: an empty plan is git\'s empty pack', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'e');
    git(['init', '-q', dir]);
    const w = await writeAll(openRepo(dir), planOf([]));
    assert.equal(w.ok, true);
    assert.ok(w.pack.equals(gitBuf(['pack-objects', '--stdout', '-q'], { cwd: dir, input: '' })));
    assert.equal(w.stderr, 'Total 0 (delta 0), reused 0 (delta 0), pack-reused 0 (from 0)\n');
  } finally { t.cleanup(); }
});

test('pack writer: a damaged entry ends the pack with a clean failure, never a wrong pack', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const objects = join(dir, '.git/objects');
    const name = packFiles(objects)[0]!;
    const path = join(objects, 'pack', name);
    // flip a byte inside the zlib data of the largest entry
    const lines = git(['verify-pack', '-v', path], { cwd: dir }).split('\n').filter((l) => /^[0-9a-f]{40} /.test(l)).map((l) => l.split(/\s+/));
    const biggest = lines.sort((a, b) => Number(b[3]) - Number(a[3]))[0]!;
    const bytes = readFileSync(path);
    const at = Number(biggest[4]) + Math.floor(Number(biggest[3]) / 2);
    bytes[at] = bytes[at]! ^ 0x55;
    writeFileSync(path, bytes);
    const ids = revListObjects(dir, ['--all']);
    for (const plan of [() => planOf([ranksPart(packNamed(openRepo(dir), join(objects, 'pack'), name))]), () => planOf([idsPart(ids)])]) {
      const w = await writeAll(openRepo(dir), plan());
      assert.equal(w.ok, false);
      assert.match(w.stderr, /^fatal: /m);
      assert.doesNotMatch(w.stderr, /Total/);
      assert.equal(indexPack(w.pack, t.dir).ok, false, 'what went out is not a pack');
    }
    // a truncated pack: the same
    writeFileSync(path, readFileSync(path).subarray(0, Number(biggest[4]) + 10));
    for (const plan of [() => planOf([ranksPart(packNamed(openRepo(dir), join(objects, 'pack'), name))]), () => planOf([idsPart(ids)])]) {
      const w = await writeAll(openRepo(dir), plan());
      assert.equal(w.ok, false);
      assert.match(w.stderr, /^fatal: /m);
    }
  } finally { t.cleanup(); }
});

test('pack writer: abort stops at once and releases; a signal aborts too', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['--all']);
    const ac = new AbortController();
    const { writePack } = await import('../src/pack/produce/write/index.js');
    const src = writePack(repo, planOf([idsPart(ids)]), { ofsDelta: true, progress: false, signal: ac.signal });
    const v = Buffer.alloc(1000);
    assert.ok(await src.readInto([v]) > 0);
    ac.abort();
    assert.deepEqual(await src.done, { ok: false });
    assert.equal(await src.readInto([v]), 0);
    mkdirSync(join(t.dir, 'x'));
  } finally { t.cleanup(); }
});

test('pack writer: a pack deleted by git repack mid-request is still read to the end (whole and entry by entry)', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const objects = join(dir, '.git/objects');
    const all = revListObjects(dir, ['--all']);
    for (const kind of ['whole', 'ids'] as const) {
      const repo = openRepo(dir);
      const name = packFiles(objects)[0]!;
      const pack = packNamed(repo, join(objects, 'pack'), name);
      const ids = revListObjects(dir, ['--all']);
      const plan = kind === 'whole' ? planOf([ranksPart(pack)]) : planOf([idsPart(ids.slice(0, -1))]);
      const { writePack } = await import('../src/pack/produce/write/index.js');
      const src = writePack(repo, plan, { ofsDelta: true, progress: false });
      const v = Buffer.alloc(4096);
      const out: Buffer[] = [];
      let n = await src.readInto([v]);
      out.push(Buffer.from(v.subarray(0, n)));
      // the pack is replaced: a new commit, everything repacked, the old pack deleted
      commit(dir, `after ${kind}`, { 'new.txt': `${kind}\n` });
      git(['repack', '-adfq'], { cwd: dir });
      assert.ok(!packFiles(objects).includes(name), 'the old pack is gone');
      while ((n = await src.readInto([v])) > 0) out.push(Buffer.from(v.subarray(0, n)));
      assert.deepEqual(await src.done, { ok: true });
      if (kind === 'whole') {
        const ix = indexPack(Buffer.concat(out), t.dir);
        assert.equal(ix.ok, true, ix.stderr);
        assert.deepEqual(ix.objects, sorted(all));
      } else {
        const ix2 = indexPack(Buffer.concat(out), t.dir, { into: clientAt(t.dir, dir, 'HEAD') });
        assert.equal(ix2.ok, true, ix2.stderr);
        assert.deepEqual(ix2.objects, sorted(ids.slice(0, -1)));
      }
    }
  } finally { t.cleanup(); }
});

test('pack writer: the delta search seam: searched deltas go out against earlier entries or client objects, others whole', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'loose');
    git(['init', '-q', '-b', 'main', dir]);
    commit(dir, 'one', { 'a.txt': text(300, 1) });
    git(['tag', 'one'], { cwd: dir });
    commit(dir, 'two', { 'a.txt': text(300, 1) + 'more\n' }); // all loose
    const repo = openRepo(dir);
    const have = new Set(revListObjects(dir, ['one']));
    const ids = revListObjects(dir, ['main']);
    const { writePack } = await import('../src/pack/produce/write/index.js');
    // a stand-in search: every blob becomes a delta of the first blob it saw (a delta that
    // copies nothing: base size, result size, then the whole content inserted)
    const varint = (n: number) => { const b: number[] = []; do { let c = n & 127; n = Math.floor(n / 128); if (n) c |= 128; b.push(c); } while (n); return b; };
    const insertAll = (baseSize: number, data: Buffer) => {
      const parts: Buffer[] = [Buffer.from([...varint(baseSize), ...varint(data.length)])];
      for (let i = 0; i < data.length; i += 127) { const k = Math.min(127, data.length - i); parts.push(Buffer.from([k]), data.subarray(i, i + k)); }
      return Buffer.concat(parts);
    };
    for (const thin of [false, true]) {
      const planned = thin ? revListObjects(dir, ['main', '^one']) : ids;
      const plan = thin ? planOf([idsPart(planned)], (oid) => have.has(oid.toString('hex'))) : planOf([idsPart(ids)]);
      let offered = 0;
      const src = writePack(repo, plan, {
        ofsDelta: true, progress: true,
        deltaSearch: async ({ candidates, read }) => {
          offered = candidates.length;
          const blobs = candidates.filter((c) => c.type === 3);
          const out = [];
          if (thin) {
            const oldBlob = Buffer.from(git(['rev-parse', 'one:a.txt'], { cwd: dir }).trim(), 'hex');
            const size = Number(git(['cat-file', '-s', 'one:a.txt'], { cwd: dir }));
            for (const b of blobs) out.push({ entry: b.entry, base: { oid: oldBlob }, delta: insertAll(size, read(b.entry)) });
          } else {
            for (let i = 1; i < blobs.length; i++) out.push({ entry: blobs[i]!.entry, base: { entry: blobs[0]!.entry }, delta: insertAll(blobs[0]!.size, read(blobs[i]!.entry)) });
            // a base written after its delta is refused (written whole instead)
            if (blobs.length > 1) out.push({ entry: blobs[0]!.entry, base: { entry: blobs[1]!.entry }, delta: insertAll(blobs[1]!.size, read(blobs[0]!.entry)) });
          }
          return out;
        },
      });
      const v = Buffer.alloc(65536);
      const parts: Buffer[] = [];
      let n: number;
      let err = '';
      const errDone = (async () => { for await (const c of src.stderr) err += c.toString(); })();
      while ((n = await src.readInto([v])) > 0) parts.push(Buffer.from(v.subarray(0, n)));
      assert.deepEqual(await src.done, { ok: true });
      await errDone;
      // (as git's prepare_pack(), nothing under 50 bytes: a tree of one entry here)
      assert.equal(offered, planned.filter((h) => Number(git(['cat-file', '-s', h], { cwd: dir })) >= 50).length, 'every loose object of 50 bytes or more is offered');
      assert.ok(offered < plan.count);
      assert.match(err, /Compressing objects: 100% \(\d+\/\d+\), done\.\n/);
      const pack = Buffer.concat(parts);
      const ix = thin ? indexPack(pack, t.dir, { into: clientAt(t.dir, dir, 'refs/tags/one'), fixThin: true }) : indexPack(pack, t.dir);
      assert.equal(ix.ok, true, ix.stderr);
      if (thin) assert.equal(ix.types!.ref, 1);
      else { assert.deepEqual(ix.objects, sorted(ids)); assert.equal(ix.types!.ofs, 1); }
    }
  } finally { t.cleanup(); }
});

test('pack writer: each pull is bounded work and gives the event loop away on the shared slice', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['--all']);
    const { writePack } = await import('../src/pack/produce/write/index.js');
    const { countYields } = await import('./helpers/yields.js');
    let pulls = 0;
    const yields = await countYields(async () => {
      const src = writePack(repo, planOf([idsPart(ids)]), { ofsDelta: true, progress: false });
      const v = Buffer.alloc(2048);
      while (await src.readInto([v]) > 0) pulls++;
      assert.deepEqual(await src.done, { ok: true });
    });
    assert.ok(pulls > 5);
    // (the clock moves 10 ms per reading: a pull that resumed starts a slice, the next finds it spent)
    assert.ok(yields >= Math.floor(pulls / 2), `${yields} yields for ${pulls} pulls`);
  } finally { t.cleanup(); }
});

test('pack writer: packed deltas that would go whole are offered to the delta search with the whole entries', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'conv');
    git(['init', '-q', '-b', 'main', dir]);
    commit(dir, 'one', { 'a.txt': text(400, 1), 'b.txt': text(300, 2) });
    git(['tag', 'one'], { cwd: dir });
    commit(dir, 'two', { 'a.txt': text(390, 1) + 'x\n', 'b.txt': text(290, 2) + 'y\n' });
    git(['repack', '-adfq'], { cwd: dir }); // the new blobs are deltas of the old ones
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['main', '^one']);
    const newA = git(['rev-parse', 'main:a.txt'], { cwd: dir }).trim();
    const newB = git(['rev-parse', 'main:b.txt'], { cwd: dir }).trim();
    const { writePack } = await import('../src/pack/produce/write/index.js');
    const varint = (n: number) => { const b: number[] = []; do { let c = n & 127; n = Math.floor(n / 128); if (n) c |= 128; b.push(c); } while (n); return b; };
    let seen: Array<{ oid: string; reused: boolean; type: number }> = [];
    const src = writePack(repo, planOf([idsPart(ids)]), {
      ofsDelta: true, progress: false,
      deltaSearch: async ({ candidates, read }) => {
        seen = candidates.map((c) => ({ oid: c.oid.toString('hex'), reused: c.reused, type: c.type }));
        const a = candidates.find((c) => c.oid.toString('hex') === newA)!;
        const b = candidates.find((c) => c.oid.toString('hex') === newB)!;
        const [base, target] = a.entry < b.entry ? [a, b] : [b, a];
        const data = read(target.entry);
        const parts: Buffer[] = [Buffer.from([...varint(base.size), ...varint(data.length)])];
        for (let i = 0; i < data.length; i += 127) { const k = Math.min(127, data.length - i); parts.push(Buffer.from([k]), data.subarray(i, i + k)); }
        return [{ entry: target.entry, base: { entry: base.entry }, delta: Buffer.concat(parts) }];
      },
    });
    const v = Buffer.alloc(65536);
    const out: Buffer[] = [];
    let n: number;
    while ((n = await src.readInto([v])) > 0) out.push(Buffer.from(v.subarray(0, n)));
    assert.deepEqual(await src.done, { ok: true });
    // the two blobs lost their bases (not sent, not thin): offered, not reused; the rest offered as reused whole entries
    assert.deepEqual(seen.filter((c) => !c.reused).map((c) => c.oid).sort(), [newA, newB].sort());
    assert.equal(seen.filter((c) => !c.reused).every((c) => c.type === 3), true);
    assert.equal(seen.length, ids.length);
    const ix = indexPack(Buffer.concat(out), t.dir, { into: clientAt(t.dir, dir, 'refs/tags/one') });
    assert.equal(ix.ok, true, ix.stderr);
    assert.deepEqual(ix.objects, sorted(ids));
    assert.equal(ix.types!.ofs, 1);
  } finally { t.cleanup(); }
});
