/**
 * Issue #10, item 8: `--confine-storage` (ServeHooks.confineStorage)
 * refuses a repository whose storage leaves the served root — commondir,
 * symlinked objects/, refs/ or objects/pack, alternates, a loose-ref
 * symlink — over HTTP (fetch and push) and git://, with the real git
 * client. Without the option the same repositories are served, as git
 * serves them (so each refusal below is the option's doing).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { storageOutside } from '../src/transport/paths.js';

let t: ReturnType<typeof tmp>;
let root: string;
let outside: string;
let tip: string;
let confined: ServerProc;
let plain: ServerProc;

/** repositories whose storage leaves the root, and what the refusal names */
const escapes: Record<string, RegExp> = {
  'alt-out.git': /alternates names .*outside.*objects/,
  'objects-link.git': /^objects leads to .*outside/,
  'refs-link.git': /^refs leads to .*outside/,
  'pack-link.git': /objects\/pack leads to .*outside/,
  'loose-ref-link.git': /^refs\/heads\/leak leads to .*outside/,
  'common-out.git': /^commondir leads to .*outside/,
};
/** repositories with links and alternates that stay inside: served */
const inside = ['plain.git', 'alt-in.git', 'objects-link-in.git'];

/** git, asynchronously (the server is a child process, but keep the test's loop free) */

