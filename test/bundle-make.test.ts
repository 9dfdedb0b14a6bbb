/**
 * Bundles gitwire makes (bundle/, `gitwire bundle create`): real git is the
 * judge. `git bundle verify` takes the file, `git clone <file>` gives a
 * repository `git fsck --strict` finds clean with the server's advertised
 * refs, a hidden ref is not in it and nothing only it reaches is either,
 * and SHA-256 repositories get git's v3 header.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, run, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { makeBitmapRepo } from './helpers/bitmap-repo.js';
import { Repository } from '../src/repo/repository.js';
import { bundleDir, listBundles, makeBundle, parseBundleHeader, pruneBundles, viewKey } from '../src/bundle/index.js';

let t: ReturnType<typeof tmp>;
/** an empty repository: `git bundle verify` needs one */
let verifier: string;
before(() => { t = tmp('gitwire-bundle-'); verifier = join(t.dir, 'verifier'); git(['init', '-q', verifier]); });
after(() => t.cleanup());

/** refs as `git ls-remote` says them, HEAD included */
function lsRemote(url: string): string[] {
  return git(['ls-remote', url]).trim().split('\n').filter((l) => !l.endsWith('^{}')).sort();
}

test('a bundle of a bitmapped repository: git verifies it, clones from it, fsck --strict clean, refs equal to the advertisement', async () => {
  const repo = makeBitmapRepo(t.dir, 'bm.git');
  const made = await makeBundle(Repository.open(repo));
  assert.equal(made.pack.source, 'bitmap');
  assert.ok(made.file.startsWith(bundleDir({ commonDir: repo })));
  assert.match(made.name, /^\d+-[0-9a-f]{12}\.bundle$/);
  const v = run('git', ['bundle', 'verify', made.file], { cwd: verifier });
  assert.equal(v.status, 0, v.stderr.toString());
  assert.match(v.stderr.toString() + v.stdout.toString(), /records a complete history/);
  const clone = join(t.dir, 'from-bundle');
  git(['clone', '-q', '--mirror', made.file, clone]);
  git(['fsck', '--strict', '--no-dangling'], { cwd: clone });
  // every ref the server advertises, each at the same object
  const served = lsRemote(repo).filter((l) => !l.endsWith('\tHEAD'));
  assert.deepEqual(lsRemote(clone).filter((l) => !l.endsWith('\tHEAD')), served);
  // the header is git's v2 for SHA-1
  const h = parseBundleHeader(readFileSync(made.file));
  assert.equal(h.version, 2);
  assert.equal(readFileSync(made.file).subarray(0, 16).toString(), '# v2 git bundle\n');
  assert.equal(h.refs[0]!.name, 'HEAD');
  assert.deepEqual(h.prerequisites, []);
  // nothing else was left in the directory (the temporary file was renamed)
  assert.deepEqual(readdirSync(bundleDir({ commonDir: repo })), [made.name]);
});

test('a SHA-256 repository gets the v3 header with @object-format=sha256, and git 2.39 clones it', async () => {
  const repo = makeBitmapRepo(t.dir, 'sha256.git', { objectFormat: 'sha256', commits: 14 });
  const made = await makeBundle(Repository.open(repo));
  const head = readFileSync(made.file).subarray(0, 40).toString('latin1');
  assert.ok(head.startsWith('# v3 git bundle\n@object-format=sha256\n'), head);
  const clone = join(t.dir, 'from-sha256');
  git(['clone', '-q', '--mirror', made.file, clone]);
  git(['fsck', '--strict', '--no-dangling'], { cwd: clone });
  assert.equal(git(['rev-parse', '--show-object-format'], { cwd: clone }).trim(), 'sha256');
  assert.deepEqual(lsRemote(clone).filter((l) => !l.endsWith('\tHEAD')), lsRemote(repo).filter((l) => !l.endsWith('\tHEAD')));
});

