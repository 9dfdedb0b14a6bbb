/**
 * Issue #10, item 8b: `--strict-visibility` (ServeHooks.strictVisibility,
 * uploadPack's strictVisibility). With git's hideRefs semantics (the
 * default), a blob reachable only from a hidden ref can be fetched by id
 * (a partial clone's lazy fetch does it), and include-tag sends a hidden
 * tag pointing into the fetched history; the first test shows both with
 * the real git client. With the option neither happens, and what is
 * visible still works: lazy fetches of visible blobs, fetching a non-tip
 * visible commit, visible tags.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { MemorySink } from '../src/pktline/sink.js';
import { uploadPack } from '../src/protocol/upload-pack.js';

let t: ReturnType<typeof tmp>;
let root: string;
let strict: ServerProc;
let plain: ServerProc;
let first: string;
let visibleTip: string;
let secretBlob: string;
let visibleBlob: string;
let hiddenTag: string;
let visibleTag: string;


before(async () => {
  t = tmp('gitwire-vis-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  first = commit(w, 'one', { f: 'one\n' });
  visibleTip = commit(w, 'two', { f: 'two\n', v: 'visible blob\n' });
  visibleBlob = git(['rev-parse', 'HEAD:v'], { cwd: w }).trim();
  git(['tag', '-a', '-m', 'visible', 'v1', first], { cwd: w });
  git(['tag', '-a', '-m', 'hidden', 'hidden/t', first], { cwd: w });
  git(['checkout', '-q', '-b', 'secret/x'], { cwd: w });
  commit(w, 'secret', { 's.txt': 'the secret\n' });
  secretBlob = git(['rev-parse', 'HEAD:s.txt'], { cwd: w }).trim();
  git(['checkout', '-q', 'main'], { cwd: w });
  const repo = join(root, 'r.git');
  git(['clone', '-q', '--bare', w, repo]);
  hiddenTag = git(['--git-dir', repo, 'rev-parse', 'refs/tags/hidden/t']).trim();
  visibleTag = git(['--git-dir', repo, 'rev-parse', 'refs/tags/v1']).trim();
  for (const [k, v] of [['uploadpack.hideRefs', 'refs/heads/secret'], ['uploadpack.allowFilter', 'true']] as const) git(['--git-dir', repo, 'config', '--add', k, v]);
  git(['--git-dir', repo, 'config', '--add', 'uploadpack.hideRefs', 'refs/tags/hidden']);
  strict = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--quiet', '--strict-visibility']);
  plain = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--quiet']);
});
after(async () => { await strict.stop(); await plain.stop(); t.cleanup(); });

/** a blob:none partial clone of main over HTTP v2, then `cat-file -p <blob>` (a lazy fetch by id) */
async function lazyFetch(srv: ServerProc, blob: string, name: string) {
  const dest = join(t.dir, name);
  const c = await gitAsync(['-c', 'protocol.version=2', 'clone', '-q', '--bare', '--filter=blob:none', `http://127.0.0.1:${srv.httpPort}/r.git`, dest]);
  assert.equal(c.code, 0, c.stderr);
  return gitAsync(['-c', 'protocol.version=2', '--git-dir', dest, 'cat-file', '-p', blob]);
}

/** a fetch of main into an empty repository (git asks include-tag; clone does not), then is the hidden tag object in it? */
async function hasHiddenTag(url: string, proto: string, name: string): Promise<boolean> {
  const dest = join(t.dir, name);
  git(['init', '-q', '--bare', dest]);
  const c = await gitAsync(['-c', `protocol.version=${proto}`, '--git-dir', dest, 'fetch', '-q', url, 'refs/heads/main:refs/heads/main']);
  assert.equal(c.code, 0, c.stderr);
  assert.equal(git(['--git-dir', dest, 'rev-parse', 'refs/tags/v1']).trim(), visibleTag, 'the visible tag arrives');
  assert.throws(() => git(['--git-dir', dest, 'rev-parse', '--verify', '-q', 'refs/tags/hidden/t']));
  return (await gitAsync(['--git-dir', dest, 'cat-file', '-e', hiddenTag])).code === 0;
}

