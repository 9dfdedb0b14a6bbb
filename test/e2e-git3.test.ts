/**
 * git 3.0 readiness: `safe.bareRepository=explicit` (3.0's default) in the
 * server's global git config. git then refuses to find a bare repository
 * by its working directory, so every git gitwire runs (pack-objects,
 * index-pack, the connectivity check, hooks' git, maintenance) must be
 * given GIT_DIR. The whole fetch suite over git:// v2 and HTTP v0 and v2,
 * and a push with a hook that runs git, under that configuration.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, run, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { startServe } from './helpers/server-process.js';
import { transportSuite } from './helpers/transport-suite.js';

let t: ReturnType<typeof tmp>;
let explicit: string;
before(() => {
  t = tmp('gitwire-git3-');
  explicit = join(t.dir, 'gitconfig');
  writeFileSync(explicit, '[safe]\n\tbareRepository = explicit\n');
});
after(() => t.cleanup());

test('the configuration bites: git itself no longer finds a bare repository from its directory', () => {
  const bare = join(t.dir, 'probe.git');
  git(['init', '-q', '--bare', bare]);
  const r = run('git', ['rev-parse', '--is-bare-repository'], { cwd: bare, env: { GIT_CONFIG_GLOBAL: explicit } });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr.toString(), /cannot use bare repository|not a git repository/);
});

transportSuite({
  name: 'git-daemon under safe.bareRepository=explicit',
  async start(root, opts) {
    const s = await startServe(root, ['--git', '0', '--export-all'], { ...opts?.env, GIT_CONFIG_GLOBAL: explicit, ...(opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {}) });
    return { url: (rel) => `git://127.0.0.1:${s.gitPort}/${rel}`, cloneArgs: [], close: async () => { await s.stop(); } };
  },
}, [2]);

transportSuite({
  name: 'http under safe.bareRepository=explicit',
  async start(root, opts) {
    const s = await startServe(root, ['--http', '0', '--export-all', ...(opts?.maxPacks !== undefined ? ['--max-packs', String(opts.maxPacks)] : [])], { ...opts?.env, GIT_CONFIG_GLOBAL: explicit, ...(opts?.namespace ? { GIT_NAMESPACE: opts.namespace } : {}) });
    return { url: (rel) => `http://127.0.0.1:${s.httpPort}/${rel}`, cloneArgs: [], close: async () => { await s.stop(); } };
  },
}, [0, 2]);

test('a push over HTTP under safe.bareRepository=explicit: index-pack, the connectivity check, a hook running git, maintenance', { timeout: 90_000 }, async () => {
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const bare = join(root, 'r.git');
  git(['init', '-q', '--bare', '-b', 'main', bare]);
  const seen = join(t.dir, 'hook-saw');
  writeFileSync(join(bare, 'hooks', 'post-receive'), `#!/bin/sh\ngit rev-parse refs/heads/main > '${seen}'\n`);
  chmodSync(join(bare, 'hooks', 'post-receive'), 0o755);
  git(['--git-dir', bare, 'config', 'gc.auto', '1']);
  const s = await startServe(root, ['--http', '0', '--git', '0', '--enable', 'receive-pack', '--export-all'], { GIT_CONFIG_GLOBAL: explicit });
  try {
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    for (let i = 0; i < 3; i++) { writeFileSync(join(w, 'f'), `${i}\n`); git(['add', 'f'], { cwd: w }); git(['commit', '-q', '-m', `c${i}`], { cwd: w }); }
    const r = await gitAsync(['push', `git://127.0.0.1:${s.gitPort}/r.git`, 'main'], w);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /cannot use bare repository|not a git repository|fatal/);
    const tip = git(['rev-parse', 'HEAD'], { cwd: w }).trim();
    assert.equal(git(['--git-dir', bare, 'rev-parse', 'main']).trim(), tip);
    assert.equal(readFileSync(seen, 'utf8').trim(), tip, "the hook's own git found the repository");
    const c = await gitAsync(['clone', '-q', `http://127.0.0.1:${s.httpPort}/r.git`, join(t.dir, 'c')], t.dir);
    assert.equal(c.code, 0, c.stderr);
  } finally { await s.stop(); }
});
