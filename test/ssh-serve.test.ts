/**
 * `gitwire serve --ssh` with the OpenSSH client: push compared with git's
 * own receive-pack, users from the key directory, auth rules, paths,
 * refusals, and the host key.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitBuf, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';
import { normalizeClient, serverState } from './helpers/push.js';
import { gitSshEnv, sshKit, sshRun, startSsh, writeKnownHosts, type SshKit, type SshUser } from './helpers/ssh.js';
import type { ServerProc } from './helpers/server-process.js';

const ok = (r: { code: number | null; stderr: string }) => assert.equal(r.code, 0, r.stderr);

/** a work repository with a few commits on main and a side branch */
/** a key kit with user alice, and a root holding one empty bare repository r.git */
function aliceAndEmptyRepo(dir: string) {
  const kit = sshKit(dir);
  const alice = kit.user('alice');
  const srv = join(dir, 'srv');
  mkdirSync(srv);
  git(['init', '-q', '--bare', join(srv, 'r.git')]);
  return { kit, alice, srv };
}

function work(dir: string): string {
  const w = join(dir, 'work');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { 'a.txt': 'a\n' });
  commit(w, 'two', { 'b.txt': 'b\n' });
  git(['branch', 'side', 'HEAD~1'], { cwd: w });
  git(['tag', '-a', '-m', 'v1', 'v1', 'HEAD'], { cwd: w });
  return w;
}

describe('ssh push, compared with git receive-pack', () => {
  let t: ReturnType<typeof tmp>;
  let kit: SshKit;
  let alice: SshUser;
  let s: ServerProc & { sshPort: number };
  let w: string;
  before(async () => {
    t = tmp('gitwire-ssh-push-');
    kit = sshKit(t.dir);
    alice = kit.user('alice');
    mkdirSync(join(t.dir, 'srv'));
    mkdirSync(join(t.dir, 'ref'));
    w = work(t.dir);
    s = await startSsh(kit, join(t.dir, 'srv'));
  });
  after(async () => { await s.stop(); t.cleanup(); });

  for (const v of [0, 2]) {
    test(`protocol v${v}: create, fast-forward, non-fast-forward, delete, tags`, async () => {
      const name = `p${v}.git`;
      const mine = join(t.dir, 'srv', name);
      const theirs = join(t.dir, 'ref', name);
      git(['init', '-q', '--bare', mine]);
      git(['init', '-q', '--bare', theirs]);
      const env = gitSshEnv(kit, alice, s.sshPort);
      const steps: string[][] = [
        ['main', 'side'],
        ['--tags'],
        ['+HEAD~1:refs/heads/side2'],
        ['HEAD:side2'],
        ['HEAD~1:main'],
        ['--delete', 'side'],
        ['--atomic', 'main', 'HEAD:refs/heads/new'],
      ];
      for (const args of steps) {
        const a = await gitAsync(['-c', `protocol.version=${v}`, 'push', '--porcelain', `ssh://git@127.0.0.1/${name}`, ...args], w, env);
        const b = await gitAsync(['-c', `protocol.version=${v}`, 'push', '--porcelain', theirs, ...args], w);
        assert.equal(a.code, b.code, `${args.join(' ')}: ${a.stderr}`);
        assert.equal(normalizeClient(a.stdout, `ssh://127.0.0.1/${name}`), normalizeClient(b.stdout, theirs), args.join(' '));
        assert.equal(serverState(mine).refs, serverState(theirs).refs, args.join(' '));
      }
      const fsck = spawnSync('git', ['fsck', '--strict'], { cwd: mine, encoding: 'utf8' });
      assert.equal(fsck.status, 0, fsck.stderr);
    });
  }
});

