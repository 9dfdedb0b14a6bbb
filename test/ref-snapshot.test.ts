/**
 * One request, one ref snapshot: refs updated and packed while a request
 * is under way (between its advertisement and its wants, or between a v2
 * ls-refs and the fetch after it on one connection) never make the
 * request mix two states of the refs. Judged against git upload-pack
 * through the same interposed race, with the real git client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync, chmodSync, statSync, readdirSync, mkdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { BIN, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { Repository } from '../src/repo/index.js';
import { Slicer } from '../src/util/budget.js';
import { countYields } from './helpers/yields.js';
import type { FilesRefStore, RefStore as AnyRefStore } from '../src/repo/refs/index.js';
/** the files backend's own lookups (these repositories use it) */
const files = (r: AnyRefStore): FilesRefStore => r as FilesRefStore;

let t: ReturnType<typeof tmp>;
let work: string;
let proxy: string;

/**
 * An upload-pack that relays a real server, and runs a race script once
 * the server has sent `flushes` flush-pkts, before the client sees them.
 */
const PROXY = `
import { spawn, execFileSync } from 'node:child_process';
const [flushes, race, ...cmd] = process.argv.slice(2);
const srv = spawn(cmd[0], cmd.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(srv.stdin);
let seen = 0, held = Buffer.alloc(0), raced = false;
srv.stdout.on('data', (d) => {
  if (raced) { process.stdout.write(d); return; }
  held = Buffer.concat([held, d]);
  // pass whole packets on until the awaited flush-pkt; race before the client sees it
  let at = 0;
  while (held.length - at >= 4) {
    const len = parseInt(held.toString('latin1', at, at + 4), 16);
    if (len >= 4 && held.length - at < len) break;
    if (len === 0 && ++seen === Number(flushes)) {
      process.stdout.write(held.subarray(0, at));
      execFileSync('sh', [race], { stdio: 'inherit' });
      raced = true;
      process.stdout.write(held.subarray(at));
      return;
    }
    at += len >= 4 ? len : 4;
  }
  process.stdout.write(held.subarray(0, at));
  held = held.subarray(at);
});
srv.stdout.on('end', () => process.stdout.end());
srv.on('exit', (code) => { process.exitCode = code ?? 1; });
`;

before(() => {
  t = tmp();
  work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  for (let i = 0; i < 3; i++) commit(work, `c${i}`, { [`f${i}`]: `${i}\n`.repeat(50) });
  git(['checkout', '-q', '-b', 'gone'], { cwd: work });
  commit(work, 'side', { side: 'side\n' });
  git(['checkout', '-q', 'main'], { cwd: work });
  proxy = join(t.dir, 'proxy.mjs');
  writeFileSync(proxy, PROXY);
});
after(() => t.cleanup());

interface Fixture { bare: string; race: string; main: string; gone: string }

/** A bare repository, and a race that moves main to an unrelated commit, deletes `gone` and packs refs (pruning loose ones). */
function fixture(name: string): Fixture {
  const bare = join(t.dir, `${name}.git`);
  git(['clone', '-q', '--bare', work, bare]);
  // with a hidden ref, a v2 fetch checks its wants against the refs (gitwire's policy; git checks only existence)
  git(['config', 'uploadpack.hideRefs', 'refs/hidden'], { cwd: bare });
  git(['update-ref', 'refs/hidden/x', 'refs/heads/main'], { cwd: bare });
  const main = git(['rev-parse', 'refs/heads/main'], { cwd: bare }).trim();
  const gone = git(['rev-parse', 'refs/heads/gone'], { cwd: bare }).trim();
  // gone is loose, main packed: the race packs and prunes
  git(['pack-refs', '--all'], { cwd: bare });
  git(['update-ref', 'refs/heads/gone', gone], { cwd: bare });
  const tree = git(['mktree'], { cwd: bare, input: '' }).trim();
  const orphan = git(['commit-tree', tree, '-m', 'orphan'], { cwd: bare }).trim();
  const race = join(t.dir, `${name}-race.sh`);
  writeFileSync(race, [
    'set -e',
    `export GIT_DIR='${bare}' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null`,
    `git update-ref refs/heads/main ${orphan}`,
    'git update-ref -d refs/heads/gone',
    'git update-ref refs/heads/added HEAD',
    'git pack-refs --all --prune',
    '',
  ].join('\n'));
  chmodSync(race, 0o755);
  return { bare, race, main, gone };
}

