/**
 * gitwire receive-pack end to end with the real git client, each push also
 * made to `git receive-pack` on a twin repository and compared: refs,
 * reflogs, the client's status lines and exit code, and `git fsck`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, serverState, fsck, objectFiles, type Impl } from './helpers/push.js';

interface Step {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** client-side changes, once before both pushes */
  before?: (client: string) => void;
  /** server-side changes, on each server */
  server?: (dir: string) => void;
  /** extra checks on the gitwire outcome */
  check?: (o: { code: number; stderr: string }, server: string) => void;
}

interface Scenario {
  bare?: boolean;
  format?: 'sha1' | 'sha256';
  config?: Array<[string, string]>;
  hooks?: Record<string, string>;
  /** client set-up */
  client?: (client: string) => void;
  /** server set-up after init (both) */
  init?: (server: string) => void;
}

function makeClient(root: string, format: 'sha1' | 'sha256'): string {
  const c = join(root, 'client');
  git(['init', '-q', '-b', 'main', `--object-format=${format}`, c]);
  for (let i = 0; i < 3; i++) commit(c, `base ${i}`, { [`f${i}.txt`]: `file ${i}\n` });
  return c;
}

function makeServer(root: string, impl: Impl, s: Scenario): string {
  const dir = join(root, impl, 'server.git');
  mkdirSync(join(root, impl));
  const fmt = `--object-format=${s.format ?? 'sha1'}`;
  if (s.bare === false) {
    git(['init', '-q', '-b', 'main', fmt, dir]);
  } else {
    git(['init', '-q', '--bare', '-b', 'main', fmt, dir]);
  }
  const gd = s.bare === false ? join(dir, '.git') : dir;
  for (const [k, v] of s.config ?? []) git(['config', k, v], { cwd: gd });
  for (const [name, body] of Object.entries(s.hooks ?? {})) {
    const p = join(gd, 'hooks', name);
    mkdirSync(join(gd, 'hooks'), { recursive: true });
    writeFileSync(p, `#!/bin/sh\n${body}\n`);
    chmodSync(p, 0o755);
  }
  s.init?.(gd);
  return dir;
}

async function runScenario(s: Scenario, steps: Step[]): Promise<void> {
  const t = tmp('gitwire-push-');
  try {
    const client = makeClient(t.dir, s.format ?? 'sha1');
    s.client?.(client);
    const servers = { gitwire: makeServer(t.dir, 'gitwire', s), git: makeServer(t.dir, 'git', s) };
    const gd = (impl: Impl) => (s.bare === false ? join(servers[impl], '.git') : servers[impl]);
    for (const st of steps) {
      st.before?.(client);
      const out: Record<string, { code: number; stderr: string; stdout: string }> = {};
      for (const impl of IMPLS) {
        st.server?.(gd(impl));
        out[impl] = push(impl, client, servers[impl], st.args, st.env);
      }
      const ours = out.gitwire!, theirs = out.git!;
      const msg = `${st.name}\n--- gitwire:\n${ours.stderr}\n--- git:\n${theirs.stderr}`;
      assert.equal(ours.code, theirs.code, `exit code: ${msg}`);
      assert.equal(normalizeClient(ours.stderr, servers.gitwire), normalizeClient(theirs.stderr, servers.git), `client output: ${msg}`);
      assert.equal(normalizeClient(ours.stdout, servers.gitwire), normalizeClient(theirs.stdout, servers.git), `client stdout: ${msg}`);
      assert.deepEqual(serverState(gd('gitwire')), serverState(gd('git')), `server state: ${st.name}`);
      const f = fsck(gd('gitwire'));
      assert.equal(f.code, 0, `fsck after ${st.name}: ${f.out}`);
      assert.equal(readdirSync(join(gd('gitwire'), 'objects')).filter((n) => n.startsWith('tmp_objdir')).length, 0, `quarantine left after ${st.name}`);
      assert.equal(readdirSync(join(gd('gitwire'), 'objects', 'pack')).filter((n) => n.endsWith('.keep')).length, 0, `.keep left after ${st.name}`);
      st.check?.(ours, gd('gitwire'));
    }
  } finally {
    t.cleanup();
  }
}

