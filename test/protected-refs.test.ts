/**
 * Protected refs (`protect` in --auth-rules, issue #38 item 5) and who
 * pushed (item 6), end to end with the real git and OpenSSH clients:
 *
 * - over HTTP, SSH and git://, a non-fast-forward update and a deletion of
 *   a protected ref are refused (`! [remote rejected] main -> main
 *   (protected ref)`), a fast-forward and an unprotected ref pass, and a
 *   user the rule names may force-push and delete;
 * - AGit (`refs/for/main/…` through proc-receive) is judged against main;
 * - every hook sees GITWIRE_USER, REMOTE_USER, GITWIRE_PROTOCOL and, over
 *   SSH, GITWIRE_KEY_FINGERPRINT; the server's own environment never
 *   speaks for an anonymous pusher.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { BIN, git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitSshEnv, sshKit, startSsh, type SshKit, type SshUser } from './helpers/ssh.js';
import { parseAuthRules } from '../src/transport/auth-rules.js';

let t: ReturnType<typeof tmp>;
let root: string;
let work: string;
let kit: SshKit;
let alice: SshUser;
let bob: SshUser;
let hooks: string;
let dumps: string;
let httpSrv: ServerProc;
let sshSrv: ServerProc & { sshPort: number };

/** a hook that writes who pushed to <dumps>/<hook>.env (and proc-receive answers `ok` for every command) */
const DUMP = (dumps: string) => `#!/bin/sh
env | grep -E '^(GITWIRE_[A-Z_]*|REMOTE_USER)=' | sort > "${dumps}/$(basename "$0").env"
cat >/dev/null
`;

const PROC_RECEIVE = (dumps: string) => `#!/usr/bin/env node
const fs = require('fs');
fs.writeFileSync('${dumps}/proc-receive.env', Object.keys(process.env).filter((k) => /^(GITWIRE_|REMOTE_USER$)/.test(k)).sort().map((k) => k + '=' + process.env[k] + '\\n').join(''));
let buf = Buffer.alloc(0);
function fill() { const b = Buffer.alloc(65536); const n = fs.readSync(0, b, 0, b.length, null); if (!n) return false; buf = Buffer.concat([buf, b.subarray(0, n)]); return true; }
function read() {
  while (buf.length < 4) if (!fill()) return null;
  const n = parseInt(buf.toString('latin1', 0, 4), 16);
  if (n === 0) { buf = buf.subarray(4); return ''; }
  while (buf.length < n) if (!fill()) return null;
  const s = buf.toString('utf8', 4, n); buf = buf.subarray(n); return s.replace(/\\n$/, '');
}
const out = (s) => fs.writeSync(1, s === '' ? '0000' : (Buffer.byteLength(s) + 5).toString(16).padStart(4, '0') + s + '\\n');
for (let l; (l = read()) !== '' && l !== null;);
out('version=1'); out('');
const refs = [];
for (let l; (l = read()) !== '' && l !== null;) refs.push(l.split(' ')[2]);
for (const r of refs) out('ok ' + r);
out('');
`;

const HOOK_NAMES = ['pre-receive', 'update', 'post-receive', 'post-update', 'reference-transaction'];

/** a bare repository under the root with main (two commits) and side; hooks from the shared directory */
function repo(name: string): string {
  const dir = join(root, name);
  git(['clone', '-q', '--bare', work, dir]);
  git(['config', 'core.hooksPath', hooks], { cwd: dir });
  return dir;
}

const rev = (dir: string, ref: string) => spawnSync('git', ['rev-parse', '-q', '--verify', ref], { cwd: dir, encoding: 'utf8' }).stdout.trim();

