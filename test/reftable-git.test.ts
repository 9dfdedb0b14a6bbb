/**
 * Reftable repositories against git 2.55 (the installed git predates
 * reftable): where GITWIRE_GIT_2_55 names a git >= 2.45 install prefix,
 * reftable twins of the fixtures are made with it (`git refs migrate`),
 * and gitwire's answers are compared with git's own server on the same
 * repository: ls-remote (v0, v2, prefixes, namespaces), clone, push (refs,
 * reflogs, `git fsck`, `git refs verify`, the client's output), racing
 * pushes, pushes while git compacts and writes refs, `@{n}` names.
 * Without it every test here is skipped, saying why; the recorded
 * stacks of test/reftable-recorded.test.ts stand in for it in CI.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, gitEnv, tmp } from './helpers/git.js';
import { makeNamespaceRepo, makeRichRepo } from './helpers/fixtures.js';
import { normalizeClient } from './helpers/push.js';

const PREFIX = process.env.GITWIRE_GIT_2_55;
const ORACLE = PREFIX ? join(PREFIX, 'bin', 'git') : '';
const skip = ORACLE && existsSync(ORACLE) ? false : 'needs git >= 2.45 for reftable: set GITWIRE_GIT_2_55 to a git 2.55 install prefix';

const t = tmp('gitwire-reftable-git-');
after(() => t.cleanup());

interface Out { code: number; stdout: string; stderr: string }
function og(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Out {
  const r = spawnSync(ORACLE, args, { cwd: opts.cwd, env: { ...gitEnv, ...opts.env }, input: opts.input, encoding: 'utf8', maxBuffer: 1 << 28 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
function ok(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): string {
  const r = og(args, opts);
  assert.equal(r.code, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A bare reftable copy of `src` (git refs migrate keeps refs and reflogs). */
function twin(src: string, name: string): string {
  const d = join(t.dir, name);
  ok(['clone', '-q', '--bare', '--mirror', src, d]);
  ok(['refs', 'migrate', '--ref-format=reftable'], { cwd: d });
  assert.equal(ok(['rev-parse', '--show-ref-format'], { cwd: d }).trim(), 'reftable');
  return d;
}

function copy(src: string, name: string): string {
  const d = join(t.dir, name);
  cpSync(src, d, { recursive: true });
  return d;
}

const UP = `--upload-pack=${BIN} upload-pack`;
const RP = `--receive-pack=${BIN} receive-pack`;

let rich = '', rich256 = '', ns = '';
before(() => {
  if (skip) return;
  rich = twin(makeRichRepo(join(t.dir, 'f1')), 'rich.git');
  rich256 = twin(makeRichRepo(join(t.dir, 'f2'), { objectFormat: 'sha256' }), 'rich256.git');
  ns = twin(makeNamespaceRepo(join(t.dir, 'f3')), 'ns.git');
});

test('ls-remote against reftable twins: v0, v2, prefixes and namespaces as git 2.55 answers', { skip }, () => {
  for (const repo of [rich, rich256]) {
    for (const v of ['0', '2']) {
      for (const extra of [[], ['refs/heads/*'], ['--tags'], ['--symref']]) {
        const args = ['-c', `protocol.version=${v}`, 'ls-remote', ...extra.filter((e) => e.startsWith('-')), repo, ...extra.filter((e) => !e.startsWith('-'))];
        const ours = og([args[0]!, args[1]!, args[2]!, UP, ...args.slice(3)]);
        const theirs = og(args);
        assert.equal(ours.code, 0, ours.stderr);
        assert.equal(ours.stdout, theirs.stdout, `${repo} v${v} ${extra.join(' ')}`);
      }
    }
  }
  for (const v of ['0', '2']) {
    const env = { GIT_NAMESPACE: 'foo' };
    const ours = og(['-c', `protocol.version=${v}`, 'ls-remote', '--symref', UP, ns], { env });
    const theirs = og(['-c', `protocol.version=${v}`, 'ls-remote', '--symref', ns], { env });
    assert.equal(ours.stdout, theirs.stdout, `namespace v${v}`);
    assert.ok(ours.stdout.includes('refs/heads/secret'));
  }
});

test('clone and fetch from a reftable twin through gitwire give the refs git gives', { skip }, () => {
  for (const [repo, name] of [[rich, 'c1'], [rich256, 'c2']] as const) {
    const a = join(t.dir, `${name}-ours`), b = join(t.dir, `${name}-git`);
    ok(['clone', '-q', '--mirror', UP, repo, a]);
    ok(['clone', '-q', '--mirror', repo, b]);
    assert.equal(ok(['for-each-ref'], { cwd: a }), ok(['for-each-ref'], { cwd: b }));
    assert.equal(og(['fsck', '--strict'], { cwd: a }).code, 0);
  }
});

