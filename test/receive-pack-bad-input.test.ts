/**
 * Bad input to receive-pack: each request goes to `gitwire receive-pack
 * --stateless-rpc` and `git receive-pack --stateless-rpc` on twin
 * repositories. The answers must match byte for byte; no ref moves, no
 * quarantine is left behind, no child process survives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { BIN, git, gitBuf, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, emptyPack, pkt, rawReceivePack, request, processesMentioning, type Impl } from './helpers/push.js';
import { MemorySink, StreamSink } from '../src/pktline/sink.js';
import { receivePack } from '../src/protocol/receive-pack.js';
import type { GitwireError } from '../src/errors.js';

interface Fixture { root: string; base: string; oldTip: string; newTip: string; pack: Buffer; cleanup: () => void }

function fixture(): Fixture {
  const t = tmp('gitwire-badpush-');
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  for (let i = 0; i < 3; i++) commit(src, `c${i}`, { [`f${i}.txt`]: `line ${i}\n`.repeat(200) });
  const base = join(t.dir, 'base.git');
  git(['clone', '-q', '--bare', src, base]);
  commit(src, 'c3', { 'f0.txt': `${'line 0\n'.repeat(199)}changed\n` });
  const newTip = git(['rev-parse', 'HEAD'], { cwd: src }).trim();
  const oldTip = git(['rev-parse', 'HEAD~1'], { cwd: src }).trim();
  const pack = gitBuf(['pack-objects', '--stdout', '--revs', '--thin', '-q'], { cwd: src, input: `${newTip}\n^${oldTip}\n` });
  return { root: t.dir, base, oldTip, newTip, pack, cleanup: t.cleanup };
}

const CAPS = 'report-status object-format=sha1 agent=x';

async function both(f: Fixture, name: string, input: Buffer, o: { config?: Array<[string, string]>; empty?: boolean; accepted?: boolean; setup?: (dir: string) => void } = {}) {
  const res: Record<string, { code: number; stdout: string; stderr: string; refs: string; dir: string }> = {};
  for (const impl of IMPLS) {
    const dir = join(f.root, `${name}-${impl}.git`);
    if (o.empty) git(['init', '-q', '--bare', dir]); else cpSync(f.base, dir, { recursive: true });
    for (const [k, v] of o.config ?? []) git(['config', k, v], { cwd: dir });
    o.setup?.(dir);
    const refsBefore = git(['for-each-ref'], { cwd: dir });
    const r = await rawReceivePack(impl, dir, input, {}, ['--stateless-rpc']);
    const refs = git(['for-each-ref'], { cwd: dir });
    res[impl] = { code: r.code, stdout: r.stdout.toString('latin1'), stderr: r.stderr, refs, dir };
    if (impl === 'gitwire') {
      if (!o.accepted) assert.equal(refs, refsBefore, `${name}: refs moved`);
      assert.deepEqual(readdirSync(join(dir, 'objects')).filter((n) => n.startsWith('tmp_objdir')), [], `${name}: quarantine left`);
      assert.deepEqual(processesMentioning(dir), [], `${name}: child left`);
    }
  }
  return res as Record<Impl, { code: number; stdout: string; stderr: string; refs: string; dir: string }>;
}

function sameAsGit(r: Record<Impl, { code: number; stdout: string; stderr: string }>, name: string, stderr = true): void {
  assert.equal(r.gitwire.code, r.git.code, `${name}: exit code\n${r.gitwire.stderr}`);
  assert.equal(r.gitwire.stdout, r.git.stdout, `${name}: report`);
  if (stderr) assert.equal(r.gitwire.stderr, r.git.stderr, `${name}: stderr`);
}

test('bad input gets git\'s answer, no ref moves, nothing is left behind', async () => {
  const f = fixture();
  try {
    const cmd = `${f.oldTip} ${f.newTip} refs/heads/main`;
    sameAsGit(await both(f, 'garbage', request(['garbage'], CAPS)), 'garbage command');
    sameAsGit(await both(f, 'shallow-garbage', Buffer.concat([pkt('shallow nothex'), Buffer.from('0000')])), 'garbage shallow');
    sameAsGit(await both(f, 'format', request([cmd], 'report-status object-format=sha256', f.pack)), 'object-format mismatch');
    sameAsGit(await both(f, 'truncated', request([cmd], CAPS, f.pack.subarray(0, f.pack.length >> 1))), 'truncated pack (unpack-objects)');
    sameAsGit(await both(f, 'truncated-idx', request([cmd], CAPS, f.pack.subarray(0, f.pack.length >> 1)), { config: [['receive.unpackLimit', '1']] }), 'truncated pack (index-pack)');
    sameAsGit(await both(f, 'no-pack', request([cmd], CAPS)), 'no pack');
    sameAsGit(await both(f, 'bad-signature', request([cmd], CAPS, Buffer.from('PACX\0\0\0\x02\0\0\0\x01'))), 'bad pack signature');
    sameAsGit(await both(f, 'bad-version', request([cmd], CAPS, Buffer.from('PACK\0\0\0\x09\0\0\0\x01'))), 'bad pack version');
    sameAsGit(await both(f, 'max-input', request([cmd], CAPS, f.pack), { config: [['receive.maxInputSize', '64']] }), 'over receive.maxInputSize (unpack-objects)');
    sameAsGit(await both(f, 'max-input-idx', request([cmd], CAPS, f.pack), { config: [['receive.maxInputSize', '64'], ['receive.unpackLimit', '1']] }), 'over receive.maxInputSize (index-pack)');
    // a thin pack whose delta base the repository does not have
    sameAsGit(await both(f, 'missing-base', request([`${'0'.repeat(40)} ${f.newTip} refs/heads/main`], CAPS, f.pack), { empty: true }), 'missing base (unpack-objects)');
    sameAsGit(await both(f, 'missing-base-idx', request([`${'0'.repeat(40)} ${f.newTip} refs/heads/main`], CAPS, f.pack), { empty: true, config: [['receive.unpackLimit', '1']] }), 'missing base (index-pack)');
    // objects the pack does not bring: connectivity fails
    sameAsGit(await both(f, 'not-connected', request([`${f.oldTip} ${f.newTip} refs/heads/main`], CAPS, emptyPack())), 'missing necessary objects');
    sameAsGit(await both(f, 'sideband-truncated', request([cmd], 'report-status side-band-64k object-format=sha1', f.pack.subarray(0, 40))), 'truncated pack with sideband');
  } finally { f.cleanup(); }
});

test('a corrupt object under receive.fsckObjects is refused with git\'s error', async () => {
  const f = fixture();
  try {
    const t = git(['rev-parse', `${f.oldTip}^{tree}`], { cwd: f.base }).trim();
    const scratch = join(f.root, 'scratch');
    git(['init', '-q', '--bare', scratch]);
    const bad = git(['hash-object', '-t', 'commit', '-w', '--stdin', '--literally'], { cwd: scratch, input: `tree ${t}\nparent ${f.oldTip}\nauthor bad-ident 1 +0000\ncommitter C <c@x> 1 +0000\n\nbad\n` }).trim();
    const pack = gitBuf(['pack-objects', '--stdout', '-q'], { cwd: scratch, input: `${bad}\n` });
    const cmd = `${f.oldTip} ${bad} refs/heads/main`;
    sameAsGit(await both(f, 'fsck', request([cmd], CAPS, pack), { config: [['receive.fsckObjects', 'true']] }), 'fsck (unpack-objects)');
    sameAsGit(await both(f, 'fsck-idx', request([cmd], CAPS, pack), { config: [['receive.fsckObjects', 'true'], ['receive.unpackLimit', '1']] }), 'fsck (index-pack)');
    // receive.fsck.<msg-id> downgrades the error, as in git
    const r = await both(f, 'fsck-ignore', request([cmd], CAPS, pack), { config: [['receive.fsckObjects', 'true'], ['receive.fsck.missingEmail', 'ignore'], ['receive.fsck.badDate', 'ignore']], accepted: true });
    sameAsGit(r, 'fsck message ids');
    assert.equal(r.gitwire.refs, r.git.refs);
    assert.match(r.gitwire.stdout, /ok refs\/heads\/main/);
  } finally { f.cleanup(); }
});

test('a wrong old id and funny ref names get git 2.55\'s reasons', async () => {
  const f = fixture();
  try {
    const dir = join(f.root, 'w.git');
    cpSync(f.base, dir, { recursive: true });
    // recorded from git 2.55.0 (2.39 says "failed to update ref" and "refusing to create funny ref")
    const r = await rawReceivePack('gitwire', dir, request([`${f.newTip} ${f.newTip} refs/heads/main`, `${'0'.repeat(40)} ${f.newTip} refs/heads/ma..in`], CAPS, f.pack), {}, ['--stateless-rpc']);
    assert.equal(r.stdout.toString(), '000eunpack ok\n0034ng refs/heads/main incorrect old value provided\n0027ng refs/heads/ma..in funny refname\n0000');
    assert.equal(r.stderr, `error: refusing to update funny ref 'refs/heads/ma..in' remotely\nerror: cannot lock ref 'refs/heads/main': is at ${f.oldTip} but expected ${f.newTip}\n`);
    // directory/file conflicts with loose and packed refs (recorded from git 2.55.0)
    const df = join(f.root, 'df.git');
    cpSync(f.base, df, { recursive: true });
    git(['update-ref', 'refs/heads/a/b', f.oldTip], { cwd: df });
    git(['update-ref', 'refs/heads/c', f.oldTip], { cwd: df });
    git(['pack-refs', '--all'], { cwd: df });
    const z = '0'.repeat(40);
    const d = await rawReceivePack('gitwire', df, request([`${z} ${f.newTip} refs/heads/a`, `${z} ${f.newTip} refs/heads/c/d`], CAPS, f.pack), {}, ['--stateless-rpc']);
    assert.equal(d.stdout.toString(), '000eunpack ok\n0025ng refs/heads/a refname conflict\n0027ng refs/heads/c/d refname conflict\n0000');
    assert.equal(d.stderr, "error: 'refs/heads/a/b' exists; cannot create 'refs/heads/a'\nerror: 'refs/heads/c' exists; cannot create 'refs/heads/c/d'\n");
    // a push certificate without its blank line: git's message, before anything is read
    const cert = Buffer.concat([pkt('push-cert\0report-status'), pkt('certificate version 0.1\n'), pkt('push-cert-end\n'), Buffer.from('0000')]);
    const c = await rawReceivePack('gitwire', dir, cert, {}, ['--stateless-rpc']);
    const g = await rawReceivePack('git', dir, cert, {}, ['--stateless-rpc']);
    assert.equal(c.code, 128);
    assert.equal(c.stderr, g.stderr);
    assert.equal(c.stderr, 'fatal: malformed push certificate certificate version 0.1\n\n');
  } finally { f.cleanup(); }
});

test('a client that disconnects mid-pack: no ref moves, no quarantine, no child left', async () => {
  const f = fixture();
  try {
    for (const limit of ['100', '1']) {
      const dir = join(f.root, `dc-${limit}.git`);
      cpSync(f.base, dir, { recursive: true });
      git(['config', 'receive.unpackLimit', limit], { cwd: dir });
      const before = git(['for-each-ref'], { cwd: dir });
      const child = spawn(BIN, ['receive-pack', dir], { env: gitEnv, stdio: ['pipe', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (b: Buffer) => { err += b.toString(); });
      child.stdout.on('data', () => { /* advertisement */ });
      child.stdin.on('error', () => { /* gone */ });
      const closed = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
      child.stdin.write(request([`${f.oldTip} ${f.newTip} refs/heads/main`], 'report-status side-band-64k object-format=sha1', f.pack.subarray(0, 60)));
      await new Promise((r) => setTimeout(r, 300));
      child.stdin.destroy();
      child.stdout.destroy();
      const code = await closed;
      assert.notEqual(code, null, 'exited by itself');
      assert.equal(git(['for-each-ref'], { cwd: dir }), before);
      assert.deepEqual(readdirSync(join(dir, 'objects')).filter((n) => n.startsWith('tmp_objdir')), [], err);
      assert.deepEqual(processesMentioning(dir), []);
    }
  } finally { f.cleanup(); }
});


