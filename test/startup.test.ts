/**
 * bin/gitwire starts from the one-file bundle (dist/gitwire.cjs) with its
 * V8 code cache when both are fresh, and falls back to the ES modules
 * whenever the bundle is missing or of another build than dist/cli/main.js
 * (a `tsc` after the bundle); a broken cache is rejected and rewritten. Every path
 * gives the same bytes. Run against a copy of the package, so the shared
 * dist/ is never touched.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';

let t: ReturnType<typeof tmp>;
let pkg: string;
let repo: string;
let expected: Buffer;

before(() => {
  t = tmp();
  pkg = join(t.dir, 'pkg');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  for (const f of ['gitwire', 'package.json']) copyFileSync(join(ROOT, 'bin', f), join(pkg, 'bin', f));
  copyFileSync(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  cpSync(join(ROOT, 'dist'), join(pkg, 'dist'), { recursive: true, filter: (s) => !s.endsWith('.cache') });
  // a fresh bundle of the copy
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts', 'bundle.mjs'), join(pkg, 'dist')]);
  assert.equal(b.status, 0, b.stderr?.toString());
  const work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  commit(work, 'one', { a: 'a\n' });
  git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: work });
  repo = join(t.dir, 'r.git');
  git(['clone', '-q', '--bare', work, repo]);
  expected = spawnSync('git', ['upload-pack', '--advertise-refs', repo], { env: gitEnv }).stdout;
});
after(() => t.cleanup());

const bundle = () => join(pkg, 'dist', 'gitwire.cjs');
/** each command's own code cache */
const cache = (cmd = 'upload-pack') => join(pkg, 'dist', `gitwire.cjs.${cmd}.cache`);

/**
 * Run the copy's bin; whether it loaded ES modules, from NODE_DEBUG=esm (the bundle loads none).
 * Node 24 logs each module's loader state there: ~2.8 MB for the fallback run, past spawnSync's
 * 1 MiB default, which would kill the child (status null); hence the larger buffer.
 */
function run(): { out: Buffer; usedBundle: boolean; status: number | null } {
  const r = spawnSync(join(pkg, 'bin', 'gitwire'), ['upload-pack', '--advertise-refs', repo], { env: { ...gitEnv, NODE_DEBUG: 'esm' }, maxBuffer: 256 << 20 });
  assert.equal(r.error, undefined, String(r.error));
  return { out: r.stdout, usedBundle: !/dist\/cli\/main\.js/.test(r.stderr.toString()), status: r.status };
}

/** The advertisement without the agent capability and the first line's length (git's and ours differ only there). */
const refsOf = (b: Buffer) => b.toString('latin1').slice(4).replace(/ agent=[^\n]*\n/, '\n');

test('the bundle starts, writes its code cache, then runs from it; output as from the ES modules', () => {
  const first = run();
  assert.equal(first.status, 0);
  assert.ok(first.usedBundle, 'bundle used');
  assert.equal(refsOf(first.out), refsOf(expected));
  assert.ok(existsSync(cache()), 'code cache written');
  const second = run();
  assert.ok(second.usedBundle);
  assert.deepEqual(second.out, first.out);
});

test('a broken code cache is rejected and rewritten', () => {
  if (!existsSync(cache())) run();
  writeFileSync(cache(), Buffer.from('not a V8 code cache'));
  const r = run();
  assert.equal(r.status, 0);
  assert.ok(r.usedBundle);
  assert.equal(refsOf(r.out), refsOf(expected));
  assert.notEqual(readFileSync(cache()).toString('latin1', 0, 19), 'not a V8 code cache');
});

