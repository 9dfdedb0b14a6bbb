/**
 * The package as npm users get it: `npm pack` of this checkout (its built
 * dist/, without running `prepare` again), installed into a new project
 * from the tarball. Its bin starts from the bundle and writes the code
 * cache of a command into the installed package, though npm pack and
 * install set the file times as they like; a mistyped command writes
 * nothing there. The dependencies come from the npm registry (or npm's
 * cache): without either the test is skipped.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, git, gitEnv, tmp } from './helpers/git.js';

let t: ReturnType<typeof tmp>;
let installed: string;
let bin: string;
let repo: string;
let skip: string | false = false;

before(() => {
  t = tmp();
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', t.dir], { cwd: ROOT, env: gitEnv });
  assert.equal(pack.status, 0, pack.stderr.toString());
  const tarball = join(t.dir, pack.stdout.toString().trim().split('\n').pop()!);
  const app = join(t.dir, 'app');
  spawnSync('mkdir', [app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  const inst = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', tarball], { cwd: app, env: gitEnv });
  if (inst.status !== 0) {
    const err = inst.stderr.toString();
    if (/ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH/.test(err)) { skip = `npm registry unreachable: ${err.split('\n')[0]}`; return; }
    assert.fail(`npm install: ${err}`);
  }
  installed = join(app, 'node_modules', 'gitwire');
  bin = join(app, 'node_modules', '.bin', 'gitwire');
  repo = join(t.dir, 'r.git');
  git(['init', '-q', '--bare', repo]);
});
after(() => t.cleanup());

const caches = () => readdirSync(join(installed, 'dist')).filter((f) => f.startsWith('gitwire.cjs.'));

test('the tarball carries the bundle and no code cache of the machine it was packed on', (c) => {
  if (skip) return c.skip(skip);
  assert.ok(existsSync(join(installed, 'dist', 'gitwire.cjs')));
  assert.deepEqual(caches(), []);
});

test('the installed bin starts from the bundle and writes its code cache there; a mistyped command writes none', (c) => {
  if (skip) return c.skip(skip);
  const up = () => spawnSync(bin, ['upload-pack', '--advertise-refs', repo], { env: { ...gitEnv, NODE_DEBUG: 'esm' } });
  const first = up();
  assert.equal(first.status, 0, first.stderr.toString());
  // NODE_DEBUG=esm names every ES module loaded; the bundle loads none of gitwire's
  assert.doesNotMatch(first.stderr.toString(), /dist\/cli\/main\.js/, 'the bundle is used');
  assert.deepEqual(caches(), ['gitwire.cjs.upload-pack.cache']);
  const second = up();
  assert.equal(second.status, 0);
  assert.deepEqual(second.stdout, first.stdout);
  const bogus = spawnSync(bin, ['bogus'], { env: gitEnv });
  assert.equal(bogus.status, 1);
  assert.match(bogus.stderr.toString(), /'bogus' is not a gitwire command/);
  assert.deepEqual(caches(), ['gitwire.cjs.upload-pack.cache'], 'no cache for a mistyped command');
});