describe('ssh users, rules, paths and refusals', () => {
  let t: ReturnType<typeof tmp>;
  let kit: SshKit;
  let alice: SshUser, bob: SshUser, carol: SshUser, mallory: SshUser;
  let s: ServerProc & { sshPort: number };
  let srv: string;
  let rules: string;
  const url = (p: string) => `ssh://git@127.0.0.1/${p}`;
  const as = (u: SshUser) => gitSshEnv(kit, u, s.sshPort);
  before(async () => {
    t = tmp('gitwire-ssh-users-');
    kit = sshKit(t.dir);
    alice = kit.user('alice');
    bob = kit.user('bob', 'bob@laptop.pub');
    carol = kit.user('carol', 'team/deep/carol@desk.pub');
    mallory = kit.user('mallory', false);
    srv = join(t.dir, 'srv');
    mkdirSync(join(srv, 'group'), { recursive: true });
    const w = work(t.dir);
    for (const r of ['open.git', 'secret.git', 'group/project.git', "it's.git"]) git(['clone', '-q', '--bare', w, join(srv, r)]);
    git(['clone', '-q', w, join(srv, 'tree')]);
    rules = join(t.dir, 'rules');
    writeFileSync(rules, 'push open.git alice carol\nfetch open.git *\nfetch group/* *\nfetch tree *\nfetch it\'s.git *\npush secret.git alice\n');
    s = await startSsh(kit, srv, ['--auth-rules', rules]);
  });
  after(async () => { await s.stop(); t.cleanup(); });

  test('an unknown key is refused', async () => {
    const r = await gitAsync(['ls-remote', url('open.git')], t.dir, as(mallory));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Permission denied \(publickey\)/);
  });

  test('keys in subfolders and with @location belong to their user; the log names user, fingerprint and address', async () => {
    for (const u of [bob, carol]) ok(await gitAsync(['ls-remote', url('open.git')], t.dir, as(u)));
    const fp = spawnSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', carol.pub], { encoding: 'utf8' }).stdout.split(' ')[1];
    // the server writes its log line after the client has its answer: wait for it
    const line = await logLine(s.logs, (e) => e.user === 'carol');
    assert.ok(line, s.logs.join('\n'));
    assert.equal(line.transport, 'ssh');
    assert.equal(line.fingerprint, fp);
    assert.equal(line.remoteAddress, '127.0.0.1');
    assert.equal(line.protocol, 2);
    assert.equal(line.command, 'ls-refs');
  });

  test('a user without a push rule cannot push; one with it can', async () => {
    const w = join(t.dir, 'work');
    commit(w, 'by bob', { 'bob.txt': 'x\n' });
    const before = git(['--git-dir', join(srv, 'open.git'), 'rev-parse', 'main']);
    const r = await gitAsync(['push', url('open.git'), 'HEAD:main'], w, as(bob));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /^fatal: bob may not push to '\/open\.git'$/m);
    assert.equal(git(['--git-dir', join(srv, 'open.git'), 'rev-parse', 'main']), before);
    // the refusal is logged as what it was, a receive-pack (it said upload-pack, unlike HTTP)
    const refusal = await logLine(s.logs, (e) => e.outcome === 'denied' && e.user === 'bob');
    assert.equal(refusal?.service, 'receive-pack');
    ok(await gitAsync(['push', url('open.git'), 'HEAD:main'], w, as(carol)));
    assert.equal(git(['--git-dir', join(srv, 'open.git'), 'rev-parse', 'main']), git(['rev-parse', 'HEAD'], { cwd: w }));
  });

  test('a repository the user may not see answers as a missing one', async () => {
    const hidden = await gitAsync(['ls-remote', url('secret.git')], t.dir, as(bob));
    const missing = await gitAsync(['ls-remote', url('secreu.git')], t.dir, as(bob));
    assert.equal(hidden.code, 128);
    assert.equal(hidden.stderr.replace('secret', 'X'), missing.stderr.replace('secreu', 'X'));
    assert.match(hidden.stderr, /^fatal: '\/secret\.git' does not appear to be a git repository$/m);
    ok(await gitAsync(['ls-remote', url('secret.git')], t.dir, as(alice)));
  });

  test('paths resolve as over HTTP: scp form, ssh://, .git optional, work trees, quotes; ~ refused', async () => {
    const want = git(['ls-remote', join(srv, 'group', 'project.git')]);
    for (const u of ['git@127.0.0.1:group/project', 'git@127.0.0.1:group/project.git', url('group/project'), url('group/project.git/')]) {
      const r = await gitAsync(['ls-remote', u], t.dir, as(bob));
      assert.equal(r.code, 0, `${u}: ${r.stderr}`);
      assert.equal(r.stdout, want, u);
    }
    const tree = await gitAsync(['ls-remote', url('tree')], t.dir, as(bob));
    ok(tree);
    assert.equal(tree.stdout, git(['ls-remote', join(srv, 'tree')]));
    const q = await gitAsync(['ls-remote', url("it's.git")], t.dir, as(bob));
    ok(q);
    for (const u of [url('~/open.git'), 'git@127.0.0.1:~alice/open.git']) {
      const r = await gitAsync(['ls-remote', u], t.dir, as(alice));
      assert.equal(r.code, 128, u);
      assert.match(r.stderr, /does not appear to be a git repository/);
    }
  });

  test('the exec spellings: git-upload-pack and git upload-pack answer as git-upload-pack does', async () => {
    const want = spawnSync('git-upload-pack', [join(srv, 'open.git')], { input: '', encoding: 'latin1' });
    for (const cmd of ["git-upload-pack '/open.git'", "git upload-pack '/open.git'", "git-upload-pack 'open.git'"]) {
      const r = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1', cmd]);
      assert.equal(r.code, want.status, `${cmd}: ${r.stderr}`);
      // the same bytes but for the agent string (and so the first packet's length)
      const norm = (x: string) => x.replace(/^[0-9a-f]{4}/, 'LLLL').replace(/agent=\S+\n/, '');
      assert.equal(norm(r.stdout), norm(want.stdout), cmd);
    }
  });

  test('refusals: shell, other commands, bad arguments, subsystems, upload-archive, each one line and non-zero', async () => {
    const shell = await sshRun(kit, alice, s.sshPort, ['git@127.0.0.1']);
    assert.equal(shell.code, 1);
    assert.equal(shell.stderr.replace(/^Pseudo-terminal.*\n/, ''), "Hi alice! You've successfully authenticated, but gitwire does not provide shell access.\n");
    const cases: Array<[string[], number, RegExp]> = [
      [['git@127.0.0.1', 'ls -la'], 128, /^fatal: unrecognized command 'ls -la'\n$/],
      [['git@127.0.0.1', 'git-upload-pack /open.git'], 128, /^fatal: bad argument\n$/],
      [['git@127.0.0.1', "git-upload-pack '--help'"], 128, /^fatal: bad argument\n$/],
      [['git@127.0.0.1', 'git-receive-pack'], 128, /^fatal: bad argument\n$/],
      [['git@127.0.0.1', "git-upload-archive '/open.git'"], 128, /^fatal: git-upload-archive is not served here/],
      [['-s', 'git@127.0.0.1', 'sftp'], 1, /^fatal: subsystem 'sftp' is not served here/],
    ];
    for (const [args, code, re] of cases) {
      const r = await sshRun(kit, alice, s.sshPort, args);
      assert.equal(r.code, code, args.join(' '));
      assert.match(r.stderr, re, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.equal(r.stdout, '');
    }
    const ar = await gitAsync(['archive', `--remote=${url('open.git')}`, 'HEAD'], t.dir, as(alice));
    assert.notEqual(ar.code, 0);
    assert.match(ar.stderr, /git-upload-archive is not served here/);
  });

  test('a key removed from the directory stops working without a restart; one added starts', async () => {
    const dave = kit.user('dave');
    ok(await gitAsync(['ls-remote', url('open.git')], t.dir, as(dave)));
    renameSync(join(kit.keys, 'dave.pub'), join(t.dir, 'dave.pub.off'));
    const r = await gitAsync(['ls-remote', url('open.git')], t.dir, as(dave));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Permission denied/);
    copyFileSync(join(t.dir, 'dave.pub.off'), join(kit.keys, 'dave@back.pub'));
    ok(await gitAsync(['ls-remote', url('open.git')], t.dir, as(dave)));
  });

  test('a key under two users is refused for both, with a warning naming both', async () => {
    const eve = kit.user('eve');
    ok(await gitAsync(['ls-remote', url('open.git')], t.dir, as(eve)));
    copyFileSync(eve.pub, join(kit.keys, 'frank.pub'));
    const r = await gitAsync(['ls-remote', url('open.git')], t.dir, as(eve));
    assert.notEqual(r.code, 0);
    const warn = s.logs.find((l) => /refused for both/.test(l));
    assert.ok(warn, s.logs.join('\n'));
    assert.match(warn, /eve\.pub \(user eve\)/);
    assert.match(warn, /frank\.pub \(user frank\)/);
    rmSync(join(kit.keys, 'frank.pub'));
    ok(await gitAsync(['ls-remote', url('open.git')], t.dir, as(eve)));
  });
});

