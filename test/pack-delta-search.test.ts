/**
 * The delta window search (src/pack/produce/delta/search.ts) against git's
 * pack-objects on the same blobs of a real history: total delta bytes
 * within 1.1x of git's; every chosen delta rebuilds its target; bases come
 * before their deltas in the visiting order and chains respect the depth;
 * preferred bases, the size rules, the memory bound, the delta cache, the
 * abort signal and the event loop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import {
  basesFirst, createDelta, deltaThreads, newDeltaStats, searchDeltas, searchDeltasThreaded, searchOrder, searchPlace, type DeltaChoice, type DeltaObject,
} from '../src/pack/produce/delta/index.js';
import { GitwireError } from '../src/errors.js';
import { ObjType } from '../src/repo/object-type.js';
import { applyDelta } from '../src/repo/delta.js';
import { Slicer } from '../src/util/budget.js';
import { git, tmp } from './helpers/git.js';
import { packNameHash, writeHistory, type HistoryBlob } from './helpers/delta-history.js';

function objects(blobs: HistoryBlob[], loads?: number[]): DeltaObject[] {
  return blobs.map((b, i) => ({
    type: ObjType.Blob, size: b.data.length, nameHash: packNameHash(b.path),
    load: () => { loads?.push(i); return b.data; },
  }));
}

/** Chains are well formed: each delta rebuilds its target from its base, bases are visited first, depth counts. */
function checkChoices(objs: DeltaObject[], data: Buffer[], choices: Array<DeltaChoice | undefined>, maxDepth: number): void {
  const order = searchOrder(objs);
  const place = new Map<number, number>();
  order.forEach((o, k) => place.set(o, k));
  choices.forEach((c, i) => {
    if (!c) return;
    assert.ok(place.get(c.base)! < place.get(i)!, `base ${c.base} is visited before ${i}`);
    assert.equal(objs[c.base]!.type, objs[i]!.type);
    const delta = c.delta ?? createDelta(data[c.base]!, data[i]!)!;
    assert.equal(delta.length, c.deltaSize);
    assert.ok(applyDelta(data[c.base]!, delta).equals(data[i]!), `delta of ${i} against ${c.base}`);
    assert.equal(c.depth, (choices[c.base]?.depth ?? 0) + 1);
    assert.ok(c.depth <= maxDepth);
    assert.ok(c.deltaSize <= data[i]!.length / 2 - 20);
  });
}

let history: { blobs: HistoryBlob[]; cleanup: () => void; repo: string } | undefined;
function getHistory(): { blobs: HistoryBlob[]; repo: string } {
  if (!history) {
    const { dir, cleanup } = tmp('gitwire-delta-search-');
    const repo = join(dir, 'r.git');
    git(['init', '-q', '--bare', repo]);
    history = { blobs: writeHistory(repo), cleanup, repo };
  }
  return history;
}
test.after(() => history?.cleanup());

/** git's choices for the blobs: per oid, [size of its representation, deflated size in the pack] */
function gitPack(repo: string, blobs: HistoryBlob[], threads: number): { rep: number; packed: number; deltas: number } {
  const input = blobs.map((b) => `${b.oid} ${b.path}\n`).join('');
  const name = git(['pack-objects', '-q', '--window=10', '--depth=50', `--threads=${threads}`, join(repo, `objects/pack/t${threads}`)], { cwd: repo, input }).trim();
  let rep = 0, packed = 0, deltas = 0;
  for (const line of git(['verify-pack', '-v', join(repo, `objects/pack/t${threads}-${name}.idx`)]).split('\n')) {
    const f = line.split(/\s+/);
    if (f.length < 5 || !/^[0-9a-f]{40}$/.test(f[0]!)) continue;
    rep += Number(f[2]);
    packed += Number(f[3]);
    if (f.length >= 7) deltas++;
  }
  return { rep, packed, deltas };
}

