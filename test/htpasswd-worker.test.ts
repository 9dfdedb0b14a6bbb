/**
 * htpasswd checks run bcrypt on a worker thread: while one runs, the event
 * loop keeps turning (bcryptjs's async mode would hold it ~70 ms a check);
 * right and wrong passwords and unknown users answer as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { tmp } from './helpers/git.js';
import { Htpasswd } from '../src/transport/htpasswd.js';

test('bcrypt runs off the event loop; answers are unchanged', async () => {
  const t = tmp('gitwire-htpw-');
  try {
    const file = join(t.dir, 'htpasswd');
    writeFileSync(file, `alice:${bcrypt.hashSync('s3cret', 10).replace(/^\$2a\$/, '$2y$')}\n`);
    const h = new Htpasswd(file, () => undefined, 0);
    // turns of the loop while one check runs (a worker's ~70 ms of hashing leaves the loop free)
    let turns = 0, running = true;
    const spin = () => { turns++; if (running) setImmediate(spin); };
    setImmediate(spin);
    const wrong = await h.verify('alice', 'nope');
    running = false;
    assert.equal(wrong, false);
    assert.ok(turns > 50, `the loop turned ${turns} times during one bcrypt check`);
    assert.equal(await h.verify('alice', 's3cret'), true);
    assert.equal(await h.verify('mallory', 's3cret'), false);
    // many at once: all answered, in any order
    const many = await Promise.all(Array.from({ length: 6 }, (_, i) => h.verify('alice', i % 2 ? 's3cret' : 'x')));
    assert.deepEqual(many, [false, true, false, true, false, true]);
  } finally { t.cleanup(); }
});
