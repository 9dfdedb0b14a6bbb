/**
 * Push over the network, end to end with the real git client, each push
 * compared with the same push to git: `gitwire serve` over HTTP against
 * git http-backend (a v0 client and a client asking for v2), and git://
 * with --enable=receive-pack against git daemon. Create, update, a
 * rejected non-fast-forward (client side and receive.denyNonFastForwards),
 * force, delete, atomic, push options and hook rejections.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { normalizeClient, serverState, fsck } from './helpers/push.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitAsync, startHttpBackend, startGitDaemon, type RefServer } from './helpers/push-net.js';

const PRE_RECEIVE = `#!/bin/sh
i=0
while [ "$i" -lt "\${GIT_PUSH_OPTION_COUNT:-0}" ]; do
  eval "v=\\$GIT_PUSH_OPTION_$i"
  echo "option: $v"
  [ "$v" = reject ] && { echo "rejected by option"; exit 1; }
  i=$((i+1))
done
exit 0
`;
const UPDATE = `#!/bin/sh
case "$1" in refs/heads/blocked*) echo "no pushes to $1"; exit 1;; esac
exit 0
`;

function makeServerRepo(root: string, src: string): string {
  mkdirSync(root, { recursive: true });
  const dir = join(root, 'r.git');
  git(['clone', '-q', '--bare', src, dir]);
  for (const [k, v] of [['http.receivepack', 'true'], ['receive.advertisePushOptions', 'true'], ['core.logAllRefUpdates', 'true']]) git(['config', k!, v!], { cwd: dir });
  writeFileSync(join(dir, 'hooks', 'pre-receive'), PRE_RECEIVE); chmodSync(join(dir, 'hooks', 'pre-receive'), 0o755);
  writeFileSync(join(dir, 'hooks', 'update'), UPDATE); chmodSync(join(dir, 'hooks', 'update'), 0o755);
  return dir;
}

interface Step { name: string; prepare?: (client: string) => void; args: string[]; config?: [string, string] }

/** The scenario: each step runs against both servers with the same client state. */
const STEPS: Step[] = [
  { name: 'create', prepare: (c) => { commit(c, 'one', { 'one.txt': '1\n' }); }, args: ['main:refs/heads/topic'] },
  { name: 'update', prepare: (c) => { commit(c, 'two', { 'two.txt': '2\n' }); }, args: ['main:refs/heads/topic'] },
  { name: 'non-fast-forward (client)', prepare: (c) => { git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: c }); commit(c, 'alt', { 'alt.txt': 'alt\n' }); }, args: ['main:refs/heads/topic'] },
  { name: 'non-fast-forward (denyNonFastForwards)', config: ['receive.denyNonFastForwards', 'true'], args: ['--force', 'main:refs/heads/topic'] },
  { name: 'force', config: ['receive.denyNonFastForwards', 'false'], args: ['--force', 'main:refs/heads/topic'] },
  { name: 'delete', args: [':refs/heads/topic'] },
  { name: 'atomic (one ref refused by the update hook)', args: ['--atomic', 'main:refs/heads/a1', 'main:refs/heads/blocked'] },
  { name: 'atomic (both accepted)', args: ['--atomic', 'main:refs/heads/a1', 'main:refs/heads/a2'] },
  { name: 'push options', prepare: (c) => { commit(c, 'three', { 'three.txt': '3\n' }); }, args: ['-o', 'first', '-o', 'second value', 'main:refs/heads/a1'] },
  { name: 'pre-receive rejection', args: ['-o', 'reject', 'main:refs/heads/a2'] },
  { name: 'update hook rejection', args: ['main:refs/heads/blocked-too', 'main:refs/heads/fine'] },
];

function clean(s: string, url: string): string {
  // progress, and the key lines git prints differently by timing, are not compared
  return normalizeClient(s, url).split('\n').filter((l) => !/^remote: (Counting|Compressing|Total|Resolving)/.test(l)).join('\n');
}

