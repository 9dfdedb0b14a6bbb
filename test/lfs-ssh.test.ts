/**
 * Git LFS over the built-in SSH server with the real git-lfs and OpenSSH
 * clients: push and clone through `git-lfs-transfer` (what git-lfs ≥ 3.0
 * tries first), and through `git-lfs-authenticate` plus the HTTP API (what
 * it falls back to when git-lfs-transfer fails; here an ssh wrapper makes
 * it fail), locks over the pure-SSH protocol, and a user whose rule only
 * lets them fetch.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { gitSshEnv, sshKit, sshRun, startSsh, type SshKit, type SshUser } from './helpers/ssh.js';
import type { ServerProc } from './helpers/server-process.js';
import { fileSha256, gitRun, haveGitLfs, lfsHome, objectFile, writeBlob, type LfsHome } from './helpers/lfs.js';

const skip = haveGitLfs ? false : 'git-lfs is not installed (.ci/run installs it)';
const ok = (r: { code: number; stderr: string; stdout: string }, what = '') => assert.equal(r.code, 0, `${what}\n${r.stdout}\n${r.stderr}`);

/** GIT_SSH_COMMAND through a wrapper that makes `git-lfs-transfer` fail as on a server without it */
function noTransferEnv(dir: string, kit: SshKit, u: SshUser, port: number): NodeJS.ProcessEnv {
  const env = gitSshEnv(kit, u, port);
  const wrapper = join(dir, `ssh-no-transfer-${u.name}`);
  writeFileSync(wrapper, '#!/bin/sh\ncase "$*" in *git-lfs-transfer*) echo "sh: 1: git-lfs-transfer: not found" >&2; exit 127;; esac\nexec ssh "$@"\n');
  chmodSync(wrapper, 0o755);
  return { ...env, GIT_SSH_COMMAND: env.GIT_SSH_COMMAND!.replace(/^ssh /, `${wrapper} `) };
}