function cloneThroughRace(f: Fixture, server: string, version: number, flushes: number): { status: number | null; stderr: string; dest: string } {
  const dest = join(t.dir, `clone-${Math.random().toString(36).slice(2)}`);
  const up = `node ${proxy} ${flushes} ${f.race} ${server}`;
  try {
    git(['-c', `protocol.version=${version}`, 'clone', '-q', '--bare', '--no-local', `--upload-pack=${up}`, `file://${f.bare}`, dest]);
    return { status: 0, stderr: '', dest };
  } catch (e) {
    const err = e as { status: number | null; stderr?: Buffer };
    return { status: err.status, stderr: err.stderr?.toString() ?? '', dest };
  }
}

// v0: the advertisement is one flush; v2: the capabilities, then ls-refs' answer
for (const [version, flushes] of [[0, 1], [2, 2]] as const) {
  for (const [label, server] of [['git upload-pack', 'git upload-pack'], ['gitwire', `${BIN} upload-pack`]] as const) {
    test(`v${version}: refs moved, deleted and packed after the ${version ? 'ls-refs' : 'advertisement'} — ${label} serves what it advertised`, () => {
      const f = fixture(`v${version}-${label.replace(/\W+/g, '-')}`);
      const r = cloneThroughRace(f, server, version, flushes);
      assert.equal(r.status, 0, r.stderr);
      // the clone has the refs as advertised, before the race, with their objects
      assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: r.dest }).trim(), f.main);
      assert.equal(git(['rev-parse', 'refs/heads/gone'], { cwd: r.dest }).trim(), f.gone);
      assert.equal(git(['for-each-ref', 'refs/heads/added'], { cwd: r.dest }), '');
      git(['fsck', '--no-dangling'], { cwd: r.dest });
      // the server's refs did move
      assert.notEqual(git(['rev-parse', 'refs/heads/main'], { cwd: f.bare }).trim(), f.main);
    });
  }
}

test('a snapshot answers every question from one state while refs are updated and packed', () => {
  const f = fixture('unit');
  const repo = Repository.open(f.bare, { env: gitEnv });
  const view = repo.forRequest();
  const list = (refs: typeof repo.refs) => [...refs.iterate()].map((r) => `${r.hex} ${r.name}`);
  const before = list(view.refs);
  assert.equal(view.refs.resolve('refs/heads/gone')?.hex?.toString(), f.gone);
  git(['update-ref', '-d', 'refs/heads/gone'], { cwd: f.bare });
  git(['update-ref', 'refs/heads/main', f.gone], { cwd: f.bare });
  git(['pack-refs', '--all', '--prune'], { cwd: f.bare });
  assert.deepEqual(list(view.refs), before);
  assert.equal(view.refs.resolve('refs/heads/gone')?.hex?.toString(), f.gone);
  assert.equal(view.refs.resolve('refs/heads/main')?.hex?.toString(), f.main);
  assert.equal(view.refs.head().hex?.toString(), f.main);
  assert.equal(files(view.refs).lookupPacked('refs/heads/main')?.hex.toString(), f.main);
  // the live store, and the next request, see the new state
  const now = git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: f.bare }).trim().split('\n');
  assert.deepEqual(list(repo.refs), now);
  const next = repo.forRequest();
  assert.deepEqual(list(next.refs), now);
  assert.equal(next.refs.resolve('refs/heads/gone'), undefined);
  view.endRequest();
  next.endRequest();
  assert.throws(() => view.refs.head(), /after close/);
  repo.close();
});

