/**
 * gitwire serve --config FILE and GITWIRE_* (issue #27): the long flag names
 * and root as keys, flags > environment > file, an unknown key is an error
 * naming it, and contrib/gitwire.yaml (the commented example) loads and
 * names every setting.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { startServe } from './helpers/server-process.js';
import { SERVE_FLAGS } from '../src/cli/serve.js';
import { sshDefault } from '../src/cli/serve-ssh.js';
import { configFromEnv, loadConfigFile, type FlagSpec } from '../src/cli/serve-config.js';

const FLAGS = SERVE_FLAGS as unknown as Record<string, FlagSpec>;
const EXAMPLE = join(ROOT, 'contrib', 'gitwire.yaml');

test('contrib/gitwire.yaml loads and names every setting of serve', async () => {
  const v = await loadConfigFile(EXAMPLE, FLAGS);
  assert.equal(v.root, '/srv/git');
  assert.equal(v.http, '8080', 'numbers become the strings a flag would give');
  assert.equal(v['pack-cache-max-bytes'], '10g');
  const text = readFileSync(EXAMPLE, 'utf8');
  for (const key of ['root', ...Object.keys(SERVE_FLAGS).filter((k) => k !== 'help' && k !== 'config')]) {
    assert.match(text, new RegExp(`^(# )?${key}:`, 'm'), `the example shows ${key}`);
  }
  // the SSH limits it shows commented out are the real defaults, as --help says them
  const help = spawnSync(BIN, ['serve', '--help'], { encoding: 'utf8' }).stdout.replace(/\n\s+/g, ' ');
  for (const flag of Object.keys(SERVE_FLAGS).filter((k) => sshDefault(k) !== undefined)) {
    const shown = new RegExp(`^# ${flag}: (\\d+)`, 'm').exec(text)?.[1];
    assert.equal(Number(shown), sshDefault(flag), `gitwire.yaml's ${flag}`);
    assert.match(help, new RegExp(`--${flag} <\\w+> [^\\n]*?\\(default ${sshDefault(flag)}\\)`), `--help says ${flag}'s default`);
  }
});

test('a file, the environment and flags: flags win, then the environment; paths in the file are the file\'s', { timeout: 90_000 }, async () => {
  const t = tmp('gitwire-config-');
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'base', { 'a.txt': 'a\n' });
  const etc = join(t.dir, 'etc');
  mkdirSync(join(etc, 'repos'), { recursive: true });
  git(['clone', '-q', '--bare', w, join(etc, 'repos', 'repo.git')]);
  const file = join(etc, 'gitwire.yaml');
  // http: not a port (the environment replaces it); quiet (the environment turns it off); log-level (a flag replaces the environment's)
  writeFileSync(file, 'root: repos   # relative to this file\nhttp: "not-a-port"\nquiet: true\nexport-all: true\n');
  // no root argument: startServe's first argument goes first, so it is --config here
  const s = await startServe('--config', [file, '--log-level', 'info'], { GITWIRE_HTTP: '0', GITWIRE_QUIET: 'false', GITWIRE_LOG_LEVEL: 'loud' });
  try {
    assert.ok(s.httpPort, s.logs.join('\n'));
    git(['clone', '-q', `http://127.0.0.1:${s.httpPort}/repo.git`, join(t.dir, 'c')]);
    for (let i = 0; i < 50 && !s.logs.some((l) => l.includes('"msg":"request"')); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(s.logs.some((l) => l.includes('"msg":"request"')), 'GITWIRE_QUIET=false beat the file');
    assert.ok(s.logs.some((l) => l.includes(`"root":"${join(etc, 'repos')}"`)), 'the file\'s root, from its directory');
  } finally { await s.stop(); }

  // GITWIRE_CONFIG names the file too; GITWIRE_ROOT beats the file's root
  const other = join(t.dir, 'other');
  mkdirSync(other);
  git(['clone', '-q', '--bare', w, join(other, 'o.git')]);
  const s2 = await startServe('--log-level', ['info'], { GITWIRE_CONFIG: file, GITWIRE_HTTP: '0', GITWIRE_ROOT: other });
  try {
    assert.ok(s2.httpPort);
    assert.match(git(['ls-remote', `http://127.0.0.1:${s2.httpPort}/o.git`]), /refs\/heads\/main\n/);
    // and a root argument beats GITWIRE_ROOT
  } finally { await s2.stop(); }
  const s3 = await startServe(join(etc, 'repos'), ['--http', '0'], { GITWIRE_CONFIG: file, GITWIRE_ROOT: other });
  try {
    assert.match(git(['ls-remote', `http://127.0.0.1:${s3.httpPort}/repo.git`]), /refs\/heads\/main\n/);
  } finally { await s3.stop(); }
  t.cleanup();
});

test('an unknown key, a wrong type, a missing file: serve refuses to start and says which', () => {
  const t = tmp('gitwire-config-bad-');
  const cases: Array<[string, string | undefined, RegExp]> = [
    ['htpassword: /etc/htpasswd\n', undefined, /^fatal: .*bad\.yaml: unknown key 'htpassword'\n$/],
    ['help: true\n', undefined, /unknown key 'help'/],
    ['quiet: 3\n', undefined, /bad\.yaml: quiet: expected true or false, not 3/],
    ['http: [1, 2]\n', undefined, /bad\.yaml: http: expected a string or a number, not a list/],
    ['- http\n', undefined, /bad\.yaml: expected a mapping of settings/],
    ['http: 1\nhttp: 2\n', undefined, /bad\.yaml: Map keys must be unique/],
    [' : :\n\t{', undefined, /bad\.yaml: /],
  ];
  for (const [text, , re] of cases) {
    const f = join(t.dir, 'bad.yaml');
    writeFileSync(f, text);
    const r = spawnSync(BIN, ['serve', t.dir, '--config', f], { env: gitEnv, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 128, `${JSON.stringify(text)}: ${r.stderr}`);
    assert.match(r.stderr, re, JSON.stringify(text));
  }
  const r = spawnSync(BIN, ['serve', t.dir, '--config', join(t.dir, 'none.yaml')], { env: gitEnv, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 128);
  assert.match(r.stderr, /^fatal: cannot read config file '.*none\.yaml': no such file\n$/);
  const e = spawnSync(BIN, ['serve', t.dir, '--http', '0'], { env: { ...gitEnv, GITWIRE_QUIET: 'maybe' }, encoding: 'utf8', timeout: 20_000 });
  assert.equal(e.status, 128);
  assert.match(e.stderr, /GITWIRE_QUIET: expected true or false, not 'maybe'/);
  t.cleanup();
});

test('GITWIRE_* names: capitals, _ for -, lists split at commas; unknown ones are left alone', () => {
  const v = configFromEnv({ GITWIRE_PACK_CACHE: '/c', GITWIRE_ENABLE: 'receive-pack, upload-pack', GITWIRE_EXPORT_ALL: 'yes', GITWIRE_SPAWN_HELPER: '1', GITWIRE_HELP: '1', GITWIRE_HTTP: '' }, FLAGS);
  assert.deepEqual(v, { 'pack-cache': '/c', enable: ['receive-pack', 'upload-pack'], 'export-all': true });
});

test('webhook entries in the file: a URL with globs, or a mapping of url and repositories; the secret file is the file\'s', async () => {
  const t = tmp('gitwire-config-webhook-');
  try {
    const file = join(t.dir, 'gitwire.yaml');
    writeFileSync(file, 'webhook:\n  - https://ci.example.com/hook\n  - url: https://deploy.example.com/hook\n    repositories: [site/*, docs/**]\nwebhook-secret: secret\n');
    const v = await loadConfigFile(file, FLAGS);
    assert.deepEqual(v.webhook, ['https://ci.example.com/hook', 'https://deploy.example.com/hook site/* docs/**']);
    assert.equal(v['webhook-secret'], join(t.dir, 'secret'));
    writeFileSync(file, 'webhook:\n  - url: https://x.example/\n    repos: [a]\n');
    await assert.rejects(loadConfigFile(file, FLAGS), /webhook: unknown key 'repos' \(url, repositories\)/);
  } finally { t.cleanup(); }
});
