/**
 * The ref transaction on its own: two phases, rollback, git's lock files,
 * packed-refs rewrite, reflogs — checked with git itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs, { closeSync, existsSync, openSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { FilesRefStore as RefStore, RefTransaction, TxError } from '../src/repo/refs/index.js';
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
    await tx.commit();
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
    // the renames too: 50,000 of them held serve's loop 3.5 s in one go
    const committing = await countYields(() => tx.commit());
    assert.ok(committing >= Math.floor(3000 / 64) - 2, `commit gave the loop away ${committing} times`);
    assert.equal(git(['for-each-ref', '--count=5000', 'refs/heads/m/'], { cwd: r.gd }).trim().split('\n').length, 3000);
  } finally { r.t.cleanup(); }
});

/**
 * Count the path lookups `fn` makes through the named node:fs functions
 * (the ESM bindings follow, by syncBuiltinESMExports): a call is one,
 * but a realpath lstats every component of its path itself, so it counts
 * as many as the path has.
 */
async function countFs<T>(names: Array<'lstatSync' | 'realpathSync' | 'openSync'>, fn: () => Promise<T>): Promise<{ calls: number; result: T }> {
  const f = fs as unknown as Record<string, (...a: unknown[]) => unknown>;
  const real = names.map((n) => f[n]!);
  let calls = 0;
  names.forEach((n, i) => {
    const r = real[i]!;
    f[n] = (...a: unknown[]) => { calls += n === 'realpathSync' ? String(a[0]).split('/').length : 1; return r(...a); };
  });
  syncBuiltinESMExports();
  try {
    const result = await fn();
    return { calls, result };
  } finally {
    names.forEach((n, i) => { f[n] = real[i]!; });
    syncBuiltinESMExports();
  }
}

test('a ref 1,500 levels deep is created with syscalls linear in its depth (each ancestor was realpath-ed: quadratic)', async () => {
  const r = repo();
  try {
    const depth = 1500;
    const name = `refs/heads/${'d/'.repeat(depth)}x`;
    const { calls, result } = await countFs(['lstatSync', 'realpathSync', 'openSync'], async () => {
      const tx = new RefTransaction(r.store, {});
      await tx.prepare([{ name, change: { kind: 'update', new: r.a }, expected: { kind: 'must-not-exist' }, message: 'push' }]);
      await tx.commit();
      return r.store.resolve(name)?.hex?.toString();
    });
    assert.equal(result, r.a.toString('hex'));
    assert.ok(calls < 10 * depth, `${calls} calls for depth ${depth}`);
    assert.equal(git(['rev-parse', name], { cwd: r.w }).trim(), r.a.toString('hex'));
    // a second ref beside it: the directories known inside are not walked again
    const again = await countFs(['lstatSync', 'realpathSync'], async () => r.store.readLoose(name));
    assert.ok(again.calls <= 2, `${again.calls} calls to read it again`);
  } finally { r.t.cleanup(); }
});

test('a push request already in memory (20,000 commands, 190,000 shallow lines) is read in slices', async () => {
  const { PktReader } = await import('../src/pktline/reader.js');
  const { readPushRequest } = await import('../src/protocol/receive/commands.js');
  const { pushBody } = await import('./helpers/stall.js');
  const zero = '0'.repeat(40), one = '1'.repeat(40);
  const body = pushBody(Array.from({ length: 20_000 }, (_, i) => `${zero} ${one} refs/heads/r${i}`), 'report-status', { shallow: Array.from({ length: 190_000 }, (_, i) => i.toString(16).padStart(40, 'a')) });
  const reader = new PktReader((async function* () { yield body; })(), { chomp: true });
  let req: Awaited<ReturnType<typeof readPushRequest>> | undefined;
  const yields = await countYields(async () => { req = await readPushRequest(reader, { hexLen: 40, format: 'sha1', advertiseAtomic: true, advertisePushOptions: true }); });
  assert.equal(req?.commands.length, 20_000);
  assert.equal(req?.shallow.length, 190_000);
  assert.ok(yields >= Math.floor(210_000 / 64) - 2, `reading gave the loop away ${yields} times`);
});
