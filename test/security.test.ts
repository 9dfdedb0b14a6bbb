/**
 * Issue #10: no request may read outside the repository, crash the server
 * or take the shared server from other clients. Each test sends the exact
 * request from the issue over the transports it names, checks the answer
 * against git's (or a clear error), and checks that the server still
 * answers a real `git ls-remote` afterwards.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitDaemon, httpPost, stdio } from './helpers/wire.js';
import { MemorySink } from '../src/pktline/sink.js';
import { uploadPack } from '../src/protocol/upload-pack.js';
import { GitwireError } from '../src/errors.js';

let t: ReturnType<typeof tmp>;
let root: string;
let repo: string;
let srv: ServerProc;
let main: string;
let hiddenTip: string;
let outsideFile: string;
let twin: string;

before(async () => {
  t = tmp('gitwire-sec-');
  root = join(t.dir, 'root');
  mkdirSync(root);
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  for (let i = 0; i < 4; i++) commit(w, `c${i}`, { [`f${i}`]: `${i}\n` });
  main = git(['rev-parse', 'HEAD'], { cwd: w }).trim();
  hiddenTip = commit(w, 'secret', { secret: 'hidden\n' });
  git(['reset', '-q', '--hard', 'HEAD~1'], { cwd: w });
  repo = join(root, 'repo.git');
  git(['clone', '-q', '--bare', w, repo]);
  git(['--git-dir', repo, 'fetch', '-q', w, `${hiddenTip}:refs/hidden/x`]);
  git(['--git-dir', repo, 'update-ref', 'refs/heads/private/x', hiddenTip]);
  git(['--git-dir', repo, 'config', '--add', 'uploadpack.hideRefs', 'refs/hidden']);
  git(['--git-dir', repo, 'config', '--add', 'uploadpack.hideRefs', 'refs/heads/private']);
  git(['--git-dir', repo, 'config', 'uploadpack.allowRefInWant', 'true']);
  // a file outside the repository that looks like a ref to the hidden tip: reading it would leak
  outsideFile = join(t.dir, 'outside-ref');
  writeFileSync(outsideFile, `${hiddenTip}\n`);
  // git itself is asked about a twin without the special files (it would block on the FIFO)
  twin = join(t.dir, 'twin.git');
  execFileSync('cp', ['-a', repo, twin]);
  git(['--git-dir', twin, 'symbolic-ref', 'refs/heads/alias', 'refs/heads/private/x']);
  // special files among the loose refs: none may be read or block
  execFileSync('mkfifo', [join(repo, 'refs', 'heads', 'fifo')]);
  symlinkSync('/dev/zero', join(repo, 'refs', 'heads', 'zero'));
  symlinkSync(outsideFile, join(repo, 'refs', 'heads', 'out'));
  srv = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--quiet']);
});
after(async () => { await srv.stop(); t.cleanup(); });

/** The server process is alive and a real `git ls-remote` gets the visible refs over both transports. */
function assertServing(): void {
  assert.equal(srv.child.exitCode, null, 'server process still running');
  for (const url of [`http://127.0.0.1:${srv.httpPort}/repo.git`, `git://127.0.0.1:${srv.gitPort}/repo.git`]) {
    const out = git(['ls-remote', url, 'refs/heads/main']);
    assert.equal(out, `${main}\trefs/heads/main\n`, url);
  }
}

const V2 = (args: string[]) => pkt(['command=fetch\n', 'object-format=sha1\n', '0001', ...args, '0000']);
const V0 = (lines: string[]) => pkt([...lines, '0000']);

type Transport = 'stdio' | 'http' | 'git';
/** One request over a transport; the reply is the raw bytes (git:// v0 starts with the advertisement). */
async function send(tr: Transport, proto: '' | 'version=2', body: Buffer) {
  if (tr === 'stdio') return stdio(repo, body, proto);
  if (tr === 'http') return httpPost(srv.httpPort!, '/repo.git', body, proto);
  return gitDaemon(srv.gitPort!, '/repo.git', body, proto);
}

/** git upload-pack's own stateless reply to the same request. */
function gitReply(proto: string, body: Buffer): { out: Buffer; err: string } {
  const r = spawnSync('git', ['upload-pack', '--stateless-rpc', twin], { input: body, env: { ...gitEnv, GIT_PROTOCOL: proto }, timeout: 20_000 });
  return { out: r.stdout, err: r.stderr.toString() };
}

test('defect 1: a git:// request line with a 65,490-byte path closes that connection, not the server', async () => {
  const line = Buffer.from(`git-upload-pack /${'a'.repeat(65490)}`);
  const frame = Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0')), line]);
  const reply = await new Promise<Buffer>((resolve) => {
    const s = connect(srv.gitPort!, '127.0.0.1', () => s.write(frame));
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => { /* reset: closed */ });
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });
  // git daemon's packet_write_fmt_gently cannot frame the message: nothing is sent, the connection closes
  assert.equal(reply.length, 0);
  // and a long path whose message does fit is answered as git daemon answers
  const ok = await gitDaemon(srv.gitPort!, `/${'b'.repeat(1000)}`, Buffer.alloc(0));
  assert.deepEqual(unpkt(ok.body), [`ERR access denied or repository not exported: /${'b'.repeat(1000)}`]);
  assertServing();
});

const OUTSIDE = '../../../outside-ref'; // refs/%s → <repo>/refs/../../../outside-ref
const deepenNotNames = [OUTSIDE, '../../../../../../../../../../dev/zero', 'heads/fifo', 'heads/zero', 'heads/out', 'refs/heads/../hidden/x'];