test('a code cache written after cat-file (which tunes V8 flags) is accepted by the next run', () => {
  rmSync(cache('cat-file'), { force: true });
  const names = git(['rev-parse', 'HEAD', 'HEAD^{tree}'], { cwd: repo });
  const cat = () => spawnSync(join(pkg, 'bin', 'gitwire'), ['cat-file', '--batch-check'], { cwd: repo, env: gitEnv, input: names });
  assert.equal(cat().status, 0);
  const written = readFileSync(cache('cat-file'));
  // V8 rejects a cache made under other flags (the bin then rewrites it on every run): checked in a
  // node started as the bin starts it. The cache must also hold the bundle's top level: run from a
  // source of the same length that does not parse, it still runs.
  const check = spawnSync(process.execPath, ['--no-flush-bytecode', '-e', `
    const { readFileSync } = require('node:fs'); const { Script } = require('node:vm');
    const [file, cache] = process.argv.slice(1);
    const src = readFileSync(file, 'latin1');
    const s = new Script('(' + ' '.repeat(src.length - 1), { filename: file, cachedData: readFileSync(cache) });
    let top = 'yes'; try { s.runInThisContext(); } catch { top = 'no'; }
    process.stdout.write(JSON.stringify({ rejected: s.cachedDataRejected, top }));`, bundle(), cache('cat-file')], { env: { ...gitEnv, NODE_EXTRA_CA_CERTS: '' } });
  assert.equal(check.status, 0, check.stderr.toString());
  assert.deepEqual(JSON.parse(check.stdout.toString()), { rejected: false, top: 'yes' }, 'cache made under the flags the bin runs with, top level included');
  assert.equal(cat().status, 0);
  assert.deepEqual(readFileSync(cache('cat-file')), written, 'an accepted cache is not rewritten');
});

test("each command has its own code cache: one command's run leaves another's cache alone", () => {
  run();
  const adv = readFileSync(cache());
  rmSync(cache('cat-file'), { force: true });
  const r = spawnSync(join(pkg, 'bin', 'gitwire'), ['cat-file', '-t', 'HEAD'], { cwd: repo, env: gitEnv });
  assert.equal(r.status, 0, r.stderr.toString());
  assert.ok(existsSync(cache('cat-file')), 'cat-file wrote its own cache');
  assert.deepEqual(readFileSync(cache()), adv, 'the upload-pack cache is untouched');
  // help and version write none
  rmSync(join(pkg, 'dist', 'gitwire.cjs.version.cache'), { force: true });
  spawnSync(join(pkg, 'bin', 'gitwire'), ['version']);
  assert.equal(existsSync(join(pkg, 'dist', 'gitwire.cjs.version.cache')), false);
  // a new bundle drops every command's cache (V8 would reject them), and leftovers of killed runs
  writeFileSync(`${cache()}.12345`, 'partial');
  const b = spawnSync(process.execPath, [join(ROOT, 'scripts', 'bundle.mjs'), join(pkg, 'dist')]);
  assert.equal(b.status, 0, b.stderr?.toString());
  assert.equal(existsSync(cache()), false);
  assert.equal(existsSync(cache('cat-file')), false);
  assert.equal(existsSync(`${cache()}.12345`), false);
});

test('a run that sends a pack after a cache written by an advertisement writes its own beside it; later runs use it and rewrite neither', () => {
  const packTier = join(pkg, 'dist', 'gitwire.cjs.upload-pack.pack.cache');
  rmSync(cache(), { force: true });
  rmSync(packTier, { force: true });
  assert.equal(run().status, 0);
  assert.ok(existsSync(cache()), 'the advertisement wrote the first cache');
  assert.equal(existsSync(packTier), false, 'no pack sent: no pack tier');
  const adv = readFileSync(cache());
  const fetch = () => {
    const client = join(t.dir, `tier-client-${Math.random().toString(36).slice(2)}`);
    git(['init', '-q', '--bare', client]);
    for (const v of ['2', '0']) {
      const r = spawnSync('git', ['-c', `protocol.version=${v}`, '-C', client, 'fetch', '-q', `--upload-pack=${join(pkg, 'bin', 'gitwire')} upload-pack`, repo, '+refs/heads/*:refs/heads/*'], { env: gitEnv });
      assert.equal(r.status, 0, r.stderr.toString());
      // nothing on stderr: a V8 flag this node lacks would print there, and git shows it to the user
      assert.equal(r.stderr.toString(), '');
    }
    rmSync(client, { recursive: true, force: true });
  };
  fetch();
  assert.ok(existsSync(packTier), 'a fetch wrote the pack tier');
  assert.ok(statSync(packTier).size > adv.length, 'it holds more functions');
  const packed = readFileSync(packTier);
  fetch();
  assert.equal(run().status, 0);
  assert.deepEqual(readFileSync(packTier), packed, 'an accepted pack tier is not rewritten');
  assert.deepEqual(readFileSync(cache()), adv, 'nor the first cache');
  // a pack tier V8 rejects goes, and the run's own tier is written in its place
  writeFileSync(packTier, 'not a V8 code cache');
  assert.equal(run().status, 0);
  assert.equal(existsSync(packTier), false, 'the rejected pack tier is gone');
  assert.notEqual(readFileSync(cache()).toString('latin1', 0, 19), 'not a V8 code cache');
});

