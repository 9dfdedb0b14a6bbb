/**
 * Issue #40, item 4: a repository owned by another user is refused as git
 * refuses it (CVE-2022-24765: git daemon and http-backend die in
 * enter_repo() with "detected dubious ownership"), over HTTP, git:// and
 * SSH, for fetch, push (its hooks never run) and LFS, unless
 * `safe.directory` in the server's global or system config lists it (`*`,
 * `<dir>/*`, the empty value resetting the list). The repository's own
 * config cannot list itself. stdio receive-pack says what git's says, byte
 * for byte; stdio upload-pack serves it, as git ≥ 2.45.2's does
 * (ENTER_REPO_ANY_OWNER_OK).
 *
 * The test chowns repositories to nobody (65534), so it runs as root.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { commit } from './helpers/fixtures.js';
import type { ServerProc } from './helpers/server-process.js';
import { admitRequest } from '../src/transport/request.js';
import { gitSshEnv, sshKit, sshRun, startSsh, writeKnownHosts, type SshKit, type SshUser } from './helpers/ssh.js';

const root = process.geteuid?.() === 0;
const skip = root ? false : 'chowning a repository to another user needs root';

let t: ReturnType<typeof tmp>;
let srv: string;
let tip: string;
let kit: SshKit;
let alice: SshUser;
let strict: ServerProc & { sshPort: number };
let globalCfg: string;
let listed: ServerProc & { sshPort: number };

const NOBODY = 65534;

function chownR(p: string): void {
  const r = spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, p]);
  assert.equal(r.status, 0, String(r.stderr));
}

const urls = (s: ServerProc & { sshPort: number }, name: string) => ({
  http: `http://127.0.0.1:${s.httpPort}/${name}`,
  git: `git://127.0.0.1:${s.gitPort}/${name}`,
  ssh: `ssh://alice@127.0.0.1:${s.sshPort}/${name}`,
});

/** (both servers share one host key; known_hosts names the port asked of) */
function sshEnvFor(s: ServerProc & { sshPort: number }): NodeJS.ProcessEnv { writeKnownHosts(kit, s.sshPort); return gitSshEnv(kit, alice, s.sshPort); }

before(async () => {
  if (!root) return;
  t = tmp('gitwire-owner-');
  srv = realpathSync(t.dir) + '/srv';
  mkdirSync(srv);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  tip = commit(w, 'one', { f: '1\n' });
  for (const name of ['dubious.git', 'mine.git', 'selfsafe.git', 'hooked.git']) {
    git(['clone', '-q', '--bare', w, join(srv, name)]);
    git(['--git-dir', join(srv, name), 'config', 'http.receivepack', 'true']);
  }
  // a work tree (served as `wt`, its git directory `wt/.git`)
  git(['clone', '-q', w, join(srv, 'wt')]);
  // the repository's own config says it is safe: git ignores it (protected config only)
  git(['--git-dir', join(srv, 'selfsafe.git'), 'config', '--add', 'safe.directory', '*']);
  git(['--git-dir', join(srv, 'selfsafe.git'), 'config', '--add', 'safe.directory', join(srv, 'selfsafe.git')]);
  // a hook that would run as the server's user
  const hook = join(srv, 'hooked.git', 'hooks', 'pre-receive');
  writeFileSync(hook, `#!/bin/sh\ntouch '${join(t.dir, 'hook-ran')}'\n`);
  chmodSync(hook, 0o755);
  for (const name of ['dubious.git', 'selfsafe.git', 'hooked.git', 'wt']) chownR(join(srv, name));
  kit = sshKit(join(t.dir, 'ssh'));
  alice = kit.user('alice');
  const args = ['--http', '0', '--git', '0', '--export-all', '--enable', 'receive-pack'];
  strict = await startSsh(kit, srv, args);
  globalCfg = join(t.dir, 'global.gitconfig');
  writeFileSync(globalCfg, `[safe]\n\tdirectory = ${join(srv, 'dubious.git')}\n\tdirectory = ${join(srv, 'hooked.git')}\n`);
  listed = await startSsh(kit, srv, args, { GIT_CONFIG_GLOBAL: globalCfg });
});
after(async () => { await strict?.stop(); await listed?.stop(); t?.cleanup(); });

