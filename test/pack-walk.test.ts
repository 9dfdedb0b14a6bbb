/**
 * Object enumeration without bitmaps (src/pack/produce/enumerate) against
 * real git: for each request, the plan holds exactly the objects
 * `git pack-objects --revs --stdout` packs for the same stdin and flags.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commit, makeAlternateRepo } from './helpers/fixtures.js';
import { git, tmp } from './helpers/git.js';
import { ORACLE_GIT, gitPackSet, request, walkSet } from './helpers/pack-walk.js';
import type { PackObjectsRequest } from '../src/pack/pack-objects.js';
import { Repository } from '../src/repo/repository.js';
import { walkPlan } from '../src/pack/produce/enumerate/index.js';
import { countYields } from './helpers/yields.js';
import { packNameHash } from '../src/pack/name-hash.js';
import type { IdsPart } from '../src/pack/produce/plan.js';

const t = tmp('gitwire-walk-');
after(() => t.cleanup());

function blobOf(n: number, seed: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += `row ${i} seed ${seed}\n`;
  return s;
}

/** merges, a directory copied under a second name, a big blob, tags to a tree, a blob and a tag */
function makeWalkRepo(name: string, format?: 'sha256'): string {
  const dir = join(t.dir, name);
  git(['init', '-q', '-b', 'main', ...(format ? [`--object-format=${format}`] : []), dir]);
  commit(dir, 'c0', { 'a/one.txt': blobOf(10, 0), 'a/deep/x.c': blobOf(5, 1), 'top.md': 'top\n', '.sparse': 'a/\n!a/deep/\n*.md\n' });
  commit(dir, 'c1', { 'b/two.txt': blobOf(20, 2), 'big.bin': blobOf(400, 3) });
  commit(dir, 'c2', { 'c/one.txt': blobOf(10, 0), 'c/deep/x.c': blobOf(5, 1) }); // c/ is the same tree as a/
  git(['branch', 'side'], { cwd: dir });
  commit(dir, 'c3', { 'a/one.txt': blobOf(11, 0), 'top.md': 'top 2\n' });
  commit(dir, 'c4', { 'b/three.txt': blobOf(3, 4) });
  git(['checkout', '-q', 'side'], { cwd: dir });
  commit(dir, 's1', { 'side.txt': 'side\n', 'b/two.txt': blobOf(21, 2) });
  commit(dir, 's2', { 'a/deep/y.c': blobOf(6, 5) });
  git(['checkout', '-q', 'main'], { cwd: dir });
  git(['merge', '-q', '--no-edit', '-m', 'merge side', 'side'], { cwd: dir, env: { GIT_COMMITTER_DATE: '1700009000 +0000', GIT_AUTHOR_DATE: '1700009000 +0000' } });
  commit(dir, 'c5', { 'd/moved.txt': blobOf(20, 2), 'e/deep/x.c': blobOf(5, 1) });
  git(['tag', 'light', 'HEAD~1'], { cwd: dir });
  git(['tag', '-a', '-m', 'v1', 'v1', 'HEAD~2'], { cwd: dir });
  git(['tag', '-a', '-m', 'v1 outer', 'v1-outer', 'v1'], { cwd: dir });
  git(['tag', '-a', '-m', 'on a tree', 'treetag', 'HEAD:a'], { cwd: dir });
  git(['tag', '-a', '-m', 'on a blob', 'blobtag', 'HEAD:top.md'], { cwd: dir });
  git(['tag', '-a', '-m', 'on main', 'v2', 'HEAD'], { cwd: dir });
  git(['tag', '-a', '-m', 'on an old blob', 'oldblob', 'HEAD~4:top.md'], { cwd: dir });
  return join(dir, '.git');
}

const repo = makeWalkRepo('walk');
const id = (rev: string, gitDir = repo) => Buffer.from(git(['--git-dir', gitDir, 'rev-parse', rev]).trim(), 'hex');

