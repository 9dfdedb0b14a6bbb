/** The SSH server's pure parts: exec parsing (git-shell's rules), keydir names, fingerprints against ssh-keygen. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { fingerprintLine, keyFileUser, parseExec, sqDequote, sshLimits, DEFAULT_SSH_LIMITS } from '../src/transport/ssh/index.js';
import { tmp } from './helpers/git.js';

test("sqDequote reads what git's sq_quote writes, and nothing else", () => {
  const rows: Array<[string, string | undefined]> = [
    ["'/a/b.git'", '/a/b.git'],
    ["'it'\\''s.git'", "it's.git"],
    ["'wow'\\!''", 'wow!'],
    ["''", ''],
    ['/a.git', undefined],
    ["'a.git", undefined],
    ["'a' 'b'", undefined],
    ["'a'b", undefined],
    ["'a'\\'", undefined],
  ];
  for (const [input, want] of rows) assert.equal(sqDequote(input), want, input);
});

test('parseExec: the services in both spellings; bad arguments; anything else unknown', () => {
  assert.deepEqual(parseExec("git-upload-pack '/r.git'"), { kind: 'service', service: 'git-upload-pack', path: '/r.git' });
  assert.deepEqual(parseExec("git upload-pack 'r'"), { kind: 'service', service: 'git-upload-pack', path: 'r' });
  assert.deepEqual(parseExec("git-receive-pack 'g/p.git'"), { kind: 'service', service: 'git-receive-pack', path: 'g/p.git' });
  assert.deepEqual(parseExec("git-upload-archive 'r'"), { kind: 'service', service: 'git-upload-archive', path: 'r' });
  for (const c of ['git-upload-pack', 'git-upload-pack r.git', "git-upload-pack '-u'", "git-upload-pack 'a\0b'"]) assert.equal(parseExec(c).kind, 'bad-argument', c);
  for (const c of ['ls', 'git-upload-packx', 'git', 'git status', 'sh -c id', '']) assert.equal(parseExec(c).kind, 'unknown', c);
});

test("keyFileUser: gitolite's keydir names", () => {
  assert.equal(keyFileUser('alice.pub'), 'alice');
  assert.equal(keyFileUser('team/alice@laptop.pub'), 'alice');
  assert.equal(keyFileUser('bob@example.com.pub'), 'bob@example.com');
  assert.equal(keyFileUser('alice.txt'), undefined);
  assert.equal(keyFileUser('-x.pub'), undefined);
  assert.equal(keyFileUser('a b.pub'), undefined);
});

test('fingerprintLine prints what ssh-keygen -l prints, for ed25519, RSA and ECDSA keys', () => {
  const t = tmp('gitwire-ssh-fp-');
  try {
    for (const [type, bits] of [['ed25519', []], ['rsa', ['-b', '2048']], ['ecdsa', ['-b', '384']]] as const) {
      const f = join(t.dir, type);
      assert.equal(spawnSync('ssh-keygen', ['-q', '-t', type, ...bits, '-N', '', '-C', `c-${type}`, '-f', f]).status, 0);
      const key = ssh2.utils.parseKey(readFileSync(f));
      assert.ok(!(key instanceof Error));
      const want = spawnSync('ssh-keygen', ['-l', '-f', f], { encoding: 'utf8' }).stdout.trim();
      assert.equal(fingerprintLine(key as ssh2.ParsedKey), want, type);
    }
  } finally { t.cleanup(); }
});

test('sshLimits: defaults for what is not given, and a bad value refused', () => {
  assert.deepEqual(sshLimits({}), DEFAULT_SSH_LIMITS);
  assert.equal(sshLimits({ idleTimeout: 5 }).idleTimeout, 5);
  assert.throws(() => sshLimits({ maxChannels: -1 }), /maxChannels/);
  assert.throws(() => sshLimits({ nope: 1 } as never), /unknown ssh limit/);
});