const logAll: Array<[string, string]> = [['core.logAllRefUpdates', 'true']];

test('branches: new, fast-forward, non-fast-forward, forced, deletes (loose and packed), tags, --force-with-lease', async () => {
  await runScenario({ config: logAll }, [
    { name: 'new branch', args: ['main'] },
    { name: 'fast-forward', args: ['main'], before: (c) => { commit(c, 'ff', { 'ff.txt': 'ff\n' }); } },
    { name: 'rejected non-fast-forward', args: ['main'], before: (c) => { git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: c }); commit(c, 'diverge', { 'd.txt': 'd\n' }); } },
    { name: 'forced update', args: ['--force', 'main'] },
    { name: 'second branch', args: ['main:refs/heads/feature', 'main~1:refs/heads/old'] },
    { name: 'delete loose', args: [':refs/heads/feature'] },
    { name: 'delete packed', args: [':refs/heads/old'], server: (d) => git(['pack-refs', '--all'], { cwd: d }) },
    { name: 'tags', args: ['--tags'], before: (c) => { git(['tag', 'light'], { cwd: c }); git(['tag', '-a', '-m', 'annotated', 'v1.0', 'HEAD~1'], { cwd: c }); } },
    { name: 'force-with-lease stale', args: ['--force-with-lease=main:HEAD~2', 'main'], before: (c) => { commit(c, 'lease', { 'l.txt': 'l\n' }); } },
    { name: 'force-with-lease ok', args: ['--force-with-lease=main', 'main'] },
    { name: 'delete tag', args: [':refs/tags/light'] },
  ]);
});

test('server policies: denyNonFastForwards, denyDeletes, --atomic with one ref failing, hidden refs', async () => {
  await runScenario({ config: [...logAll, ['receive.denyNonFastForwards', 'true'], ['receive.denyDeletes', 'true'], ['receive.hideRefs', 'refs/hidden']] }, [
    { name: 'setup', args: ['main', 'main:refs/heads/b1', 'main~1:refs/heads/b2'] },
    { name: 'denied non-fast-forward', args: ['--force', 'main~1:refs/heads/main'] },
    { name: 'denied delete', args: [':refs/heads/b1'] },
    { name: 'atomic: one failing moves nothing', args: ['--atomic', 'main:refs/heads/b2', ':refs/heads/b1'], before: (c) => { commit(c, 'at', { 'a.txt': 'a\n' }); } },
    { name: 'non-atomic: the good one moves', args: ['main:refs/heads/b2', ':refs/heads/b1'] },
    { name: 'hidden ref', args: ['main:refs/hidden/x'] },
  ]);
});

test('hooks: push options, quarantine, update hook rejecting one ref of three, post-receive and post-update output', async () => {
  const preReceive = [
    'while read o n r; do echo "pre-receive: $o $n $r"; done',
    'echo "options: ${GIT_PUSH_OPTION_COUNT-unset} ${GIT_PUSH_OPTION_0-} ${GIT_PUSH_OPTION_1-}"',
    'if [ -n "$GIT_QUARANTINE_PATH" ] && [ -d "$GIT_QUARANTINE_PATH" ] && [ "$GIT_OBJECT_DIRECTORY" = "$GIT_QUARANTINE_PATH" ]; then echo quarantined; fi',
    'case "$GIT_PUSH_OPTION_0" in reject) echo "rejecting" >&2; exit 1;; esac',
  ].join('\n');
  const update = 'echo "update: $1"; [ "$1" != refs/heads/b2 ]';
  const postReceive = 'while read o n r; do echo "post-receive: $r"; done; echo "options: ${GIT_PUSH_OPTION_COUNT-unset}"; exit 3';
  const postUpdate = 'echo "post-update: $*"';
  let before: string[] = [];
  await runScenario({
    config: [...logAll, ['receive.advertisePushOptions', 'true']],
    hooks: { 'pre-receive': preReceive, update, 'post-receive': postReceive, 'post-update': postUpdate },
  }, [
    { name: 'push options reach hooks', args: ['-o', 'first', '-o', 'second', 'main'] },
    {
      name: 'pre-receive rejection leaves objects unchanged', args: ['-o', 'reject', 'main'],
      before: (c) => { commit(c, 'rejected', { 'r.txt': 'r\n' }); },
      server: (d) => { if (d.includes('/gitwire/')) before = objectFiles(d); },
      check: (_o, d) => assert.deepEqual(objectFiles(d), before),
    },
    { name: 'update hook rejects one ref of three', args: ['main:refs/heads/b1', 'main:refs/heads/b2', 'main:refs/heads/b3'] },
  ]);
});