async function runScenario(t: { dir: string }, kind: 'http-v0' | 'http-v2' | 'git'): Promise<void> {
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  const dirs = { gitwire: makeServerRepo(join(t.dir, 'root-gitwire'), src), git: makeServerRepo(join(t.dir, 'root-git'), src) };
  // one client pushes to both servers (by URL: no remote-tracking state differs)
  const client = join(t.dir, 'client');
  git(['clone', '-q', src, client]);
  let ours: ServerProc | undefined;
  let theirs: RefServer | undefined;
  try {
    const http = kind !== 'git';
    ours = await startServe(join(t.dir, 'root-gitwire'), http ? ['--http', '0', '--quiet'] : ['--git', '0', '--enable=receive-pack', '--export-all', '--quiet']);
    theirs = http ? await startHttpBackend(join(t.dir, 'root-git')) : await startGitDaemon(join(t.dir, 'root-git'));
    const url = {
      gitwire: http ? `http://127.0.0.1:${ours.httpPort}/r.git` : `git://127.0.0.1:${ours.gitPort}/r.git`,
      git: http ? `http://127.0.0.1:${theirs.port}/r.git` : `git://127.0.0.1:${theirs.port}/r.git`,
    };
    const proto = kind === 'http-v2' ? ['-c', 'protocol.version=2'] : ['-c', 'protocol.version=0'];
    const seen: string[] = [];
    for (const step of STEPS) {
      const out: Record<string, { code: number; text: string; state: string }> = {};
      step.prepare?.(client);
      for (const impl of ['gitwire', 'git'] as const) {
        if (step.config) git(['config', ...step.config], { cwd: dirs[impl] });
        const r = await gitAsync([...proto, 'push', '--porcelain', url[impl], ...step.args], client);
        out[impl] = { code: r.code, text: clean(r.stdout + r.stderr, url[impl]), state: serverState(dirs[impl]).refs };
      }
      assert.equal(out.gitwire!.code, out.git!.code, `${kind} ${step.name}: exit code\n${out.gitwire!.text}\n---\n${out.git!.text}`);
      assert.equal(out.gitwire!.text, out.git!.text, `${kind} ${step.name}: client output`);
      assert.equal(out.gitwire!.state, out.git!.state, `${kind} ${step.name}: refs`);
      seen.push(out.gitwire!.text);
    }
    // the steps did what they say (the comparison is not of two empty outputs)
    const all = seen.join('\n');
    for (const want of ['remote: option: second value', 'remote: no pushes to refs/heads/blocked', 'pre-receive hook declined', '[new branch]', 'non-fast-forward', '[deleted]', 'forced update']) {
      assert.ok(all.includes(want), `${kind}: expected '${want}' in\n${all}`);
    }
    // the reflogs say the same (same committer, same messages)
    const a = serverState(dirs.gitwire), b = serverState(dirs.git);
    assert.deepEqual(Object.keys(a.reflogs).sort(), Object.keys(b.reflogs).sort());
    assert.equal(fsck(dirs.gitwire).code, 0);
  } finally {
    // both, whatever the other's stop says: one left running would keep this file from ending
    const stops = await Promise.allSettled([ours?.stop(), theirs?.stop()]);
    for (const st of stops) if (st.status === 'rejected') throw st.reason;
  }
}

for (const kind of ['http-v0', 'http-v2', 'git'] as const) {
  test(`push over ${kind}: every step as git's own server answers it`, { timeout: 180_000 }, async () => {
    const t = tmp(`gitwire-pushnet-${kind}-`);
    try { await runScenario(t, kind); } finally { t.cleanup(); }
  });
}

test('git://: receive-pack is refused unless --enable=receive-pack, and nothing moves', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-pushgit-');
  let ours: ServerProc | undefined;
  try {
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    commit(src, 'base', { 'a.txt': 'a\n' });
    const dir = makeServerRepo(join(t.dir, 'root'), src);
    const before = serverState(dir).refs;
    ours = await startServe(join(t.dir, 'root'), ['--git', '0', '--export-all', '--quiet', '--informative-errors'].filter((a) => a !== '--informative-errors'));
    const r = await gitAsync(['push', `git://127.0.0.1:${ours.gitPort}/r.git`, 'main:refs/heads/x'], src);
    assert.notEqual(r.code, 0);
    // git daemon's refusal, as the client shows it (without --informative-errors)
    assert.match(r.stderr, /fatal: remote error: access denied or repository not exported: \/r\.git/);
    assert.equal(serverState(dir).refs, before);
  } finally {
    await ours?.stop();
    t.cleanup();
  }
});
