/**
 * LFS's pieces on their own: tokens (scope, expiry, forgery, one spelling),
 * Range parsing, the SSH command line, oid checks, and the lock store
 * (one owner under concurrency, owner-only unlock, force, listing pages).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { closeSync, existsSync, openSync, readdirSync, rmSync, statSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { LocalRepositoryStore } from '../src/lfs/store/index.js';
import { sqDequote } from '../src/transport/ssh/exec.js';
import { covers, isOid, LockStore, parseLfsExec, parseLfsRoute, parseRange, TokenSigner } from '../src/lfs/index.js';
import { parseS3Url } from '../src/lfs/store/s3.js';
import { tmp } from './helpers/git.js';

test('tokens: scoped, expiring, unforgeable, one spelling', () => {
  let now = 1_000_000;
  const a = new TokenSigner(Buffer.alloc(32, 1), () => now);
  const b = new TokenSigner(Buffer.alloc(32, 2), () => now);
  const { token, expiresAt } = a.sign({ repository: '/srv/r.git', operation: 'download', user: 'alice' }, 60);
  assert.equal(expiresAt, now + 60);
  assert.deepEqual(a.verify(token), { repository: '/srv/r.git', operation: 'download', user: 'alice', expiresAt: now + 60 });
  assert.equal(b.verify(token), undefined, 'another key');
  assert.deepEqual(a.fromHeader(`Bearer ${token}`)?.user, 'alice');
  assert.equal(a.fromHeader(`Basic ${token}`), undefined);
  // any change to payload or signature, including base64's spare bits
  for (let i = 7; i < token.length; i++) {
    const c = token[i] === 'A' ? 'B' : 'A';
    const t2 = token.slice(0, i) + c + token.slice(i + 1);
    if (t2 !== token) assert.equal(a.verify(t2), undefined, `changed at ${i}`);
  }
  now += 60;
  assert.equal(a.verify(token), undefined, 'expired');
  assert.equal(covers('upload', 'download'), true);
  assert.equal(covers('download', 'upload'), false);
  const anon = a.sign({ repository: '/r', operation: 'upload' }, 5);
  assert.equal(a.verify(anon.token)?.user, undefined);
});

test('Range: one range of bytes, else the whole object or 416', () => {
  assert.deepEqual(parseRange('bytes=0-9', 100), [0, 9]);
  assert.deepEqual(parseRange('bytes=90-', 100), [90, 99]);
  assert.deepEqual(parseRange('bytes=-10', 100), [90, 99]);
  assert.deepEqual(parseRange('bytes=50-1000', 100), [50, 99]);
  assert.equal(parseRange('bytes=100-', 100), 'bad');
  // last below first: invalid, ignored (RFC 9110 14.1.1), not 416
  assert.equal(parseRange('bytes=9-3', 100), undefined);
  assert.equal(parseRange('bytes=100000000000000000001-100000000000000000000', 100), undefined);
  assert.equal(parseRange('bytes=-0', 100), 'bad');
  assert.equal(parseRange('bytes=0-1,5-6', 100), undefined);
  assert.equal(parseRange(undefined, 100), undefined);
});

test('routes and oids', () => {
  assert.deepEqual(parseLfsRoute('/g/p.git/info/lfs/objects/batch'), { repo: '/g/p.git', kind: 'batch' });
  assert.deepEqual(parseLfsRoute('/p/info/lfs/locks/abc/unlock'), { repo: '/p', kind: 'unlock', id: 'abc' });
  assert.deepEqual(parseLfsRoute('/p/info/lfs/objects/../x'), { repo: '/p', kind: 'unknown' });
  assert.equal(parseLfsRoute('/p.git/info/refs'), undefined);
  assert.equal(isOid('a'.repeat(64)), true);
  for (const bad of ['A'.repeat(64), 'a'.repeat(63), `${'a'.repeat(63)}/`, `../${'a'.repeat(61)}`, 42]) assert.equal(isOid(bad), false);
  assert.deepEqual(parseS3Url('s3://my-bucket/a/b/'), { bucket: 'my-bucket', prefix: 'a/b' });
  assert.deepEqual(parseS3Url('s3://my-bucket'), { bucket: 'my-bucket', prefix: '' });
  assert.equal(parseS3Url('s3://my-bucket/../x'), undefined);
  assert.equal(parseS3Url('http://x/y'), undefined);
});

test('locks: an unlock that crashed between its two unlinks, and a lock from before `<id>.id`, are unlocked after the grace', async () => {
  const t = tmp('gitwire-lfs-orphan-');
  try {
    const lfs = join(t.dir, 'lfs');
    const made = await new LockStore(lfs).create('x.psd', 'alice');
    assert.ok(made.ok);
    // the claim happened, the crash came before the lock file went
    unlinkSync(join(lfs, 'locks', `${made.lock.id}.id`));
    assert.deepEqual(await new LockStore(lfs).unlock(made.lock.id, 'alice', false), { ok: false, reason: 'not-found' }, 'within the grace: another unlock may be at it');
    assert.deepEqual(await new LockStore(lfs).byPath('x.psd'), made.lock, 'not lost');
    assert.deepEqual(await new LockStore(lfs, { orphanGraceMs: 0 }).unlock(made.lock.id, 'alice', false), { ok: true, lock: made.lock });
    assert.equal(await new LockStore(lfs).byPath('x.psd'), undefined);
    // an orphan's id never unlocks a newer lock of the path
    const a = await new LockStore(lfs).create('y.psd', 'alice');
    assert.ok(a.ok);
    unlinkSync(join(lfs, 'locks', `${a.lock.id}.id`));
    unlinkSync(join(lfs, 'locks', `${a.lock.id.slice(0, 32)}.json`));
    const b = await new LockStore(lfs).create('y.psd', 'bob');
    assert.ok(b.ok);
    assert.deepEqual(await new LockStore(lfs, { orphanGraceMs: 0 }).unlock(a.lock.id, 'bob', true), { ok: false, reason: 'not-found' });
    assert.deepEqual(await new LockStore(lfs).byPath('y.psd'), b.lock);
    assert.deepEqual(readdirSync(join(lfs, 'locks')).sort(), [`${b.lock.id.slice(0, 32)}.json`, `${b.lock.id}.id`].sort());
  } finally { t.cleanup(); }
});

test('local store: a marker after the upload; bytes changed in place (size, mtime kept) are found, never read whole as the oid, and replaced by an upload', async () => {
  const t = tmp('gitwire-lfs-marker-');
  try {
    const store = new LocalRepositoryStore(join(t.dir, 'lfs'));
    const bytes = randomBytes(300 * 1024 + 5);
    const oid = createHash('sha256').update(bytes).digest('hex');
    const w = await store.write(oid, (async function* () { yield bytes; })(), { expectedSize: bytes.length });
    assert.ok(w.ok);
    const file = join(t.dir, 'lfs', 'objects', oid.slice(0, 2), oid.slice(2, 4), oid);
    assert.ok(existsSync(join(t.dir, 'lfs', 'checked', oid.slice(0, 2), oid.slice(2, 4), oid)), 'the upload left a marker');
    assert.equal(await store.verifiedSize(oid), bytes.length);
    const drink = async (r: Readable | undefined) => {
      const parts: Buffer[] = [];
      try { for await (const c of r! as AsyncIterable<Buffer>) parts.push(c); } catch (e) { return { data: Buffer.concat(parts), error: e as { code?: string } }; }
      return { data: Buffer.concat(parts), error: undefined };
    };
    assert.ok((await drink(await store.read(oid))).data.equals(bytes));

    const st = statSync(file);
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.from('XX'), 0, 2, 1000);
    closeSync(fd);
    utimesSync(file, st.atime, st.mtime);
    assert.equal(await store.size(oid), bytes.length, 'the plain size still says it is there');
    assert.equal(await store.verifiedSize(oid), undefined, 'but it is not known good');
    const whole = await drink(await store.read(oid));
    assert.equal(whole.error?.code, 'GW_OBJECT_CORRUPT');
    assert.ok(whole.data.length < bytes.length, 'the end is withheld');
    assert.equal(await store.read(oid, 0, 99), undefined, 'a range of it is not served');

    const again = await store.write(oid, (async function* () { yield bytes; })(), { expectedSize: bytes.length });
    assert.ok(again.ok);
    assert.equal(await store.verifiedSize(oid), bytes.length);
    assert.ok((await drink(await store.read(oid, 10, 19))).data.equals(bytes.subarray(10, 20)));
    // an object stored before markers (none): hashed once on first use, then trusted by its marker
    rmSync(join(t.dir, 'lfs', 'checked'), { recursive: true });
    assert.ok((await drink(await store.read(oid))).data.equals(bytes));
    assert.ok(existsSync(join(t.dir, 'lfs', 'checked', oid.slice(0, 2), oid.slice(2, 4), oid)), 'a good download wrote the marker');
  } finally { t.cleanup(); }
});

test('SSH command lines: git-lfs-authenticate and git-lfs-transfer', () => {
  assert.deepEqual(parseLfsExec('git-lfs-transfer /g/p.git upload', sqDequote), { kind: 'lfs', command: 'git-lfs-transfer', path: '/g/p.git', operation: 'upload' });
  assert.deepEqual(parseLfsExec("git-lfs-authenticate 'my repo.git' download", sqDequote), { kind: 'lfs', command: 'git-lfs-authenticate', path: 'my repo.git', operation: 'download' });
  assert.equal(parseLfsExec('git-lfs-authenticate p.git lock', sqDequote)?.kind, 'lfs-bad');
  assert.equal(parseLfsExec('git-lfs-transfer -oProxy=x upload', sqDequote)?.kind, 'lfs-bad');
  assert.equal(parseLfsExec('git-lfs-transfer p.git', sqDequote)?.kind, 'lfs-bad');
  assert.equal(parseLfsExec('git-upload-pack p.git', sqDequote), undefined);
});

test('locks: one owner among concurrent requests, owner-only unlock, force, pages', async () => {
  const t = tmp('gitwire-lfs-locks-');
  try {
    const store = new LockStore(join(t.dir, 'lfs'));
    const all = await Promise.all(Array.from({ length: 40 }, (_, i) => store.create('a/b.psd', `u${i % 4}`)));
    const won = all.filter((r) => r.ok);
    assert.equal(won.length, 1);
    const lock = won[0]!.ok ? won[0]!.lock : undefined;
    for (const r of all) if (!r.ok) assert.equal(r.existing.id, lock!.id);
    // survives a new store object (a restart)
    const again = new LockStore(join(t.dir, 'lfs'));
    assert.deepEqual(await again.byPath('a/b.psd'), lock);
    assert.deepEqual(await again.byId(lock!.id), lock);
    const other = lock!.owner.name === 'u0' ? 'u1' : 'u0';
    assert.deepEqual(await again.unlock(lock!.id, other, false), { ok: false, reason: 'not-owner', lock });
    assert.deepEqual(await again.unlock(lock!.id, other, true), { ok: true, lock });
    assert.deepEqual(await again.unlock(lock!.id, other, true), { ok: false, reason: 'not-found' });
    // a new lock of the path has a new id: the old one does not unlock it
    const fresh = await again.create('a/b.psd', 'u2');
    assert.ok(fresh.ok && fresh.lock.id !== lock!.id);
    assert.deepEqual(await again.unlock(lock!.id, 'u2', true), { ok: false, reason: 'not-found' });
    for (let i = 0; i < 25; i++) await again.create(`f${i}`, 'u3');
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const p = await again.list(cursor, 10);
      seen.push(...p.locks.map((l) => l.path));
      if (!p.next) break;
      cursor = p.next;
    }
    assert.equal(seen.length, 26);
    assert.equal(new Set(seen).size, 26);
    assert.equal(await again.byId('../../etc/passwd'), undefined);
  } finally { t.cleanup(); }
});