before(async () => {
  t = tmp('gitwire-protect-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  work = join(t.dir, 'work');
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { 'a.txt': 'a\n' });
  commit(work, 'two', { 'b.txt': 'b\n' });
  git(['branch', 'side'], { cwd: work });
  hooks = join(t.dir, 'hooks');
  dumps = join(t.dir, 'dumps');
  mkdirSync(hooks);
  mkdirSync(dumps);
  for (const h of HOOK_NAMES) { writeFileSync(join(hooks, h), DUMP(dumps)); chmodSync(join(hooks, h), 0o755); }
  writeFileSync(join(hooks, 'proc-receive'), PROC_RECEIVE(dumps));
  chmodSync(join(hooks, 'proc-receive'), 0o755);
  const rules = join(t.dir, 'rules');
  writeFileSync(rules, 'push ** alice bob\nprotect ** refs/heads/main alice\nprotect ** refs/tags/* \n');
  const htpasswd = join(t.dir, 'htpasswd');
  writeFileSync(htpasswd, `alice:${bcrypt.hashSync('pw-a', 4)}\nbob:${bcrypt.hashSync('pw-b', 4)}\n`);
  kit = sshKit(t.dir);
  alice = kit.user('alice');
  bob = kit.user('bob');
  // the server's own environment names someone: no pusher may inherit it
  const env = { REMOTE_USER: 'server-env', GITWIRE_USER: 'server-env', GITWIRE_KEY_FINGERPRINT: 'server-env' };
  httpSrv = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', htpasswd, '--auth-rules', rules], env);
  // git:// has no users: there, every push is anonymous, so every protected ref is protected
  sshSrv = await startSsh(kit, root, ['--git', '0', '--enable=receive-pack', '--export-all', '--quiet', '--auth-rules', rules], env);
});
after(async () => { await httpSrv?.stop(); await sshSrv?.stop(); t?.cleanup(); });

type Who = 'alice' | 'bob' | 'anonymous';
function remote(transport: 'http' | 'ssh' | 'git', name: string, who: Who): { url: string; env: NodeJS.ProcessEnv } {
  if (transport === 'http') return { url: `http://${who}:${who === 'alice' ? 'pw-a' : 'pw-b'}@127.0.0.1:${httpSrv.httpPort}/${name}`, env: {} };
  if (transport === 'ssh') return { url: `ssh://git@127.0.0.1:${sshSrv.sshPort}/${name}`, env: gitSshEnv(kit, who === 'alice' ? alice : bob, sshSrv.sshPort) };
  return { url: `git://127.0.0.1:${sshSrv.gitPort}/${name}`, env: {} };
}

/** a commit that does not descend from main (main rewritten) */
function rewritten(): string {
  git(['checkout', '-q', '-B', 'rewrite', 'main~1'], { cwd: work });
  const c = commit(work, `rewrite ${Math.random()}`, { 'c.txt': `${Math.random()}\n` });
  git(['checkout', '-q', 'main'], { cwd: work });
  return c;
}

