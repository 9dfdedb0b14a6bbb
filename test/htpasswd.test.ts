/**
 * --htpasswd: an unknown user costs what a known one does (the dummy hash
 * has the file's most common cost and goes through the same steps), and
 * an edit that keeps size, inode and mtime is seen by the file's content.
 * Timing itself is measured in bench/htpasswd-timing.mjs, not here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { tmp } from './helpers/git.js';
import { Htpasswd } from '../src/transport/htpasswd.js';

const y = (pw: string, cost: number) => bcrypt.hashSync(pw, cost).replace(/^\$2[ab]\$/, '$2y$');
const costOf = (salt: string) => Number(/^\$2[abxy]\$(\d\d)\$/.exec(salt)?.[1]);

/** Records the salt of every bcrypt hash it is asked for. */
class Recording extends Htpasswd {
  readonly salts: string[] = [];
  protected override hash(password: string, salt: string): Promise<string | undefined> {
    this.salts.push(salt);
    return super.hash(password, salt);
  }
}

test('an unknown user is compared at the file\'s most common cost, through the same hash as a known user\'s wrong password', async () => {
  const t = tmp('gitwire-htpw-cost-');
  try {
    const files: Array<[string, Array<[string, number]>, number]> = [
      ['cost5', [['alice', 5]], 5],
      ['cost11', [['alice', 11]], 11],
      ['mixed', [['alice', 4], ['bob', 4], ['carol', 12]], 4],
    ];
    for (const [name, users, common] of files) {
      const file = join(t.dir, name);
      writeFileSync(file, users.map(([u, c]) => `${u}:${y('right', c)}\n`).join(''));
      const h = new Recording(file, () => undefined);
      assert.equal(costOf(h.dummyHash), common, `${name}: the dummy's cost`);
      // a known user's wrong password, an unknown user, each twice: one hash each time, at the same cost
      for (const [u, pw] of [['alice', 'wrong'], ['mallory', 'wrong'], ['alice', 'wrong'], ['mallory', 'right'], ['mallory', 'right']]) {
        const before = h.salts.length;
        assert.equal(await h.verify(u!, pw!), false, `${name}: ${u}`);
        assert.equal(h.salts.length, before + 1, `${name}: ${u} costs one bcrypt hash`);
        assert.equal(costOf(h.salts.at(-1)!), common, `${name}: ${u} at cost ${common}`);
      }
      // a right password is remembered (a push's second request); an unknown user never is
      assert.equal(await h.verify('alice', 'right'), true);
      const n = h.salts.length;
      assert.equal(await h.verify('alice', 'right'), true);
      assert.equal(h.salts.length, n, 'a repeated right password is not hashed again');
      assert.equal(await h.verify('alice', 'wrong'), false);
      assert.equal(h.salts.length, n + 1, 'a wrong password is hashed however often it comes');
    }
  } finally { t.cleanup(); }
});

test('a hash bcryptjs refuses at once ($2x$, cost 3) is skipped with a warning: the name costs what an unknown one does', async () => {
  const t = tmp('gitwire-htpw-refused-');
  try {
    const file = join(t.dir, 'htpasswd');
    const x = y('right', 5).replace(/^\$2y\$/, '$2x$');
    const three = y('right', 5).replace(/^\$2y\$05\$/, '$2y$03$');
    writeFileSync(file, `alice:${y('right', 5)}\nxavier:${x}\ntrey:${three}\n`);
    const warnings: string[] = [];
    const h = new Recording(file, (m) => warnings.push(m));
    assert.equal(h.size, 1);
    assert.equal(warnings.length, 2, warnings.join('\n'));
    for (const u of ['xavier', 'trey']) {
      assert.equal(await h.verify(u, 'right'), false);
      assert.equal(costOf(h.salts.at(-1)!), 5, `${u}: compared against the dummy at the common cost`);
    }
  } finally { t.cleanup(); }
});

test('the dummy follows the file: a new most common cost after an edit; a file without bcrypt users gets htpasswd -B\'s cost 5', async () => {
  const t = tmp('gitwire-htpw-follow-');
  try {
    const file = join(t.dir, 'htpasswd');
    writeFileSync(file, `alice:${y('a', 4)}\n`);
    const h = new Htpasswd(file, () => undefined, 60_000, 0);
    assert.equal(costOf(h.dummyHash), 4);
    const first = h.dummyHash;
    writeFileSync(file, `alice:${y('a', 4)}\nbob:${y('b', 6)}\ncarol:${y('c', 6)}\n`);
    assert.equal(await h.verify('mallory', 'x'), false);
    assert.equal(costOf(h.dummyHash), 6);
    assert.notEqual(h.dummyHash.slice(7, 29), first.slice(7, 29), 'a new salt per load');
    writeFileSync(file, 'bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n');
    assert.equal(await h.verify('mallory', 'x'), false);
    assert.equal(costOf(h.dummyHash), 5);
  } finally { t.cleanup(); }
});

test('an edit that keeps size, inode and mtime is seen by content after the recheck interval', async () => {
  const t = tmp('gitwire-htpw-edit-');
  try {
    const file = join(t.dir, 'htpasswd');
    // whole seconds, so utimes restores the stamp exactly
    const stamp = 1_700_000_000;
    writeFileSync(file, `alice:${y('old password', 4)}\n`);
    utimesSync(file, stamp, stamp);
    const h = new Htpasswd(file, () => undefined, 60_000, 50);
    assert.equal(await h.verify('alice', 'old password'), true);
    // in place (same inode), same length (bcrypt hashes are 60 characters), mtime put back
    writeFileSync(file, `alice:${y('new password', 4)}\n`);
    utimesSync(file, stamp, stamp);
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(await h.verify('alice', 'new password'), true, 'the new password works');
    assert.equal(await h.verify('alice', 'old password'), false, 'the old one no longer does');
  } finally { t.cleanup(); }
});
