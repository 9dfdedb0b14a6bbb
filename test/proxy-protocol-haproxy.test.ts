/**
 * git:// and SSH behind haproxy in TCP mode with `send-proxy-v2` (the
 * configuration of docs/cluster.md): the node sees every client's own
 * address, so `--max-packs-per-client` counts real clients (two clients run
 * at once, one client's two fetches one after the other) and the log names
 * the client and the balancer; a connection from the balancer's address
 * without a valid header is refused cleanly.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { commit } from './helpers/fixtures.js';
import { git, tmp } from './helpers/git.js';
import { gitSshEnv, sshKit, writeKnownHosts } from './helpers/ssh.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { HAVE_HAPROXY, gitRun, hookRuns, hookScript, startHaproxy, type Proc } from './helpers/cluster.js';

const skip = !HAVE_HAPROXY ? 'needs haproxy (.ci/run installs it)' : false;

let t: { dir: string; cleanup: () => void };
let node: ServerProc;
let lb: Proc & { http: number; git: number; ssh?: number };
let hook: { log: string };
let kit: ReturnType<typeof sshKit>;
let user: ReturnType<ReturnType<typeof sshKit>['user']>;
let head: string;

before(async () => {
  if (skip) return;
  t = tmp('gitwire-proxy-haproxy-');
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  head = commit(work, 'one', { 'a.bin': randomBytes(64 << 10) });
  git(['clone', '-q', '--bare', work, join(root, 'repo.git')]);
  kit = sshKit(join(t.dir, 'ssh'));
  user = kit.user('alice');
  const h = hookScript(t.dir, 1);
  hook = h;
  node = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--ssh', '0', '--ssh-keys', kit.keys, '--ssh-host-key', kit.hostKey,
    '--proxy-protocol', '127.0.0.1', '--max-packs-per-client', '1'], h.env);
  // the one node behind all three server lines
  lb = await startHaproxy(t.dir, { http: [node.httpPort!, node.httpPort!, node.httpPort!], git: [node.gitPort!, node.gitPort!, node.gitPort!], ssh: [node.sshPort!, node.sshPort!, node.sshPort!] });
  writeKnownHosts(kit, lb.ssh!);
});

after(async () => {
  if (skip) return;
  await lb?.stop();
  await node?.stop();
  t?.cleanup();
});

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;

/** A git:// v0 fetch of `head` from the loopback address `from`, through the balancer: resolves to the bytes received. */
function fetchFrom(from: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect({ port: lb.git, host: '127.0.0.1', localAddress: from });
    const got: Buffer[] = [];
    let asked = false;
    s.on('data', (d: Buffer) => {
      got.push(d);
      if (!asked && Buffer.concat(got).includes('0000')) {
        asked = true;
        s.write(pkt(`want ${head} side-band-64k ofs-delta\n`) + '0000' + pkt('done\n'));
      }
    });
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(got)));
    s.write(pkt('git-upload-pack /repo.git\0host=localhost\0'));
  });
}

const parsed = () => node.logs.flatMap((l) => { try { return [JSON.parse(l) as Record<string, unknown>]; } catch { return []; } });
const logsOf = (transport: string) => parsed().filter((e) => e.msg === 'request' && e.transport === transport);

test('git:// through haproxy send-proxy-v2: the client address counts: two clients fetch at once, one client twice in turn; the log names both addresses', { skip, timeout: 120_000 }, async () => {
  hookScript(t.dir, 1);
  const two = await Promise.all([fetchFrom('127.0.0.7'), fetchFrom('127.0.0.8')]);
  for (const b of two) assert.ok(b.includes('PACK'), 'a pack arrived');
  const r1 = hookRuns(hook.log);
  assert.equal(r1.length, 2);
  const overlap = (a: { start: bigint; end?: bigint }, b: { start: bigint; end?: bigint }) => a.start < b.end! && b.start < a.end!;
  assert.ok(overlap(r1[0]!, r1[1]!), 'two clients are two clients: both ran at once under --max-packs-per-client 1');
  hookScript(t.dir, 1);
  const same = await Promise.all([fetchFrom('127.0.0.9'), fetchFrom('127.0.0.9')]);
  for (const b of same) assert.ok(b.includes('PACK'), 'a pack arrived');
  const r2 = hookRuns(hook.log);
  assert.equal(r2.length, 2);
  assert.ok(!overlap(r2[0]!, r2[1]!), "one client's two fetches ran one after the other");
  for (let i = 0; i < 50 && logsOf('git').filter((e) => e.outcome === 'ok').length < 4; i++) await new Promise((r) => setTimeout(r, 100));
  const seen = logsOf('git').filter((e) => e.outcome === 'ok');
  assert.deepEqual(seen.map((e) => e.remoteAddress).sort(), ['127.0.0.7', '127.0.0.8', '127.0.0.9', '127.0.0.9']);
  for (const e of seen) assert.equal(e.proxyAddress, '127.0.0.1');
});

test('SSH through haproxy send-proxy-v2: the log names the client, not the balancer', { skip, timeout: 60_000 }, async () => {
  const env = gitSshEnv(kit, user, lb.ssh!);
  env.GIT_SSH_COMMAND = env.GIT_SSH_COMMAND!.replace(/^ssh /, "ssh '-b' '127.0.0.10' ");
  const r = await gitRun(['ls-remote', 'ssh://git@127.0.0.1/repo.git', 'refs/heads/main'], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${head}\trefs/heads/main\n`);
  for (let i = 0; i < 50 && !logsOf('ssh').some((e) => e.remoteAddress === '127.0.0.10'); i++) await new Promise((res) => setTimeout(res, 100));
  assert.ok(logsOf('ssh').some((e) => e.remoteAddress === '127.0.0.10' && e.outcome === 'ok'), JSON.stringify(logsOf('ssh')));
});

test('a connection from the balancer address without a valid header is refused cleanly, on git:// and SSH', { skip, timeout: 60_000 }, async () => {
  const bad = [Buffer.from('0032git-upload-pack /repo.git\0host=x\0'), Buffer.from('SSH-2.0-OpenSSH_9.2\r\n'), Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 99999 1\r\n'), randomBytes(300)];
  for (const port of [node.gitPort!, node.sshPort!]) {
    for (const b of bad) {
      const answer = await new Promise<Buffer>((resolve) => {
        const s = connect(port, '127.0.0.1');
        const got: Buffer[] = [];
        s.on('data', (d: Buffer) => got.push(d));
        s.on('error', () => { /* a reset is a refusal too */ });
        s.on('close', () => resolve(Buffer.concat(got)));
        s.write(b);
      });
      assert.equal(answer.length, 0, `nothing is said to a connection without a header (port ${port})`);
    }
  }
  for (let i = 0; i < 50 && node.logs.filter((l) => /PROXY protocol/.test(l)).length < 8; i++) await new Promise((r) => setTimeout(r, 100));
  const refusals = parsed().filter((e) => /PROXY protocol/.test(String(e.reason)));
  assert.equal(refusals.length, 8);
  for (const e of refusals) assert.equal(e.outcome, 'bad-request');
  // the node still serves
  const ok = await fetchFrom('127.0.0.11');
  assert.ok(ok.includes('PACK'));
});