for (const transport of ['http', 'ssh', 'git'] as const) {
  const pusher: Who = transport === 'git' ? 'anonymous' : 'bob';
  test(`${transport}: a protected ref refuses ${pusher}'s force-push and delete; fast-forwards and other refs pass`, { timeout: 120_000 }, async () => {
    const name = `p-${transport}.git`;
    const dir = repo(name);
    const { url, env } = remote(transport, name, pusher);
    const main0 = rev(dir, 'refs/heads/main');
    const force = await gitAsync(['push', '--force', url, `${rewritten()}:refs/heads/main`], work, env);
    assert.notEqual(force.code, 0, force.stderr);
    assert.match(force.stderr, / ! \[remote rejected\] +[0-9a-f]+ -> main \(protected ref\)/, force.stderr);
    assert.match(force.stderr, /remote: error: denying non-fast-forward refs\/heads\/main \(protected ref\)/, force.stderr);
    assert.equal(rev(dir, 'refs/heads/main'), main0, 'main did not move');
    const del = await gitAsync(['push', url, ':refs/heads/main'], work, env);
    assert.notEqual(del.code, 0, del.stderr);
    assert.match(del.stderr, / ! \[remote rejected\] +main \(protected ref\)/, del.stderr);
    assert.match(del.stderr, /remote: error: denying ref deletion for refs\/heads\/main \(protected ref\)/, del.stderr);
    assert.equal(rev(dir, 'refs/heads/main'), main0, 'main is still there');
    // a protected tag pattern: no one may move or delete a tag
    git(['tag', '-f', `v-${transport}`, 'main'], { cwd: work });
    assert.equal((await gitAsync(['push', url, `refs/tags/v-${transport}`], work, env)).code, 0);
    git(['tag', '-f', `v-${transport}`, 'main~1'], { cwd: work });
    const retag = await gitAsync(['push', '--force', url, `refs/tags/v-${transport}`], work, env);
    assert.match(retag.stderr, /\(protected ref\)/, retag.stderr);
    // what the rules allow still passes: a fast-forward of main, a force-push of an unprotected branch, in one push
    const ff = commit(work, `ff ${transport}`, { 'd.txt': `${transport}\n` });
    const ok = await gitAsync(['push', '--force', url, 'main', `${rewritten()}:refs/heads/side`], work, env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(rev(dir, 'refs/heads/main'), ff);
    assert.equal((await gitAsync(['push', url, ':refs/heads/side'], work, env)).code, 0);
    // atomic: one protected refusal fails the whole push
    const atomic = await gitAsync(['push', '--atomic', '--force', url, `${rewritten()}:refs/heads/main`, 'main:refs/heads/other'], work, env);
    assert.notEqual(atomic.code, 0);
    assert.match(atomic.stderr, /main \(protected ref\)/, atomic.stderr);
    assert.match(atomic.stderr, /other \(atomic push failure\)/, atomic.stderr);
    assert.equal(rev(dir, 'refs/heads/other'), '');
    if (transport === 'git') return;
    // the user the rule names may rewind and delete
    const a = remote(transport, name, 'alice');
    const rw = rewritten();
    const aforce = await gitAsync(['push', '--force', a.url, `${rw}:refs/heads/main`], work, a.env);
    assert.equal(aforce.code, 0, aforce.stderr);
    assert.equal(rev(dir, 'refs/heads/main'), rw);
    git(['config', 'receive.denyDeleteCurrent', 'ignore'], { cwd: dir });
    const adel = await gitAsync(['push', a.url, ':refs/heads/main'], work, a.env);
    assert.equal(adel.code, 0, adel.stderr);
    assert.equal(rev(dir, 'refs/heads/main'), '');
  });
}

test('a symbolic ref to a protected branch is judged as the branch', { timeout: 60_000 }, async () => {
  const dir = repo('p-symref.git');
  git(['symbolic-ref', 'refs/heads/alias', 'refs/heads/main'], { cwd: dir });
  const main0 = rev(dir, 'refs/heads/main');
  const { url, env } = remote('http', 'p-symref.git', 'bob');
  const r = await gitAsync(['push', '--force', url, `${rewritten()}:refs/heads/alias`], work, env);
  assert.match(r.stderr, /alias \(protected ref\)/, r.stderr);
  assert.equal(rev(dir, 'refs/heads/main'), main0);
});

test('AGit: refs/for/main/<topic> is judged against main: a proposal that rewinds it or a deletion is refused, one on top of it passes', { timeout: 60_000 }, async () => {
  const dir = repo('p-agit.git');
  git(['config', 'receive.procReceiveRefs', 'refs/for'], { cwd: dir });
  const { url, env } = remote('http', 'p-agit.git', 'bob');
  const behind = await gitAsync(['push', url, `${rewritten()}:refs/for/main/topic`], work, env);
  assert.notEqual(behind.code, 0);
  assert.match(behind.stderr, /refs\/for\/main\/topic \(protected ref\)/, behind.stderr);
  assert.match(behind.stderr, /denying non-fast-forward refs\/for\/main\/topic: not a fast-forward of refs\/heads\/main \(protected ref\)/, behind.stderr);
  // Gerrit's spelling of the branch in full (was read as branch `refs/heads/refs/heads/main`, unprotected), and options after %: the same branch
  for (const ref of ['refs/for/refs/heads/main', 'refs/for/refs/heads/main/topic', 'refs/for/main%topic=x,r=a']) {
    const r = await gitAsync(['push', url, `${rewritten()}:${ref}`], work, env);
    assert.notEqual(r.code, 0, `${ref}: ${r.stderr}`);
    assert.match(r.stderr, /\(protected ref\)/, `${ref}: ${r.stderr}`);
  }
  git(['checkout', '-q', '-B', 'proposal', 'main'], { cwd: work });
  commit(work, 'proposal', { 'e.txt': 'e\n' });
  git(['checkout', '-q', 'main'], { cwd: work });
  rmSync(join(dumps, 'proc-receive.env'), { force: true });
  const onTop = await gitAsync(['push', url, 'proposal:refs/for/main/topic'], work, env);
  assert.equal(onTop.code, 0, onTop.stderr);
  assert.ok(existsSync(join(dumps, 'proc-receive.env')), 'proc-receive ran');
  // alice may propose anything
  const a = remote('http', 'p-agit.git', 'alice');
  const ar = await gitAsync(['push', a.url, `${rewritten()}:refs/for/main/topic`], work, a.env);
  assert.equal(ar.code, 0, ar.stderr);
});

/** the dumps of the last push, by hook */
function readDumps(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(dumps)) out[f.replace(/\.env$/, '')] = readFileSync(join(dumps, f), 'utf8');
  return out;
}

