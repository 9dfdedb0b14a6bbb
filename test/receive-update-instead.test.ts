/**
 * receive.denyCurrentBranch=updateInstead and the push-to-checkout hook,
 * end to end: the real git client pushes to a non-bare repository served
 * by gitwire and to its twin served by `git receive-pack`, and everything
 * must match: exit code, client output, refs, and the work tree and index
 * of the worktree the branch is checked out in (main worktree, a linked
 * one, a bare repository's worktree).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, type Impl } from './helpers/push.js';

/** every file of a work tree (not .git) with its content, and `git status` */
function treeState(wt: string, gitDir?: string): { files: Record<string, string>; status: string; head: string } {
  const files: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      if (e === '.git') continue;
      const p = join(d, e);
      if (statSync(p).isDirectory()) walk(p); else files[relative(wt, p)] = readFileSync(p, 'utf8');
    }
  };
  walk(wt);
  const env = gitDir ? { GIT_DIR: gitDir, GIT_WORK_TREE: wt } : undefined;
  const status = git(['status', '--porcelain', '--untracked-files=all'], { cwd: wt, env });
  let head = '';
  try { head = git(['rev-parse', '-q', '--verify', 'HEAD'], { cwd: wt, env }).trim(); } catch { head = 'unborn'; }
  return { files, status, head };
}

interface Twin { client: string; server: Record<Impl, string> }

/** a client with three commits; per implementation a copy of what `make` builds under `<root>/<impl>` */
function twins(root: string, make: (dir: string, client: string) => string): Twin {
  const client = join(root, 'client');
  git(['init', '-q', '-b', 'main', client]);
  commit(client, 'one', { 'path1': 'one\n' });
  commit(client, 'two', { 'path2': 'two\n' });
  const server = {} as Record<Impl, string>;
  for (const impl of IMPLS) {
    mkdirSync(join(root, impl));
    server[impl] = make(join(root, impl), client);
  }
  return { client, server };
}

interface Step {
  name: string;
  args: string[];
  before?: (client: string) => void;
  /** on each server, before its push */
  server?: (dir: string) => void;
  /** the work tree to compare (relative to the server directory), and its git dir when it is not found from there */
  worktree?: string;
}

function run(t: Twin, steps: Step[]): void {
  for (const st of steps) {
    st.before?.(t.client);
    const out = {} as Record<Impl, { code: number; stderr: string; stdout: string }>;
    for (const impl of IMPLS) {
      st.server?.(t.server[impl]);
      out[impl] = push(impl, t.client, t.server[impl], st.args);
    }
    const msg = `${st.name}\n--- gitwire:\n${out.gitwire.stderr}\n--- git:\n${out.git.stderr}`;
    assert.equal(out.gitwire.code, out.git.code, `exit code: ${msg}`);
    assert.equal(normalizeClient(out.gitwire.stderr, t.server.gitwire), normalizeClient(out.git.stderr, t.server.git), `client output: ${msg}`);
    const refs = (d: string) => git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: d });
    assert.equal(refs(t.server.gitwire), refs(t.server.git), `refs: ${st.name}`);
    const wt = (impl: Impl) => join(t.server[impl], st.worktree ?? '.');
    assert.deepEqual(treeState(wt('gitwire')), treeState(wt('git')), `work tree: ${msg}`);
  }
}

function nonBare(dir: string, client: string): string {
  const s = join(dir, 'server');
  git(['clone', '-q', client, s]);
  git(['config', 'receive.denyCurrentBranch', 'updateInstead'], { cwd: s });
  return s;
}

test('updateInstead: a clean tree is updated; unstaged, staged and conflicting changes refuse the push; deleting the branch is refused', () => {
  const t = tmp('gitwire-update-instead-');
  try {
    const tw = twins(t.dir, nonBare);
    run(tw, [
      { name: 'pristine tree', args: ['main'], before: (c) => { commit(c, 'three', { 'path2': 'three\n' }); } },
      { name: 'a stat-dirty tree is refreshed first', args: ['main'], before: (c) => { commit(c, 'four', { 'path1': 'four\n' }); }, server: (d) => { git(['reset', '-q', '--hard', 'HEAD^'], { cwd: d }); const p = join(d, 'path1'); writeFileSync(p, readFileSync(p)); } },
      { name: 'unstaged change refuses', args: ['main'], before: (c) => { commit(c, 'five', { 'path2': 'five\n' }); }, server: (d) => writeFileSync(join(d, 'path1'), 'changed\n') },
      { name: 'staged change refuses', args: ['main'], server: (d) => git(['add', 'path1'], { cwd: d }) },
      { name: 'untracked file in the way', args: ['main'], before: (c) => { commit(c, 'six', { 'path3': 'six\n' }); }, server: (d) => { git(['reset', '-q', '--hard'], { cwd: d }); writeFileSync(join(d, 'path3'), 'mine\n'); } },
      { name: 'non-fast-forward is refused before the tree is touched', args: ['main~3:main'], server: (d) => { git(['clean', '-q', '-f'], { cwd: d }); } },
      { name: 'now it goes through', args: ['main'] },
      { name: 'deleting the checked-out branch is refused', args: [':main'] },
      { name: 'another branch is an ordinary push', args: ['main:refs/heads/side'] },
    ]);
  } finally { t.cleanup(); }
});

