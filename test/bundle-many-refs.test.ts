/**
 * A bundle of a repository with 300,000 refs is made without holding the
 * event loop: the ref scan (each ref looked up in the object database)
 * gives the loop away on its time budget, so a timer still fires while it
 * runs. The bound is loose (the scan alone held the loop 200–400 ms here;
 * sliced, a turn is a few ms).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { Repository } from '../src/repo/repository.js';
import { makeBundle, parseBundleHeader } from '../src/bundle/index.js';

const REFS = 300_000;

test(`making the bundle of a repository with ${REFS} refs leaves the event loop free (the ref scan is sliced)`, async () => {
  const t = tmp('gitwire-bundle-many-refs-');
  try {
    const repo = join(t.dir, 'many.git');
    git(['init', '-q', '--bare', repo]);
    const tree = git(['mktree'], { cwd: repo, input: '' }).trim();
    const c = git(['commit-tree', '-m', 'one', tree], { cwd: repo }).trim();
    git(['update-ref', 'refs/heads/main', c], { cwd: repo });
    git(['symbolic-ref', 'HEAD', 'refs/heads/main'], { cwd: repo });
    git(['pack-refs', '--all'], { cwd: repo });
    git(['repack', '-adq'], { cwd: repo });
    // the refs as `git pack-refs` writes them (sorted), which git reads back: quicker than 300,000 update-ref lines
    const names = Array.from({ length: REFS }, (_, i) => `refs/heads/b${String(i).padStart(6, '0')}`).concat('refs/heads/main').sort();
    writeFileSync(join(repo, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${names.map((n) => `${c} ${n}\n`).join('')}`);
    assert.equal(git(['for-each-ref', '--count=2', '--format=%(refname)', 'refs/heads/'], { cwd: repo }).trim(), 'refs/heads/b000000\nrefs/heads/b000001');

    let worst = 0;
    let last = performance.now();
    const timer = setInterval(() => { const now = performance.now(); worst = Math.max(worst, now - last); last = now; }, 1);
    let made;
    try {
      last = performance.now();
      made = await makeBundle(Repository.open(repo, { strict: true }));
    } finally {
      clearInterval(timer);
    }
    const header = parseBundleHeader(readFileSync(made.file));
    assert.equal(header.refs.length, REFS + 2, 'HEAD and every branch');
    console.log(`bundle of ${REFS} refs made in ${made.ms.toFixed(0)} ms; the event loop's longest turn meanwhile ${worst.toFixed(0)} ms; load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
    assert.ok(worst < 150, `the event loop was held ${worst.toFixed(0)} ms while the bundle was made`);
  } finally {
    t.cleanup();
  }
});