async function same(req: PackObjectsRequest, config: string[] = []): Promise<string[]> {
  const want = gitPackSet(req, t.dir, config);
  const ours = await walkSet(req);
  assert.deepEqual(ours.sorted, want);
  assert.equal(ours.plan.count, want.length);
  assert.equal(ours.plan.source, 'walk');
  assert.equal(new Set(ours.ids).size, ours.ids.length, 'no object twice');
  return want;
}

test('full clone: every object, commits first in rev-list order, names as git hashes the paths', async () => {
  const req = request(repo, { wants: [id('main'), id('side')] });
  await same(req);
  const r = Repository.open(repo);
  try {
    const plan = await walkPlan(r, req);
    const part = plan.parts[0] as IdsPart;
    // git rev-list --objects lists in pack-objects' order, with the path each object was reached by
    const lines = git(['--git-dir', repo, 'rev-list', '--objects', 'main', 'side']).split('\n').filter(Boolean);
    assert.equal(lines.length, part.count);
    for (let i = 0; i < part.count; i++) {
      const [hex, ...path] = lines[i]!.split(' ');
      assert.equal(part.ids.toString('hex', i * 20, i * 20 + 20), hex, `object ${i}`);
      assert.equal(part.names![i], path.length ? packNameHash(path.join(' ')) : 0, `name of ${hex}`);
      const type = git(['--git-dir', repo, 'cat-file', '-t', hex!]).trim();
      assert.equal(part.types![i], { commit: 1, tree: 2, blob: 3, tag: 4 }[type]);
    }
  } finally { r.close(); }
});

test('incremental fetch: haves, a have that is no ancestor, sparse and classic edge marking', async () => {
  await same(request(repo, { wants: [id('main')], haves: [id('main~3')] }));
  await same(request(repo, { wants: [id('main')], haves: [id('side')] }));
  await same(request(repo, { wants: [id('side')], haves: [id('main~1')] }));
  await same(request(repo, { wants: [id('main~2')], haves: [id('side~1'), id('main~4')] }));
  git(['--git-dir', repo, 'config', 'pack.useSparse', 'false']);
  try {
    await same(request(repo, { wants: [id('main')], haves: [id('main~3')] }));
    await same(request(repo, { wants: [id('main')], haves: [id('side')] }));
  } finally { git(['--git-dir', repo, 'config', '--unset', 'pack.useSparse']); }
});

test('haves the repository lacks are ignored (upload-pack never passes them to git)', async () => {
  const ghost = Buffer.alloc(20, 0xab);
  const want = gitPackSet(request(repo, { wants: [id('main')], haves: [id('main~2')] }), t.dir);
  const ours = await walkSet(request(repo, { wants: [id('main')], haves: [ghost, id('main~2')] }));
  assert.deepEqual(ours.sorted, want);
  const r = Repository.open(repo);
  try {
    await assert.rejects(walkPlan(r, request(repo, { wants: [ghost] })), /bad object abab/);
  } finally { r.close(); }
});

test('tips that are tags (to a tree, a blob, a tag), trees and blobs', async () => {
  await same(request(repo, { wants: [id('refs/tags/treetag'), id('refs/tags/blobtag'), id('refs/tags/v1-outer')] }));
  await same(request(repo, { wants: [id('main^{tree}'), id('main:top.md')], haves: [id('main~1')] }));
  await same(request(repo, { wants: [id('main:a'), id('refs/tags/v2')], haves: [id('main~1:a/deep')] }));
});

const FILTERS = ['blob:none', 'blob:limit=1000', 'blob:limit=0', 'tree:0', 'tree:1', 'tree:2', 'tree:3', 'object:type=blob', 'object:type=tree',
  'object:type=commit', 'object:type=tag', 'sparse:oid=main:.sparse', 'combine:blob:none+tree:2', 'combine:tree:3+sparse:oid=main:.sparse', 'combine:object:type=tree+tree:1'];