describe('lfs over the built-in ssh server, git-lfs client', { skip }, () => {
  let t: ReturnType<typeof tmp>;
  let kit: SshKit;
  let alice: SshUser;
  let dave: SshUser;
  let s: ServerProc & { sshPort: number };
  let srv: string;
  let home: LfsHome;
  before(async () => {
    t = tmp('gitwire-lfs-ssh-');
    kit = sshKit(t.dir);
    alice = kit.user('alice');
    dave = kit.user('dave');
    srv = join(t.dir, 'srv');
    mkdirSync(srv);
    for (const r of ['transfer.git', 'auth.git', 'ro.git']) git(['init', '-q', '--bare', '-b', 'main', join(srv, r)]);
    writeFileSync(join(t.dir, 'rules'), 'push ** alice\nfetch ** dave\n');
    // HTTP too: git-lfs-authenticate sends clients to it with a token
    s = await startSsh(kit, srv, ['--http', '0', '--auth-rules', join(t.dir, 'rules')]);
    home = lfsHome(join(t.dir, 'home'));
  });
  after(async () => { await s.stop(); t.cleanup(); });

  const url = (repo: string) => `ssh://git@127.0.0.1:${s.sshPort}/${repo}`;
  const commands = () => s.logs.filter((l) => l.includes('"command":"git-lfs-')).map((l) => /"command":"(git-lfs-[a-z]+)"/.exec(l)![1]!);

  for (const mode of ['git-lfs-transfer', 'git-lfs-authenticate'] as const) {
    test(`push several LFS files (one of 100 MB) and clone them back through ${mode}`, async () => {
      const repo = mode === 'git-lfs-transfer' ? 'transfer.git' : 'auth.git';
      const env = { ...home.env, ...(mode === 'git-lfs-transfer' ? gitSshEnv(kit, alice, s.sshPort) : noTransferEnv(t.dir, kit, alice, s.sshPort)) };
      const w = join(t.dir, `w-${mode}`);
      git(['init', '-q', '-b', 'main', w], { env });
      ok(await gitRun(['lfs', 'track', '*.bin'], w, env));
      writeBlob(join(w, 'big.bin'), 100 * 1024 * 1024);
      writeBlob(join(w, 'small.bin'), 777);
      writeFileSync(join(w, 'empty.bin'), '');
      ok(await gitRun(['add', '-A'], w, env));
      ok(await gitRun(['commit', '-q', '-m', 'lfs'], w, env));
      git(['remote', 'add', 'origin', url(repo)], { cwd: w });
      const before = commands().length;
      ok(await gitRun(['push', '-q', 'origin', 'main'], w, env), 'push');
      const gitDir = join(srv, repo);
      for (const f of ['big.bin', 'small.bin']) assert.ok(existsSync(objectFile(gitDir, await fileSha256(join(w, f)))), f);
      const c = join(t.dir, `c-${mode}`);
      ok(await gitRun(['clone', '-q', url(repo), c], t.dir, env), 'clone');
      for (const f of ['big.bin', 'small.bin', 'empty.bin']) assert.equal(await fileSha256(join(c, f)), await fileSha256(join(w, f)), f);
      const used = commands().slice(before);
      assert.ok(used.includes(mode), `${mode} was used: ${used.join(' ')}`);
      if (mode === 'git-lfs-transfer') assert.ok(!used.includes('git-lfs-authenticate'), used.join(' '));
    });
  }

  test('git-lfs-authenticate answers with an HTTP href and a token for this repository only', async () => {
    const r = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', 'git-lfs-authenticate /auth.git download']);
    assert.equal(r.code, 0, r.stderr);
    const a = JSON.parse(r.stdout) as { href: string; header: { Authorization: string }; expires_in: number; expires_at: string };
    assert.equal(a.href, `http://127.0.0.1:${s.httpPort}/auth.git/info/lfs`);
    assert.match(a.header.Authorization, /^Bearer gwlfs1\./);
    assert.ok(a.expires_in > 0 && Date.parse(a.expires_at) > Date.now());
    const locksOk = await fetch(`${a.href}/objects/batch`, { method: 'POST', headers: { ...a.header, 'Content-Type': 'application/vnd.git-lfs+json' }, body: JSON.stringify({ operation: 'download', objects: [] }) });
    assert.equal(locksOk.status, 200);
    // a download token does not upload, and says nothing for another repository
    const up = await fetch(`${a.href}/objects/batch`, { method: 'POST', headers: { ...a.header, 'Content-Type': 'application/vnd.git-lfs+json' }, body: JSON.stringify({ operation: 'upload', objects: [] }) });
    assert.equal(up.status, 401);
    const other = await fetch(a.href.replace('/auth.git/', '/transfer.git/') + '/objects/batch', { method: 'POST', headers: { ...a.header, 'Content-Type': 'application/vnd.git-lfs+json' }, body: JSON.stringify({ operation: 'download', objects: [] }) });
    assert.equal(other.status, 401);
    // dave may fetch but not push: no upload token for him
    const d = await sshRun(kit, dave, s.sshPort, ['git@127.0.0.1', 'git-lfs-authenticate /auth.git upload']);
    assert.equal(d.code, 128);
    assert.match(d.stderr, /^fatal: dave may not push to '\/auth\.git'\n$/);
    const bad = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', 'git-lfs-authenticate /auth.git delete']);
    assert.equal(bad.code, 128);
    assert.match(bad.stderr, /unknown operation 'delete'/);
    const missing = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', 'git-lfs-transfer /nope.git download']);
    assert.equal(missing.code, 128);
    assert.match(missing.stderr, /^fatal: '\/nope\.git' does not appear to be a git repository\n$/);
  });

  test('a user whose rule only fetches cannot upload over git-lfs-transfer; the store is unchanged', async () => {
    const env = { ...home.env, ...gitSshEnv(kit, dave, s.sshPort) };
    const w = join(t.dir, 'w-dave');
    git(['init', '-q', '-b', 'main', w], { env });
    ok(await gitRun(['lfs', 'track', '*.bin'], w, env));
    writeBlob(join(w, 'd.bin'), 999);
    ok(await gitRun(['add', '-A'], w, env));
    ok(await gitRun(['commit', '-q', '-m', 'd'], w, env));
    git(['remote', 'add', 'origin', url('ro.git')], { cwd: w });
    const r = await gitRun(['lfs', 'push', 'origin', 'main'], w, env);
    assert.notEqual(r.code, 0, r.stderr);
    assert.ok(!existsSync(join(srv, 'ro.git', 'lfs', 'objects')), 'nothing stored');
  });

  test('locks over the pure-SSH protocol: lock, list, verify on push, unlock', async () => {
    const env = { ...home.env, ...gitSshEnv(kit, alice, s.sshPort) };
    const c = join(t.dir, 'c-git-lfs-transfer');
    ok(await gitRun(['lfs', 'lock', 'small.bin'], c, env), 'lock');
    const l = await gitRun(['lfs', 'locks'], c, env);
    ok(l);
    assert.match(l.stdout, /^small\.bin\s+alice\s+ID:[0-9a-f]{32}-[0-9a-f]{16}\n$/);
    const again = await gitRun(['lfs', 'lock', 'small.bin'], c, env);
    assert.notEqual(again.code, 0);
    ok(await gitRun(['lfs', 'unlock', 'small.bin'], c, env), 'unlock');
    assert.equal((await gitRun(['lfs', 'locks'], c, env)).stdout, '');
  });
});