test('another user\'s repository: ls-remote and clone over HTTP, git:// and SSH are refused with git\'s words, and the log has git\'s whole text', { skip }, async () => {
  for (const name of ['dubious.git', 'wt']) {
    const u = urls(strict, name);
    for (const [kind, url] of Object.entries(u)) {
      const env = kind === 'ssh' ? sshEnvFor(strict) : {};
      const r = await gitAsync(['ls-remote', url], undefined, env);
      assert.notEqual(r.code, 0, `${kind} ${name}: ${r.stdout}`);
      assert.match(r.stderr, new RegExp(`detected dubious ownership in repository at '/?${name}'`), `${kind} ${name}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, new RegExp(srv), `${kind}: the server's path is not told`);
      const c = await gitAsync(['clone', '-q', '--bare', url, join(t.dir, `c-${kind}-${name}`)], undefined, env);
      assert.notEqual(c.code, 0, `${kind} ${name}`);
      for (const v of ['0', '2']) {
        const rv = await gitAsync(['-c', `protocol.version=${v}`, 'ls-remote', url], undefined, env);
        assert.notEqual(rv.code, 0, `${kind} v${v}`);
      }
    }
  }
  const gitDir = join(srv, 'dubious.git');
  const lines = strict.logs.filter((l) => l.includes('"dubious-ownership"')).map((l) => JSON.parse(l) as { transport: string; reason: string });
  for (const tr of ['http', 'git', 'ssh']) {
    const l = lines.find((x) => x.transport === tr && x.reason.includes(`'${gitDir}'`));
    assert.ok(l, `${tr}: ${JSON.stringify(lines)}`);
    assert.equal(l.reason, `detected dubious ownership in repository at '${gitDir}'\nTo add an exception for this directory, call:\n\n\tgit config --global --add safe.directory ${gitDir}`);
  }
  // the server's own repositories are served as before
  for (const [kind, url] of Object.entries(urls(strict, 'mine.git'))) {
    const r = await gitAsync(['ls-remote', url], undefined, kind === 'ssh' ? sshEnvFor(strict) : {});
    assert.equal(r.code, 0, `${kind}: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^${tip}\\tHEAD$`, 'm'));
  }
});

test('another user\'s repository spelled five ways is refused each way', { skip }, async () => {
  for (const spelled of ['dubious', 'dubious.git/', '%64ubious.git', './dubious.git', 'dubious.git/.']) {
    for (const kind of ['http', 'git'] as const) {
      const u = kind === 'http' ? `http://127.0.0.1:${strict.httpPort}/${spelled}` : `git://127.0.0.1:${strict.gitPort}/${spelled}`;
      const r = await gitAsync(['ls-remote', u]);
      assert.notEqual(r.code, 0, `${kind} ${spelled}: ${r.stdout}`);
      assert.match(r.stderr, /detected dubious ownership/, `${kind} ${spelled}: ${r.stderr}`);
    }
  }
});

test('a push into another user\'s repository is refused on every transport, and its hooks never run', { skip }, async () => {
  const w = join(t.dir, 'pusher');
  git(['clone', '-q', urls(strict, 'mine.git').http, w]);
  const next = commit(w, 'two', { g: '2\n' });
  for (const [kind, url] of Object.entries(urls(strict, 'hooked.git'))) {
    const r = await gitAsync(['-C', w, 'push', url, `HEAD:refs/heads/p-${kind}`], undefined, kind === 'ssh' ? sshEnvFor(strict) : {});
    assert.notEqual(r.code, 0, kind);
    assert.match(r.stderr, /detected dubious ownership in repository at '\/?hooked\.git'/, `${kind}: ${r.stderr}`);
  }
  assert.equal(existsSync(join(t.dir, 'hook-ran')), false, 'the pre-receive hook ran');
  const refs = git(['--git-dir', join(srv, 'hooked.git'), 'for-each-ref', '--format=%(refname)']);
  assert.doesNotMatch(refs, /p-/);
  void next;
});