test('every filter kind, for a clone, a fetch and tips that are trees and tags', async () => {
  for (const filter of FILTERS) {
    await same(request(repo, { wants: [id('main'), id('side')], filter }));
    await same(request(repo, { wants: [id('main')], haves: [id('main~3')], filter }));
    await same(request(repo, { wants: [id('refs/tags/treetag'), id('main:b'), id('refs/tags/v1')], haves: [id('main~4')], filter }));
  }
  const blob = git(['--git-dir', repo, 'rev-parse', 'main:.sparse']).trim();
  await same(request(repo, { wants: [id('main')], filter: `sparse:oid=${blob}` }));
});

test('shallow grafts (several), with and without thin, and the repository\'s own shallow file ignored', async () => {
  const grafts = [id('main~2'), id('side~1')];
  await same(request(repo, { wants: [id('main')], shallow: grafts, useShallow: true }));
  await same(request(repo, { wants: [id('main')], haves: [id('main~3')], shallow: [id('main~1')], useShallow: true, thin: true }));
  await same(request(repo, { wants: [id('main')], haves: [id('side~1')], extraEdges: [id('main~4')], shallow: grafts, useShallow: true, thin: true }));
  await same(request(repo, { wants: [id('main')], shallow: [id('main')], useShallow: true, filter: 'blob:none' }));
  const own = makeWalkRepo('ownshallow');
  writeFileSync(join(own, 'shallow'), `${id('main~1', own).toString('hex')}\n`);
  // honoured without --shallow-file, ignored with it
  await same(request(own, { wants: [id('main', own)] }));
  await same(request(own, { wants: [id('main', own)], shallow: [id('side', own)], useShallow: true }));
});

test('include-tag adds annotated tags whose object is packed, with their chains', async () => {
  await same(request(repo, { wants: [id('main')], haves: [id('main~4')], includeTag: true }));
  await same(request(repo, { wants: [id('main~2')], includeTag: true }));
  // a tag the client has as a have: git adds it anyway when what it peels to is packed
  await same(request(repo, { wants: [id('main')], haves: [id('refs/tags/v1'), id('main~5')], includeTag: true }));
  await same(request(repo, { wants: [id('main')], haves: [id('main~1')], includeTag: true, filter: 'blob:none' }));
  // thin: the old top.md the client has is a preferred base at that path, and git counts it as packed
  const thin = await same(request(repo, { wants: [id('main')], haves: [id('main~4')], includeTag: true, thin: true }));
  assert.ok(thin.includes(id('refs/tags/oldblob').toString('hex')));
  const plain = await same(request(repo, { wants: [id('main')], haves: [id('main~4')], includeTag: true }));
  assert.ok(!plain.includes(id('refs/tags/oldblob').toString('hex')));
});

test('thin: the same objects; clientHas answers for what the walk marked uninteresting', async () => {
  const req = request(repo, { wants: [id('main')], haves: [id('main~3')], thin: true });
  const { plan } = await walkSet(req);
  await same(req);
  assert.ok(plan.clientHas);
  assert.equal(plan.clientHas!(id('main~3')), true);
  assert.equal(plan.clientHas!(id('main~3^{tree}')), true);
  assert.equal(plan.clientHas!(id('main')), false);
  assert.equal(plan.clientHas!(id('main:e')), false);
  const notThin = await walkSet(request(repo, { wants: [id('main')], haves: [id('main~3')] }));
  assert.equal(notThin.plan.clientHas, undefined);
});

test('SHA-256 repository', async () => {
  const r256 = makeWalkRepo('walk256', 'sha256');
  const id2 = (rev: string) => id(rev, r256);
  await same(request(r256, { wants: [id2('main'), id2('side')] }));
  await same(request(r256, { wants: [id2('main')], haves: [id2('main~3')], includeTag: true, thin: true }));
  await same(request(r256, { wants: [id2('main')], filter: 'tree:1' }));
});