for (const transport of ['http', 'ssh', 'git', 'stdio'] as const) {
  test(`${transport}: every hook is told who pushed (GITWIRE_USER, REMOTE_USER, GITWIRE_PROTOCOL, GITWIRE_KEY_FINGERPRINT)`, { timeout: 60_000 }, async () => {
    const name = `env-${transport}.git`;
    const dir = repo(name);
    git(['config', 'receive.procReceiveRefs', 'refs/for'], { cwd: dir });
    for (const f of readdirSync(dumps)) rmSync(join(dumps, f));
    const r = transport === 'stdio'
      ? { url: dir, env: { REMOTE_USER: 'from-the-caller' } }
      : remote(transport, name, transport === 'git' ? 'anonymous' : 'alice');
    // stdio: gitwire receive-pack as git's --receive-pack; its caller's environment is the hook's
    const args = transport === 'stdio' ? ['push', `--receive-pack=${BIN} receive-pack`] : ['push'];
    commit(work, `env ${transport}`, { 'f.txt': `${transport}\n` });
    const p = await gitAsync([...args, r.url, 'main', 'main:refs/for/main/t'], work, r.env);
    assert.equal(p.code, 0, p.stderr);
    const got = readDumps();
    assert.deepEqual(Object.keys(got).sort(), [...HOOK_NAMES, 'proc-receive'].sort(), 'every hook ran');
    let want: string;
    if (transport === 'git') want = 'GITWIRE_PROTOCOL=git\n';
    else if (transport === 'stdio') want = 'GITWIRE_PROTOCOL=stdio\nREMOTE_USER=from-the-caller\n';
    else if (transport === 'http') want = 'GITWIRE_PROTOCOL=http\nGITWIRE_USER=alice\nREMOTE_USER=alice\n';
    else {
      const fp = spawnSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', alice.pub], { encoding: 'utf8' }).stdout.split(' ')[1]!;
      assert.match(fp, /^SHA256:/);
      want = `GITWIRE_KEY_FINGERPRINT=${fp}\nGITWIRE_PROTOCOL=ssh\nGITWIRE_USER=alice\nREMOTE_USER=alice\n`;
    }
    for (const [hook, text] of Object.entries(got)) assert.equal(text, want, `${hook}: ${text}`);
  });
}

test('push-to-checkout is told who pushed too', { timeout: 60_000 }, async () => {
  const dir = join(root, 'checkout');
  git(['clone', '-q', work, dir]);
  git(['config', 'receive.denyCurrentBranch', 'updateInstead'], { cwd: dir });
  git(['checkout', '-q', 'main'], { cwd: dir });
  const hook = join(dir, '.git', 'hooks', 'push-to-checkout');
  writeFileSync(hook, `#!/bin/sh\nenv | grep -E '^(GITWIRE_[A-Z_]*|REMOTE_USER)=' | sort > "${dumps}/push-to-checkout.env"\nexec git read-tree -u -m HEAD "$1"\n`);
  chmodSync(hook, 0o755);
  commit(work, 'checkout', { 'g.txt': 'g\n' });
  const { url, env } = remote('http', 'checkout', 'bob');
  const p = await gitAsync(['push', url, 'main'], work, env);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(readFileSync(join(dumps, 'push-to-checkout.env'), 'utf8'), 'GITWIRE_PROTOCOL=http\nGITWIRE_USER=bob\nREMOTE_USER=bob\n');
});

test('a bad protect line is refused with its position', () => {
  assert.throws(() => parseAuthRules('push ** alice\nprotect **\n', 'rules'), /^Error: rules:2: expected 'protect <repository-pattern> <ref-pattern> \[<user>…\]' \(refs\/…\)$/);
  assert.throws(() => parseAuthRules('protect ** main alice\n', 'rules'), /rules:1: expected 'protect/);
  const protects: Parameters<typeof parseAuthRules>[2] = [];
  parseAuthRules('protect group/* refs/heads/* alice\n', 'rules', protects);
  assert.equal(protects!.length, 1);
});
