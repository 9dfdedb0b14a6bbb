/**
 * #38 attacked end to end (../shared/ATTACK.md): push-to-create with the
 * names of an existing repository spelled other ways and with hostile
 * names, over HTTP, while a poller on a second connection keeps fetching
 * (its slowest answer is reported); who pushed, as hooks see it, when the
 * client tries to say it (push options, HTTP headers, SSH SetEnv). Bounds
 * are loose: they only fail on a real defect.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { createHash } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitSshEnv, sshKit, startSsh } from './helpers/ssh.js';
import { createRepository, deleteRepository } from '../src/admin/index.js';
import { Quarantine } from '../src/repo/quarantine.js';

/** directories under `dir` that are repositories or leftovers (hidden), recursively */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (!e.isDirectory()) continue;
      if (e.name.startsWith('.') || existsSync(join(d, e.name, 'HEAD'))) out.push(r);
      else walk(join(d, e.name), r);
    }
  };
  walk(dir, '');
  return out.sort();
}

/** `git ls-remote` against `url` in a loop until stopped; the slowest answer, and any failure */
function poller(url: string, cwd: string) {
  let stop = false, slowest = 0, rounds = 0;
  const failures: string[] = [];
  const done = (async () => {
    while (!stop) {
      const t0 = performance.now();
      const r = await gitAsync(['ls-remote', url], cwd);
      slowest = Math.max(slowest, performance.now() - t0);
      rounds++;
      if (r.code !== 0) failures.push(r.stderr);
    }
  })();
  return { async end() { stop = true; await done; return { slowest, rounds, failures }; } };
}