test('on a real history the deltas total within 1.1x of git pack-objects --window=10 --depth=50', async () => {
  const { blobs, repo } = getHistory();
  const objs = objects(blobs);
  const stats = newDeltaStats();
  const choices = await searchDeltas(objs, { stats });
  const data = blobs.map((b) => b.data);
  checkChoices(objs, data, choices, 50);
  let rep = 0, packed = 0;
  choices.forEach((c, i) => {
    rep += c ? c.deltaSize : data[i]!.length;
    // an entry's header and zlib's framing are git's too; the pack holds the deflated representation
    packed += deflateSync(c ? (c.delta ?? createDelta(data[c.base]!, data[i]!)!) : data[i]!).length;
  });
  const theirs = gitPack(repo, blobs, 1);
  const ratio = rep / theirs.rep;
  process.stdout.write(`# ${blobs.length} blobs, ${data.reduce((a, b) => a + b.length, 0)} bytes: ours ${stats.deltas} deltas, ${rep} bytes (${packed} deflated); ` +
    `git --threads=1 ${theirs.deltas} deltas, ${theirs.rep} bytes (${theirs.packed} in pack): ratio ${ratio.toFixed(4)}\n`);
  assert.ok(ratio <= 1.1, `ours ${rep} against git's ${theirs.rep}`);
  assert.ok(stats.deltas >= blobs.length / 2);
  assert.equal(stats.searched, blobs.length);
});

test('depth: no chain is longer than asked; a window of 0 or depth 0 makes no delta', async () => {
  const { blobs } = getHistory();
  const objs = objects(blobs);
  const data = blobs.map((b) => b.data);
  for (const depth of [1, 3]) {
    const choices = await searchDeltas(objs, { depth });
    checkChoices(objs, data, choices, depth);
    assert.ok(choices.some((c) => c?.depth === depth));
  }
  assert.ok((await searchDeltas(objs, { window: 0 })).every((c) => c === undefined));
  assert.ok((await searchDeltas(objs, { depth: 0 })).every((c) => c === undefined));
  // an object with deltas already hanging on it 49 deep can only take a depth-1 delta
  const deep = objs.map((o) => ({ ...o, childDepth: 49 }));
  assert.ok((await searchDeltas(deep)).every((c) => c === undefined || c.depth === 1));
});

test('preferred bases serve as bases only; types never mix; small and big objects are left whole, unread', async () => {
  const { blobs } = getHistory();
  const data = blobs.map((b) => b.data);
  const loads: number[] = [];
  // the largest version of each path is the client's (thin pack)
  const biggest = new Map<string, number>();
  blobs.forEach((b, i) => { const j = biggest.get(b.path); if (j === undefined || data[j]!.length < b.data.length) biggest.set(b.path, i); });
  const preferred = new Set(biggest.values());
  const objs = objects(blobs, loads).map((o, i) => ({ ...o, preferredBase: preferred.has(i) }));
  let total = -1, calls = 0;
  const choices = await searchDeltas(objs, { onProgress: (d, t) => { calls++; total = t; assert.equal(d, calls); } });
  assert.equal(total, blobs.length - preferred.size);
  assert.equal(calls, total);
  for (const i of preferred) assert.equal(choices[i], undefined);
  assert.ok(choices.some((c) => c && preferred.has(c.base)), 'preferred bases are used');
  checkChoices(objs, data, choices, 50);

  // the same text as a blob and as a "tree" (types never mix), one tiny and one over the threshold
  const text = data[0]!;
  const mixed: DeltaObject[] = [
    { type: ObjType.Blob, size: text.length, nameHash: 1, load: () => text },
    { type: ObjType.Tree, size: text.length - 1, nameHash: 1, load: () => text.subarray(1) },
    { type: ObjType.Blob, size: 49, nameHash: 1, load: () => assert.fail('under 50 bytes: not read') },
    { type: ObjType.Blob, size: 48, nameHash: 1, load: () => assert.fail('under 50 bytes: not read') },
    { type: ObjType.Blob, size: text.length + 10, nameHash: 1, load: () => assert.fail('over bigFileThreshold: not read') },
  ];
  const got = await searchDeltas(mixed, { bigFileThreshold: text.length + 9 });
  assert.deepEqual(got, [undefined, undefined, undefined, undefined, undefined]);
  // a pair git does not try: a target under 1/32 of the base
  const huge = Buffer.concat(Array.from({ length: 40 }, () => text));
  const small = text.subarray(0, Math.floor(huge.length / 32) - 1);
  const pair: DeltaObject[] = [
    { type: ObjType.Blob, size: huge.length, nameHash: 1, load: () => huge },
    { type: ObjType.Blob, size: small.length, nameHash: 1, load: () => assert.fail('not read: too small against its only base') },
  ];
  assert.deepEqual(await searchDeltas(pair), [undefined, undefined]);
  // stored whole in one pack: not tried against each other
  const pack = {};
  const twins: DeltaObject[] = [
    { type: ObjType.Blob, size: text.length, nameHash: 1, load: () => text, inPack: pack, storedWhole: true },
    { type: ObjType.Blob, size: text.length - 1, nameHash: 1, load: () => text.subarray(1), inPack: pack, storedWhole: true },
  ];
  assert.deepEqual(await searchDeltas(twins), [undefined, undefined]);
  assert.ok((await searchDeltas(twins.map((t) => ({ ...t, inPack: undefined }))))[1]);
});

