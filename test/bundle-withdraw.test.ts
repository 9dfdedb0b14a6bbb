/**
 * `--bundles auto` and history taken back: a branch deleted or force-pushed
 * over (a secret pushed by mistake) is no longer in a clone. The bundle
 * made before still held it, and was offered to every clone and served
 * until it was 6 hours old (remakeAfterMs). Now the next check (a clone,
 * at most every checkEveryMs) withdraws it at once, however young, and
 * makes one of what is there; a fast-forward leaves a young bundle alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { gitRun } from './helpers/cluster.js';
import { startServer } from '../src/transport/server.js';
import { BundleService, type BundleLogLine } from '../src/bundle/service.js';
import { bundleDir, listBundles } from '../src/bundle/index.js';

test('a deleted branch or a force push withdraws a young bundle that holds it; a fast-forward does not', async () => {
  const t = tmp('gitwire-bundle-withdraw-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const repo = makeBitmapRepo(root, 'w.git', { commits: 12 });
  const work = join(t.dir, 'work');
  git(['clone', '-q', repo, work]);
  commit(work, 'secret', { 'key.txt': 'AKIA-SECRET\n' });
  git(['push', '-q', 'origin', 'HEAD:refs/heads/oops'], { cwd: work });
  const oops = git(['rev-parse', 'HEAD'], { cwd: work }).trim();
  const lines: BundleLogLine[] = [];
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 1, checkEveryMs: 0, remakeAfterMs: 3600_000, graceMs: 3600_000, log: (l) => lines.push(l) });
  const s = await startServer({ root, http: 0, bundles, log: () => undefined });
  const url = `http://127.0.0.1:${s.httpPort}/w.git`;
  let n = 0;
  const clone = async () => {
    const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, `c${n++}`)]);
    assert.equal(r.code, 0, r.stderr);
    await bundles.idle();
  };
  const held = () => listBundles(bundleDir({ commonDir: repo })).map((b) => ({ name: b.name, oops: readFileSync(b.file).toString('latin1', 0, 8192).includes(oops) }));
  try {
    await clone();
    const first = held();
    assert.deepEqual(first.map((b) => b.oops), [true], 'the first bundle holds the branch');
    // a fast-forward of main: behind, young, left alone
    git(['checkout', '-q', '-b', 'm', 'origin/main'], { cwd: work });
    commit(work, 'more', { 'more.txt': 'more\n' });
    git(['push', '-q', 'origin', 'HEAD:main'], { cwd: work });
    await clone();
    assert.deepEqual(held(), first, 'a fast-forward remade a young bundle');
    // the branch deleted: the next clone's check withdraws the bundle and makes one without it
    git(['push', '-q', 'origin', ':refs/heads/oops'], { cwd: work });
    await new Promise((r) => setTimeout(r, 1100)); // a new token (seconds)
    await clone();
    const after = held();
    assert.deepEqual(after.map((b) => b.oops), [false], `the bundle holding the deleted branch is still there: ${JSON.stringify(after)}`);
    assert.equal(lines.at(-1)?.outcome, 'made');
    assert.ok(lines.at(-1)?.removed?.includes(first[0]!.name));
    const dl = await fetch(`${url}/info/bundles/${first[0]!.name}`);
    await dl.arrayBuffer();
    assert.equal(dl.status, 404, 'the withdrawn bundle is still downloadable');
    // a force push that rewinds main: withdrawn again
    const second = after[0]!.name;
    git(['push', '-q', '-f', 'origin', 'HEAD~1:main'], { cwd: work });
    await new Promise((r) => setTimeout(r, 1100));
    await clone();
    assert.ok(!held().some((b) => b.name === second), 'a force push left the bundle of the rewound history');
  } finally {
    await s.shutdown(1000);
    await bundles.close();
    t.cleanup();
  }
});