test('hidden refs (uploadpack.hideRefs) are not in the bundle, nor any object only they reach; a change of the rules is a new view', async () => {
  const work = join(t.dir, 'hidework');
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'public\n' });
  git(['checkout', '-q', '-b', 'secret'], { cwd: work });
  const secret = commit(work, 'secret', { 's.txt': 'the secret blob\n' });
  const secretBlob = git(['rev-parse', 'HEAD:s.txt'], { cwd: work }).trim();
  git(['checkout', '-q', 'main'], { cwd: work });
  const repo = join(t.dir, 'hide.git');
  git(['clone', '-q', '--bare', work, repo]);
  git(['update-ref', 'refs/internal/x', secret], { cwd: repo });
  git(['config', 'uploadpack.hideRefs', 'refs/heads/secret'], { cwd: repo });
  git(['config', '--add', 'transfer.hideRefs', 'refs/internal'], { cwd: repo });
  const before = viewKey(Repository.open(repo));
  const made = await makeBundle(Repository.open(repo));
  const names = parseBundleHeader(readFileSync(made.file)).refs.map((r) => r.name);
  assert.deepEqual(names, ['HEAD', 'refs/heads/main']);
  const clone = join(t.dir, 'hide-clone');
  git(['clone', '-q', '--mirror', made.file, clone]);
  assert.notEqual(run('git', ['cat-file', '-e', secret], { cwd: clone }).status, 0, 'the hidden commit is not in the bundle');
  assert.notEqual(run('git', ['cat-file', '-e', secretBlob], { cwd: clone }).status, 0, 'nor its blob');
  git(['config', '--unset', 'uploadpack.hideRefs'], { cwd: repo });
  assert.notEqual(viewKey(Repository.open(repo)), before);
});

test('`gitwire bundle create`: one made in the repository, an empty repository refused in git\'s words, usage errors', () => {
  const repo = makeBitmapRepo(t.dir, 'cli.git', { commits: 12 });
  const r = run(BIN, ['bundle', 'create', repo]);
  assert.equal(r.status, 0, r.stderr.toString());
  assert.match(r.stdout.toString(), /^created .*gitwire\/bundles\/\d+-[0-9a-f]{12}\.bundle \(\d+ refs, \d+ objects, \d+ bytes\)\n$/);
  const [b] = listBundles(bundleDir({ commonDir: repo }));
  assert.equal(run('git', ['bundle', 'verify', b!.file], { cwd: verifier }).status, 0);
  const empty = join(t.dir, 'empty.git');
  git(['init', '-q', '--bare', empty]);
  const e = run(BIN, ['bundle', 'create', empty]);
  assert.equal(e.status, 128);
  assert.equal(e.stderr.toString(), 'fatal: Refusing to create empty bundle.\n');
  assert.ok(!existsSync(bundleDir({ commonDir: empty })) || readdirSync(bundleDir({ commonDir: empty })).length === 0, 'nothing left behind');
  const u = run(BIN, ['bundle', 'frobnicate', repo]);
  assert.equal(u.status, 129);
  assert.match(u.stderr.toString(), /unknown subcommand: 'frobnicate'/);
  const nr = run(BIN, ['bundle', 'create', join(t.dir, 'nothing-here')]);
  assert.equal(nr.status, 128);
  assert.match(nr.stderr.toString(), /^fatal: .*does not appear to be a git repository/);
});

test('tokens rise; a superseded bundle is pruned only after the grace period, stray temporary files after a day', async () => {
  const repo = makeBitmapRepo(t.dir, 'prune.git', { commits: 12 });
  const r = Repository.open(repo);
  const a = await makeBundle(r, { now: 1_800_000_000_000 });
  const b = await makeBundle(r, { now: 1_800_000_000_000 });
  assert.equal(b.token, a.token + 1);
  const dir = bundleDir(r);
  const stray = join(dir, '.tmp-1-abc');
  writeFileSync(stray, 'half');
  const now = Date.now();
  assert.deepEqual(pruneBundles(dir, b.view, 60_000, now), [], 'within the grace period nothing goes');
  utimesSync(stray, new Date(now - 2 * 86400_000), new Date(now - 2 * 86400_000));
  assert.deepEqual(pruneBundles(dir, b.view, 60_000, now + 120_000).sort(), [a.name, '.tmp-1-abc'].sort());
  assert.deepEqual(listBundles(dir).map((x) => x.name), [b.name]);
});