/** Push the same thing into twin A (gitwire) and twin B (git 2.55); compare everything. */
function pushBoth(client: string, a: string, b: string, args: string[]): void {
  const ra = og(['push', RP, a, ...args], { cwd: client });
  const rb = og(['push', b, ...args], { cwd: client });
  assert.equal(ra.code, rb.code, `exit code of push ${args.join(' ')}: ${ra.stderr} / ${rb.stderr}`);
  assert.equal(normalizeClient(ra.stderr, a), normalizeClient(rb.stderr, b), `client output of push ${args.join(' ')}`);
  assert.equal(ra.stdout, rb.stdout);
  const refs = (d: string) => ok(['for-each-ref', '--format=%(objectname) %(refname) %(symref)'], { cwd: d });
  assert.equal(refs(a), refs(b), `refs after push ${args.join(' ')}`);
  for (const line of refs(b).split('\n').filter(Boolean).concat('x HEAD')) {
    const ref = line.split(' ')[1]!;
    const log = (d: string) => og(['reflog', 'show', '--format=%H %gn <%ge> %gs', ref], { cwd: d }).stdout;
    assert.equal(log(a), log(b), `reflog of ${ref} after push ${args.join(' ')}`);
  }
  for (const d of [a, b]) {
    const f = og(['fsck', '--strict', '--no-progress'], { cwd: d });
    assert.equal(f.code, 0, f.stdout + f.stderr);
    const v = og(['refs', 'verify', '--strict'], { cwd: d });
    assert.equal(v.code, 0, v.stdout + v.stderr);
  }
}

test('pushes into reftable twins: refs, reflogs, fsck, refs verify and client output match git receive-pack', { skip }, () => {
  const a = twin(rich, 'push-a.git'), b = twin(rich, 'push-b.git');
  for (const d of [a, b]) ok(['config', 'core.logAllRefUpdates', 'true'], { cwd: d });
  const work = join(t.dir, 'push-work');
  ok(['clone', '-q', rich, work]);
  const c = (msg: string) => { ok(['commit', '-q', '--allow-empty', '-m', msg], { cwd: work }); return ok(['rev-parse', 'HEAD'], { cwd: work }).trim(); };
  c('one');
  pushBoth(work, a, b, ['HEAD:refs/heads/new']);
  c('two');
  pushBoth(work, a, b, ['HEAD:refs/heads/new', 'HEAD:refs/heads/main']);
  pushBoth(work, a, b, ['HEAD~1:refs/heads/new']); // not a fast-forward: refused
  pushBoth(work, a, b, ['-f', 'HEAD~1:refs/heads/new']);
  ok(['tag', '-a', '-m', 'pushed tag', 'pt'], { cwd: work });
  pushBoth(work, a, b, ['refs/tags/pt']);
  pushBoth(work, a, b, [':refs/heads/new', ':refs/heads/feature/x']);
  pushBoth(work, a, b, ['HEAD:refs/heads/feature']); // refs/heads/feature/x is gone: no conflict now
  pushBoth(work, a, b, ['HEAD:refs/heads/feature/y']); // a conflict with refs/heads/feature
  c('three');
  pushBoth(work, a, b, ['--atomic', 'HEAD:refs/heads/main', 'HEAD~3:refs/heads/loose-branch']); // one refused: neither
  pushBoth(work, a, b, ['--atomic', 'HEAD:refs/heads/main', 'HEAD:refs/heads/atomic-new']);
  // what gitwire wrote reads back with git; git's own compaction of gitwire's tables keeps everything
  const before = ok(['for-each-ref'], { cwd: a });
  ok(['pack-refs'], { cwd: a });
  assert.equal(ok(['for-each-ref'], { cwd: a }), before);
  assert.equal(readFileSync(join(a, 'reftable', 'tables.list'), 'utf8').trim().split('\n').length, 1);
  pushBoth(work, a, b, ['HEAD~1:refs/heads/after-pack']);
});