test('without the option (git\'s hideRefs semantics): a blob reachable only from a hidden ref is fetched by id, and include-tag sends the hidden tag', async () => {
  const r = await lazyFetch(plain, secretBlob, 'plain-lazy');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'the secret\n');
  assert.equal(await hasHiddenTag(`http://127.0.0.1:${plain.httpPort}/r.git`, '2', 'plain-tags-v2'), true);
  assert.equal(await hasHiddenTag(`git://127.0.0.1:${plain.gitPort}/r.git`, '0', 'plain-tags-v0'), true);
});

test('--strict-visibility: the hidden-only blob is refused (not our ref), a visible blob is still fetched lazily', async () => {
  const r = await lazyFetch(strict, secretBlob, 'strict-lazy');
  assert.notEqual(r.code, 0);
  assert.doesNotMatch(r.stdout, /secret/);
  assert.match(r.stderr, new RegExp(`not our ref ${secretBlob}`), r.stderr);
  const ok = await lazyFetch(strict, visibleBlob, 'strict-lazy-ok');
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'visible blob\n');
});

test('--strict-visibility: include-tag leaves the hidden tag out (v2 over HTTP, v0 over git://); visible tags still arrive', async () => {
  assert.equal(await hasHiddenTag(`http://127.0.0.1:${strict.httpPort}/r.git`, '2', 'strict-tags-v2'), false);
  assert.equal(await hasHiddenTag(`git://127.0.0.1:${strict.gitPort}/r.git`, '0', 'strict-tags-v0'), false);
});

test('--strict-visibility: a visible commit that is not a tip is fetched by id; the hidden tag object by id is refused', async () => {
  const dest = join(t.dir, 'by-id');
  git(['init', '-q', '--bare', dest]);
  const ok = await gitAsync(['-c', 'protocol.version=2', '--git-dir', dest, 'fetch', '-q', `http://127.0.0.1:${strict.httpPort}/r.git`, first]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(git(['--git-dir', dest, 'cat-file', '-t', first]).trim(), 'commit');
  const bad = await gitAsync(['-c', 'protocol.version=2', '--git-dir', dest, 'fetch', '-q', `http://127.0.0.1:${strict.httpPort}/r.git`, hiddenTag]);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, new RegExp(`not our ref ${hiddenTag}`), bad.stderr);
  // the same fetch from the server without the option gets it (git's semantics)
  const leak = await gitAsync(['-c', 'protocol.version=2', '--git-dir', dest, 'fetch', '-q', `http://127.0.0.1:${plain.httpPort}/r.git`, hiddenTag]);
  assert.equal(leak.code, 0, leak.stderr);
  assert.ok(visibleTip);
});

test('library: uploadPack with a refFilter and strictVisibility refuses the filtered-only blob; without strictVisibility it is sent', async () => {
  // a copy without hideRefs: the per-request refFilter alone hides refs/heads/secret/
  const repo = join(t.dir, 'lib.git');
  git(['clone', '-q', '--bare', join(root, 'r.git'), repo]);
  git(['--git-dir', repo, 'config', 'uploadpack.allowFilter', 'true']);
  const body = pkt(['command=fetch\n', 'object-format=sha1\n', '0001', 'no-progress\n', `want ${secretBlob}\n`, 'done\n', '0000']);
  const run = async (strictVisibility: boolean) => {
    const output = new MemorySink();
    const r = await uploadPack({
      directory: repo, input: body, output, statelessRpc: true, env: { ...gitEnv, GIT_PROTOCOL: 'version=2' },
      refFilter: (name) => !name.startsWith('refs/heads/secret/'), strictVisibility,
    }).then(() => undefined, (e: unknown) => e as Error);
    return { err: r, lines: unpkt(output.data) };
  };
  const loose = await run(false);
  assert.equal(loose.err, undefined);
  assert.ok(loose.lines.includes('packfile\n'), loose.lines.slice(0, 4).join('|'));
  const tight = await run(true);
  assert.match(String(tight.err?.message), new RegExp(`not our ref ${secretBlob}`));
  assert.equal(tight.lines.at(-1), `ERR upload-pack: not our ref ${secretBlob}`);
});
