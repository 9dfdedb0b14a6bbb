/**
 * `require('gitwire')` (issue #27): the package is ES modules, which
 * require() loads from Node 20.19 and 22.12 on (and 24); engines allows
 * exactly those lines, and no later one: they are what CI tests (.ci/run:
 * the whole suite on the machine's Node 20 and on Node 24, this file with
 * the HTTP clone and start-up tests on Node 22). On this Node both
 * require and import work.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tmp } from './helpers/git.js';

const ENGINES = '^20.19.0 || ^22.12.0 || ^24.0.0';

/** Does `version` satisfy the three ranges of ENGINES? (no semver package: the grammar is this one) */
function allowed(version: string): boolean {
  const [maj, min] = version.replace(/^v/, '').split('.').map(Number) as [number, number];
  return (maj === 20 && min >= 19) || (maj === 22 && min >= 12) || maj === 24;
}

test('engines names the Node lines where require() of the package works', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
  assert.equal(pkg.engines.node, ENGINES);
  assert.ok(allowed(process.version), `${process.version} is one engines allows`);
  for (const [v, ok] of [['v20.18.3', false], ['v20.19.0', true], ['v21.7.0', false], ['v22.11.0', false], ['v22.12.0', true], ['v24.0.0', true], ['v24.22.3', true], ['v25.0.0', false], ['v26.1.0', false], ['v18.20.0', false]] as const) {
    assert.equal(allowed(v), ok, v);
  }
});

test(`require('gitwire') and import('gitwire') on ${process.version}`, () => {
  const t = tmp('gitwire-require-');
  try {
    // a project with gitwire in node_modules, as npm links a local dependency
    mkdirSync(join(t.dir, 'node_modules'));
    symlinkSync(ROOT, join(t.dir, 'node_modules', 'gitwire'));
    const cjs = spawnSync(process.execPath, ['-e', "const g = require('gitwire'); process.stdout.write([typeof g.createHttpHandler, typeof g.startServer, typeof g.parseBasicAuth].join(' '))"], { cwd: t.dir, encoding: 'utf8' });
    assert.equal(cjs.status, 0, cjs.stderr);
    assert.equal(cjs.stdout, 'function function function');
    const esm = spawnSync(process.execPath, ['--input-type=module', '-e', "import { createHttpHandler } from 'gitwire'; process.stdout.write(typeof createHttpHandler)"], { cwd: t.dir, encoding: 'utf8' });
    assert.equal(esm.status, 0, esm.stderr);
    assert.equal(esm.stdout, 'function');
  } finally { t.cleanup(); }
});
