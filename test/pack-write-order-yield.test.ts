/**
 * The write path's per-request setup yields the event loop on the
 * request's slicer: laying out a plan of a whole pack builds the pack's
 * full reverse index (a check of every .rev entry, or the sorted offsets
 * as numbers), which on a pack of millions of objects held the loop
 * 100-240 ms in one go. The order built while yielding is the one built
 * in one piece.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, run, tmp } from './helpers/git.js';
import { openRepo, packsOf, planOf } from './helpers/pack-write.js';
import { layOut } from '../src/pack/produce/write/layout.js';
import { Slicer } from '../src/util/budget.js';
import type { RanksPart } from '../src/pack/produce/plan.js';

/** A repository whose one pack holds `n` blobs (and a tree and a commit naming them). */
function bigPack(dir: string, n: number, rev: boolean): string {
  const repo = join(dir, rev ? 'rev.git' : 'norev.git');
  git(['init', '-q', '--bare', repo]);
  let s = '';
  for (let i = 0; i < n; i++) { const d = `blob ${i}\n`; s += `blob\nmark :${i + 1}\ndata ${d.length}\n${d}`; }
  s += 'commit refs/heads/main\ncommitter A <a@b> 1700000000 +0000\ndata 2\nc\n';
  for (let i = 0; i < n; i++) s += `M 100644 :${i + 1} f${i}\n`;
  const r = run('git', ['fast-import', '--quiet'], { cwd: repo, input: s });
  assert.equal(r.status, 0, r.stderr.toString());
  const pack = readdirSync(join(repo, 'objects', 'pack')).find((f) => f.endsWith('.pack'))!;
  if (rev) git(['index-pack', '--rev-index', join(repo, 'objects', 'pack', pack)]);
  return repo;
}

for (const rev of [true, false]) {
  test(`layout of a whole pack (${rev ? 'with' : 'without'} a .rev): the pack's order is built yielding on the slicer, and is the same`, { timeout: 60_000 }, async () => {
    const t = tmp();
    try {
      const dir = bigPack(t.dir, 30_000, rev);
      assert.equal(readdirSync(join(dir, 'objects', 'pack')).some((f) => f.endsWith('.rev')), rev);
      const repo = openRepo(dir);
      const pack = packsOf(repo)[0]!;
      const n = pack.index.count;
      const part: RanksPart = { kind: 'ranks', pack, ranks: Uint32Array.from({ length: n }, (_, i) => i) };
      // a slice of no time: every check of the clock gives the loop away
      const slicer = new Slicer(0);
      const layout = await layOut(repo.odb, planOf([part]), slicer, () => false);
      assert.ok(slicer.yields > 0, `no yield while the order of ${n} entries was built`);
      assert.equal(layout.groups[0]!.wholePack, true);
      // the same order as built in one piece by another open of the repository
      const fresh = packsOf(openRepo(dir))[0]!;
      assert.deepEqual(layout.groups[0]!.positions, fresh.positionsInPackOrder());
      assert.deepEqual(layout.groups[0]!.offsets, fresh.offsetsInPackOrder());
    } finally { t.cleanup(); }
  });
}
