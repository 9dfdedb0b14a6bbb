/**
 * Counting objects with bitmaps (bitmapPlan) against git itself: for the
 * same request, the plan's objects are exactly those `git pack-objects
 * --revs` packs (git uses the same bitmaps), over single-pack and
 * multi-pack-index bitmaps, with and without lookup table and name-hash
 * cache, SHA-1 and SHA-256, objects added after the bitmap, filters and
 * --include-tag; and a random search over wants and haves.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { git, tmp } from './helpers/git.js';
import { rmSync } from 'node:fs';
import { GIT_2_55, allTips, bitmapPath, diff, makeBitmapRepo, oracleSet, planSet, request, rev, type BitmapRepoOptions } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { bitmapPlan, type BitmapPlanStats } from '../src/pack/bitmap/index.js';
import type { PackObjectsRequest } from '../src/pack/pack-objects.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp('gitwire-bitmap-plan-'); });
after(() => t.cleanup());

async function check(repoDir: string, req: PackObjectsRequest, label: string): Promise<BitmapPlanStats & { rankParts: number }> {
  const repo = Repository.open(repoDir);
  try {
    const stats = { extended: 0 } as BitmapPlanStats;
    const warnings: string[] = [];
    const plan = await bitmapPlan(repo, req, { stats, warn: (l) => warnings.push(l) });
    assert.ok(plan, `${label}: a plan from bitmaps (declined: ${stats.declined})`);
    assert.equal(plan.source, 'bitmap');
    assert.deepEqual(warnings, []);
    const got = planSet(plan);
    const want = oracleSet(repoDir, req);
    const d = diff(got, want);
    assert.deepEqual(d, { onlyA: [], onlyB: [] }, `${label}: plan vs pack-objects`);
    assert.equal(plan.count, got.size, `${label}: count`);
    // ranks ascending, each object once
    for (const p of plan.parts) if (p.kind === 'ranks') for (let i = 1; i < p.ranks.length; i++) assert.ok(p.ranks[i]! > p.ranks[i - 1]!);
    return { ...stats, rankParts: plan.parts.filter((p) => p.kind === 'ranks').length };
  } finally {
    repo.close();
  }
}

const FILTERS = ['blob:none', 'blob:limit=1500', 'tree:0', 'object:type=blob', 'object:type=commit', 'object:type=tag', 'object:type=tree', 'combine:blob:none+tree:0', 'combine:blob:limit=2k+object:type=blob'];

function fixtureCases(name: string, opts: BitmapRepoOptions & { gitBin?: string }): void {
  test(`bitmapPlan equals git pack-objects: ${name}`, async () => {
    const repo = makeBitmapRepo(t.dir, name, opts);
    const stats = await check(repo, request(repo, { wants: allTips(repo) }), 'full clone');
    assert.equal(stats.kind, opts.layout && opts.layout !== 'pack' ? 'midx' : 'pack');
    if (opts.after) assert.ok(stats.extended > 0, 'objects after the bitmap are extended');
    assert.equal(stats.rankParts, opts.layout === 'midx-many' ? 3 : 1, 'one part per bitmapped pack');
    await check(repo, request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~8')] }), 'incremental');
    await check(repo, request(repo, { wants: [rev(repo, 'v1-outer'), rev(repo, 'treetag'), rev(repo, 'blobtag'), rev(repo, 'side')], haves: [rev(repo, 'light')] }), 'tags as wants');
    await check(repo, request(repo, { wants: [rev(repo, 'main'), rev(repo, 'side')], haves: [rev(repo, 'v1'), rev(repo, 'old')], extraEdges: [rev(repo, 'main~12')] }), 'tag as have, extra edges');
    await check(repo, request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~6')], includeTag: true }), 'include-tag');
    await check(repo, request(repo, { wants: allTips(repo), includeTag: true }), 'clone with include-tag');
    for (const f of FILTERS) {
      await check(repo, request(repo, { wants: allTips(repo), filter: f }), `clone --filter=${f}`);
      await check(repo, request(repo, { wants: [rev(repo, 'main'), rev(repo, 'blobtag'), rev(repo, 'treetag')], haves: [rev(repo, 'main~9')], filter: f }), `fetch --filter=${f}`);
    }
    // thin: the client has exactly the haves' closure
    const r = Repository.open(repo);
    try {
      const plan = await bitmapPlan(r, request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~8')], thin: true }));
      assert.ok(plan?.clientHas);
      const has = git(['rev-list', '--objects', 'main~8'], { cwd: repo }).trim().split('\n').map((l) => l.slice(0, l.indexOf(' ') < 0 ? undefined : l.indexOf(' ')));
      for (const h of has) assert.ok(plan.clientHas(Buffer.from(h, 'hex')), `client has ${h}`);
      for (const h of planSet(plan)) assert.equal(plan.clientHas(Buffer.from(h, 'hex')), false, `client lacks ${h}`);
      const notThin = await bitmapPlan(r, request(repo, { wants: [rev(repo, 'main')], haves: [rev(repo, 'main~8')] }));
      assert.equal(notThin?.clientHas, undefined);
    } finally { r.close(); }
  });
}

fixtureCases('pack-hashcache', { after: true });
fixtureCases('pack-lookup-nohash', { lookupTable: true, hashCache: false });
fixtureCases('sha256-lookup', { objectFormat: 'sha256', lookupTable: true, after: true });
fixtureCases('midx-one', { layout: 'midx-one', lookupTable: true });
fixtureCases('midx-many', { layout: 'midx-many', after: true });
fixtureCases('midx-many-sha256', { layout: 'midx-many', objectFormat: 'sha256', lookupTable: true });
if (GIT_2_55) fixtureCases('midx-many-git-2.55', { layout: 'midx-many', lookupTable: true, after: true, gitBin: GIT_2_55 });

test('name hashes come from the name-hash cache, in pack order', async () => {
  const repo = makeBitmapRepo(t.dir, 'names', { hashCache: true });
  const r = Repository.open(repo);
  try {
    const plan = await bitmapPlan(r, request(repo, { wants: allTips(repo) }));
    const part = plan!.parts.find((p) => p.kind === 'ranks');
    assert.ok(part?.kind === 'ranks' && part.names);
    assert.equal(part.names.length, part.ranks.length);
    assert.ok(part.names.some((x) => x !== 0));
  } finally { r.close(); }
  const r2 = Repository.open(makeBitmapRepo(t.dir, 'nonames', { hashCache: false }));
  try {
    const plan = await bitmapPlan(r2, request(r2.gitDir, { wants: allTips(r2.gitDir) }));
    const part = plan!.parts.find((p) => p.kind === 'ranks');
    assert.ok(part?.kind === 'ranks' && part.names === undefined);
  } finally { r2.close(); }
});

test('bitmapPlan declines where git counts by walking', async () => {
  const repo = makeBitmapRepo(t.dir, 'declines', { after: true });
  const r = Repository.open(repo);
  const why = async (req: Partial<PackObjectsRequest>) => {
    const stats = { extended: 0 } as BitmapPlanStats;
    const plan = await bitmapPlan(r, request(repo, req), { stats });
    assert.equal(plan, undefined);
    return stats.declined;
  };
  try {
    const main = rev(repo, 'main');
    assert.equal(await why({ wants: [main], useShallow: true, shallow: [rev(repo, 'main~3')] }), 'shallow request');
    assert.equal(await why({ wants: [main], filter: 'tree:1' }), 'filter');
    assert.equal(await why({ wants: [main], filter: 'sparse:oid=main:top.txt' }), 'filter');
    assert.equal(await why({ wants: [main], filter: 'combine:blob:none+tree:2' }), 'filter');
    assert.equal(await why({ wants: [] }), 'no wants');
    // haves only outside the bitmapped pack: git's classic walk does not use bitmaps
    assert.equal(await why({ wants: [main], haves: [rev(repo, 'main~1')] }), 'haves outside the bitmap');
    assert.equal(await why({ wants: [Buffer.alloc(20, 0xab)] }), 'missing object');
  } finally { r.close(); }
  git(['config', 'pack.useBitmaps', 'false'], { cwd: repo });
  const r2 = Repository.open(repo);
  try {
    const stats = { extended: 0 } as BitmapPlanStats;
    assert.equal(await bitmapPlan(r2, request(repo, { wants: [rev(repo, 'main')] }), { stats }), undefined);
    assert.equal(stats.declined, 'pack.useBitmaps');
  } finally { r2.close(); }
  const plainDir = makeBitmapRepo(t.dir, 'plain', {});
  rmSync(bitmapPath(plainDir));
  const plain = Repository.open(plainDir);
  try {
    const stats = { extended: 0 } as BitmapPlanStats;
    assert.equal(await bitmapPlan(plain, request(plainDir, { wants: [rev(plainDir, 'main')] }), { stats }), undefined);
    assert.equal(stats.declined, 'no bitmap');
  } finally { plain.close(); }
});

test('an aborted request stops the count', async () => {
  const repo = makeBitmapRepo(t.dir, 'abort', { after: true });
  const r = Repository.open(repo);
  try {
    const ac = new AbortController();
    ac.abort(new Error('client gone'));
    await assert.rejects(bitmapPlan(r, request(repo, { wants: allTips(repo) }), { signal: ac.signal }), /client gone/);
  } finally { r.close(); }
});

test('random wants and haves: the plan is what git packs', async () => {
  const repos = [makeBitmapRepo(t.dir, 'prop-pack', { after: true, lookupTable: true }), makeBitmapRepo(t.dir, 'prop-midx', { layout: 'midx-many', after: true })];
  for (const repo of repos) {
    const commits = git(['rev-list', '--all'], { cwd: repo }).trim().split('\n');
    const tags = git(['for-each-ref', '--format=%(objectname)', 'refs/tags'], { cwd: repo }).trim().split('\n');
    const objs = [...commits, ...tags];
    const r = Repository.open(repo);
    let plans = 0, runs = 0;
    try {
      await fc.assert(fc.asyncProperty(
        fc.uniqueArray(fc.constantFrom(...objs), { minLength: 1, maxLength: 3 }),
        fc.uniqueArray(fc.constantFrom(...commits), { minLength: 0, maxLength: 3 }),
        fc.boolean(),
        fc.constantFrom(undefined, ...FILTERS),
        async (w, h, includeTag, filter) => {
          const req = request(repo, { wants: w.map((x) => Buffer.from(x, 'hex')), haves: h.map((x) => Buffer.from(x, 'hex')), includeTag, filter });
          const plan = await bitmapPlan(r, req);
          runs++;
          if (plan) plans++;
          // declining is allowed where git walks (haves outside the bitmap); otherwise the set must be git's
          if (!plan) return;
          assert.deepEqual(diff(planSet(plan), oracleSet(repo, req)), { onlyA: [], onlyB: [] });
        },
      ), { numRuns: 25, seed: 37 });
      assert.ok(plans * 2 > runs, `most requests counted with bitmaps (${plans} of ${runs})`);
    } finally { r.close(); }
  }
});
