/**
 * A bundle whose header would be past what a server reads back (64 MiB,
 * MAX_HEADER_BYTES: about a million refs) is not made: it would be
 * offered with no check of what it holds (the withdrawal of deleted or
 * rewound history reads its header's refs; it could not, and such a bundle
 * stayed served), and every client would unbundle that many refs. Before,
 * it was made, advertised and served. A file of that kind already there
 * (an older gitwire's) is neither listed nor served.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { Repository } from '../src/repo/repository.js';
import { BundleService } from '../src/bundle/service.js';
import { bundleDir, makeBundle, viewKey } from '../src/bundle/index.js';
import { MAX_HEADER_BYTES } from '../src/bundle/header.js';

test('a repository whose bundle header would pass 64 MiB: make refuses, in a clear error; such a file is not offered', async () => {
  const t = tmp('gitwire-bundle-huge-header-');
  try {
    const repo = join(t.dir, 'huge.git');
    git(['init', '-q', '--bare', repo]);
    const tree = git(['mktree'], { cwd: repo, input: '' }).trim();
    const c = git(['commit-tree', '-m', 'one', tree], { cwd: repo }).trim();
    git(['update-ref', 'refs/heads/main', c], { cwd: repo });
    git(['symbolic-ref', 'HEAD', 'refs/heads/main'], { cwd: repo });
    git(['repack', '-adq'], { cwd: repo });
    // 300,000 refs of 230-byte names: a header of ~82 MB
    const pad = 'x'.repeat(210);
    const REFS = 300_000;
    const names = Array.from({ length: REFS }, (_, i) => `refs/heads/${pad}${String(i).padStart(7, '0')}`).concat('refs/heads/main').sort();
    writeFileSync(join(repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${names.map((n) => `${c} ${n}\n`).join('')}`);
    const r = Repository.open(repo, { strict: true });
    await assert.rejects(makeBundle(r), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'GW_BUNDLE');
      assert.match(e.message, /too many refs for a bundle: its header would be over the 67108864 bytes a server reads back \(\d+ refs\)/);
      return true;
    });
    assert.deepEqual(readdirSync(bundleDir(r)), [], 'refused before anything was written');
    // one an older gitwire made: a header past the read limit
    const name = `1700000000-${viewKey(r)}.bundle`;
    const lines = [`# v2 git bundle\n`];
    for (let i = 0; lines.length * 240 < MAX_HEADER_BYTES + 1024 * 1024; i++) lines.push(`${c} refs/heads/${pad}${String(i).padStart(7, '0')}\n`);
    mkdirSync(bundleDir(r), { recursive: true });
    writeFileSync(join(bundleDir(r), name), Buffer.concat([Buffer.from(lines.join('') + '\n'), Buffer.from('PACK\0\0\0\x02\0\0\0\x01'), Buffer.alloc(64)]));
    const bundles = new BundleService({ mode: 'serve' });
    const list = await bundles.offer({ transport: 'http', dir: repo, filtered: false })!.list(r);
    assert.deepEqual(list, [], 'not offered');
    await bundles.close();
  } finally {
    t.cleanup();
  }
});
