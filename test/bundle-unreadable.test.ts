/**
 * A bundle whose header cannot be read (not a bundle; or a header past the
 * 64 MiB gitwire reads, a repository of a million refs) is read once per
 * file, not once per request: each bundle-uri list, download and clone
 * asked about it, and each time up to 64 MiB were read into a buffer grown
 * to 64 MiB. Measured in the CPU time of 30 list-and-clone rounds (loose:
 * it fails when every round reads the file again).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { BundleService } from '../src/bundle/service.js';
import { bundleDir, makeBundle } from '../src/bundle/index.js';

test('a bundle whose header cannot be read is read once, not on every request', async () => {
  const t = tmp('gitwire-bundle-unreadable-');
  try {
    const repo = makeBitmapRepo(t.dir, 'u.git', { commits: 12 });
    const r = Repository.open(repo);
    const real = await makeBundle(r);
    // a newer file of the view: a signature, then 48 MiB without the empty line that ends a header
    const name = `${real.token + 10}-${real.view}.bundle`;
    mkdirSync(bundleDir(r), { recursive: true });
    writeFileSync(join(bundleDir(r), name), Buffer.concat([Buffer.from('# v2 git bundle\n'), Buffer.alloc(48 * 1024 * 1024, 0x61)]));
    const bundles = new BundleService({ mode: 'serve' });
    const offer = bundles.offer({ transport: 'http', dir: repo, filtered: false })!;
    const ask = async () => {
      const list = await offer.list(r);
      // not a bundle: not offered; the readable one is
      assert.ok(!list.some((l) => l.includes(name)));
      assert.ok(list.some((l) => l.includes(real.name)));
      // a clone's fetch: did it start from the bundle?
      assert.equal(offer.started!(r, []), 'not-taken');
      // the header read the list started runs meanwhile
      for (let i = 0; i < 50; i++) await new Promise((res) => setTimeout(res, 2));
    };
    await ask();
    const c0 = process.cpuUsage();
    for (let i = 0; i < 30; i++) await ask();
    const c = process.cpuUsage(c0);
    const ms = (c.user + c.system) / 1000;
    console.log(`30 lists and clones of a bundle with an unreadable header: ${ms.toFixed(0)} ms of CPU; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    assert.ok(ms < 600, `${ms.toFixed(0)} ms of CPU: the header was read again on each request`);
    await bundles.close();
  } finally {
    t.cleanup();
  }
});