test('updateInstead: push into an unborn repository; push-to-checkout accepting and declining', () => {
  const t = tmp('gitwire-update-instead-');
  try {
    const hook = [
      '#!/bin/sh',
      'echo >&2 "push-to-checkout: $1 in $(basename "$GIT_WORK_TREE")"',
      'if [ -f "$GIT_WORK_TREE/decline" ]; then echo >&2 declining; exit 1; fi',
      'git update-index -q --refresh && git read-tree -u -m "$1"',
    ].join('\n');
    const tw = twins(t.dir, (dir) => {
      const s = join(dir, 'void');
      git(['init', '-q', '-b', 'main', s]);
      git(['config', 'receive.denyCurrentBranch', 'updateInstead'], { cwd: s });
      return s;
    });
    run(tw, [
      { name: 'into the void', args: ['main'] },
      {
        name: 'the hook updates', args: ['main'], before: (c) => { commit(c, 'three', { 'path3': 'three\n' }); },
        server: (d) => { writeFileSync(join(d, '.git', 'hooks', 'push-to-checkout'), hook); chmodSync(join(d, '.git', 'hooks', 'push-to-checkout'), 0o755); },
      },
      { name: 'the hook declines', args: ['main'], before: (c) => { commit(c, 'four', { 'path3': 'four\n' }); }, server: (d) => writeFileSync(join(d, 'decline'), '') },
    ]);
  } finally { t.cleanup(); }
});

test('updateInstead: a linked worktree', () => {
  const t = tmp('gitwire-update-instead-');
  try {
    const linked = twins(t.dir, (dir, client) => {
      const s = nonBare(dir, client);
      git(['worktree', 'add', '-q', '-b', 'wt', join(s, 'wt')], { cwd: s });
      return s;
    });
    run(linked, [
      { name: 'linked worktree updated', args: ['main:wt'], worktree: 'wt', before: (c) => { commit(c, 'linked', { 'l.txt': 'l\n' }); } },
      { name: 'linked worktree branch delete refused', args: [':wt'], worktree: 'wt' },
    ]);
  } finally { t.cleanup(); }
});

/** a git v2.55.0 installed under the prefix GITWIRE_GIT_2_55 names (built outside the repository) */
const RP_255 = join(process.env.GITWIRE_GIT_2_55 ?? '/nonexistent', 'bin', 'git-receive-pack');

/**
 * A push that git 2.39 refuses and git 2.55 accepts: compared with the 2.55
 * oracle when it is there, else checked against 2.55's recorded outcome
 * (the push succeeds, the worktree is clean at the pushed commit).
 */
function against255(make: (dir: string, client: string) => string, spec: string, worktree: string): void {
  const t = tmp('gitwire-update-instead-');
  try {
    const tw = twins(t.dir, (dir, client) => {
      const s = make(dir, client);
      git(['config', 'receive.autogc', 'false'], { cwd: s }); // (2.55's auto-maintenance would run the installed git)
      return s;
    });
    const tip = commit(tw.client, 'pushed', { 'b.txt': 'b\n' });
    const ours = push('gitwire', tw.client, tw.server.gitwire, [spec]);
    const wt = join(tw.server.gitwire, worktree);
    if (existsSync(RP_255)) {
      const r = spawnSync('git', ['push', `--receive-pack=${RP_255}`, tw.server.git, spec], { cwd: tw.client, env: gitEnv, encoding: 'utf8' });
      assert.equal(ours.code, r.status, ours.stderr + r.stderr);
      assert.equal(normalizeClient(ours.stderr, tw.server.gitwire), normalizeClient(r.stderr, tw.server.git));
      assert.deepEqual(treeState(wt), treeState(join(tw.server.git, worktree)));
    } else {
      assert.equal(ours.code, 0, ours.stderr);
      assert.match(normalizeClient(ours.stderr, tw.server.gitwire), /^To <SERVER>\n {3}[0-9a-f]{7}\.\.[0-9a-f]{7} {2}\S+ -> \S+\n$/);
      const st = treeState(wt);
      assert.equal(st.head, tip);
      assert.equal(st.status, '');
      assert.equal(st.files['b.txt'], 'b\n');
    }
  } finally { t.cleanup(); }
}

// git 2.39 refuses these ("Working directory has staged/unstaged changes":
// it looked at the wrong HEAD or work tree); git 2.55 updates the worktree.
test('updateInstead: a bare repository\'s worktree while the bare HEAD is unborn (git 2.55 behaviour)', () => {
  against255((dir, client) => {
    const s = join(dir, 'bare.git');
    git(['clone', '-q', '--bare', client, s]);
    git(['worktree', 'add', '-q', '-b', 'wt', 'wt'], { cwd: s });
    git(['config', 'receive.denyCurrentBranch', 'updateInstead'], { cwd: s });
    git(['symbolic-ref', 'HEAD', 'refs/heads/unborn'], { cwd: s });
    return s;
  }, 'main:wt', 'wt');
});

test('updateInstead: core.worktree with a separate git dir (git 2.55 behaviour)', () => {
  against255((dir, client) => {
    const s = join(dir, 'cloned.git');
    git(['clone', '-q', '--separate-git-dir', s, client, join(dir, 'cloned')]);
    git(['config', 'receive.denyCurrentBranch', 'updateInstead'], { cwd: s });
    git(['config', 'core.worktree', join(dir, 'cloned')], { cwd: s });
    return s;
  }, 'HEAD:main', '../cloned');
});