test('push-to-create over HTTP: an existing repository spelled five ways, and hostile names, make nothing; a poller is not held', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-attack-admin-');
  let s: ServerProc | undefined;
  let poll: ReturnType<typeof poller> | undefined;
  try {
    const hash = (pw: string) => bcrypt.hashSync(pw, 4).replace(/^\$2b\$/, '$2y$');
    writeFileSync(join(t.dir, 'htpasswd'), `alice:${hash('a-pw')}\n`);
    // (curl folds `a/%2e%2e/b` to `b` before sending: outside team/, alice may not create)
    writeFileSync(join(t.dir, 'rules'), 'push team/** alice\n');
    const root = join(t.dir, 'root');
    mkdirSync(join(root, 'team'), { recursive: true });
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    const c = commit(src, 'one', { 'a.txt': 'a\n' });
    // a work tree `team/wt`, a bare repository without the suffix `team/bare`, and `team/p.git`
    git(['init', '-q', '-b', 'main', join(root, 'team', 'wt')]);
    git(['init', '-q', '--bare', '-b', 'main', join(root, 'team', 'bare')]);
    git(['init', '-q', '--bare', '-b', 'main', join(root, 'team', 'p.git')]);
    const before = listing(root);
    s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules'), '--push-to-create']);
    const url = (p: string) => `http://alice:a-pw@127.0.0.1:${s!.httpPort}/${p}`;
    poll = poller(url('team/p.git'), t.dir);
    // `wt.git` and `bare.git` are the names `wt` and `bare` (rules, logs, webhooks): a push there made a second repository under that name
    for (const path of ['team/wt.git', 'team/bare.git', 'team/%77t.git', 'team//bare.git/']) {
      const r = await gitAsync(['push', url(path), 'main'], src);
      assert.notEqual(r.code, 0, `${path}: ${r.stderr}`);
      assert.match(r.stderr, /not found/i, path);
    }
    // the spellings that do name them push into them, as without --push-to-create
    for (const [path, dir] of [['team/wt/.git', 'team/wt'], ['team/bare/', 'team/bare'], ['team/%70', 'team/p.git'], ['team/p.git/', 'team/p.git']] as const) {
      const r = await gitAsync(['push', url(path), `main:refs/heads/via-${dir.replace(/\W/g, '')}`], src);
      assert.equal(r.code, 0, `${path}: ${r.stderr}`);
      assert.equal(git(['rev-parse', `refs/heads/via-${dir.replace(/\W/g, '')}`], { cwd: join(root, dir) }).trim(), c);
    }
    // hostile names: nothing made, the answer a missing repository's (or the URL's refusal)
    const hostile = ['team/%2e%2e/up.git', '%2e%2e/%2e%2e/out.git', '@pools/x.git', 'team/@pools.git', 'team/%ff%fe.git', 'team/a%0ab.git', `team/${'d/'.repeat(2000)}x.git`, `team/${'y'.repeat(65_536)}.git`, 'team/x.git.lock', 'team/x..git'];
    for (const path of hostile) {
      const r = await gitAsync(['push', url(path), 'main'], src);
      assert.notEqual(r.code, 0, path.slice(0, 40));
    }
    const { slowest, rounds, failures } = await poll.end();
    assert.deepEqual(failures, []);
    assert.deepEqual(listing(root), before);
    assert.equal(existsSync(join(t.dir, 'out.git')) || existsSync(join(t.dir, 'up.git')), false);
    assert.ok(slowest < 15_000, `the poller waited ${slowest} ms`);
    console.log(`# poller: ${rounds} ls-remote, slowest ${slowest.toFixed(0)} ms (load ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  } finally { await poll?.end(); await s?.stop(); t.cleanup(); }
});

/** a pre-receive hook that writes what it is told of the pusher to <dumps>/<transport>.env */
const DUMP = (dumps: string) => `#!/bin/sh
env | grep -E '^(GITWIRE_[A-Z_]*|REMOTE_USER|GIT_PUSH_OPTION_[0-9]+)=' | sort > "${dumps}/$GITWIRE_PROTOCOL.env"
cat >/dev/null
`;

test('who pushed cannot be said by the client: push options, HTTP headers and SSH SetEnv/SendEnv never set GITWIRE_USER or REMOTE_USER', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-attack-who-');
  let h: ServerProc | undefined, s: (ServerProc & { sshPort: number }) | undefined;
  try {
    const hooks = join(t.dir, 'hooks'), dumps = join(t.dir, 'dumps');
    mkdirSync(hooks);
    mkdirSync(dumps);
    writeFileSync(join(hooks, 'pre-receive'), DUMP(dumps));
    chmodSync(join(hooks, 'pre-receive'), 0o755);
    const root = join(t.dir, 'root');
    const repo = join(root, 'r.git');
    git(['init', '-q', '--bare', '-b', 'main', repo]);
    git(['config', 'core.hooksPath', hooks], { cwd: repo });
    git(['config', 'receive.advertisePushOptions', 'true'], { cwd: repo });
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    commit(src, 'one', { 'a.txt': 'a\n' });
    const hash = (pw: string) => bcrypt.hashSync(pw, 4).replace(/^\$2b\$/, '$2y$');
    writeFileSync(join(t.dir, 'htpasswd'), `alice:${hash('a-pw')}\n`);
    const kit = sshKit(t.dir);
    const alice = kit.user('alice');
    const opts = ['-o', 'GITWIRE_USER=root', '-o', 'REMOTE_USER=root', '-o', 'GITWIRE_KEY_FINGERPRINT=SHA256:forged'];
    h = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--enable', 'receive-pack'], { GITWIRE_USER: 'server-env', REMOTE_USER: 'server-env' });
    const hr = await gitAsync(['-c', 'http.extraHeader=Remote-User: root', '-c', 'http.extraHeader=X-Remote-User: root', '-c', 'http.extraHeader=X-Forwarded-User: root',
      'push', ...opts, `http://alice:a-pw@127.0.0.1:${h.httpPort}/r.git`, 'main:refs/heads/h'], src);
    assert.equal(hr.code, 0, hr.stderr);
    s = await startSsh(kit, root, ['--enable', 'receive-pack']);
    const env = gitSshEnv(kit, alice, s.sshPort);
    env.GIT_SSH_COMMAND = `${env.GIT_SSH_COMMAND!} -o 'SetEnv=GITWIRE_USER=root REMOTE_USER=root' -o 'SendEnv=GITWIRE_* REMOTE_USER'`;
    const sr = await gitAsync(['push', ...opts, `ssh://git@127.0.0.1:${s.sshPort}/r.git`, 'main:refs/heads/s'], src, { ...env, GITWIRE_USER: 'root', REMOTE_USER: 'root' });
    assert.equal(sr.code, 0, sr.stderr);
    for (const transport of ['http', 'ssh']) {
      const seen = readFileSync(join(dumps, `${transport}.env`), 'utf8');
      assert.match(seen, /^GITWIRE_USER=alice$/m, transport);
      assert.match(seen, /^REMOTE_USER=alice$/m, transport);
      assert.doesNotMatch(seen, /^(GITWIRE_USER|REMOTE_USER)=(?!alice$)/m, transport);
      assert.doesNotMatch(seen, /^GITWIRE_KEY_FINGERPRINT=SHA256:forged$/m, transport);
      // the options arrive as options, and only as options
      assert.match(seen, /^GIT_PUSH_OPTION_0=GITWIRE_USER=root$/m, transport);
    }
    assert.match(readFileSync(join(dumps, 'ssh.env'), 'utf8'), /^GITWIRE_KEY_FINGERPRINT=SHA256:[A-Za-z0-9+/]{43}$/m);
  } finally { await h?.stop(); await s?.stop(); t.cleanup(); }
});