describe('ssh host key', () => {
  test('a missing host key is created (0600, OpenSSH format), printed as ssh-keygen -l prints it, and kept across restarts', async () => {
    const t = tmp('gitwire-ssh-hostkey-');
    try {
      const { kit, alice, srv } = aliceAndEmptyRepo(t.dir);
      const s1 = await startSsh(kit, srv);
      assert.equal(statSync(kit.hostKey).mode & 0o777, 0o600);
      assert.match(readFileSync(kit.hostKey, 'utf8'), /^-----BEGIN OPENSSH PRIVATE KEY-----\n/);
      const l = spawnSync('ssh-keygen', ['-l', '-f', kit.hostKey], { encoding: 'utf8' });
      assert.equal(l.status, 0, l.stderr);
      assert.ok(s1.logs.some((x) => x.includes(`"msg":"ssh host key: ${l.stdout.trim()}"`)), s1.logs.join('\n'));
      ok(await gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], t.dir, gitSshEnv(kit, alice, s1.sshPort)));
      const known = readFileSync(kit.knownHosts, 'utf8');
      await s1.stop();
      const s2 = await startSsh(kit, srv);
      // the same key: the old known_hosts line (for the new port) still holds
      assert.equal(readFileSync(kit.knownHosts, 'utf8').replace(/\]:\d+/, ''), known.replace(/\]:\d+/, ''));
      ok(await gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], t.dir, gitSshEnv(kit, alice, s2.sshPort)));
      await s2.stop();
      // and a changed host key is caught by StrictHostKeyChecking
      rmSync(kit.hostKey);
      const s3 = await startSsh(kit, srv);
      writeFileSync(kit.knownHosts, known.replace(/\]:\d+/, `]:${s3.sshPort}`));
      const r = await gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], t.dir, gitSshEnv(kit, alice, s3.sshPort));
      assert.notEqual(r.code, 0);
      await s3.stop();
      writeKnownHosts(kit, 1);
    } finally { t.cleanup(); }
  });
});