test('a command list larger than the request limit is refused before it is held: in-process and over stdio', async () => {
  const f = fixture();
  try {
    const dir = join(f.root, 'limit.git');
    cpSync(f.base, dir, { recursive: true });
    const refsBefore = git(['for-each-ref'], { cwd: dir });
    const cmds = Array.from({ length: 100 }, (_, i) => `${'0'.repeat(40)} ${f.newTip} refs/heads/m/${String(i).padStart(4, '0')}`);
    const sink = new MemorySink();
    const err = await receivePack({ directory: dir, input: request(cmds, CAPS, emptyPack()), output: sink, env: gitEnv, statelessRpc: true, limits: { maxRequestBytes: 4096 } })
      .then(() => undefined, (e: unknown) => e as GitwireError);
    assert.equal(err?.code, 'GW_LIMIT');
    assert.equal(err?.message, 'request was larger than our maximum size (4096)');
    // the default (10 MiB) over stdio: 100,000 commands
    const many = Array.from({ length: 100_000 }, (_, i) => `${'0'.repeat(40)} ${f.newTip} refs/heads/m/${String(i).padStart(7, '0')}`);
    const r = await rawReceivePack('gitwire', dir, request(many, CAPS, emptyPack()), {}, ['--stateless-rpc']);
    assert.equal(r.code, 128);
    assert.equal(r.stderr, 'fatal: request was larger than our maximum size (10485760)\n');
    assert.equal(git(['for-each-ref'], { cwd: dir }), refsBefore);
    assert.deepEqual(readdirSync(join(dir, 'objects')).filter((n) => n.startsWith('tmp_objdir')), []);
  } finally { f.cleanup(); }
});