test('NODE_EXTRA_CA_CERTS: not loaded by gitwire itself, passed on unchanged to its children (a pack-objects hook)', () => {
  const seen = join(t.dir, 'hook-saw');
  const hook = join(t.dir, 'hook.sh');
  writeFileSync(hook, `#!/bin/sh\nprintf '%s' "\${NODE_EXTRA_CA_CERTS-unset}" > '${seen}'\nexec "$@"\n`, { mode: 0o755 });
  // (protected configuration, as git wants for this key; git clears GIT_CONFIG_COUNT for a local upload-pack)
  const globalConfig = join(t.dir, 'global-config');
  writeFileSync(globalConfig, `[uploadpack]\n\tpackObjectsHook = ${hook}\n`);
  const ca = join(t.dir, 'no-such-ca.pem');
  // Node 20 reads the file at start-up (and warns: it is not there). Newer ones (measured: 22.23.5,
  // 24.22.3; nodejs/node#59856) read it only once the tls module is loaded, which gitwire's
  // commands do not do: there the sh line changes nothing, and every run below is silent.
  const warns = (args: string[]) => /extra certs/i.test(spawnSync(process.execPath, args, { env: { ...gitEnv, NODE_EXTRA_CA_CERTS: ca } }).stderr.toString());
  const atStartup = warns(['-e', '0']);
  assert.ok(warns(['-e', "require('node:tls').createSecureContext()"]), 'node reads NODE_EXTRA_CA_CERTS for TLS');
  const clone = (extra: NodeJS.ProcessEnv) => {
    rmSync(join(t.dir, 'c'), { recursive: true, force: true });
    rmSync(seen, { force: true });
    return spawnSync('git', ['clone', '-q', '--bare', `--upload-pack=${join(pkg, 'bin', 'gitwire')} upload-pack`, `file://${repo}`, join(t.dir, 'c')], {
      env: { ...gitEnv, GIT_CONFIG_GLOBAL: globalConfig, ...extra },
    });
  };
  const r = clone({ NODE_EXTRA_CA_CERTS: ca });
  assert.equal(r.status, 0, r.stderr.toString());
  // node warns on stderr when it tries to load a file that is not there
  assert.doesNotMatch(r.stderr.toString(), /extra certs/i);
  assert.equal(readFileSync(seen, 'utf8'), ca);
  const unset = clone({});
  assert.equal(unset.status, 0, unset.stderr.toString());
  assert.equal(readFileSync(seen, 'utf8'), gitEnv.NODE_EXTRA_CA_CERTS ?? 'unset');
  // run as `node bin/gitwire`, the sh line is a comment and node loads the file as usual (when it loads it at start-up)
  const direct = spawnSync(process.execPath, [join(pkg, 'bin', 'gitwire'), 'version'], { env: { ...gitEnv, NODE_EXTRA_CA_CERTS: ca } });
  assert.equal(direct.status, 0);
  assert.equal(/extra certs/i.test(direct.stderr.toString()), atStartup, direct.stderr.toString());
});

