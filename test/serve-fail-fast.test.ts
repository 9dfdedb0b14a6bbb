/**
 * `gitwire serve` refuses to start, with one clear line and a non-zero
 * exit, when what it was told to serve with cannot work: a root that is
 * not a directory, a listener that cannot bind, an --htpasswd file it
 * cannot use, a port that is not one.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { BIN, gitEnv, tmp } from './helpers/git.js';

let t: ReturnType<typeof tmp>;
let busy: Server;
let port: number;

before(async () => {
  t = tmp();
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  port = (busy.address() as { port: number }).port;
});
after(() => { busy.close(); t.cleanup(); });

const serve = (args: string[]) => spawnSync(BIN, ['serve', ...args], { env: gitEnv, encoding: 'utf8', timeout: 30_000 });

test('a root that does not exist, or is not a directory', () => {
  const missing = join(t.dir, 'nope');
  let r = serve([missing, '--http', '0']);
  assert.equal(r.status, 128);
  assert.equal(r.stderr, `fatal: root '${missing}' does not exist\n`);
  const file = join(t.dir, 'file');
  writeFileSync(file, '');
  r = serve([file, '--http', '0']);
  assert.equal(r.status, 128);
  assert.equal(r.stderr, `fatal: root '${file}' is not a directory\n`);
});

test('a listener that cannot bind: which one, where, why', () => {
  const keys = join(t.dir, 'keys');
  mkdirSync(keys, { recursive: true });
  // a key directory with a key in it (an empty one is refused first)
  const kg = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'alice@test', '-f', join(t.dir, 'alice')], { encoding: 'utf8' });
  assert.equal(kg.status, 0, kg.stderr);
  writeFileSync(join(keys, 'alice.pub'), readFileSync(join(t.dir, 'alice.pub')));
  const cases: Array<[string, string[]]> = [
    ['http', ['--http', String(port)]],
    ['git', ['--http', '0', '--git', String(port)]],
    ['metrics', ['--http', '0', '--metrics', String(port)]],
    ['ssh', ['--http', '0', '--ssh', String(port), '--ssh-keys', keys, '--ssh-host-key', join(t.dir, 'host_key')]],
  ];
  for (const [name, args] of cases) {
    const r = serve([t.dir, ...args]);
    assert.equal(r.status, 128, `${name}: ${r.stderr}`);
    assert.equal(r.stderr, `fatal: cannot listen on 127.0.0.1:${port} (${name}): address already in use\n`, name);
  }
});

test('an --htpasswd file that is missing, unreadable or has no usable entry', () => {
  const missing = join(t.dir, 'no-htpasswd');
  let r = serve([t.dir, '--http', '0', '--htpasswd', missing]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, new RegExp(`^fatal: htpasswd: cannot read ${missing}: ENOENT`));
  // a directory: it exists, and reading it fails
  r = serve([t.dir, '--http', '0', '--htpasswd', t.dir]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, new RegExp(`^fatal: htpasswd: cannot read ${t.dir}: EISDIR`));
  const plain = join(t.dir, 'plain');
  writeFileSync(plain, '# users\nalice:not-a-bcrypt-hash\nbob\n');
  r = serve([t.dir, '--http', '0', '--htpasswd', plain]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, new RegExp(`^fatal: htpasswd: no usable entry in ${plain} \\(user:hash lines, bcrypt: htpasswd -B\\)\n`));
  assert.match(r.stderr, /user 'alice' has no bcrypt hash/);
  assert.match(r.stderr, /:3: not user:hash/);
});

test('an --ssh-keys directory that is missing, not a directory, or holds no key; a bad value from the config file or the environment names where it came from', () => {
  const hk = join(t.dir, 'ssh-host-key');
  const missing = join(t.dir, 'no-keys');
  let r = serve([t.dir, '--ssh', '0', '--ssh-keys', missing, '--ssh-host-key', hk]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, new RegExp(`^fatal: --ssh-keys: cannot read ${missing}: ENOENT`));
  const empty = join(t.dir, 'empty-keys');
  mkdirSync(empty, { recursive: true });
  writeFileSync(join(empty, 'README'), 'not a key\n');
  r = serve([t.dir, '--ssh', '0', '--ssh-keys', empty, '--ssh-host-key', hk]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, new RegExp(`^fatal: --ssh-keys: no usable public key in ${empty}`));
  r = serve([t.dir, '--ssh', '0', '--ssh-keys', join(empty, 'README'), '--ssh-host-key', hk]);
  assert.equal(r.status, 128);
  assert.match(r.stderr, /is not a directory/);
  // operations.md: a bad value in the file names the file and the key
  const conf = join(t.dir, 'bad.yaml');
  writeFileSync(conf, 'http: 0\nmax-packs-per-repo: lots\n');
  r = serve([t.dir, '--config', conf]);
  assert.equal(r.status, 128);
  assert.equal(r.stderr, `fatal: ${conf}: max-packs-per-repo: not a number: 'lots'\n`);
  r = spawnSync(BIN, ['serve', t.dir, '--http', '0'], { env: { ...gitEnv, GITWIRE_LOG_LEVEL: 'loud' }, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 128);
  assert.match(r.stderr, /^fatal: GITWIRE_LOG_LEVEL: expected one of/);
  // the same value as a flag is a usage error
  r = serve([t.dir, '--http', '0', '--max-packs-per-repo', 'lots']);
  assert.equal(r.status, 129);
  assert.match(r.stderr, /^error: --max-packs-per-repo: not a number: 'lots'\nusage:/);
});

test('a port that is not a port number', () => {
  for (const [flag, value] of [['http', 'abc'], ['git', '70000'], ['ssh', '1.5'], ['http', '']]) {
    const r = serve([t.dir, `--${flag}=${value}`]);
    assert.equal(r.status, 129, `${flag} ${value}: ${r.stderr}`);
    assert.equal(r.stderr.split('\n')[0], `error: --${flag}: not a port number: '${value}'`);
    assert.doesNotMatch(r.stderr, /options\.port/);
  }
});