before(async () => {
  t = tmp('gitwire-storage-');
  root = join(t.dir, 'root');
  outside = join(t.dir, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  tip = commit(w, 'one', { f: '1\n' });
  const bare = (name: string, dir = root) => { const p = join(dir, name); git(['clone', '-q', '--bare', w, p]); return p; };

  bare('plain.git');
  // alternates: inside (another repository under the root) and outside
  for (const [name, base] of [['alt-in.git', bare('base-in.git')], ['alt-out.git', bare('base-out.git', outside)]] as const) {
    const p = join(root, name);
    git(['clone', '-q', '--bare', '--shared', base, p]);
  }
  // objects/ symlinked out, and to a directory inside the root
  for (const [name, to] of [['objects-link.git', outside], ['objects-link-in.git', join(root, 'store')]] as const) {
    const p = bare(name);
    mkdirSync(to, { recursive: true });
    renameSync(join(p, 'objects'), join(to, `${name}-objects`));
    symlinkSync(join(to, `${name}-objects`), join(p, 'objects'));
  }
  // refs/ symlinked out
  {
    const p = bare('refs-link.git');
    git(['--git-dir', p, 'pack-refs', '--all']);
    cpSync(join(p, 'refs'), join(outside, 'refs-of-refs-link'), { recursive: true });
    renameSync(join(p, 'refs'), join(p, 'refs-gone'));
    symlinkSync(join(outside, 'refs-of-refs-link'), join(p, 'refs'));
  }
  // objects/pack symlinked out
  {
    const p = bare('pack-link.git');
    git(['--git-dir', p, 'repack', '-adq']);
    renameSync(join(p, 'objects', 'pack'), join(outside, 'pack-of-pack-link'));
    symlinkSync(join(outside, 'pack-of-pack-link'), join(p, 'objects', 'pack'));
  }
  // a loose ref that is a symlink to a ref-shaped file outside
  {
    const p = bare('loose-ref-link.git');
    writeFileSync(join(outside, 'leaked-ref'), `${tip}\n`);
    symlinkSync(join(outside, 'leaked-ref'), join(p, 'refs', 'heads', 'leak'));
  }
  // a git directory inside the root whose commondir is a repository outside (a linked worktree's layout)
  {
    const main = join(outside, 'main');
    git(['clone', '-q', w, main]);
    git(['-C', main, 'worktree', 'add', '-q', '-b', 'wt', join(outside, 'wt')]);
    const wtGit = join(main, '.git', 'worktrees', readdirSync(join(main, '.git', 'worktrees'))[0]!);
    const p = join(root, 'common-out.git');
    cpSync(wtGit, p, { recursive: true });
    writeFileSync(join(p, 'commondir'), `${join(main, '.git')}\n`);
  }
  for (const p of [...Object.keys(escapes), 'plain.git']) git(['--git-dir', join(root, p), 'config', 'http.receivepack', 'true']);
  confined = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--confine-storage']);
  plain = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--quiet']);
});
after(async () => { await confined.stop(); await plain.stop(); t.cleanup(); });

test('storageOutside names what leaves the root, and nothing for storage inside it', () => {
  for (const [name, re] of Object.entries(escapes)) {
    const why = storageOutside(root, join(root, name));
    assert.ok(why && re.test(why), `${name}: ${why}`);
  }
  for (const name of inside) assert.equal(storageOutside(root, join(root, name)), undefined, name);
});

test('--confine-storage: git ls-remote and clone over HTTP and git:// are refused for each escape, with a clear message and a log reason', async () => {
  for (const name of Object.keys(escapes)) {
    const http = await gitAsync(['ls-remote', `http://127.0.0.1:${confined.httpPort}/${name}`]);
    assert.notEqual(http.code, 0, name);
    assert.match(http.stderr, /403/, `${name}: ${http.stderr}`);
    assert.match(http.stderr, /repository not served: its storage leaves the served root/, `${name}: ${http.stderr}`);
    const daemon = await gitAsync(['ls-remote', `git://127.0.0.1:${confined.gitPort}/${name}`]);
    assert.notEqual(daemon.code, 0, name);
    // git daemon's wording without --informative-errors
    assert.match(daemon.stderr, /access denied or repository not exported/, `${name}: ${daemon.stderr}`);
    const clone = await gitAsync(['clone', '-q', '--bare', `http://127.0.0.1:${confined.httpPort}/${name}`, join(t.dir, `c-${name}`)]);
    assert.notEqual(clone.code, 0, name);
  }
  const reasons = confined.logs.filter((l) => l.includes('"storage-outside-root"')).map((l) => JSON.parse(l) as { repository: string; reason: string });
  for (const [name, re] of Object.entries(escapes)) {
    const r = reasons.find((x) => x.repository === `/${name}` || x.repository === name);
    assert.ok(r && re.test(r.reason), `${name}: ${JSON.stringify(r)}`);
  }
});

test('--confine-storage: repositories whose links and alternates stay inside the root are served (clone over HTTP and git://)', async () => {
  for (const name of inside) {
    for (const url of [`http://127.0.0.1:${confined.httpPort}/${name}`, `git://127.0.0.1:${confined.gitPort}/${name}`]) {
      const dest = join(t.dir, `in-${name}-${url.slice(0, 4)}`);
      const r = await gitAsync(['clone', '-q', '--bare', url, dest]);
      assert.equal(r.code, 0, `${url}: ${r.stderr}`);
      assert.equal(git(['--git-dir', dest, 'rev-parse', 'main']).trim(), tip);
    }
  }
});

test('--confine-storage: a push over HTTP into a repository whose objects lie outside is refused and writes nothing there', async () => {
  const w = join(t.dir, 'pusher');
  git(['clone', '-q', `http://127.0.0.1:${plain.httpPort}/plain.git`, w]);
  const next = commit(w, 'two', { g: '2\n' });
  const before = readdirSync(join(outside, 'objects-link.git-objects')).sort();
  const r = await gitAsync(['-C', w, 'push', `http://127.0.0.1:${confined.httpPort}/objects-link.git`, 'HEAD:refs/heads/pushed']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /403|storage leaves the served root/, r.stderr);
  assert.deepEqual(readdirSync(join(outside, 'objects-link.git-objects')).sort(), before);
  const ref = await gitAsync(['--git-dir', join(root, 'objects-link.git'), 'rev-parse', '--verify', '-q', 'refs/heads/pushed']);
  assert.notEqual(ref.stdout.trim(), next);
  assert.notEqual(ref.code, 0);
});

test('without --confine-storage the same repositories are served, as git serves them (the refusals above are the option\'s)', async () => {
  for (const name of Object.keys(escapes)) {
    const r = await gitAsync(['ls-remote', `http://127.0.0.1:${plain.httpPort}/${name}`]);
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^${tip}\\tHEAD$`, 'm'), name);
  }
});