for (const tr of ['stdio', 'http', 'git'] as const) {
  for (const proto of ['', 'version=2'] as const) {
    test(`defect 2: deepen-not never reads outside refs/ (${tr}, ${proto || 'v0'})`, async () => {
      const req = (arg: string) => proto
        ? V2([`want ${main}\n`, `deepen-not ${arg}\n`, 'done\n'])
        : V0([`want ${main} side-band-64k\n`, `deepen-not ${arg}\n`]);
      const missing = await send(tr, proto, req('refs/heads/no-such-ref'));
      for (const name of deepenNotNames) {
        const r = await send(tr, proto, req(name));
        // exactly what a name that does not exist gets: git's "deepen-not is not a ref"
        assert.deepEqual(unpkt(r.body), unpkt(missing.body), name);
        assert.ok(!r.body.includes(hiddenTip), 'the outside file never shows');
        if (tr === 'stdio') {
          assert.match(r.stderr!, new RegExp(`fatal: git upload-pack: deepen-not is not a ref: deepen-not ${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
          // the wording is git 2.55's (recorded from the v2.55.0 oracle; 2.39 says "ambiguous deepen-not" for every count but one)
        }
      }
      assertServing();
    });
  }
}

test('deepen-not <oid>: "deepen-not is not a ref" (recorded from git 2.55; 2.39 said "ambiguous deepen-not")', async () => {
  const r = await stdio(repo, V2([`want ${main}\n`, `deepen-not ${main}\n`, 'done\n']), 'version=2');
  assert.match(r.stderr!, new RegExp(`fatal: git upload-pack: deepen-not is not a ref: deepen-not ${main}\\n`));
});

const wantRefNames = ['refs/heads/../hidden/x', 'refs/heads//private/x', 'refs/heads/./private/x', 'refs/../../../outside-ref',
  'refs/heads/fifo', 'refs/heads/zero', 'refs/heads/out', 'refs/hidden/x', 'refs/heads/private/x'];

for (const tr of ['stdio', 'http', 'git'] as const) {
  test(`defect 3: want-ref answers "unknown ref" for names that are not visible refs (${tr})`, async () => {
    for (const name of wantRefNames) {
      const body = V2([`want-ref ${name}\n`, 'done\n']);
      const r = await send(tr, 'version=2', body);
      const lines = unpkt(r.body);
      assert.equal(lines.at(-1), `ERR unknown ref ${name}`, `${name}: ${lines.join('|')}`);
      assert.ok(!r.body.includes(hiddenTip), `${name}: the hidden tip never shows`);
      // git answers the same, byte for byte (it would block on the FIFO, read /dev/zero and follow the symlink out: not asked)
      if (tr === 'stdio' && !/heads\/(fifo|zero|out)$/.test(name)) assert.deepEqual(lines, unpkt(gitReply('version=2', body).out), `same as git for ${name}`);
    }
    assertServing();
  });
}

test('defect 3: with a refFilter, want-ref of a filtered ref, or of a symref to one, is unknown', async () => {
  const refFilter = (name: string) => !name.startsWith('refs/heads/private/');
  const run = async (name: string) => {
    const sink = new MemorySink();
    // hideRefs off: only the filter decides
    const env = { ...gitEnv, GIT_PROTOCOL: 'version=2', GIT_CONFIG_PARAMETERS: "'uploadpack.hideRefs=!refs/heads/private'" };
    const err = await uploadPack({ directory: twin, input: V2([`want-ref ${name}\n`, 'done\n']), output: sink, env, statelessRpc: true, refFilter })
      .then(() => undefined, (e: unknown) => e);
    return { lines: unpkt(sink.data), err };
  };
  for (const name of ['refs/heads/private/x', 'refs/heads/alias', 'refs/heads//private/x']) {
    const r = await run(name);
    assert.ok(r.err instanceof GitwireError, name);
    assert.equal(r.lines.at(-1), `ERR unknown ref ${name}`, name);
  }
});

test('loose refs: a FIFO, a device and a symlink out of the repository are never read, and listing does not block', async () => {
  const out = git(['ls-remote', `http://127.0.0.1:${srv.httpPort}/repo.git`]);
  assert.doesNotMatch(out, /fifo|zero|refs\/heads\/out/);
  assert.doesNotMatch(out, new RegExp(hiddenTip));
  assertServing();
});

test('the reference for the outside file is really a ref-shaped file (so the checks above could fail)', () => {
  assert.equal(readFileSync(outsideFile, 'utf8'), `${hiddenTip}\n`);
  assert.equal(git(['--git-dir', repo, 'cat-file', '-t', hiddenTip]).trim(), 'commit');
});

test('defect 7: idle git:// connections do not lock others out (eviction of the longest idle, as git daemon makes room)', async () => {
  const idle: Socket[] = [];
  let closedByServer = 0;
  for (let i = 0; i < 40; i++) {
    await new Promise<void>((resolve) => {
      const s = connect(srv.gitPort!, '127.0.0.1', () => resolve());
      s.on('error', () => { /* reset by the server */ });
      s.on('close', () => { closedByServer++; });
      idle.push(s);
    });
  }
  try {
    await new Promise((r) => setTimeout(r, 200));
    assertServing();
    assert.ok(closedByServer >= 8, `idle connections were evicted (${closedByServer})`);
  } finally {
    for (const s of idle) s.destroy();
  }
});