test('history into an empty repository (index-pack path, .keep removed), a push from a shallow clone', async () => {
  await runScenario({
    config: logAll,
    client: (c) => { for (let i = 0; i < 60; i++) commit(c, `h${i}`, { [`d${i % 5}/h${i}.txt`]: `history ${i}\n`.repeat(20 + i) }); },
  }, [
    { name: 'whole history', args: ['main'] },
  ]);
  // shallow: clone --depth 1 from a full repository, commit, push back
  const t = tmp('gitwire-shallow-');
  try {
    const src = makeClient(t.dir, 'sha1');
    for (let i = 0; i < 5; i++) commit(src, `s${i}`, { 's.txt': `s${i}\n` });
    const servers: Record<Impl, string> = { gitwire: join(t.dir, 'gw.git'), git: join(t.dir, 'git.git') };
    for (const impl of IMPLS) { git(['clone', '-q', '--bare', src, servers[impl]]); git(['config', 'core.logAllRefUpdates', 'true'], { cwd: servers[impl] }); }
    const shallow = join(t.dir, 'shallow');
    git(['clone', '-q', '--depth', '1', `file://${src}`, shallow]);
    commit(shallow, 'on top of shallow', { 'top.txt': 'top\n' });
    const out = IMPLS.map((impl) => push(impl, shallow, servers[impl], ['HEAD:refs/heads/main']));
    assert.equal(out[0]!.code, out[1]!.code, out[0]!.stderr);
    assert.equal(normalizeClient(out[0]!.stderr, servers.gitwire), normalizeClient(out[1]!.stderr, servers.git));
    assert.deepEqual(serverState(servers.gitwire), serverState(servers.git));
    assert.equal(fsck(servers.gitwire).code, 0);
  } finally { t.cleanup(); }
});

test('SHA-256 repository', async () => {
  await runScenario({ format: 'sha256', config: logAll }, [
    { name: 'new branch', args: ['main'] },
    { name: 'update and tag', args: ['main', '--tags'], before: (c) => { commit(c, 'more', { 'm.txt': 'm\n' }); git(['tag', '-a', '-m', 't', 'v2'], { cwd: c }); } },
    { name: 'delete', args: [':refs/tags/v2'] },
  ]);
});

test('namespaces (GIT_NAMESPACE)', async () => {
  const env = { GIT_NAMESPACE: 'tenant' };
  await runScenario({ config: logAll, init: (d) => { const tree = git(['mktree'], { cwd: d, input: '' }).trim(); git(['update-ref', 'refs/heads/outside', git(['commit-tree', '-m', 'outside', tree], { cwd: d }).trim()], { cwd: d }); } }, [
    { name: 'push into a namespace', args: ['main', 'main:refs/heads/two'], env },
    { name: 'update in a namespace', args: ['main'], env, before: (c) => { commit(c, 'ns', { 'n.txt': 'n\n' }); } },
    { name: 'delete in a namespace', args: [':refs/heads/two'], env },
  ]);
});

test('receive.denyCurrentBranch on a non-bare repository', async () => {
  await runScenario({ bare: false, init: (d) => { const wt = join(d, '..'); writeFileSync(join(wt, 'srv.txt'), 'srv\n'); git(['add', '.'], { cwd: wt }); git(['commit', '-q', '-m', 'server side'], { cwd: wt }); } }, [
    { name: 'refused by default', args: ['--force', 'main'] },
    { name: 'other branch is fine', args: ['main:refs/heads/side'] },
    { name: 'refused delete of current', args: [':refs/heads/main'], server: (d) => git(['config', 'receive.denyCurrentBranch', 'ignore'], { cwd: d }) },
    { name: 'warn', args: ['--force', 'main'], server: (d) => git(['config', 'receive.denyCurrentBranch', 'warn'], { cwd: d }) },
  ]);
});