test('memory: the window holds about windowMemory bytes; a full delta cache hands back sizes only', async () => {
  const { blobs } = getHistory();
  const objs = objects(blobs);
  const data = blobs.map((b) => b.data);
  const biggest = Math.max(...data.map((d) => d.length));
  const free = newDeltaStats();
  await searchDeltas(objs, { stats: free, windowMemory: 0 });
  const bound = 1024 * 1024;
  const bounded = newDeltaStats();
  const choices = await searchDeltas(objs, { stats: bounded, windowMemory: bound });
  assert.ok(free.peakWindowBytes > bound * 2, `unbounded peak ${free.peakWindowBytes}`);
  assert.ok(bounded.peakWindowBytes <= bound + 3 * biggest, `peak ${bounded.peakWindowBytes} for a bound of ${bound}`);
  checkChoices(objs, data, choices, 50);

  const cache = newDeltaStats();
  const sizesOnly = await searchDeltas(objs, { stats: cache, deltaCacheSize: 10_000 });
  assert.ok(cache.droppedBytes > 0 && cache.cachedBytes <= 10_000);
  assert.ok(sizesOnly.some((c) => c && !c.delta));
  checkChoices(objs, data, sizesOnly, 50);
});

test('a wrong length from load() is a GW_OBJECT_CORRUPT error', async () => {
  const text = Buffer.from('some text that is long enough to be tried as a delta, twice over. '.repeat(4));
  const objs: DeltaObject[] = [
    { type: ObjType.Blob, size: text.length, nameHash: 1, load: () => text },
    { type: ObjType.Blob, size: text.length - 2, nameHash: 1, load: async () => text.subarray(1) },
  ];
  await assert.rejects(searchDeltas(objs), (e: unknown) => e instanceof GitwireError && e.code === 'GW_OBJECT_CORRUPT');
});

test('the event loop keeps turning during a search, and an abort stops it at once', async () => {
  const { blobs } = getHistory();
  const objs = objects(blobs);
  let turns = 0, last = performance.now(), maxGap = 0;
  const timer = setInterval(() => { const now = performance.now(); maxGap = Math.max(maxGap, now - last); last = now; turns++; }, 1);
  const slicer = new Slicer(1);
  const t0 = performance.now();
  try {
    await searchDeltas(objs, { slicer });
  } finally { clearInterval(timer); }
  const ms = performance.now() - t0;
  assert.ok(slicer.yields > 0, 'the search gave the loop away');
  assert.ok(turns >= Math.min(10, ms / 50), `${turns} timer turns in ${ms.toFixed(0)} ms`);
  // a loose bound: held throughout, the gap would be the whole search
  assert.ok(maxGap < Math.max(250, ms / 4), `the loop was held ${maxGap.toFixed(0)} ms of ${ms.toFixed(0)} ms`);

  const ac = new AbortController();
  const loads: number[] = [];
  let after = -1;
  const run = searchDeltas(objects(blobs, loads), {
    signal: ac.signal,
    onProgress: (d) => { if (d === 5) { ac.abort(new Error('client gone')); after = loads.length; } },
  });
  await assert.rejects(run, /client gone/);
  assert.equal(loads.length, after, 'nothing is read after the abort');
  const aborted = AbortSignal.abort(new Error('before'));
  await assert.rejects(searchDeltas(objs, { signal: aborted }), /before/);
});

