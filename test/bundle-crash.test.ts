/**
 * A maker killed mid-make (the node died, SIGKILL, OOM) leaves its
 * temporary file, as large as the bundle. The next make on this host
 * removes the files of this host's dead makers before it begins (each
 * restart that died again would otherwise add one, for a day); a live
 * maker's file, another host's (on shared storage), and one written to
 * within the minute (a maker of a container with this host's name) are
 * left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { bundleDir, listBundles, makeBundle } from '../src/bundle/index.js';

test('a maker killed mid-make: its temporary file is removed by the next make on the host; a live one\'s and another host\'s are kept', async () => {
  const t = tmp('gitwire-bundle-crash-');
  try {
    const repo = makeBitmapRepo(t.dir, 'crash.git', { commits: 12 });
    const dir = bundleDir({ commonDir: repo });
    mkdirSync(dir, { recursive: true });
    // a process that has exited: its id names no process now
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    const host = createHash('sha256').update(hostname()).digest('hex').slice(0, 8);
    const left = join(dir, `.tmp-${host}-${dead}-0123456789ab`);
    const live = join(dir, `.tmp-${host}-${process.ppid}-0123456789ab`);
    const other = join(dir, `.tmp-00000000-${dead}-0123456789ab`);
    const fresh = join(dir, `.tmp-${host}-${dead}-fresh0123456`);
    // written to two minutes ago, as a maker killed then left them; `fresh` just now (a maker in another pid namespace)
    const then = new Date(Date.now() - 120_000);
    for (const f of [left, live, other, fresh]) writeFileSync(f, Buffer.alloc(1024 * 1024));
    for (const f of [left, live, other]) utimesSync(f, then, then);
    await makeBundle(Repository.open(repo));
    assert.equal(listBundles(dir).length, 1);
    assert.equal(existsSync(left), false, 'a dead maker\'s temporary file was left');
    assert.equal(existsSync(live), true, 'a live maker\'s temporary file was removed');
    assert.equal(existsSync(other), true, 'another host\'s temporary file was removed');
    assert.equal(existsSync(fresh), true, 'a file written to within the minute was removed');
  } finally {
    t.cleanup();
  }
});