test('no quarantine and no lock files are left behind by successful pushes', () => {
  const t = tmp('gitwire-clean-');
  try {
    const c = makeClient(t.dir, 'sha1');
    const s = join(t.dir, 's.git');
    git(['init', '-q', '--bare', s]);
    assert.equal(push('gitwire', c, s, ['main']).code, 0);
    const leftovers: string[] = [];
    const walk = (d: string) => { for (const e of readdirSync(d, { withFileTypes: true })) { const p = join(d, e.name); if (e.isDirectory()) walk(p); else if (e.name.endsWith('.lock') || e.name.startsWith('shallow_')) leftovers.push(p); } };
    walk(s);
    assert.deepEqual(leftovers, []);
    assert.ok(existsSync(join(s, 'refs', 'heads', 'main')));
  } finally { t.cleanup(); }
});

test('a shallow clone pushing into an empty repository: refused by default, accepted with receive.shallowUpdate', async () => {
  const t = tmp('gitwire-shallow2-');
  try {
    const src = makeClient(t.dir, 'sha1');
    for (let i = 0; i < 4; i++) commit(src, `s${i}`, { 's.txt': `s${i}\n` });
    const shallow = join(t.dir, 'shallow');
    git(['clone', '-q', '--depth', '2', `file://${src}`, shallow]);
    commit(shallow, 'top', { 'top.txt': 'top\n' });
    for (const update of [false, true]) {
      const servers: Record<Impl, string> = { gitwire: join(t.dir, `gw-${update}.git`), git: join(t.dir, `git-${update}.git`) };
      for (const impl of IMPLS) {
        git(['init', '-q', '--bare', servers[impl]]);
        if (update) git(['config', 'receive.shallowUpdate', 'true'], { cwd: servers[impl] });
      }
      const out = IMPLS.map((impl) => push(impl, shallow, servers[impl], ['HEAD:refs/heads/main']));
      assert.equal(out[0]!.code, out[1]!.code, `${out[0]!.stderr}\n---\n${out[1]!.stderr}`);
      assert.equal(normalizeClient(out[0]!.stderr, servers.gitwire), normalizeClient(out[1]!.stderr, servers.git));
      assert.deepEqual(serverState(servers.gitwire), serverState(servers.git));
      assert.equal(fsck(servers.gitwire).code, 0, fsck(servers.gitwire).out);
      assert.deepEqual(readdirSync(servers.gitwire).filter((n) => n.startsWith('shallow_')), []);
    }
  } finally { t.cleanup(); }
});

test('core.hooksPath, and a push through a symref', async () => {
  await runScenario({
    config: [...logAll, ['core.hooksPath', 'custom-hooks']],
    init: (d) => {
      mkdirSync(join(d, 'custom-hooks'));
      writeFileSync(join(d, 'custom-hooks', 'post-receive'), '#!/bin/sh\nwhile read o n r; do echo "custom hook saw $r"; done\n');
      chmodSync(join(d, 'custom-hooks', 'post-receive'), 0o755);
    },
  }, [
    { name: 'hook from core.hooksPath', args: ['main'] },
    { name: 'symref target', args: ['main:refs/heads/target'], server: (d) => { git(['symbolic-ref', 'refs/heads/alias', 'refs/heads/target'], { cwd: d }); } },
    { name: 'push through the symref', args: ['main:refs/heads/alias'], before: (c) => { commit(c, 'via alias', { 'v.txt': 'v\n' }); } },
    { name: 'symref and target together, inconsistent', args: ['main:refs/heads/alias', 'main~1:refs/heads/target'], before: (c) => { commit(c, 'again', { 'w.txt': 'w\n' }); } },
  ]);
});
