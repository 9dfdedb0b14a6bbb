/**
 * A host key gitwire creates always loads: ssh2's ed25519 writer now and
 * then produces a file its own parser refuses (about 1 in 250), which made
 * `serve --ssh` fail to start on a fresh key now and then.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { loadHostKey } from '../src/transport/ssh/keys.js';

test('2,000 host keys created in a row all load', () => {
  const t = tmp('gitwire-hostkeys-');
  try {
    for (let i = 0; i < 2000; i++) {
      const k = loadHostKey(join(t.dir, `k${i}`));
      assert.equal(k.created, true);
    }
  } finally { t.cleanup(); }
});
