/**
 * What the delta search costs the request and the server besides its
 * deltas (src/pack/produce/delta/, write/candidates.ts): the objects
 * offered are git's (none under 50 bytes; whole entries tried across packs,
 * not within one), a search with nothing to try reads and visits nothing,
 * a search whose pairs are all turned down unread still gives the loop
 * away, the candidates' pass looks at the clock after each object it had
 * to read, and a worker reports progress a few times, not per object.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newDeltaStats, searchDeltas, searchDeltasThreaded, type DeltaObject } from '../src/pack/produce/delta/index.js';
import { windowSearch } from '../src/pack/produce/delta/writer-seam.js';
import { wholeCandidates } from '../src/pack/produce/write/candidates.js';
import { layOut } from '../src/pack/produce/write/layout.js';
import { ObjType } from '../src/repo/object-type.js';
import { Slicer } from '../src/util/budget.js';
import { git, tmp } from './helpers/git.js';
import { idsPart, indexPack, openRepo, planOf, revListObjects, writeAll } from './helpers/pack-write.js';

/** a tag object's text: ~120 bytes, each different in its first line */
function tagText(i: number): Buffer {
  return Buffer.from(`object ${i.toString(16).padStart(40, '0')}\ntype commit\ntag t${String(i).padStart(5, '0')}\ntagger T <t@example.com> 1700000000 +0000\n\nmsg\n`);
}

test('objects stored whole in one pack: nothing is read or visited, progress is told once', async () => {
  const pack = {};
  let loads = 0;
  const objs: DeltaObject[] = Array.from({ length: 40_000 }, (_, i) => {
    const b = tagText(i);
    return { type: ObjType.Tag, size: b.length, nameHash: i % 97, inPack: pack, storedWhole: true, load: () => { loads++; return b; } };
  });
  let calls = 0, last = -1;
  const stats = newDeltaStats();
  const choices = await searchDeltas(objs, { stats, onProgress: (d, t) => { calls++; last = d; assert.equal(t, objs.length); } });
  assert.ok(choices.every((c) => c === undefined));
  assert.equal(loads, 0);
  assert.equal(stats.searched, objs.length);
  // visited one by one, it was a call per object
  assert.equal(calls, 1);
  assert.equal(last, objs.length);
  // no thread for it either (none is started, the answer is the same)
  assert.ok((await searchDeltasThreaded(objs, { workerMinBytes: 0 })).every((c) => c === undefined));
  assert.equal(loads, 0);
});

test('a search whose pairs are all turned down unread gives the loop away as the slice asks', async () => {
  const pack = {};
  let loads = 0;
  const objs: DeltaObject[] = Array.from({ length: 20_000 }, (_, i) => {
    const b = tagText(i);
    return { type: ObjType.Tag, size: b.length, nameHash: 7, inPack: pack, storedWhole: true, load: () => { loads++; return b; } };
  });
  // a preferred base (of another type): the objects are visited, each pair still turned down before any load
  const tree = Buffer.alloc(200, 1);
  objs.push({ type: ObjType.Tree, size: tree.length, nameHash: 7, preferredBase: true, load: () => tree });
  const slicer = new Slicer(0);
  let calls = 0;
  await searchDeltas(objs, { slicer, onProgress: () => { calls++; } });
  assert.equal(calls, 20_000);
  assert.equal(loads, 0);
  // (with no load there was no step that paused: the loop was held for the whole search, no yield)
  assert.ok(slicer.yields >= 5, `${slicer.yields} yields over 20,000 objects`);
});

test('on a worker: progress a few times, not once per object; the same choices as on the loop', async () => {
  // versions of a few "files": some pairs make deltas, most objects are small
  const objs: DeltaObject[] = [];
  const data: Buffer[] = [];
  for (let i = 0; i < 3000; i++) {
    const b = i % 3 === 0 ? Buffer.from(`${'line of a file that changes a little\n'.repeat(20)}version ${i}\n`) : tagText(i);
    data.push(b);
    objs.push({ type: i % 3 === 0 ? ObjType.Blob : ObjType.Tag, size: b.length, nameHash: i % 3 === 0 ? 1 : 0, load: () => b });
  }
  const onLoop = await searchDeltas(objs);
  let calls = 0, last = -1;
  const threaded = await searchDeltasThreaded(objs, { workerMinBytes: 0, onProgress: (d) => { calls++; last = d; } });
  assert.deepEqual(threaded.map((c) => c && { base: c.base, size: c.deltaSize, depth: c.depth }), onLoop.map((c) => c && { base: c.base, size: c.deltaSize, depth: c.depth }));
  assert.ok(onLoop.some((c) => c));
  assert.equal(last, 3000);
  assert.ok(calls < 300, `${calls} progress messages for 3,000 objects`);
});

