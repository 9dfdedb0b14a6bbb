/**
 * `--bundles auto` on a repository whose bundle cannot be made (here a file
 * where its directory goes; in life a full disk, found only once the whole
 * pack is written): clones do not each bring another attempt (every
 * `clones` clones of anyone, anonymous included, cost a whole pack made and
 * thrown away); the next is no sooner than a check's interval.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { gitRun } from './helpers/cluster.js';
import { startServer } from '../src/transport/server.js';
import { BundleService, type BundleLogLine } from '../src/bundle/service.js';
import { bundleDir } from '../src/bundle/index.js';

test('a make that failed is not tried again on each clone, but after a check\'s interval', async () => {
  const t = tmp('gitwire-bundle-retry-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const repo = makeBitmapRepo(root, 'blocked.git', { commits: 12 });
  mkdirSync(join(repo, 'gitwire'));
  writeFileSync(bundleDir({ commonDir: repo }), 'not a directory');
  const lines: BundleLogLine[] = [];
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 1, checkEveryMs: 1500, log: (l) => lines.push(l) });
  const s = await startServer({ root, http: 0, bundles, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/blocked.git`;
    const clone = async (n: string) => {
      const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, n)]);
      assert.equal(r.code, 0, r.stderr);
      await bundles.idle();
    };
    for (const n of ['c1', 'c2', 'c3', 'c4']) await clone(n);
    assert.deepEqual(lines.map((l) => l.outcome), ['failed'], 'four clones in a row: one attempt');
    await new Promise((res) => setTimeout(res, 1600));
    await clone('c5');
    assert.deepEqual(lines.map((l) => l.outcome), ['failed', 'failed'], 'tried again once the interval is over');
  } finally {
    await s.shutdown(1000);
    await bundles.close();
    t.cleanup();
  }
});
