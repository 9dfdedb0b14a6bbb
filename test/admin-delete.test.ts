/**
 * deleteRepository() (#38): renamed away in one step, then removed; the
 * pool and the fleet told; a ref walk that the deletion overtook fails
 * instead of answering with no refs (files and reftable).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { createRepository, deleteRepository } from '../src/admin/index.js';
import { openRefStoreAt } from '../src/repo/refs/open.js';
import { GitwireError } from '../src/errors.js';

test('deleteRepository: gone in one rename, empty parents removed up to the root, pool and coordinator told; a work tree and a missing path refused', async () => {
  const t = tmp('gitwire-del-');
  try {
    const root = join(t.dir, 'root');
    const dir = join(root, 'a', 'b', 'r.git');
    createRepository(dir);
    mkdirSync(join(root, 'a', 'keep'));
    const told: string[] = [];
    const r = await deleteRepository(dir, { root, pool: { invalidate: (d) => told.push(`pool ${d}`) }, coordinator: { publish: (d) => told.push(`fleet ${d}`) } });
    assert.equal(r.path, dir);
    assert.deepEqual(told, [`pool ${dir}`, `fleet ${dir}`]);
    assert.equal(existsSync(join(root, 'a', 'b')), false);
    assert.deepEqual(readdirSync(join(root, 'a')), ['keep']);
    await assert.rejects(deleteRepository(dir), (e: unknown) => e instanceof GitwireError && e.code === 'GW_NOT_A_REPO');
    const wt = join(root, 'wt');
    git(['init', '-q', wt]);
    await assert.rejects(deleteRepository(join(wt, '.git')), (e: unknown) => e instanceof GitwireError && e.code === 'GW_NOT_A_REPO');
    assert.ok(existsSync(join(wt, '.git', 'HEAD')));
  } finally { t.cleanup(); }
});

for (const format of ['files', 'reftable'] as const) {
  test(`a ${format} ref walk of a repository renamed away (deleted) under it fails: never an empty answer`, async () => {
    const t = tmp('gitwire-delrefs-');
    try {
      const src = join(t.dir, 'src');
      git(['init', '-q', '-b', 'main', src]);
      commit(src, 'one', { 'a.txt': 'a\n' });
      const dir = join(t.dir, 'r.git');
      createRepository(dir, { refFormat: format });
      if (format === 'files') git(['push', '-q', dir, 'main'], { cwd: src });
      const refs = openRefStoreAt(dir, 20, {});
      const names: string[] = [];
      await refs.scan('refs/', (r) => names.push(r.name.toString()));
      assert.deepEqual(names, format === 'files' ? ['refs/heads/main'] : []);
      renameSync(dir, join(t.dir, '.r.git.deleting-000000000000'));
      // the store opened before (a pooled repository), and one opened after
      await assert.rejects(refs.scan('refs/', () => undefined), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT');
      await assert.rejects(openRefStoreAt(dir, 20, {}).scan('refs/', () => undefined), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT');
      if (format === 'files') assert.throws(() => [...refs.iterate('refs/')], (e: unknown) => e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT');
    } finally { t.cleanup(); }
  });
}