/** The first log line `pred` takes, waiting up to 5 s for it (the server logs after the client has its answer). */
async function logLine(logs: string[], pred: (e: Record<string, unknown>) => boolean): Promise<Record<string, unknown> | undefined> {
  for (const end = Date.now() + 5000; ;) {
    const hit = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find(pred);
    if (hit || Date.now() > end) return hit;
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('metrics count SSH requests under transport="ssh", beside HTTP in the same process', { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-ssh-metrics-');
  try {
    const { kit, alice, srv } = aliceAndEmptyRepo(t.dir);
    const s = await startSsh(kit, srv, ['--http', '0', '--metrics', '0']);
    try {
      ok(await gitAsync(['ls-remote', 'ssh://git@127.0.0.1/r.git'], t.dir, gitSshEnv(kit, alice, s.sshPort)));
      const text = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
      assert.match(text, /gitwire_requests_total\{service="upload-pack",transport="ssh",protocol="2",command="ls-refs",outcome="ok"\} 1/);
    } finally { await s.stop(); }
  } finally { t.cleanup(); }
});

// packets.ts cuts SSH packets from slabs that are used again once written: a slab used again too
// early would corrupt packets still queued (OpenSSH drops the connection on a bad MAC or tag). A
// clone of a 6 MiB pack with a key exchange every 1 MiB, for each cipher family, arrives whole.
test('a clone over rekeys and every cipher family arrives whole (slabs used again only once written)', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-ssh-slabs-');
  try {
    const { kit, alice, srv } = aliceAndEmptyRepo(t.dir);
    const w = join(t.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    const blob = randomBytes(6 << 20);
    const tip = commit(w, 'big', { 'big.bin': blob });
    git(['push', '-q', join(srv, 'r.git'), 'main'], { cwd: w });
    const s = await startSsh(kit, srv);
    try {
      for (const opts of [['-c', 'chacha20-poly1305@openssh.com'], ['-c', 'aes128-gcm@openssh.com'], ['-c', 'aes128-ctr', '-m', 'hmac-sha2-256-etm@openssh.com']]) {
        const env = gitSshEnv(kit, alice, s.sshPort);
        env.GIT_SSH_COMMAND = `${env.GIT_SSH_COMMAND} -o RekeyLimit=1M ${opts.join(' ')}`;
        const dest = join(t.dir, `c-${opts[1]}`);
        ok(await gitAsync(['clone', '-q', '--bare', 'ssh://git@127.0.0.1/r.git', dest], t.dir, env));
        assert.equal(git(['--git-dir', dest, 'rev-parse', 'main']).trim(), tip);
        git(['--git-dir', dest, 'fsck', '--strict']);
        assert.equal(createHash('sha256').update(gitBuf(['--git-dir', dest, 'cat-file', 'blob', 'main:big.bin'])).digest('hex'), createHash('sha256').update(blob).digest('hex'));
      }
    } finally { await s.stop(); }
  } finally { t.cleanup(); }
});
