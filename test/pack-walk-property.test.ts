/**
 * The property test of #37 for the walk: over random repositories (merges,
 * skewed commit dates, directories copied and moved, shared blobs, tags)
 * and random requests (wants, haves, shallow grafts, thin, include-tag,
 * every filter), the plan's object set equals what git pack-objects packs.
 * Seeded: a failure names the seed and the request.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { git, tmp } from './helpers/git.js';
import { gitPackSet, request, walkSet } from './helpers/pack-walk.js';
import { randomRepo as makeRandomRepo, rng } from './helpers/random-repo.js';

const t = tmp('gitwire-walkprop-');
after(() => t.cleanup());
const randomRepo = (seed: number, format?: 'sha256') => makeRandomRepo(t.dir, seed, format);

const FILTERS = [undefined, undefined, undefined, 'blob:none', 'blob:limit=200', 'tree:0', 'tree:1', 'tree:2', 'object:type=blob', 'object:type=tree',
  'object:type=commit', 'sparse:oid=PATTERNS', 'combine:tree:2+blob:limit=300', 'combine:sparse:oid=PATTERNS+tree:3'];

test('random repositories and requests: the walk packs what git packs', async () => {
  const repos = [randomRepo(11), randomRepo(23), randomRepo(37), randomRepo(41, 'sha256')];
  // one repository with the classic edge marking (git and the walk both read it from the repository)
  git(['--git-dir', repos[1]!.gitDir, 'config', 'pack.useSparse', 'false']);
  let cases = 0;
  await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => one(seed).catch((e: unknown) => {
    // fast-check reports the seed; the reason is printed here
    console.error(e);
    throw e;
  })), { seed: 4242, numRuns: 400, endOnFailure: true });
  async function one(seed: number): Promise<void> {
    const r = rng(seed);
    const repo = repos[seed % repos.length]!;
    const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
    const some = (a: string[], max: number) => Array.from({ length: Math.floor(r() * (max + 1)) }, () => pick(a));
    const wants = [pick(repo.commits), ...some(repo.commits, 2)];
    if (r() < 0.15 && repo.tags.length) wants.push(pick(repo.tags));
    if (r() < 0.1) wants.push(pick(repo.trees));
    if (r() < 0.05) wants.push(pick(repo.blobs));
    const haves = some(repo.commits, 3);
    if (r() < 0.1 && repo.tags.length) haves.push(pick(repo.tags));
    const useShallow = r() < 0.3;
    const filter = pick(FILTERS)?.replaceAll('PATTERNS', repo.patterns);
    const req = request(repo.gitDir, {
      wants: wants.map((h) => Buffer.from(h, 'hex')),
      haves: haves.map((h) => Buffer.from(h, 'hex')),
      extraEdges: r() < 0.1 ? [Buffer.from(pick(repo.commits), 'hex')] : [],
      shallow: useShallow ? some(repo.commits, 3).map((h) => Buffer.from(h, 'hex')) : [],
      useShallow,
      thin: r() < 0.5,
      includeTag: r() < 0.5,
      filter,
    });
    const want = gitPackSet(req, t.dir);
    const ours = await walkSet(req);
    cases++;
    if (ours.sorted.join() !== want.join()) {
      const extra = ours.sorted.filter((x) => !want.includes(x)), lacking = want.filter((x) => !ours.sorted.includes(x));
      assert.fail(`seed ${seed}: ${JSON.stringify({ ...req, wants, haves, shallow: req.shallow.map((b) => b.toString('hex')), extraEdges: req.extraEdges.map((b) => b.toString('hex')) })}: extra ${extra.join(' ')}; lacking ${lacking.join(' ')}`);
    }
  }
  assert.equal(cases, 400);
});
