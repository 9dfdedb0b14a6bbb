/**
 * docs/library.md's example is run as written (issue #27: every command in
 * the docs is run by a test), with only the root and the port replaced: a
 * project with gitwire in node_modules runs it, git clones from it, an
 * anonymous push is asked for credentials, and a push with them lands.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';

test('the example of docs/library.md serves a clone and an authenticated push', { timeout: 90_000 }, async () => {
  const md = readFileSync(join(ROOT, 'docs', 'library.md'), 'utf8');
  const code = /```js\n([\s\S]*?)```/.exec(md)![1]!;
  assert.ok(code.includes("root: '/srv/git'") && code.includes('.listen(8080)'));
  const t = tmp('gitwire-docs-lib-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'srv');
  mkdirSync(root);
  git(['clone', '-q', '--bare', w, join(root, 'repo.git')]);
  const app = join(t.dir, 'app');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  symlinkSync(ROOT, join(app, 'node_modules', 'gitwire'));
  const script = code.replace("'/srv/git'", JSON.stringify(root))
    .replace('.listen(8080);', ".listen(0, '127.0.0.1', function () { console.error('PORT ' + this.address().port); });")
    // the request lines go to stdout, the port to stderr
    .replace('console.log(JSON.stringify(entry))', 'process.stdout.write(JSON.stringify(entry) + "\\n")');
  writeFileSync(join(app, 'server.mjs'), script);
  const child = spawn(process.execPath, ['server.mjs'], { cwd: app, env: { ...gitEnv, TOKEN: 's3cret' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let err = '';
      child.stderr.on('data', (d: Buffer) => { err += d.toString(); const m = /PORT (\d+)/.exec(err); if (m) resolve(Number(m[1])); });
      child.once('exit', (c) => reject(new Error(`example exited ${c}: ${err}`)));
    });
    const url = `http://127.0.0.1:${port}/repo.git`;
    assert.equal((await gitAsync(['clone', '-q', url, join(t.dir, 'c')])).code, 0);
    commit(join(t.dir, 'c'), 'next', { 'b.txt': 'b\n' });
    const anon = await gitAsync(['push', url, 'main'], join(t.dir, 'c'));
    assert.notEqual(anon.code, 0);
    assert.match(anon.stderr, /Authentication failed|could not read Username/);
    const push = await gitAsync(['push', `http://alice:s3cret@127.0.0.1:${port}/repo.git`, 'main'], join(t.dir, 'c'));
    assert.equal(push.code, 0, push.stderr);
    assert.equal(git(['rev-parse', 'main'], { cwd: join(root, 'repo.git') }), git(['rev-parse', 'HEAD'], { cwd: join(t.dir, 'c') }));
    assert.match(out, /"user":"alice"/);
  } finally {
    child.kill('SIGTERM');
    t.cleanup();
  }
});