test('LFS for another user\'s repository: the batch API and git-lfs-authenticate are refused', { skip }, async () => {
  const res = await fetch(`http://127.0.0.1:${strict.httpPort}/dubious.git/info/lfs/objects/batch`, {
    method: 'POST', headers: { 'content-type': 'application/vnd.git-lfs+json', accept: 'application/vnd.git-lfs+json' },
    body: JSON.stringify({ operation: 'download', objects: [{ oid: 'a'.repeat(64), size: 1 }] }),
  });
  const body = await res.text();
  assert.equal(res.status, 403, body);
  assert.match(body, /detected dubious ownership in repository at '\/?dubious\.git'/);
  // logged as what it was, as smart HTTP logs it (it said `denied`)
  let line: string | undefined;
  for (let i = 0; i < 100 && !line; i++) {
    line = strict.logs.find((l) => l.includes('"command":"lfs-batch"') && l.includes('dubious.git'));
    if (!line) await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(line ?? '', /"outcome":"dubious-ownership"/);
  const ok = await fetch(`http://127.0.0.1:${strict.httpPort}/mine.git/info/lfs/objects/batch`, {
    method: 'POST', headers: { 'content-type': 'application/vnd.git-lfs+json', accept: 'application/vnd.git-lfs+json' },
    body: JSON.stringify({ operation: 'download', objects: [{ oid: 'a'.repeat(64), size: 1 }] }),
  });
  assert.equal(ok.status, 200, await ok.text());
  writeKnownHosts(kit, strict.sshPort);
  const s = await sshRun(kit, alice, strict.sshPort, ['127.0.0.1', 'git-lfs-authenticate dubious.git download']);
  assert.notEqual(s.code, 0);
  assert.match(s.stderr + s.stdout, /detected dubious ownership/);
});

test('safe.directory in the server\'s global config admits a listed repository (fetch and push, hooks run); others stay refused', { skip }, async () => {
  for (const [kind, url] of Object.entries(urls(listed, 'dubious.git'))) {
    const env = kind === 'ssh' ? sshEnvFor(listed) : {};
    const c = await gitAsync(['clone', '-q', '--bare', url, join(t.dir, `ok-${kind}`)], undefined, env);
    assert.equal(c.code, 0, `${kind}: ${c.stderr}`);
    assert.equal(git(['--git-dir', join(t.dir, `ok-${kind}`), 'rev-parse', 'main']).trim(), tip);
  }
  const w = join(t.dir, 'pusher2');
  git(['clone', '-q', urls(listed, 'mine.git').http, w]);
  commit(w, 'three', { h: '3\n' });
  const p = await gitAsync(['-C', w, 'push', urls(listed, 'hooked.git').git, 'HEAD:refs/heads/listed']);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(existsSync(join(t.dir, 'hook-ran')), true);
  // not listed: the work tree (its git directory would have to be), and the one listing itself
  for (const name of ['wt', 'selfsafe.git']) {
    for (const [kind, url] of Object.entries(urls(listed, name))) {
      const r = await gitAsync(['ls-remote', url], undefined, kind === 'ssh' ? sshEnvFor(listed) : {});
      assert.notEqual(r.code, 0, `${kind} ${name}`);
      assert.match(r.stderr, /detected dubious ownership/, `${kind} ${name}: ${r.stderr}`);
    }
  }
});

test('the global config is read again when it changes: `*`, `<dir>/*`, and an empty value that resets the list', { skip }, async () => {
  const url = urls(listed, 'wt').http;
  const lsRemote = async () => (await gitAsync(['ls-remote', url])).code;
  const write = (text: string) => {
    writeFileSync(globalCfg, text);
  };
  write('[safe]\n\tdirectory = *\n');
  assert.equal(await lsRemote(), 0);
  write('[safe]\n\tdirectory = *\n\tdirectory =\n');
  assert.notEqual(await lsRemote(), 0);
  write(`[safe]\n\tdirectory = ${srv}/*\n`);
  assert.equal(await lsRemote(), 0);
  assert.equal((await gitAsync(['ls-remote', urls(listed, 'selfsafe.git').git])).code, 0);
  // the work tree is listed by its git directory, as git daemon sees it (enter_repo's path)
  write(`[safe]\n\tdirectory = ${join(srv, 'wt')}\n`);
  assert.notEqual(await lsRemote(), 0);
  write(`[safe]\n\tdirectory = ${join(srv, 'wt', '.git')}\n`);
  assert.equal(await lsRemote(), 0);
  // a relative entry is ignored (git warns)
  write('[safe]\n\tdirectory = srv/*\n');
  assert.notEqual(await lsRemote(), 0);
});

test('stdio: receive-pack refuses as git receive-pack does, byte for byte; upload-pack serves (ENTER_REPO_ANY_OWNER_OK)', { skip }, () => {
  for (const dir of ['dubious.git', 'wt', `${srv}/dubious.git`]) {
    const g = spawnSync('git', ['receive-pack', dir], { cwd: srv, env: gitEnv, input: '0000' });
    const ours = spawnSync(BIN, ['receive-pack', dir], { cwd: srv, env: gitEnv, input: '0000' });
    assert.equal(ours.status, g.status, dir);
    assert.equal(ours.status, 128);
    assert.equal(ours.stdout.toString(), g.stdout.toString(), dir);
    assert.equal(ours.stderr.toString(), g.stderr.toString(), dir);
  }
  const env = { ...gitEnv, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'safe.directory', GIT_CONFIG_VALUE_0: `${srv}/*` };
  const listedRun = spawnSync(BIN, ['receive-pack', 'dubious.git'], { cwd: srv, env, input: '0000' });
  assert.equal(listedRun.status, 0, listedRun.stderr.toString());
  // cat-file finds its repository by discovery (setup_git_directory): a work tree, from its top and below, and a bare one
  mkdirSync(join(srv, 'wt', 'sub'), { recursive: true });
  for (const cwd of [join(srv, 'wt'), join(srv, 'wt', 'sub'), join(srv, 'dubious.git')]) {
    const g = spawnSync('git', ['cat-file', '-t', 'HEAD'], { cwd, env: gitEnv });
    const ours = spawnSync(BIN, ['cat-file', '-t', 'HEAD'], { cwd, env: gitEnv });
    assert.equal(ours.status, 128, cwd);
    assert.equal(ours.status, g.status, cwd);
    assert.equal(ours.stderr.toString(), g.stderr.toString(), cwd);
    assert.equal(ours.stdout.toString(), g.stdout.toString(), cwd);
  }
  // root with SUDO_UID: that user's repositories too, for git and for gitwire
  const sudoEnv = { ...gitEnv, SUDO_UID: String(NOBODY) };
  for (const cmd of ['git', BIN]) {
    const r = spawnSync(cmd, ['receive-pack', 'dubious.git'], { cwd: srv, env: sudoEnv, input: '0000' });
    assert.equal(r.status, 0, `${cmd}: ${r.stderr.toString()}`);
  }
  const up = spawnSync(BIN, ['upload-pack', 'dubious.git'], { cwd: srv, env: gitEnv, input: '0000' });
  assert.equal(up.status, 0, up.stderr.toString());
  assert.match(up.stdout.toString(), new RegExp(`^[0-9a-f]{4}${tip} HEAD\\0`));
});

test('admitRequest: a user `authorize` refuses learns nothing of the owner; the gate that reads the repository\'s config is not run for another user\'s repository', { skip }, async () => {
  const info = { transport: 'http' as const, path: '/dubious.git', service: 'receive-pack' as const };
  let gateRan = false;
  const denied = await admitRequest({ root: srv, env: gitEnv, authorize: () => ({ status: 404, message: 'Not Found' }) }, info);
  assert.equal(denied.ok ? 'ok' : denied.outcome, 'denied');
  const gated = await admitRequest({ root: srv, env: gitEnv, authorize: () => true }, info, { gate: () => { gateRan = true; return true; } });
  assert.equal(gated.ok ? 'ok' : gated.outcome, 'dubious-ownership');
  assert.equal(gateRan, false);
  const mine = await admitRequest({ root: srv, env: gitEnv }, { ...info, path: '/mine.git' }, { gate: () => { gateRan = true; return true; } });
  assert.ok(mine.ok);
  assert.equal(gateRan, true);
  // root trusts the user sudo names, as git does
  const sudo = await admitRequest({ root: srv, env: { ...gitEnv, SUDO_UID: String(NOBODY) } }, info);
  assert.ok(sudo.ok, JSON.stringify(sudo));
});