test('directories refs leave behind: deleting a nested ref removes them, creating a ref over an empty one, D/F in one push; as git', async () => {
  const f = fixture();
  try {
    const z = '0'.repeat(40);
    const caps = 'report-status delete-refs atomic object-format=sha1 agent=x';
    const run = async (impl: Impl, dir: string, cmds: string[]) => {
      const r = await rawReceivePack(impl, dir, request(cmds, caps, emptyPack()), {}, ['--stateless-rpc']);
      return { out: r.stdout.toString('latin1'), err: r.stderr, refs: git(['for-each-ref'], { cwd: dir }) };
    };
    const seen: Record<string, unknown[]> = { git: [], gitwire: [] };
    for (const impl of IMPLS) {
      const d = join(f.root, `dirs-${impl}.git`);
      cpSync(f.base, d, { recursive: true });
      git(['config', 'receive.advertiseAtomic', 'true'], { cwd: d });
      const out = seen[impl]!;
      // create a/b, delete it, create a: the empty refs/heads/a/ must not stay in the way
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/a/b`]));
      out.push(await run(impl, d, [`${f.oldTip} ${z} refs/heads/a/b`]));
      out.push(existsSync(join(d, 'refs', 'heads', 'a')) && readdirSync(join(d, 'refs', 'heads', 'a')).length);
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/a`]));
      // one push that deletes q/r and creates q (receive-pack deletes first, in a transaction of its own)
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/q/r`]));
      out.push(await run(impl, d, [`${f.oldTip} ${z} refs/heads/q/r`, `${z} ${f.oldTip} refs/heads/q`]));
      // an empty directory tree in the way of a new ref
      mkdirSync(join(d, 'refs', 'heads', 'emptydir', 'x', 'y'), { recursive: true });
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/emptydir`]));
      // atomic, with a D/F conflict inside: refused before anything moves (git resolves none inside a transaction)
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/t/u`]));
      out.push(await run(impl, d, [`${f.oldTip} ${f.newTip} refs/heads/main`, `${f.oldTip} ${z} refs/heads/t/u`, `${z} ${f.oldTip} refs/heads/t`]));
      // a loose ref in the way, above and below: git's wording names the ref it could not lock
      out.push(await run(impl, d, [`${z} ${f.oldTip} refs/heads/t/u/v`, `${z} ${f.oldTip} refs/heads/a/c`]));
    }
    assert.deepEqual(seen.gitwire, seen.git);
  } finally { f.cleanup(); }
});

test('a push to a symref loop is refused as a broken symref, as git does', async () => {
  const f = fixture();
  try {
    git(['symbolic-ref', 'refs/heads/loop1', 'refs/heads/loop2'], { cwd: f.base });
    git(['symbolic-ref', 'refs/heads/loop2', 'refs/heads/loop1'], { cwd: f.base });
    const z = '0'.repeat(40);
    const r = await both(f, 'symloop', request([`${z} ${f.newTip} refs/heads/loop1`], CAPS, f.pack));
    sameAsGit(r, 'symref loop');
    assert.match(r.gitwire.stdout, /ng refs\/heads\/loop1 broken symref/);
  } finally { f.cleanup(); }
});

test('a push of more refs than open files allowed: every ref is created (a lock keeps its file, not its descriptor)', async () => {
  const f = fixture();
  try {
    const dir = join(f.root, 'fds.git');
    cpSync(f.base, dir, { recursive: true });
    const z = '0'.repeat(40);
    const n = 600;
    const body = request(Array.from({ length: n }, (_, i) => `${z} ${f.oldTip} refs/heads/m/${String(i).padStart(4, '0')}`), CAPS, emptyPack());
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const c = spawn('sh', ['-c', `ulimit -n 256 && exec "$0" receive-pack --stateless-rpc "$1"`, BIN, dir], { env: gitEnv, stdio: ['pipe', 'pipe', 'pipe'] });
      let so = '', se = '';
      c.stdout.on('data', (b: Buffer) => { so += b.toString('latin1'); });
      c.stderr.on('data', (b: Buffer) => { se += b.toString(); });
      c.on('close', (code) => resolve({ code: code ?? -1, stdout: so, stderr: se }));
      c.stdin.end(body);
    });
    assert.equal(out.stderr, '');
    assert.equal(out.code, 0);
    assert.equal((out.stdout.match(/ok refs\/heads\/m\//g) ?? []).length, n);
    assert.equal(git(['for-each-ref', '--count=1000', 'refs/heads/m/'], { cwd: dir }).trim().split('\n').length, n);
  } finally { f.cleanup(); }
});

test('a client that does not read holds a loud hook on its pipe; once it reads, every byte arrives', async () => {
  const f = fixture();
  try {
    const dir = join(f.root, 'loud.git');
    cpSync(f.base, dir, { recursive: true });
    const marker = join(f.root, 'hook-done');
    const hook = join(dir, 'hooks', 'pre-receive');
    // 32 MiB on stderr, then a mark: the hook can only finish once its output was taken
    writeFileSync(hook, `#!/bin/sh\nhead -c 33554432 /dev/zero | tr '\\\\0' x >&2\ntouch '${marker}'\n`);
    chmodSync(hook, 0o755);
    const z = '0'.repeat(40);
    const client = new PassThrough({ highWaterMark: 16 * 1024 });
    const done = receivePack({
      directory: dir, input: request([`${z} ${f.oldTip} refs/heads/loud`], 'report-status side-band-64k object-format=sha1 agent=x', emptyPack()),
      output: new StreamSink(client), env: gitEnv, statelessRpc: true,
    });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(existsSync(marker), false, 'the hook ran on while nobody read its output');
    let bytes = 0;
    client.on('data', (b: Buffer) => { bytes += b.length; });
    await done;
    assert.equal(existsSync(marker), true);
    assert.ok(bytes > 32 * 1024 * 1024, `${bytes} bytes reached the client`);
    assert.equal(git(['rev-parse', 'refs/heads/loud'], { cwd: dir }).trim(), f.oldTip);
  } finally { f.cleanup(); }
});

