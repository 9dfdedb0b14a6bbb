/**
 * Bundles and the server's own environment (ServeOptions.env: what
 * upload-pack runs with): a bundle holds what a fetch through this server
 * sees, and the download route answers as a fetch would.
 *
 * - `GIT_NAMESPACE` set for the server: a fetch sees the namespace's refs
 *   only, so a bundle of the whole repository (made by `gitwire bundle
 *   create`) is neither listed nor downloadable by its name.
 * - hideRefs given in the environment (`GIT_CONFIG_COUNT`/`KEY`/`VALUE`):
 *   the bundle `--bundles auto` makes leaves those refs out, as the
 *   advertisement does, and is the view the list and the route agree on.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { gitRun } from './helpers/cluster.js';
import { startServer } from '../src/transport/server.js';
import { BundleService } from '../src/bundle/service.js';
import { bundleDir, listBundles, makeBundle } from '../src/bundle/index.js';
import { Repository } from '../src/repo/repository.js';

let t: ReturnType<typeof tmp>;
let root: string;
before(() => { t = tmp('gitwire-bundle-visibility-'); root = join(t.dir, 'root'); mkdirSync(root); });
after(() => t.cleanup());

test('a server in a namespace (GIT_NAMESPACE) does not serve the whole repository\'s bundle by its name', async () => {
  const repo = makeBitmapRepo(root, 'ns.git', { commits: 12 });
  const made = await makeBundle(Repository.open(repo));
  const s = await startServer({ root, http: 0, bundles: { mode: 'serve' }, env: { ...process.env, GIT_NAMESPACE: 'tenant' }, log: () => undefined });
  try {
    const base = `http://127.0.0.1:${s.httpPort}/ns.git`;
    const adv = await (await fetch(`${base}/info/refs?service=git-upload-pack`)).text();
    assert.doesNotMatch(adv, /refs\/heads\/main/, 'the namespace has no refs of its own');
    for (const method of ['GET', 'HEAD']) {
      const dl = await fetch(`${base}/info/bundles/${made.name}`, { method });
      await dl.arrayBuffer();
      assert.equal(dl.status, 404, `${method} of the whole repository's bundle through a namespaced server`);
      assert.equal(dl.headers.get('etag'), null);
    }
  } finally {
    await s.shutdown(1000);
  }
});

test('hideRefs in the server\'s environment: the bundle `auto` makes leaves the hidden refs out, and is listed and served', async () => {
  const repo = makeBitmapRepo(root, 'hide.git', { commits: 12 });
  git(['branch', 'secret', 'main~3'], { cwd: repo });
  const secret = git(['rev-parse', 'secret'], { cwd: repo }).trim();
  const env = { ...process.env, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'uploadpack.hideRefs', GIT_CONFIG_VALUE_0: 'refs/heads/secret' };
  const bundles = new BundleService({ mode: 'auto', minBytes: 0, clones: 1, clonesWindowMs: 60_000 });
  const s = await startServer({ root, http: 0, bundles, env, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/hide.git`;
    const r = await gitRun(['clone', '-q', '--bare', url, join(t.dir, 'hide-clone')]);
    assert.equal(r.code, 0, r.stderr);
    await bundles.idle();
    const made = listBundles(bundleDir({ commonDir: repo }));
    assert.equal(made.length, 1, 'the clone made the bundle');
    const header = readFileSync(made[0]!.file).toString('latin1', 0, 4096);
    assert.doesNotMatch(header, /refs\/heads\/secret/, 'a ref the server hides is in its bundle');
    assert.ok(!header.includes(secret));
    const list = Buffer.from(await (await fetch(`${url}/git-upload-pack`, {
      method: 'POST', body: '0017command=bundle-uri\n00010000', headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request' },
    })).arrayBuffer()).toString('latin1');
    assert.ok(list.includes(`info/bundles/${made[0]!.name}`), `the bundle made is the one listed: ${list}`);
    const dl = await fetch(`${url}/info/bundles/${made[0]!.name}`);
    await dl.arrayBuffer();
    assert.equal(dl.status, 200);
  } finally {
    await s.shutdown(1000);
  }
});

test('a symbolic link in the bundle directory (to another repository\'s bundle) is neither listed nor served: the real bundle is', async () => {
  const other = makeBitmapRepo(root, 'other.git', { commits: 12 });
  const repo = makeBitmapRepo(root, 'linked.git', { commits: 12 });
  const theirs = await makeBundle(Repository.open(other));
  const ours = await makeBundle(Repository.open(repo));
  // named as a newer bundle of the same view
  const link = `${ours.token + 100}-${ours.view}.bundle`;
  symlinkSync(theirs.file, join(bundleDir({ commonDir: repo }), link));
  const s = await startServer({ root, http: 0, bundles: { mode: 'serve' }, log: () => undefined });
  try {
    const url = `http://127.0.0.1:${s.httpPort}/linked.git`;
    const list = Buffer.from(await (await fetch(`${url}/git-upload-pack`, {
      method: 'POST', body: '0017command=bundle-uri\n00010000', headers: { 'Git-Protocol': 'version=2', 'Content-Type': 'application/x-git-upload-pack-request' },
    })).arrayBuffer()).toString('latin1');
    assert.ok(list.includes(`info/bundles/${ours.name}`), `the repository's own bundle is listed: ${list}`);
    const dl = await fetch(`${url}/info/bundles/${link}`);
    await dl.arrayBuffer();
    assert.equal(dl.status, 404);
  } finally {
    await s.shutdown(1000);
  }
});