test('a packed-refs of several read chunks, peel lines across chunk ends: advertisement and ls-refs equal git\'s', () => {
  const d = join(t.dir, 'big.git');
  git(['clone', '-q', '--bare', work, d]);
  const head = git(['rev-parse', 'HEAD'], { cwd: d }).trim();
  const tag = git(['mktag'], { cwd: d, input: `object ${head}\ntype commit\ntag t\ntagger T <t@example.com> 1700000000 +0000\n\nt\n` }).trim();
  const pad = 'x'.repeat(70);
  let input = '';
  for (let i = 0; i < 24000; i++) input += `create refs/${i % 3 ? 'heads' : 'tags'}/${pad}${String(i).padStart(6, '0')} ${i % 3 ? head : tag}\n`;
  git(['update-ref', '--stdin'], { cwd: d, input });
  git(['pack-refs', '--all'], { cwd: d });
  assert.ok(statSync(join(d, 'packed-refs')).size > 2.5 * (1 << 20));
  // a loose ref in the middle shadows its packed namesake
  git(['update-ref', `refs/tags/${pad}000099`, head], { cwd: d });
  const up = `${BIN} upload-pack`;
  for (const v of ['0', '2']) {
    const ours = git(['-c', `protocol.version=${v}`, 'ls-remote', `--upload-pack=${up}`, d]);
    assert.equal(ours, git(['-c', `protocol.version=${v}`, 'ls-remote', d]), `v${v}`);
  }
  // v2 sends these as ref-prefix lines: each is a seek into the file
  for (const args of [['--heads'], ['--tags'], [d, `refs/tags/${pad}000099`], [d, 'HEAD', `refs/heads/${pad}000100`, `refs/heads/${pad}023999`, `refs/tags/${pad}000000`]]) {
    const where = args[0] === d ? args : [...args, d];
    const ours = git(['-c', 'protocol.version=2', 'ls-remote', `--upload-pack=${up}`, ...where]);
    assert.equal(ours, git(['-c', 'protocol.version=2', 'ls-remote', ...where]), args.join(' '));
    assert.ok(ours.length > 0, args.join(' '));
  }
  const adv = (cmd: string) => execFileSync(cmd, ['upload-pack', '--advertise-refs', d], { env: gitEnv, maxBuffer: 1 << 28 }).toString('latin1').replace(/^[0-9a-f]{4}/, '').replace(/ agent=[^\n]*\n/, '\n');
  assert.equal(adv(BIN), adv('git'));
});

for (const whole of [true, false]) test(`packed-refs is kept across requests (${whole ? 'a small one read whole, in memory' : 'held open'}), reopened when it changes, and never leaks a descriptor`, () => {
  const f = fixture(`fds-${whole}`);
  const repo = Repository.open(f.bare, { env: gitEnv });
  if (!whole) files(repo.refs).packedWholeMax = 0;
  const fds = () => readdirSync('/proc/self/fd').length;
  const warm = repo.forRequest();
  assert.equal(warm.refs.resolve('refs/heads/main')?.hex?.toString(), f.main);
  warm.endRequest();
  const start = fds();
  for (let i = 0; i < 20; i++) {
    const view = repo.forRequest();
    const held = files(view.refs).lookupPacked('refs/heads/main')?.hex.toString();
    // a request under way keeps its file while git rewrites packed-refs
    git(['update-ref', 'refs/heads/main', i % 2 ? f.main : f.gone], { cwd: f.bare });
    git(['pack-refs', '--all', '--prune'], { cwd: f.bare });
    assert.equal(files(view.refs).lookupPacked('refs/heads/main')?.hex.toString(), held);
    view.endRequest();
    // the next request sees the new file
    const next = repo.forRequest();
    assert.equal(files(next.refs).lookupPacked('refs/heads/main')?.hex.toString(), i % 2 ? f.main : f.gone);
    next.endRequest();
    assert.ok(fds() <= start + 1, `descriptors: ${fds()} after ${i + 1} rewrites (started with ${start})`);
  }
  if (whole) {
    // a small file is held in memory, read once: no descriptor stays open for it
    assert.ok(fds() <= start, `descriptors: ${fds()} (started with ${start})`);
    assert.ok(repo.refs.memoryBytes >= statSync(join(f.bare, 'packed-refs')).size, 'the file held counts in the pool\'s estimate');
    repo.close();
    assert.equal(repo.refs.memoryBytes, 0, 'closing the repository lets go of packed-refs');
  } else {
    repo.close();
    assert.ok(fds() < start, 'closing the repository lets go of packed-refs');
  }
});

