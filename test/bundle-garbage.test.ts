/**
 * A file with a bundle's name that is not a bundle (garbage dropped in the
 * bundle directory, a header followed by no pack, a pack cut at its start)
 * is neither advertised nor served, and does not hide the older, readable
 * bundle: only a file whose header parses and whose pack begins with
 * `PACK`, version 2 or 3 and an object count is offered. It is read once
 * per file (known by name, size, time and inode), as the unreadable
 * header is. Before, the newest name was listed and served whatever it held.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmp } from './helpers/git.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { startServer } from '../src/transport/server.js';
import { BundleService } from '../src/bundle/service.js';
import { bundleDir, makeBundle, parseBundleHeader } from '../src/bundle/index.js';

test('garbage, a header with no pack, or a pack cut at its start, under a newer bundle name: not listed, not served; the real one is', async () => {
  const t = tmp('gitwire-bundle-garbage-');
  try {
    const root = join(t.dir, 'root');
    mkdirSync(root);
    const repo = makeBitmapRepo(root, 'g.git', { commits: 12 });
    const r = Repository.open(repo);
    const real = await makeBundle(r);
    const bytes = readFileSync(real.file);
    const headerLength = parseBundleHeader(bytes).length;
    const dir = bundleDir(r);
    const header = bytes.subarray(0, headerLength);
    const fakes = {
      garbage: Buffer.alloc(4096, 0x5a),
      'no pack': header,
      'not a pack': Buffer.concat([header, Buffer.from('JUNK\0\0\0\x02\0\0\0\x05'), Buffer.alloc(64)]),
      'pack version 9': Buffer.concat([header, Buffer.from('PACK\0\0\0\x09\0\0\0\x05'), Buffer.alloc(64)]),
      'no objects': Buffer.concat([header, Buffer.from('PACK\0\0\0\x02\0\0\0\0'), Buffer.alloc(20)]),
      'cut after the count': bytes.subarray(0, headerLength + 12),
    };
    mkdirSync(dir, { recursive: true });
    const bundles = new BundleService({ mode: 'serve' });
    const s = await startServer({ root, http: 0, bundles, log: () => undefined });
    try {
      const offer = bundles.offer({ transport: 'http', dir: repo, filtered: false })!;
      let token = real.token;
      for (const [what, content] of Object.entries(fakes)) {
        const name = `${++token}-${real.view}.bundle`;
        writeFileSync(join(dir, name), content);
        const list = await offer.list(r);
        assert.ok(!list.some((l) => l.includes(name)), `${what}: not listed (${list.join(' | ')})`);
        assert.ok(list.some((l) => l === `bundle.gitwire.uri=info/bundles/${real.name}`), `${what}: the real bundle is listed instead (${list.join(' | ')})`);
        const got = await fetch(`http://127.0.0.1:${s.httpPort}/g.git/info/bundles/${name}`);
        assert.equal(got.status, 404, `${what}: not served`);
        await got.arrayBuffer();
      }
      const ok = await fetch(`http://127.0.0.1:${s.httpPort}/g.git/info/bundles/${real.name}`);
      assert.equal(ok.status, 200);
      assert.ok(Buffer.from(await ok.arrayBuffer()).equals(bytes));
    } finally {
      await s.shutdown(1000);
      await bundles.close();
    }
  } finally {
    t.cleanup();
  }
});
