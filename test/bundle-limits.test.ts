/**
 * What `--bundles auto` spends, and on whom:
 * - its per-repository memory (clones seen, last look, last failure) is
 *   bounded: a client walking a million repository names grows none of it
 *   past MAX_TRACKED (it grew one entry per name, for ever);
 * - a repository whose packs are under `minBytes` (default 16 MiB) gets no
 *   bundle: a clone of it is cheap, and one anonymous client cloning every
 *   repository 3 times had a bundle made of each;
 * - the bytes made in an hour are held to `budgetBytes`: past it, a make
 *   waits for a later check. Both are logged (`skipped`, with the reason)
 *   and counted (gitwire_bundle_skipped_total{reason}).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { BundleService, MAX_TRACKED, type BundleLogLine } from '../src/bundle/service.js';
import { bundleDir, listBundles } from '../src/bundle/index.js';

test('clones of 20,000 repository names: what auto remembers stays within its cap', () => {
  const bundles = new BundleService({ mode: 'auto', clones: 3 });
  const offer = bundles.offer({ transport: 'http', dir: '/x', filtered: false })!;
  // names that are no repository with a bundle (nothing on disk): each one clone, the first of its window
  const t0 = performance.now();
  for (let i = 0; i < 20_000; i++) {
    const fake = { commonDir: `/nonexistent/walk/${i}.git`, config: { each: () => [] } } as unknown as Repository;
    offer.started!(fake, []);
  }
  const ms = performance.now() - t0;
  const tracked = (bundles as unknown as { clones: Map<string, unknown> }).clones.size;
  console.log(`20,000 names: ${tracked} remembered, ${ms.toFixed(0)} ms`);
  assert.ok(tracked <= MAX_TRACKED, `${tracked} repositories remembered (cap ${MAX_TRACKED})`);
  assert.ok(tracked > 0);
});

test('auto: a repository under minBytes gets no bundle (logged and counted); at 0 it does; the hour\'s budget holds the next one back', async () => {
  const t = tmp('gitwire-bundle-limits-');
  try {
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const a = makeBitmapRepo(root, 'a.git', { commits: 12 });
    const b = makeBitmapRepo(root, 'b.git', { commits: 12 });
    const lines: BundleLogLine[] = [];
    // the default floor (16 MiB): these repositories are far under it
    const dflt = new BundleService({ mode: 'auto', log: (l) => lines.push(l) });
    const skipped = await dflt.makeFor(a);
    assert.equal(skipped.outcome, 'skipped');
    assert.equal(skipped.reason, 'small');
    assert.ok(typeof skipped.bytes === 'number' && skipped.bytes > 0 && skipped.bytes < 16 * 1024 * 1024);
    assert.equal(dflt.stats.skippedSmall, 1);
    assert.equal(listBundles(bundleDir({ commonDir: a })).length, 0, 'nothing made');
    assert.deepEqual(lines.map((l) => l.outcome), ['skipped'], 'logged');
    await dflt.close();
    // no floor, a budget of one bundle: a's is made, b's waits
    const small = new BundleService({ mode: 'auto', minBytes: 0, budgetBytes: 1 });
    const made = await small.makeFor(a);
    assert.equal(made.outcome, 'made', 'the first make of an hour is always allowed');
    const held = await small.makeFor(b);
    assert.equal(held.outcome, 'skipped');
    assert.equal(held.reason, 'budget');
    assert.equal(small.stats.skippedBudget, 1);
    assert.equal(listBundles(bundleDir({ commonDir: b })).length, 0);
    await small.close();
    // no limit
    const free = new BundleService({ mode: 'auto', minBytes: 0, budgetBytes: 0 });
    assert.equal((await free.makeFor(b)).outcome, 'made');
    await free.close();
  } finally {
    t.cleanup();
  }
});