test('many refs: a large stack written by git (several blocks, an index) reads as git reads it; a push of 3,000 refs reads back in git', { skip }, () => {
  const d = twin(rich, 'many.git');
  const head = ok(['rev-parse', 'refs/heads/main'], { cwd: d }).trim();
  const lines: string[] = [];
  for (let i = 0; i < 6000; i++) lines.push(`create refs/changes/${String(i % 97).padStart(2, '0')}/${i}/head ${head}`);
  ok(['update-ref', '--stdin'], { cwd: d, input: `${lines.join('\n')}\n` });
  for (let i = 0; i < 6000; i += 3) lines[i] = `delete refs/changes/${String(i % 97).padStart(2, '0')}/${i}/head`;
  ok(['update-ref', '--stdin'], { cwd: d, input: `${lines.filter((l) => l.startsWith('delete')).join('\n')}\n` });
  for (const v of ['0', '2']) {
    const ours = og(['-c', `protocol.version=${v}`, 'ls-remote', UP, d]);
    assert.equal(ours.stdout, og(['-c', `protocol.version=${v}`, 'ls-remote', d]).stdout);
    assert.ok(ours.stdout.split('\n').length > 4000);
    const prefixed = og(['-c', `protocol.version=${v}`, 'ls-remote', UP, d, 'refs/changes/5*']);
    assert.equal(prefixed.stdout, og(['-c', `protocol.version=${v}`, 'ls-remote', d, 'refs/changes/5*']).stdout);
  }
  const work = join(t.dir, 'many-work');
  ok(['clone', '-q', rich, work]);
  const specs: string[] = [];
  for (let i = 0; i < 3000; i++) specs.push(`HEAD:refs/pushed/${i % 13}/r${i}`);
  const r = og(['push', '-q', RP, d, ...specs], { cwd: work });
  assert.equal(r.code, 0, r.stderr);
  const listed = ok(['for-each-ref', '--format=%(refname)', 'refs/pushed/'], { cwd: d }).trim().split('\n');
  assert.equal(listed.length, 3000);
  assert.equal(og(['refs', 'verify', '--strict'], { cwd: d }).code, 0);
  assert.equal(og(['fsck', '--no-progress'], { cwd: d }).code, 0);
});

function pushAsync(args: string[], cwd: string): Promise<Out> {
  return new Promise((resolve) => {
    const c = spawn(ORACLE, args, { cwd, env: gitEnv });
    let stdout = '', stderr = '';
    c.stdout.on('data', (b: Buffer) => { stdout += b.toString(); });
    c.stderr.on('data', (b: Buffer) => { stderr += b.toString(); });
    c.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr: stderr || `(no output from git ${args.join(' ')})` }));
  });
}

test('10 racing pushes creating one ref in a reftable repository: exactly one wins', { skip }, async () => {
  const d = twin(rich, 'race.git');
  const clients: Array<{ dir: string; tip: string }> = [];
  for (let i = 0; i < 10; i++) {
    const w = join(t.dir, `race-${i}`);
    ok(['clone', '-q', rich, w]);
    ok(['commit', '-q', '--allow-empty', '-m', `racer ${i}`], { cwd: w });
    clients.push({ dir: w, tip: ok(['rev-parse', 'HEAD'], { cwd: w }).trim() });
  }
  const results = await Promise.all(clients.map((c) => pushAsync(['push', '--porcelain', RP, d, 'HEAD:refs/heads/race'], c.dir)));
  const winners = results.map((r, i) => (r.code === 0 ? i : -1)).filter((i) => i >= 0);
  assert.equal(winners.length, 1, results.map((r) => r.stdout + r.stderr).join('\n---\n'));
  assert.equal(ok(['rev-parse', 'refs/heads/race'], { cwd: d }).trim(), clients[winners[0]!]!.tip);
  assert.equal(og(['refs', 'verify', '--strict'], { cwd: d }).code, 0);
  assert.deepEqual(readdirSync(join(d, 'reftable')).filter((f) => f.endsWith('.lock') || f.startsWith('tmp_')), []);
});

