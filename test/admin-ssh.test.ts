/**
 * `ssh host info`, `ssh host repo create|delete NAME` with the `admin`
 * rule (#38), through the OpenSSH client; `gitwire delete`; deleting a
 * repository while it is being cloned.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { type ServerProc } from './helpers/server-process.js';
import { gitSshEnv, sshKit, sshRun, startSsh } from './helpers/ssh.js';
import { version } from '../src/version.js';

function fixture(t: { dir: string }) {
  const root = join(t.dir, 'root');
  mkdirSync(join(root, 'team'), { recursive: true });
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'one', { 'a.txt': 'a\n' });
  git(['clone', '-q', '--bare', src, join(root, 'team', 'app.git')]);
  git(['clone', '-q', '--bare', src, join(root, 'public.git')]);
  git(['clone', '-q', '--bare', src, join(root, 'secret.git')]);
  git(['clone', '-q', src, join(root, 'team', 'tree')]); // a work tree: listed as team/tree
  writeFileSync(join(t.dir, 'rules'), 'admin team/** alice\npush public alice bob\nfetch team/** bob\nfetch secret carol\n');
  return { root, src };
}

test('ssh info: the repositories the key\'s user may fetch, with R, W and A; without rules, every repository R W', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-sshinfo-');
  let s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const { root } = fixture(t);
    // a name on disk that would forge a line of the listing (no rule pattern matches a newline: listed only without rules)
    git(['init', '-q', '--bare', join(root, 'team', 'evil\n R W A\tfake.git')]);
    // an object pool (gitwire fork's): never served, so never listed
    git(['init', '-q', '--bare', join(root, '@pools', 'p1.git')]);
    const kit = sshKit(t.dir);
    const alice = kit.user('alice'), bob = kit.user('bob'), dave = kit.user('dave');
    s = await startSsh(kit, root, ['--auth-rules', join(t.dir, 'rules')]);
    const a = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', 'info']);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, `hello alice, this is gitwire ${version()}\n\n R W  \tpublic\n R W A\tteam/app\n R W A\tteam/tree\n`);
    const b = await sshRun(kit, bob, s.sshPort, ['git@127.0.0.1', 'info']);
    assert.equal(b.stdout, `hello bob, this is gitwire ${version()}\n\n R W  \tpublic\n R    \tteam/app\n R    \tteam/tree\n`);
    const d = await sshRun(kit, dave, s.sshPort, ['git@127.0.0.1', 'info']);
    assert.equal(d.stdout, `hello dave, this is gitwire ${version()}\n\n`);
    // help, and a command nobody knows
    const h = await sshRun(kit, bob, s.sshPort, ['git@127.0.0.1', 'help']);
    assert.equal(h.code, 0);
    assert.match(h.stdout, /repo create <name>/);
    const u = await sshRun(kit, bob, s.sshPort, ['git@127.0.0.1', 'frobnicate', 'x']);
    assert.equal(u.code, 128);
    assert.equal(u.stderr, "fatal: unrecognized command 'frobnicate x'\n");
    await s.stop();
    s = await startSsh(kit, root, []);
    const all = await sshRun(kit, dave, s.sshPort, ['git@127.0.0.1', 'info']);
    assert.equal(all.stdout, `hello dave, this is gitwire ${version()}\n\n R W  \tpublic\n R W  \tsecret\n R W  \tteam/app\n R W  \tteam/evil? R W A?fake\n R W  \tteam/tree\n`);
  } finally { await s?.stop(); t.cleanup(); }
});

test('ssh repo create / repo delete: an admin rule allows them; everyone else is refused in git\'s words; nothing else moves', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-sshrepo-');
  let s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const { root, src } = fixture(t);
    const kit = sshKit(t.dir);
    const alice = kit.user('alice'), bob = kit.user('bob'), carol = kit.user('carol');
    s = await startSsh(kit, root, ['--auth-rules', join(t.dir, 'rules'), '--default-branch', 'trunk', '--create-rate', '4']);
    const ssh = (u: typeof alice, ...cmd: string[]) => sshRun(kit, u, s!.sshPort, ['git@127.0.0.1', ...cmd]);
    const budgetFrom = Date.now();
    const made = await ssh(alice, 'repo', 'create', 'team/new');
    assert.equal(made.code, 0, made.stderr);
    assert.equal(made.stderr, "Created repository 'team/new'\n");
    assert.equal(git(['symbolic-ref', 'HEAD'], { cwd: join(root, 'team', 'new.git') }).trim(), 'refs/heads/trunk');
    // alice pushes into it (admin implies push)
    const p = await gitAsync(['push', `ssh://git@127.0.0.1:${s.sshPort}/team/new.git`, 'main:trunk'], src, gitSshEnv(kit, alice, s.sshPort));
    assert.equal(p.code, 0, p.stderr);
    assert.deepEqual(await ssh(alice, 'repo', 'create', 'team/new.git'), { code: 128, stdout: '', stderr: "fatal: repository 'team/new' already exists\n" });
    assert.deepEqual(await ssh(alice, 'repo', 'create', 'team/app'), { code: 128, stdout: '', stderr: "fatal: repository 'team/app' already exists\n" });
    assert.deepEqual(await ssh(bob, 'repo', 'create', 'team/bobs'), { code: 128, stdout: '', stderr: "fatal: bob may not create 'team/bobs' (no admin rule names them for it)\n" });
    assert.deepEqual(await ssh(alice, 'repo', 'create', 'elsewhere'), { code: 128, stdout: '', stderr: "fatal: alice may not create 'elsewhere' (no admin rule names them for it)\n" });
    const dots = await ssh(alice, 'repo', 'create', 'team/../x');
    assert.equal(dots.code, 128);
    assert.match(dots.stderr, /^fatal: cannot create 'team\/\.\.\/x': '\.\.': a component begins with a letter or digit/);
    const inside = await ssh(alice, 'repo', 'create', 'team/app.git/sub');
    assert.equal(inside.code, 128);
    assert.match(inside.stderr, /only the last component may end in \.git/);
    const deep = await ssh(alice, 'repo', 'create', `team/${'d/'.repeat(20)}x`);
    assert.match(deep.stderr, /more than 8 components/);
    assert.deepEqual(await ssh(alice, 'repo', 'create'), { code: 128, stdout: '', stderr: 'fatal: usage: repo create <name> | repo delete <name>\n' });
    // delete: bob may see team/app but not administer it; carol cannot even see it; secret is not under team/
    assert.deepEqual(await ssh(bob, 'repo', 'delete', 'team/app'), { code: 128, stdout: '', stderr: "fatal: bob may not delete 'team/app' (no admin rule names them for it)\n" });
    assert.deepEqual(await ssh(carol, 'repo', 'delete', 'team/app'), { code: 128, stdout: '', stderr: "fatal: 'team/app' does not appear to be a git repository\n" });
    assert.deepEqual(await ssh(carol, 'repo', 'delete', 'team/none'), { code: 128, stdout: '', stderr: "fatal: 'team/none' does not appear to be a git repository\n" });
    assert.deepEqual(await ssh(alice, 'repo', 'delete', 'secret'), { code: 128, stdout: '', stderr: "fatal: 'secret' does not appear to be a git repository\n" });
    assert.deepEqual(await ssh(alice, 'repo', 'delete', 'team/../secret'), { code: 128, stdout: '', stderr: "fatal: 'team/../secret' does not appear to be a git repository\n" });
    assert.ok(existsSync(join(root, 'team', 'app.git')) && existsSync(join(root, 'secret.git')));
    // a work tree's repository is not deleted (the work tree would go with it)
    const wt = await ssh(alice, 'repo', 'delete', 'team/tree');
    assert.equal(wt.code, 128);
    assert.ok(existsSync(join(root, 'team', 'tree', '.git')));
    const del = await ssh(alice, 'repo', 'delete', 'team/app.git');
    assert.deepEqual(del, { code: 0, stdout: '', stderr: "Deleted repository 'team/app'\n" });
    assert.deepEqual(readdirSync(join(root, 'team')).sort(), ['new.git', 'tree']);
    const gone = await gitAsync(['ls-remote', `ssh://git@127.0.0.1:${s.sshPort}/team/app.git`], t.dir, gitSshEnv(kit, alice, s.sshPort));
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /does not appear to be a git repository/);
    // the budget: 4 a minute (1 used above), refilled as time passes (one more each 15 s this test takes)
    const rs = [];
    for (let i = 0; i < 5; i++) rs.push((await ssh(alice, 'repo', 'create', `team/r${i}`)).code);
    const made3 = rs.filter((c) => c === 0).length;
    const refilled = Math.floor(((Date.now() - budgetFrom) * 4) / 60_000);
    assert.ok(made3 >= 3 && made3 <= Math.min(4, 3 + refilled), `${rs.join(' ')} after ${refilled} refills`);
    assert.deepEqual(rs, rs.map((_, i) => (i < made3 ? 0 : 128)));
    const over = await ssh(alice, 'repo', 'create', 'team/r9');
    assert.match(over.stderr, /^fatal: alice may create no more repositories now \(4 a minute\); try again in \d+ s\n$/);
  } finally { await s?.stop(); t.cleanup(); }
});

test('gitwire delete: the repository is gone at once for a running server, nothing is left behind; a missing one is git\'s error', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-delete-');
  let s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const { root } = fixture(t);
    const kit = sshKit(t.dir);
    const alice = kit.user('alice');
    s = await startSsh(kit, root, []);
    const url = `ssh://git@127.0.0.1:${s.sshPort}/public.git`;
    assert.equal((await gitAsync(['ls-remote', url], t.dir, gitSshEnv(kit, alice, s.sshPort))).code, 0);
    const r = spawnSync(BIN, ['delete', join(root, 'public.git')], { encoding: 'utf8', env: gitEnv });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `Deleted repository ${join(root, 'public.git')}\n`);
    assert.equal((await gitAsync(['ls-remote', url], t.dir, gitSshEnv(kit, alice, s.sshPort))).code, 128);
    assert.deepEqual(readdirSync(root).sort(), ['secret.git', 'team']);
    const again = spawnSync(BIN, ['delete', join(root, 'public.git')], { encoding: 'utf8', env: gitEnv });
    assert.equal(again.status, 128);
    assert.equal(again.stderr, `fatal: '${join(root, 'public.git')}' does not appear to be a git repository\n`);
    const tree = spawnSync(BIN, ['delete', join(root, 'team', 'tree', '.git')], { encoding: 'utf8', env: gitEnv });
    assert.equal(tree.status, 128);
    assert.ok(existsSync(join(root, 'team', 'tree', '.git', 'HEAD')));
  } finally { await s?.stop(); t.cleanup(); }
});

test('repo delete during clones: each clone completes whole (fsck clean) or fails; never a broken clone reported as success', { timeout: 240_000 }, async () => {
  const t = tmp('gitwire-delclone-');
  let s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const { root, src } = fixture(t);
    // ~24 MB of incompressible blobs over a few commits: a clone takes a while on loopback
    for (let i = 0; i < 3; i++) commit(src, `big ${i}`, Object.fromEntries(Array.from({ length: 4 }, (_, j) => [`big-${i}-${j}.bin`, randomBytes(2 << 20)])));
    const master = join(t.dir, 'master.git');
    git(['clone', '-q', '--bare', src, master]);
    const kit = sshKit(t.dir);
    const alice = kit.user('alice');
    writeFileSync(join(t.dir, 'rules'), 'admin team/** alice\n');
    s = await startSsh(kit, root, ['--auth-rules', join(t.dir, 'rules')]);
    const env = gitSshEnv(kit, alice, s.sshPort);
    const outcomes: string[] = [];
    for (const delay of [0, 30, 150, 600, 4000]) {
      const dir = join(root, 'team', 'big.git');
      cpSync(master, dir, { recursive: true });
      const dest = join(t.dir, `clone-${delay}`);
      const clone = gitAsync(['clone', '-q', `ssh://git@127.0.0.1:${s.sshPort}/team/big.git`, dest], t.dir, env);
      await new Promise((r) => setTimeout(r, delay));
      const del = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', 'repo', 'delete', 'team/big']);
      assert.equal(del.code, 0, del.stderr);
      const c = await clone;
      if (c.code === 0) {
        const fsck = spawnSync('git', ['fsck', '--full'], { cwd: dest, encoding: 'utf8', env: gitEnv });
        assert.equal(fsck.status, 0, `clone after ${delay} ms said success but: ${fsck.stderr}`);
        const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: dest, encoding: 'utf8', env: gitEnv });
        assert.equal(head.stdout.trim(), git(['rev-parse', 'main'], { cwd: master }).trim(), `clone after ${delay} ms said success but has no HEAD: ${c.stderr}`);
        outcomes.push(`${delay}:complete`);
      } else {
        assert.match(c.stderr, /fatal|error/);
        outcomes.push(`${delay}:failed (${c.stderr.trim().split("\n").pop()})`);
      }
      assert.equal(existsSync(dir), false);
      assert.deepEqual(readdirSync(join(root, 'team')).filter((n) => n.startsWith('.')), []);
    }
    console.log(`# delete during clone: ${outcomes.join(' ')}`);
  } finally { await s?.stop(); t.cleanup(); }
});