test('cat-file and upload-pack run with one V8 helper thread; other commands keep the default pool', { skip: process.platform !== 'linux' && 'threads are counted in /proc' }, async () => {
  /** threads of a command that waits on stdin, counted once it has answered */
  const threads = async (args: string[], input: string): Promise<number> => {
    const p = spawn(join(pkg, 'bin', 'gitwire'), args, { cwd: repo, env: gitEnv, stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const answered = new Promise<void>((resolve, reject) => { p.stdout.once('data', () => resolve()); p.once('exit', (c) => reject(new Error(`exited ${c}`))); });
      p.stdin.write(input);
      await answered;
      // (the child is /bin/sh until it execs node: the answer comes from node)
      return readdirSync(`/proc/${p.pid}/task`).length;
    } finally {
      p.stdin.end();
      await new Promise((r) => p.once('close', r));
    }
  };
  const catFile = await threads(['cat-file', '--batch-check'], 'HEAD\n');
  // upload-pack over v2 answers the capability advertisement, then waits for a command (one process
  // per fetch: V8's helpers cost more than they save); receive-pack advertises, then waits for commands
  const uploadPack = await threads(['upload-pack', '.'], '');
  const receivePack = await threads(['receive-pack', '.'], '');
  assert.equal(uploadPack, catFile, `cat-file ${catFile} threads, upload-pack ${uploadPack}`);
  // and upload-pack's node gets no V8 flag on its command line (with one, node compiles its
  // built-in modules from source, not from its code cache): bin/gitwire sets them once they are loaded
  const p = spawn(join(pkg, 'bin', 'gitwire'), ['upload-pack', '.'], { cwd: repo, env: gitEnv, stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => { p.stdout.once('data', () => resolve()); p.once('exit', (c) => reject(new Error(`exited ${c}`))); });
    const argv = readFileSync(`/proc/${p.pid}/cmdline`, 'latin1').split('\0');
    assert.deepEqual(argv.filter((a) => a.startsWith('--')), ['--v8-pool-size=1'], argv.join(' '));
  } finally {
    p.stdin.end();
    await new Promise((r) => p.once('close', r));
  }
  assert.equal(receivePack - catFile, 3, `three V8 helpers fewer than receive-pack's ${receivePack} (the default pool is four)`);
});

test('a mistyped command writes no code cache', () => {
  assert.ok(run().usedBundle);
  const r = spawnSync(join(pkg, 'bin', 'gitwire'), ['bogus'], { env: gitEnv });
  assert.equal(r.status, 1);
  assert.match(r.stderr.toString(), /'bogus' is not a gitwire command/);
  assert.deepEqual(readdirSync(join(pkg, 'dist')).filter((f) => f.includes('bogus')), []);
});

test('a bundle of another build than dist/cli/main.js (a tsc after the bundle), or none, falls back to the ES modules; file times do not matter', () => {
  const withBundle = run().out;
  const main = join(pkg, 'dist', 'cli', 'main.js');
  const built = readFileSync(main, 'utf8');
  const id = /\n\/\/ gitwire-build ([0-9a-f]+)\n$/.exec(built)?.[1];
  assert.ok(id, 'main.js carries the build id');
  assert.ok(readFileSync(bundle(), 'latin1').startsWith(`// gitwire-build ${id}\n`), 'so does the bundle');
  // a bundle older than main.js (npm pack and install set times of their own) is still used
  const old = new Date(statSync(main).mtimeMs - 60_000);
  utimesSync(bundle(), old, old);
  assert.equal(run().usedBundle, true, 'the times do not matter');
  try {
    // tsc rewrites main.js without the id
    writeFileSync(main, built.replace(/\n\/\/ gitwire-build [0-9a-f]+\n$/, '\n'));
    const stale = run();
    assert.equal(stale.status, 0);
    assert.equal(stale.usedBundle, false);
    assert.deepEqual(stale.out, withBundle);
    writeFileSync(main, built.replace(id, '0'.repeat(id.length)));
    assert.equal(run().usedBundle, false, 'another build id');
  } finally {
    writeFileSync(main, built);
  }
  assert.equal(run().usedBundle, true);
  rmSync(bundle());
  const none = run();
  assert.equal(none.usedBundle, false);
  assert.deepEqual(none.out, withBundle);
});
