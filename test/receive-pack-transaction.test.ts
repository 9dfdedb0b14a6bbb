/**
 * The ref transaction on its own: two phases, rollback, git's lock files,
 * packed-refs rewrite, reflogs — checked with git itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { RefStore } from '../src/repo/refs.js';
import { RefTransaction, TxError } from '../src/repo/ref-transaction.js';
import { Reflogs } from '../src/repo/reflog.js';
import { countYields } from './helpers/yields.js';

function repo() {
  const t = tmp('gitwire-tx-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  const a = commit(w, 'a', { 'a.txt': 'a\n' });
  const b = commit(w, 'b', { 'b.txt': 'b\n' });
  const gd = join(w, '.git');
  git(['update-ref', 'refs/heads/packed', a], { cwd: w });
  git(['tag', 'v1', a], { cwd: w });
  git(['pack-refs', '--all'], { cwd: w });
  return { t, w, gd, a: Buffer.from(a, 'hex'), b: Buffer.from(b, 'hex'), store: new RefStore(gd, gd, 20) };
}

test('all or nothing: a failing edit rolls back every lock, nothing moves', async () => {
  const r = repo();
  try {
    const before = git(['for-each-ref'], { cwd: r.w });
    const tx = new RefTransaction(r.store);
    await assert.rejects(tx.prepare([
      { name: 'refs/heads/new', change: { kind: 'update', new: r.b }, expected: { kind: 'must-not-exist' }, message: 'push' },
      { name: 'refs/heads/packed', change: { kind: 'delete' }, expected: { kind: 'must-exist-and-match', oid: r.b }, message: 'push' },
    ]), (e: unknown) => e instanceof TxError && e.kind === 'incorrect-old-value' && /is at .* but expected/.test(e.message));
    assert.equal(git(['for-each-ref'], { cwd: r.w }), before);
    const locks = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? locks(join(d, e.name)) : e.name.endsWith('.lock') ? [e.name] : []));
    assert.deepEqual(locks(r.gd), []);
  } finally { r.t.cleanup(); }
});

test('allowFailure: one rejected edit, the others commit; packed-refs rewritten as git reads it; reflogs', async () => {
  const r = repo();
  try {
    const tx = new RefTransaction(r.store, {
      allowFailure: true,
      reflogs: new Reflogs(r.gd, r.gd, 'true', false),
      ident: 'C O Mitter <committer@example.com> 1700000000 +0000',
    });
    const lock = join(r.gd, 'refs', 'heads', 'busy.lock');
    closeSync(openSync(lock, 'wx'));
    await tx.prepare([
      { name: 'refs/heads/packed', change: { kind: 'delete' }, expected: { kind: 'must-exist-and-match', oid: r.a }, message: 'push' },
      { name: 'refs/heads/busy', change: { kind: 'update', new: r.b }, expected: { kind: 'must-not-exist' }, message: 'push' },
      { name: 'refs/heads/main', change: { kind: 'update', new: r.a }, expected: { kind: 'must-exist-and-match', oid: r.b }, message: 'push' },
    ]);
    assert.deepEqual([...tx.rejected.keys()], [1]);
    assert.equal(tx.rejected.get(1)!.kind, 'create-exists');
    tx.commit();
    unlinkSync(lock);
    assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: r.w }).trim(), r.a.toString('hex'));
    assert.equal(git(['for-each-ref', 'refs/heads/packed'], { cwd: r.w }), '');
    const packed = readFileSync(join(r.gd, 'packed-refs'), 'utf8');
    assert.ok(!packed.includes('refs/heads/packed'));
    assert.ok(packed.startsWith('# pack-refs with: peeled fully-peeled sorted \n'));
    assert.equal(git(['rev-parse', 'v1'], { cwd: r.w }).trim(), r.a.toString('hex'));
    // HEAD points at main: both logs get the entry
    const line = `${r.b.toString('hex')} ${r.a.toString('hex')} C O Mitter <committer@example.com> 1700000000 +0000\tpush\n`;
    assert.ok(readFileSync(join(r.gd, 'logs', 'refs', 'heads', 'main'), 'utf8').endsWith(line));
    assert.ok(readFileSync(join(r.gd, 'logs', 'HEAD'), 'utf8').endsWith(line));
    assert.ok(!existsSync(join(r.gd, 'logs', 'refs', 'heads', 'packed')));
    assert.equal(git(['fsck', '--no-progress'], { cwd: r.w }).trim(), '');
  } finally { r.t.cleanup(); }
});

test('preparing thousands of edits gives the loop away on its slicer (the locks stay held), then commits them all', async () => {
  const r = repo();
  try {
    const edits = Array.from({ length: 3000 }, (_, i) => ({
      name: `refs/heads/m/${String(i).padStart(5, '0')}`, change: { kind: 'update' as const, new: r.a }, expected: { kind: 'must-not-exist' as const }, message: 'push',
    }));
    const tx = new RefTransaction(r.store, { allowFailure: true });
    const yields = await countYields(() => tx.prepare(edits));
    assert.ok(yields >= Math.floor(3000 / 64) - 2, `prepare gave the loop away ${yields} times`);
    tx.commit();
    assert.equal(git(['for-each-ref', '--count=5000', 'refs/heads/m/'], { cwd: r.gd }).trim().split('\n').length, 3000);
  } finally { r.t.cleanup(); }
});
