/**
 * What a bitmap walk keeps between requests and how it numbers objects
 * outside the bitmap: the id table (OidIndex) against a Map, and the
 * resident tree cache — a second walk of the same commits reads its trees
 * from it and still plans exactly what git's pack-objects packs; entries
 * are per repository, go when it closes, and stay within the budget.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { tmp } from './helpers/git.js';
import { diff, makeBitmapRepo, oracleSet, planSet, request, rev } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { bitmapPlan, type BitmapPlanStats } from '../src/pack/bitmap/index.js';
import { OidIndex } from '../src/pack/bitmap/oid-index.js';
import { TREE_CACHE_BYTES, setTreeCacheBudget, treeCacheBytes, treeCacheStats } from '../src/pack/bitmap/tree-cache.js';
import type { PackObjectsRequest } from '../src/pack/pack-objects.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-bitmap-resident-'); });
after(() => { setTreeCacheBudget(TREE_CACHE_BYTES); t.cleanup(); });

test('OidIndex numbers ids in the order added and finds them in place, as a Map does (ids sharing their leading bytes too)', () => {
  fc.assert(fc.property(
    fc.array(fc.tuple(fc.nat(40), fc.nat(2)), { minLength: 1, maxLength: 400 }),
    fc.constantFrom(20, 32),
    (ops, hl) => {
      const idx = new OidIndex(hl, 4);
      const ref = new Map<string, number>();
      const pool: Buffer[] = [];
      // ids that differ only past byte 8 as well as random ones
      for (let i = 0; i < 41; i++) {
        const b = randomBytes(hl);
        if (i % 3 === 0) b.fill(0x5a, 0, 9);
        pool.push(b);
      }
      for (const [k, op] of ops) {
        const id = pool[k]!;
        // the id placed inside a larger buffer, as a tree entry is
        const host = Buffer.concat([randomBytes(7), id, randomBytes(3)]);
        if (op === 0) {
          const want = ref.has(id.toString('hex')) ? ref.get(id.toString('hex'))! : ref.size;
          if (!ref.has(id.toString('hex'))) ref.set(id.toString('hex'), ref.size);
          assert.equal(idx.add(host, 7), want);
        } else {
          assert.equal(idx.find(host, 7), ref.get(id.toString('hex')) ?? -1);
        }
        assert.equal(idx.count, ref.size);
      }
      for (const [h, n] of ref) assert.equal(idx.id(n).toString('hex'), h);
    },
  ), { numRuns: 60 });
});

async function plan(repo: Repository, repoDir: string, req: PackObjectsRequest, label: string): Promise<BitmapPlanStats> {
  const stats = { extended: 0 } as BitmapPlanStats;
  const p = await bitmapPlan(repo, req, { stats });
  assert.ok(p, `${label}: a plan from bitmaps (declined: ${stats.declined})`);
  assert.deepEqual(diff(planSet(p), oracleSet(repoDir, req)), { onlyA: [], onlyB: [] }, `${label}: plan vs pack-objects`);
  return stats;
}

test('bitmap walk: a second walk of the same commits reads its trees from the resident cache, plans what git packs, and the entries go when the repository closes', async () => {
  const dir = makeBitmapRepo(t.dir, 'resident', { after: true });
  // the tips pushed after the bitmap: their commits and trees are walked
  const req = request(dir, { wants: [rev(dir, 'main'), rev(dir, 'side')], haves: [rev(dir, 'main~8')], includeTag: true });
  const repo = Repository.open(dir);
  const before0 = treeCacheBytes();
  let closed = false;
  try {
    const h0 = treeCacheStats.hits, m0 = treeCacheStats.misses;
    const first = await plan(repo, dir, req, 'first');
    assert.ok(first.treesWalked > 0, 'trees are walked');
    assert.equal(treeCacheStats.hits - h0, 0);
    assert.equal(treeCacheStats.misses - m0, first.treesWalked);
    assert.ok(treeCacheBytes() > before0, 'the trees are kept');
    const h1 = treeCacheStats.hits, m1 = treeCacheStats.misses;
    const second = await plan(repo, dir, req, 'second');
    assert.equal(second.treesWalked, first.treesWalked);
    assert.equal(treeCacheStats.hits - h1, second.treesWalked, 'every tree from the cache');
    assert.equal(treeCacheStats.misses - m1, 0);
    // another open copy of the repository does not read this one's entries
    const other = Repository.open(dir);
    try {
      const h2 = treeCacheStats.hits;
      await plan(other, dir, req, 'another copy');
      assert.equal(treeCacheStats.hits - h2, 0);
    } finally { other.close(); }
    repo.close();
    closed = true;
    assert.equal(treeCacheBytes(), before0, 'closing the repositories drops their trees');
  } finally { if (!closed) repo.close(); }
});

test('bitmap walk: the tree cache stays within its budget (none kept at 0); plans are the same', async () => {
  const dir = makeBitmapRepo(t.dir, 'budget', { after: true });
  const req = request(dir, { wants: [rev(dir, 'main'), rev(dir, 'side')], haves: [rev(dir, 'main~8')] });
  try {
    for (const budget of [0, 2048]) {
      setTreeCacheBudget(budget);
      const repo = Repository.open(dir);
      try {
        for (let i = 0; i < 3; i++) {
          await plan(repo, dir, req, `budget ${budget}, walk ${i}`);
          assert.ok(treeCacheBytes() <= budget, `${treeCacheBytes()} bytes kept with a budget of ${budget}`);
        }
      } finally { repo.close(); }
    }
    assert.throws(() => setTreeCacheBudget(-1), RangeError);
  } finally { setTreeCacheBudget(TREE_CACHE_BYTES); }
});