test('pushes interleaved with git pack-refs and with git writing refs lose nothing', { skip }, async () => {
  const d = twin(rich, 'interleave.git');
  const work = join(t.dir, 'interleave-work');
  ok(['clone', '-q', rich, work]);
  const head = ok(['rev-parse', 'HEAD'], { cwd: work }).trim();
  const jobs: Array<Promise<Out>> = [];
  for (let i = 0; i < 12; i++) {
    jobs.push(pushAsync(['push', '-q', RP, d, `HEAD:refs/heads/p${i}`, `HEAD:refs/tags/pt${i}`], work));
    jobs.push(pushAsync(['-C', d, 'update-ref', `refs/heads/g${i}`, head], work));
    if (i % 3 === 0) jobs.push(pushAsync(['-C', d, 'pack-refs', '--all'], work));
  }
  const res = await Promise.all(jobs);
  // a writer that found the list locked past its timeout fails cleanly; retry those, then everything must be there
  // (git pack-refs gives up without a word when another writer holds the stack: it only compacts)
  const failed = res.filter((r) => r.code !== 0 && !r.stderr.includes(' pack-refs '));
  for (const f of failed) assert.match(f.stderr, /cannot lock|unable to|locked|timeout/i, f.stderr);
  for (let i = 0; i < 12; i++) {
    if (og(['rev-parse', '-q', '--verify', `refs/heads/p${i}`], { cwd: d }).code !== 0) ok(['push', '-q', RP, d, `HEAD:refs/heads/p${i}`, `HEAD:refs/tags/pt${i}`], { cwd: work });
    if (og(['rev-parse', '-q', '--verify', `refs/heads/g${i}`], { cwd: d }).code !== 0) ok(['update-ref', `refs/heads/g${i}`, head], { cwd: d });
  }
  const names = ok(['for-each-ref', '--format=%(refname)'], { cwd: d });
  for (let i = 0; i < 12; i++) for (const n of [`refs/heads/p${i}`, `refs/tags/pt${i}`, `refs/heads/g${i}`]) assert.ok(names.includes(`${n}\n`), n);
  // and what the fixture had
  for (const n of ok(['for-each-ref', '--format=%(refname)'], { cwd: rich }).trim().split('\n')) assert.ok(names.includes(`${n}\n`), n);
  assert.equal(og(['refs', 'verify', '--strict'], { cwd: d }).code, 0);
});

test('cat-file names read reftable reflogs: <ref>@{n} and @{-n} as git 2.55 resolves them', { skip }, () => {
  const d = copy(join(t.dir, 'f1', 'rich'), 'names');
  ok(['refs', 'migrate', '--ref-format=reftable'], { cwd: d });
  ok(['checkout', '-q', '-b', 'other'], { cwd: d });
  ok(['commit', '-q', '--allow-empty', '-m', 'x'], { cwd: d });
  ok(['checkout', '-q', 'main'], { cwd: d });
  ok(['commit', '-q', '--allow-empty', '-m', 'y'], { cwd: d });
  const input = ['main@{0}', 'main@{1}', 'main@{2}', '@{-1}', 'HEAD@{1}', 'other@{0}', 'main@{99}', 'v1.1', 'refs/remotes/origin/HEAD'].join('\n') + '\n';
  const ours = spawnSync(BIN, ['cat-file', '--batch-check'], { cwd: d, env: gitEnv, input, encoding: 'utf8' });
  const theirs = og(['cat-file', '--batch-check'], { cwd: d, input });
  assert.equal(ours.stdout, theirs.stdout);
});

test('linked worktrees of a reftable repository: their HEADs are read from their own stacks (denyCurrentBranch, updateInstead, upload-pack in a worktree) as git 2.55 reads them', { skip }, () => {
  const main = join(t.dir, 'wt-main');
  ok(['init', '-q', '--ref-format=reftable', main]);
  ok(['commit', '-q', '--allow-empty', '-m', 'one'], { cwd: main });
  ok(['worktree', 'add', '-q', join(t.dir, 'wt-linked'), '-b', 'other'], { cwd: main });
  // the worktree's HEAD file is a placeholder; its stack has the real one
  assert.equal(readFileSync(join(main, '.git', 'worktrees', 'wt-linked', 'HEAD'), 'utf8'), 'ref: refs/heads/.invalid\n');
  const client = join(t.dir, 'wt-client');
  ok(['clone', '-q', main, client]);
  ok(['commit', '-q', '--allow-empty', '-m', 'two'], { cwd: client });
  // a push to the branch checked out in the linked worktree is refused, by both
  for (const rp of [RP, '--receive-pack=git receive-pack']) {
    const r = og(['push', rp, 'origin', 'HEAD:refs/heads/other'], { cwd: client });
    assert.notEqual(r.code, 0, `${rp}: the push should be refused`);
    assert.match(r.stderr, /refusing to update checked out branch: refs\/heads\/other/);
  }
  // a branch checked out nowhere is taken
  const r = og(['push', RP, 'origin', 'HEAD:refs/heads/free'], { cwd: client });
  assert.equal(r.code, 0, r.stderr);
  // upload-pack run in the linked worktree advertises the worktree's HEAD, as git's does
  const linked = join(t.dir, 'wt-linked');
  for (const v of ['0', '2']) {
    const ours = og(['-c', `protocol.version=${v}`, 'ls-remote', '--symref', UP, linked]);
    const theirs = og(['-c', `protocol.version=${v}`, 'ls-remote', '--symref', linked]);
    assert.equal(ours.stdout, theirs.stdout, `v${v}`);
    assert.match(ours.stdout, /ref: refs\/heads\/other\tHEAD/);
  }
});