test('a repository with alternates, and one with a commit-graph', async () => {
  const src = makeWalkRepo('altsrc');
  const alt = makeAlternateRepo(t.dir, join(src, '..'));
  const ida = (rev: string) => id(rev, alt);
  await same(request(alt, { wants: [ida('refs/heads/alt')] }));
  await same(request(alt, { wants: [ida('refs/heads/alt')], haves: [ida('refs/heads/main~2')] }));
  const cg = makeWalkRepo('graph');
  git(['--git-dir', cg, 'commit-graph', 'write', '--reachable']);
  const idg = (rev: string) => id(rev, cg);
  await same(request(cg, { wants: [idg('main')], haves: [idg('main~3')] }));
  await same(request(cg, { wants: [idg('main'), idg('side')], filter: 'tree:2' }));
});

test('an aborted walk stops with the signal\'s reason', async () => {
  const r = Repository.open(repo);
  try {
    const ac = new AbortController();
    ac.abort(new Error('client left'));
    await assert.rejects(walkPlan(r, request(repo, { wants: [id('main')] }), { signal: ac.signal }), /client left/);
  } finally { r.close(); }
});

test('65,000 haves: the walk gives the event loop away while it reads them, and packs what git packs', async () => {
  const haves = Array.from({ length: 65_000 }, (_, i) => id(`main~${1 + (i % 6)}`));
  const req = request(repo, { wants: [id('main'), id('side')], haves });
  const want = gitPackSet(req, t.dir);
  const r = Repository.open(repo);
  try {
    let sorted: string[] = [];
    const yields = await countYields(async () => {
      const plan = await walkPlan(r, req);
      const part = plan.parts[0] as IdsPart | undefined;
      sorted = part ? Array.from({ length: part.count }, (_, i) => part.ids.toString('hex', i * 20, i * 20 + 20)).sort() : [];
    });
    assert.deepEqual(sorted, want);
    assert.ok(yields > 500, `yielded ${yields} times`);
  } finally { r.close(); }
});

test('sparse edge marking walks paths in the order of git\'s hashmap (which paths get marked depends on it)', async () => {
  // "y" comes before "a" in git's path map: y's old tree is walked while y's new tree (also a/x's old
  // tree) is still interesting, so the blob the client has under y/ is marked and not sent via w/
  const dir = join(t.dir, 'order');
  git(['init', '-q', '-b', 'main', dir]);
  commit(dir, 'old', { 'a/keep': 'k\n', 'a/x/f1': 'F1\n', 'y/b': 'B\n' });
  git(['rm', '-rq', 'a', 'y'], { cwd: dir });
  commit(dir, 'new', { 'a/keep2': 'k2\n', 'y/f1': 'F1\n', 'w/b': 'B\n', 'w/c': 'C\n' });
  const g = join(dir, '.git');
  const sent = await same(request(g, { wants: [id('main', g)], haves: [id('main~1', g)] }));
  assert.ok(!sent.includes(id('main:w/b', g).toString('hex')));
});

test('a tree deeper than core.maxTreeDepth: git\'s error, as pack-objects dies with it', async () => {
  const dir = join(t.dir, 'deep');
  git(['init', '-q', '-b', 'main', dir]);
  commit(dir, 'deep', { 'a/b/c/d/e/f.txt': 'deep\n' });
  const g = join(dir, '.git');
  git(['--git-dir', g, 'config', 'core.maxTreeDepth', '3']);
  const req = request(g, { wants: [id('main', g)] });
  // (core.maxTreeDepth is git 2.43's: an older oracle packs it)
  if (ORACLE_GIT !== 'git') assert.throws(() => gitPackSet(req, t.dir), /exceeded maximum allowed tree depth/);
  const r = Repository.open(g);
  try {
    await assert.rejects(walkPlan(r, req), /exceeded maximum allowed tree depth/);
  } finally { r.close(); }
  git(['--git-dir', g, 'config', 'core.maxTreeDepth', '5']);
  await same(req);
});