test('a creation racing the removal of its emptied parent (what a delete elsewhere in the directory does) is never failed (was ENOENT)', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-attack-create-delete-');
  try {
    const root = join(t.dir, 'root');
    const parent = join(root, 'team');
    mkdirSync(root);
    // deleteRepository removes directories it leaves empty, up to the root: here a process does only that, as fast as it can
    const spinner = spawn(process.execPath, ['-e', `const fs = require('fs'); for (const end = Date.now() + 20000; Date.now() < end;) { try { fs.rmdirSync(${JSON.stringify(parent)}); } catch {} }`], { stdio: 'ignore' });
    let made = 0;
    const fails: string[] = [];
    try {
      for (const end = Date.now() + 3000; Date.now() < end;) {
        try { createRepository(join(parent, 'r.git')); made++; } catch (e) { fails.push(`${(e as NodeJS.ErrnoException).code} ${(e as Error).message}`); continue; }
        await deleteRepository(join(parent, 'r.git'));
      }
    } finally { spinner.kill(); }
    assert.ok(made > 0);
    assert.deepEqual(fails.slice(0, 3), []);
    console.log(`# creations racing the removal of their parent: ${made} made, none failed (load ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  } finally { t.cleanup(); }
});

test('a repository deleted during a push: the push\'s quarantine, made again by git under the old name, leaves no directory there', () => {
  const t = tmp('gitwire-attack-delete-push-');
  try {
    const root = join(t.dir, 'root');
    const dir = join(root, 'r.git');
    createRepository(dir);
    const q = Quarantine.create(join(dir, 'objects'));
    // `gitwire delete` renames the repository away; index-pack, writing its pack, makes the leading directories again
    rmSync(dir, { recursive: true });
    mkdirSync(join(q.path, 'pack'), { recursive: true });
    writeFileSync(join(q.path, 'pack', 'tmp_pack_x'), 'partial');
    q.destroy();
    assert.deepEqual(readdirSync(root), []);
    // a repository that is there keeps its objects/ (the quarantine alone goes)
    createRepository(dir);
    const q2 = Quarantine.create(join(dir, 'objects'));
    q2.destroy();
    assert.deepEqual(readdirSync(join(dir, 'objects')).sort(), ['info', 'pack']);
  } finally { t.cleanup(); }
});

test('protected refs, every way around over HTTP: delete and re-create in one push, over an existing ref, through a symbolic ref or HEAD, atomic mixes, rewind then fast-forward, odd spellings', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-attack-protect-');
  let s: ServerProc | undefined;
  try {
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    const one = commit(w, 'one', { 'a.txt': 'a\n' });
    const two = commit(w, 'two', { 'a.txt': 'b\n' });
    const root = join(t.dir, 'root');
    const dir = join(root, 'r.git');
    git(['clone', '-q', '--bare', w, dir]);
    git(['symbolic-ref', 'refs/heads/alias', 'refs/heads/main'], { cwd: dir });
    writeFileSync(join(t.dir, 'htpasswd'), `bob:${bcrypt.hashSync('b', 4).replace(/^\$2b\$/, '$2y$')}\n`);
    writeFileSync(join(t.dir, 'rules'), 'push ** bob\nprotect ** refs/heads/main\n');
    s = await startServe(root, ['--http', '0', '--quiet', '--htpasswd', join(t.dir, 'htpasswd'), '--auth-rules', join(t.dir, 'rules')]);
    const pkt = (line: string) => { const b = Buffer.from(line); return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]); };
    const Z = '0'.repeat(40);
    const head = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1');
    const emptyPack = Buffer.concat([head, createHash('sha1').update(head).digest()]);
    const push = async (cmds: string[], caps = 'report-status') => {
      const body = Buffer.concat([...cmds.map((c, i) => pkt(i === 0 ? `${c}\0${caps}\n` : `${c}\n`)), Buffer.from('0000'), emptyPack]);
      const r = await fetch(`http://127.0.0.1:${s!.httpPort}/r.git/git-receive-pack`, { method: 'POST', body, headers: { 'Content-Type': 'application/x-git-receive-pack-request', Authorization: `Basic ${Buffer.from('bob:b').toString('base64')}` } });
      return [...(await r.text()).matchAll(/(?:ok|ng) [^\n]*/g)].map((m) => m[0]);
    };
    const cases: Array<[string[], string, RegExp]> = [
      [[`${two} ${Z} refs/heads/main`, `${Z} ${one} refs/heads/main`], 'report-status', /^ng refs\/heads\/main protected ref,ng refs\/heads\/main /],
      [[`${Z} ${one} refs/heads/main`], 'report-status', /^ng refs\/heads\/main /],
      [[`${two} ${one} refs/heads/alias`], 'report-status', /^ng refs\/heads\/alias protected ref$/],
      [[`${two} ${Z} refs/heads/alias`], 'report-status', /^ng refs\/heads\/alias protected ref$/],
      [[`${two} ${one} HEAD`], 'report-status', /^ng HEAD /],
      [[`${Z} ${one} refs/heads/other`, `${two} ${one} refs/heads/main`], 'report-status atomic', /^ng refs\/heads\/other atomic push failure,ng refs\/heads\/main protected ref$/],
      [[`${two} ${one} refs/heads/main`, `${one} ${two} refs/heads/main`], 'report-status', /^ng refs\/heads\/main protected ref,ng refs\/heads\/main /],
      [[`${two} ${one} refs/heads//main`], 'report-status', /^ng refs\/heads\/\/main funny refname$/],
      [[`${two} ${one} refs/heads/./main`], 'report-status', /^ng refs\/heads\/\.\/main funny refname$/],
    ];
    for (const [cmds, caps, want] of cases) {
      const got = (await push(cmds, caps)).join(',');
      assert.match(got, want, cmds.join(' | '));
      assert.equal(git(['rev-parse', 'main'], { cwd: dir }).trim(), two, cmds.join(' | '));
    }
    assert.equal(git(['for-each-ref', '--format=%(refname)'], { cwd: dir }), 'refs/heads/alias\nrefs/heads/main\n');
  } finally { await s?.stop(); t.cleanup(); }
});