test('on a worker thread: the same choices, progress on the loop, errors and aborts come back', async () => {
  const { blobs } = getHistory();
  const objs = objects(blobs);
  const onLoop = await searchDeltas(objs);
  assert.equal(searchPlace(objs.slice(0, 2)), 'loop', 'a small batch stays on the loop');
  assert.equal(searchPlace(objs, { workerMinBytes: 0 }), 'worker');
  let progress = 0;
  let turns = 0;
  const timer = setInterval(() => { turns++; }, 1);
  const stats = newDeltaStats();
  let threaded: Array<DeltaChoice | undefined>;
  try {
    threaded = await searchDeltasThreaded(objs, { workerMinBytes: 0, stats, onProgress: (d) => { progress = d; } });
  } finally { clearInterval(timer); }
  assert.equal(threaded.length, onLoop.length);
  threaded.forEach((c, i) => {
    const l = onLoop[i];
    assert.deepEqual(c && { base: c.base, deltaSize: c.deltaSize, depth: c.depth, delta: c.delta && Buffer.from(c.delta) }, l && { base: l.base, deltaSize: l.deltaSize, depth: l.depth, delta: l.delta });
  });
  assert.equal(progress, blobs.length);
  assert.ok(stats.deltas > 0 && stats.loads >= blobs.length);
  assert.ok(turns > 0);

  // a load that fails, a wrong length, an abort
  const failing = objs.map((o, i) => (i === 7 ? { ...o, load: () => { throw new Error('pack gone'); } } : o));
  await assert.rejects(searchDeltasThreaded(failing, { workerMinBytes: 0 }), /pack gone/);
  const short = objs.map((o, i) => (i === 7 ? { ...o, load: () => blobs[7]!.data.subarray(1) } : o));
  await assert.rejects(searchDeltasThreaded(short, { workerMinBytes: 0 }), (e: unknown) => e instanceof GitwireError && e.code === 'GW_OBJECT_CORRUPT');
  const ac = new AbortController();
  const loads: number[] = [];
  const run = searchDeltasThreaded(objects(blobs, loads), { workerMinBytes: 0, signal: ac.signal, onProgress: () => { ac.abort(new Error('client gone')); } });
  await assert.rejects(run, /client gone/);
  const after = loads.length;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(loads.length, after, 'nothing is read after the abort');
  assert.ok(after < blobs.length);
  // the threads were given back
  assert.equal(searchPlace(objs, { workerMinBytes: 0 }), 'worker');
});

test('on the loop (no thread free), objects over loopMaxObject are sent whole, unread; a batch holding one asks for a worker', async () => {
  const { blobs } = getHistory();
  const sizes = blobs.map((b) => b.data.length).sort((a, b) => a - b);
  const loopMaxObject = sizes[Math.floor(sizes.length / 2)]!;
  const loads: number[] = [];
  const objs = objects(blobs, loads);
  assert.equal(searchPlace(objs, { loopMaxObject, workerMinBytes: Infinity }), 'worker');
  assert.equal(searchPlace(objs, { loopMaxObject: Infinity, workerMinBytes: Infinity }), 'loop');
  const max = deltaThreads.max;
  deltaThreads.max = 0;
  try {
    assert.equal(searchPlace(objs, { loopMaxObject, workerMinBytes: 0 }), 'loop');
    const choices = await searchDeltasThreaded(objs, { loopMaxObject, workerMinBytes: 0 });
    checkChoices(objs, blobs.map((b) => b.data), choices, 50);
    assert.ok(choices.some((c) => c));
    choices.forEach((c, i) => { if (blobs[i]!.data.length > loopMaxObject) assert.equal(c, undefined); });
    for (const i of loads) assert.ok(blobs[i]!.data.length <= loopMaxObject, 'a large object was read on the loop');
  } finally { deltaThreads.max = max; }
});

test('basesFirst: the order of the writer with every base moved ahead of its first delta; bases the client has are left out', async () => {
  const { blobs } = getHistory();
  const data = blobs.map((b) => b.data);
  const preferred = new Set([0, 30, 60]);
  const objs = objects(blobs).map((o, i) => ({ ...o, preferredBase: preferred.has(i) }));
  const choices = await searchDeltas(objs);
  // the writer's order: newest first (the input's reverse), without the client's objects
  const order = blobs.map((_, i) => blobs.length - 1 - i).filter((i) => !preferred.has(i));
  const out = basesFirst(order, choices);
  assert.deepEqual([...out].sort((a, b) => a - b), [...order].sort((a, b) => a - b), 'the same objects, each once');
  const at = new Map([...out].map((o, k) => [o, k]));
  let thin = 0;
  out.forEach((i, k) => {
    const c = choices[i];
    if (!c) return;
    if (preferred.has(c.base)) { thin++; return; }
    assert.ok(at.get(c.base)! < k, `base ${c.base} before ${i}`);
    assert.ok(applyDelta(data[c.base]!, c.delta!).equals(data[i]!));
  });
  assert.ok(thin > 0, 'some deltas are against the client\'s objects');
  // objects that are neither deltas nor bases keep the writer's order
  const isBase = new Set(choices.map((c) => c?.base));
  const plain = order.filter((i) => !choices[i] && !isBase.has(i));
  assert.deepEqual([...out].filter((i) => plain.includes(i)), plain);
  // a cycle (never made by the search) is an error, not a hang
  assert.throws(() => basesFirst([0, 1], [{ base: 1, delta: undefined, deltaSize: 1, depth: 1 }, { base: 0, delta: undefined, deltaSize: 1, depth: 1 }]), /cycle/);
});
