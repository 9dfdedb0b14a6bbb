/**
 * A bundle of a repository with 300,000 refs is made without holding the
 * event loop: the ref scan (each ref looked up in the object database)
 * gives the loop away on its time budget, so a timer still fires while it
 * runs. The bound is loose (the scan alone held the loop 200–400 ms here;
 * sliced, a turn is a few ms). The header of such a bundle (30 MB) is read
 * off the request path: a clone that asks whether it started from the
 * bundle is answered at once, not after a synchronous parse.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { Repository } from '../src/repo/repository.js';
import { makeBundle, parseBundleHeader, type MadeBundle } from '../src/bundle/index.js';
import { BundleService } from '../src/bundle/service.js';

const REFS = 300_000;

let t: ReturnType<typeof tmp>;
let repo: string;
let made: MadeBundle | undefined;
before(() => {
  t = tmp('gitwire-bundle-many-refs-');
  repo = join(t.dir, 'many.git');
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
});
after(() => t.cleanup());

test(`making the bundle of a repository with ${REFS} refs leaves the event loop free (the ref scan is sliced)`, async () => {
  let worst = 0;
  let last = performance.now();
  const timer = setInterval(() => { const now = performance.now(); worst = Math.max(worst, now - last); last = now; }, 1);
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
});

test('a clone asking about a bundle of 300,000 refs is not held while its header is read; the next one is told', async () => {
  assert.ok(made, 'the bundle of the test before');
  const bundles = new BundleService({ mode: 'serve' });
  const offer = bundles.offer({ transport: 'http', dir: repo, filtered: false })!;
  const r = Repository.open(repo, { strict: true });
  const tip = Buffer.from(made.refs[0]!.hex, 'hex');
  const t0 = performance.now();
  offer.started!(r, [tip]);
  const ms = performance.now() - t0;
  console.log(`the first fetch's question about the bundle took ${ms.toFixed(0)} ms on the event loop`);
  assert.ok(ms < 50, `the request held the event loop ${ms.toFixed(0)} ms reading a bundle header`);
  // read meanwhile: a fetch whose have is a tip is told it started from the bundle
  let answer: string | undefined;
  for (let i = 0; i < 200 && answer !== 'taken'; i++) { await new Promise((res) => setTimeout(res, 10)); answer = offer.started!(r, [tip]); }
  assert.equal(answer, 'taken');
  await bundles.close();
});