test('a hook that cannot start (50,000 push options: E2BIG) declines the push with git\'s message', async () => {
  const f = fixture();
  try {
    const z = '0'.repeat(40);
    const opts = Array.from({ length: 50_000 }, (_, i) => pkt(`opt${String(i).padStart(6, '0')}=${'v'.repeat(100)}\n`));
    const body = request([`${z} ${f.oldTip} refs/heads/po`], 'report-status push-options object-format=sha1 agent=x', emptyPack(), [...opts, Buffer.from('0000')]);
    const r = await both(f, 'e2big', body, { config: [['receive.advertisePushOptions', 'true']], setup: (dir) => {
      writeFileSync(join(dir, 'hooks', 'pre-receive'), '#!/bin/sh\nexit 0\n');
      chmodSync(join(dir, 'hooks', 'pre-receive'), 0o755);
    } });
    sameAsGit(r, 'E2BIG');
    assert.equal(r.gitwire.stderr, "fatal: cannot exec 'hooks/pre-receive': Argument list too long\n");
  } finally { f.cleanup(); }
});

test('an id in uppercase is read as git reads it; a ref name too long for the file system gets git 2.55\'s words', async () => {
  const f = fixture();
  try {
    const dir = join(f.root, 'upper.git');
    cpSync(f.base, dir, { recursive: true });
    const z = '0'.repeat(40);
    const long = `refs/heads/${'x'.repeat(300)}`;
    const r = await rawReceivePack('gitwire', dir, request([`${z} ${f.oldTip.toUpperCase()} refs/heads/up`, `${z} ${f.oldTip} ${long}`], CAPS, emptyPack()), {}, ['--stateless-rpc']);
    // recorded from git 2.55.0: the lock error fails the transaction, both refs are refused
    // (2.39 ran one transaction per ref, and said "failed to update ref" for the long one only)
    assert.equal(r.stdout.toString(), `000eunpack ok\n002bng refs/heads/up failed to update refs\n${(long.length + 30).toString(16).padStart(4, '0')}ng ${long} failed to update refs\n0000`);
    assert.equal(r.stderr, `error: cannot lock ref '${long}': Unable to create '${dir}/./${long}.lock': File name too long\n`);
    // alone, the uppercase id is taken
    const ok = await rawReceivePack('gitwire', dir, request([`${z} ${f.oldTip.toUpperCase()} refs/heads/up`], CAPS, emptyPack()), {}, ['--stateless-rpc']);
    assert.equal(ok.stdout.toString(), '000eunpack ok\n0015ok refs/heads/up\n0000');
    assert.equal(git(['rev-parse', 'refs/heads/up'], { cwd: dir }).trim(), f.oldTip);
  } finally { f.cleanup(); }
});