test('a request\'s loose refs are listed in slices when it asks first (prepare), with the same answers as a listing at once', async () => {
  const t2 = tmp('gitwire-loose-');
  try {
    const w = join(t2.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    const tip = commit(w, 'one', { 'a.txt': 'a\n' });
    const heads = join(w, '.git', 'refs', 'heads', 'l');
    mkdirSync(heads, { recursive: true });
    for (let i = 0; i < 3000; i++) writeFileSync(join(heads, `r${String(i).padStart(5, '0')}`), `${tip}\n`);
    writeFileSync(join(heads, 'broken'), 'not a ref\n');
    const repo = Repository.discover(w);
    const whole = repo.refs.snapshot();
    const atOnce = [...whole.iterate('refs/')].map((r) => `${r.hex.toString('latin1')} ${r.name.toString()}`);
    const sliced = repo.refs.snapshot();
    const yields = await countYields(() => sliced.prepare(new Slicer()));
    assert.ok(yields >= Math.floor(3000 / 64) - 2, `the listing gave the loop away ${yields} times`);
    assert.deepEqual([...sliced.iterate('refs/')].map((r) => `${r.hex.toString('latin1')} ${r.name.toString()}`), atOnce);
    assert.equal(atOnce.length, 3001);
    whole.close(); sliced.close(); repo.close();
  } finally { t2.cleanup(); }
});

test('a scan of 65,000 prefixes gives the loop away on its work, not on refs handed over (prefixes matching nothing held it seconds), and finds what they match', async () => {
  const t2 = tmp('gitwire-prefixes-');
  try {
    const w = join(t2.dir, 'w');
    git(['init', '-q', '-b', 'main', w]);
    const tip = commit(w, 'one', { 'a.txt': 'a\n' });
    git(['update-ref', '--stdin'], { cwd: w, input: Array.from({ length: 1000 }, (_, i) => `create refs/heads/b${i} ${tip}\n`).join('') });
    git(['pack-refs', '--all'], { cwd: w });
    // a loose ref among the packed ones, found by its prefix as well
    git(['update-ref', 'refs/heads/b5x', tip], { cwd: w });
    const repo = Repository.discover(w);
    const none = Array.from({ length: 65_000 }, (_, i) => `refs/zz/${String(i).padStart(7, '0')}`);
    const slicer = new Slicer();
    let seen = 0;
    const yields = await countYields(() => repo.refs.scan(none, () => { seen++; }, () => slicer.due()));
    assert.equal(seen, 0);
    assert.ok(yields >= 30, `the scan gave the loop away ${yields} times`);
    // matching: each prefix seeks nothing of its own, the answers are the refs they cover, once each
    const some = [...Array.from({ length: 3000 }, (_, i) => `refs/heads/b${i}`), 'refs/heads/b5', 'refs/tags/'];
    const names: string[] = [];
    await repo.refs.scan(some, (r) => { names.push(r.name.toString()); });
    const want = git(['for-each-ref', '--format=%(refname)', 'refs/heads/b*'], { cwd: w }).trim().split('\n').sort();
    assert.deepEqual(names, want);
    assert.equal(names.length, 1001);
    repo.close();
  } finally { t2.cleanup(); }
});