test('candidates: none under 50 bytes; each packed one names its pack; the loose pass looks at the clock after each object', async () => {
  const t = tmp('gitwire-delta-cost-');
  try {
    const dir = join(t.dir, 'r.git');
    const work = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', work]);
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`big${i}.txt`] = `${'some text of a file\n'.repeat(5)}${i}\n`;
    for (let i = 0; i < 10; i++) files[`tiny${i}.txt`] = `${i}\n`;
    for (const [k, v] of Object.entries(files)) writeFileSync(join(work, k), v);
    git(['add', '.'], { cwd: work });
    git(['commit', '-qm', 'one'], { cwd: work });
    git(['clone', '-q', '--bare', work, dir]);
    git(['repack', '-adq'], { cwd: dir });
    // a second commit's objects stay loose
    for (let i = 0; i < 40; i++) writeFileSync(join(work, `big${i}.txt`), `${files[`big${i}.txt`]}more ${i}\n`);
    for (let i = 0; i < 10; i++) writeFileSync(join(work, `tiny${i}.txt`), `${i}${i}\n`);
    git(['commit', '-qam', 'two'], { cwd: work });
    git(['push', '-q', dir, 'main'], { cwd: work });
    git(['prune-packed'], { cwd: dir });
    const repo = openRepo(dir);
    const ids = revListObjects(dir, ['main']);
    const plan = planOf([idsPart(ids)]);
    const L = await layOut(repo.odb, plan, new Slicer(), () => false);
    assert.ok(L.loose.length >= 50, `${L.loose.length} loose`);
    const c = await wholeCandidates(repo.odb, L, undefined, new Slicer(), () => false);
    assert.ok(c.every((x) => x.size >= 50), 'no object under 50 bytes is offered');
    // (the packed versions of big*.txt are deltas of each other, reused: not offered)
    assert.ok(c.length >= 42 && c.length <= ids.length - 20, `${c.length} of ${ids.length}`);
    for (const x of c) assert.equal(x.pack !== undefined, x.entry < L.looseStart);
    // the loose objects alone: each is a read, and the pass gives the loop away (it never did)
    const looseIds = L.loose.map((l) => l.oid.toString('hex'));
    const LL = await layOut(repo.odb, planOf([idsPart(looseIds)]), new Slicer(), () => false);
    assert.equal(LL.groups.length, 0);
    const slicer = new Slicer(0);
    const cl = await wholeCandidates(repo.odb, LL, undefined, slicer, () => false);
    assert.ok(cl.length >= 42);
    assert.ok(slicer.yields >= 1, `${slicer.yields} yields over ${cl.length} loose objects`);
  } finally { t.cleanup(); }
});

test('objects stored whole in two packs are tried against each other, as git does; the pack passes index-pack --strict', async () => {
  const t = tmp('gitwire-delta-cost-');
  try {
    const dir = join(t.dir, 'r.git');
    const work = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', work]);
    const text = Array.from({ length: 200 }, (_, i) => `line ${i} of a file that is long enough to delta\n`).join('');
    writeFileSync(join(work, 'a.txt'), text);
    git(['add', '.'], { cwd: work });
    git(['commit', '-qm', 'one'], { cwd: work });
    git(['clone', '-q', '--bare', work, dir]);
    git(['repack', '-adq'], { cwd: dir });
    writeFileSync(join(work, 'a.txt'), `${text}one more line\n`);
    git(['commit', '-qam', 'two'], { cwd: work });
    git(['push', '-q', dir, 'main'], { cwd: work });
    // the new objects in a pack of their own (stored whole: alone there, nothing to delta against)
    git(['repack', '-dq'], { cwd: dir });
    const repo = openRepo(dir);
    repo.odb.rescan();
    assert.equal(repo.odb.sources.flatMap((s) => s.packs).length, 2);
    const ids = revListObjects(dir, ['main']);
    let offered = 0;
    const search = windowSearch({ hashLen: 20 });
    const w = await writeAll(repo, planOf([idsPart(ids)]), {
      deltaSearch: async (input) => { offered = input.candidates.filter((c) => c.reused && c.type === ObjType.Blob).length; return search(input); },
    });
    assert.equal(w.ok, true);
    assert.equal(offered, 2);
    const ix = indexPack(w.pack, t.dir);
    assert.equal(ix.ok, true, ix.stderr);
    assert.deepEqual(ix.objects, [...ids].sort());
    // one version of a.txt is a delta of the other
    assert.ok(ix.types!.ofs + ix.types!.ref >= 1, JSON.stringify(ix.types));
  } finally { t.cleanup(); }
});
