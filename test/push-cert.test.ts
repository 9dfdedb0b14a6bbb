/**
 * Signed pushes end to end: the real git client pushes with `--signed`
 * (a gpg key and an ssh key, both made here) to gitwire and to
 * `git receive-pack` on twin repositories with receive.certNonceSeed set.
 * The pre-receive and post-receive hooks print the GIT_PUSH_CERT*
 * variables and the stored certificate; everything must match except the
 * nonce itself, which git derives from the repository's path and the time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, type Impl } from './helpers/push.js';
import { createHmac } from 'node:crypto';
import { certNonce, checkNonce } from '../src/protocol/receive/push-cert.js';

const HOOK = `#!/bin/sh
echo "$0: status=\${GIT_PUSH_CERT_STATUS-unset} signer=\${GIT_PUSH_CERT_SIGNER-unset} key=\${GIT_PUSH_CERT_KEY-unset} nonce-status=\${GIT_PUSH_CERT_NONCE_STATUS-unset} nonce-set=\${GIT_PUSH_CERT_NONCE:+yes} slop=\${GIT_PUSH_CERT_NONCE_SLOP-unset}"
if [ -n "$GIT_PUSH_CERT" ]; then
  echo "$0: cert is a $(git cat-file -t $GIT_PUSH_CERT)"
  git cat-file blob $GIT_PUSH_CERT | sed -n '/^nonce /d; /^pushee /d; /^pusher /d; /BEGIN/q; p'
fi
cat >/dev/null
`;

function servers(root: string, config: Array<[string, string]>): Record<Impl, string> {
  const out = {} as Record<Impl, string>;
  for (const impl of IMPLS) {
    const d = join(root, impl, 'server.git');
    mkdirSync(join(root, impl), { recursive: true });
    git(['init', '-q', '--bare', '-b', 'main', d]);
    for (const [k, v] of config) git(['config', k, v], { cwd: d });
    for (const h of ['pre-receive', 'post-receive']) { writeFileSync(join(d, 'hooks', h), HOOK); chmodSync(join(d, 'hooks', h), 0o755); }
    out[impl] = d;
  }
  return out;
}

function compare(client: string, srv: Record<Impl, string>, args: string[], env: NodeJS.ProcessEnv, name: string): string {
  const out = {} as Record<Impl, { code: number; stderr: string }>;
  for (const impl of IMPLS) out[impl] = push(impl, client, srv[impl], args, env);
  const msg = `${name}\n--- gitwire:\n${out.gitwire.stderr}\n--- git:\n${out.git.stderr}`;
  assert.equal(out.gitwire.code, out.git.code, msg);
  assert.equal(normalizeClient(out.gitwire.stderr, srv.gitwire), normalizeClient(out.git.stderr, srv.git), msg);
  const refs = (d: string) => git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: d });
  assert.equal(refs(srv.gitwire), refs(srv.git), name);
  return out.gitwire.stderr;
}

test('signed push with a gpg key: good signature, nonce OK, certificate stored as a blob; unsigned push; a key the server does not know (gpg.program); signed push options; a server that does not ask', { timeout: 120_000 }, () => {
  const t = tmp('gitwire-push-cert-');
  try {
    const gnupg = join(t.dir, 'gnupg');
    mkdirSync(gnupg, { mode: 0o700 });
    const env = { GNUPGHOME: gnupg };
    const g = spawnSync('gpg', ['--batch', '--passphrase', '', '--quick-gen-key', 'Pusher <pusher@example.com>', 'ed25519', 'sign', 'never'], { env: { ...gitEnv, ...env }, encoding: 'utf8' });
    assert.equal(g.status, 0, g.stderr);
    const client = join(t.dir, 'client');
    git(['init', '-q', '-b', 'main', client]);
    git(['config', 'user.signingkey', 'pusher@example.com'], { cwd: client });
    commit(client, 'one', { 'a.txt': 'a\n' });
    const srv = servers(t.dir, [['receive.certNonceSeed', 'sekrit']]);
    const signed = compare(client, srv, ['--signed', 'main'], env, 'gpg signed push');
    assert.match(signed, /pre-receive: status=G signer=Pusher <pusher@example.com> key=[0-9A-F]{16} nonce-status=OK nonce-set=yes slop=unset/);
    assert.match(signed, /pre-receive: cert is a blob/);
    assert.match(signed, /post-receive: status=G/);
    commit(client, 'two', { 'b.txt': 'b\n' });
    const plain = compare(client, srv, ['main'], env, 'unsigned push');
    assert.match(plain, /status=unset/);
    // the server's gpg (gpg.program) has another keyring: ERRSIG, the key id but no signer
    commit(client, 'three', { 'c.txt': 'c\n' });
    const other = join(t.dir, 'gnupg-server');
    mkdirSync(other, { mode: 0o700 });
    const wrapper = join(t.dir, 'server-gpg');
    writeFileSync(wrapper, `#!/bin/sh\nGNUPGHOME='${other}' exec gpg "$@"\n`);
    chmodSync(wrapper, 0o755);
    for (const impl of IMPLS) git(['config', 'gpg.program', wrapper], { cwd: srv[impl] });
    const unknown = compare(client, srv, ['--signed', 'main'], env, 'unknown key');
    assert.match(unknown, /pre-receive: status=E signer= key=[0-9A-F]{16} nonce-status=OK/);
    for (const impl of IMPLS) git(['config', '--unset', 'gpg.program'], { cwd: srv[impl] });
    // push options are signed too; --signed=if-asked against a server that does not ask
    commit(client, 'four', { 'd.txt': 'd\n' });
    for (const impl of IMPLS) git(['config', 'receive.advertisePushOptions', 'true'], { cwd: srv[impl] });
    const opts = compare(client, srv, ['--signed', '-o', 'reviewer=x', 'main'], env, 'signed push options');
    assert.match(opts, /push-option reviewer=x/);
    const noSeed = servers(join(t.dir, 'noseed'), []);
    compare(client, noSeed, ['--signed', 'main'], env, 'server without a nonce seed');
    compare(client, noSeed, ['--signed=if-asked', 'main'], env, 'if-asked, not asked');
  } finally { t.cleanup(); }
});

test('signed push with an ssh key: allowed signer, unknown signer, and no allowedSignersFile', { timeout: 60_000 }, () => {
  const t = tmp('gitwire-push-cert-');
  try {
    const key = join(t.dir, 'id_ed25519');
    const k = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'pusher', '-f', key], { encoding: 'utf8' });
    assert.equal(k.status, 0, k.stderr);
    const allowed = join(t.dir, 'allowed_signers');
    writeFileSync(allowed, `pusher@example.com ${readFileSync(`${key}.pub`, 'utf8')}`);
    const client = join(t.dir, 'client');
    git(['init', '-q', '-b', 'main', client]);
    git(['config', 'gpg.format', 'ssh'], { cwd: client });
    git(['config', 'user.signingkey', key], { cwd: client });
    commit(client, 'one', { 'a.txt': 'a\n' });
    const srv = servers(t.dir, [['receive.certNonceSeed', 'sekrit'], ['gpg.ssh.allowedSignersFile', allowed]]);
    const good = compare(client, srv, ['--signed', 'main'], {}, 'ssh signed push');
    assert.match(good, /pre-receive: status=G signer=pusher@example.com key=SHA256:\S+ nonce-status=OK/);
    writeFileSync(allowed, '');
    commit(client, 'two', { 'b.txt': 'b\n' });
    const unknownSigner = compare(client, srv, ['--signed', 'main'], {}, 'ssh key not in allowed signers');
    assert.match(unknownSigner, /pre-receive: status=G signer= key=SHA256:/);
    for (const impl of IMPLS) git(['config', '--unset', 'gpg.ssh.allowedSignersFile'], { cwd: srv[impl] });
    commit(client, 'three', { 'c.txt': 'c\n' });
    const none = compare(client, srv, ['--signed', 'main'], {}, 'no allowedSignersFile');
    assert.match(none, /pre-receive: status=N signer= key= nonce-status=OK/);
  } finally { t.cleanup(); }
});

test('push-cert nonces: git\'s HMAC, and in stateless mode another instance\'s nonce is SLOP, or OK within receive.certNonceSlop', () => {
  // the nonce git 2.39 and 2.55 give out for this seed, directory and time (git's prepare_push_cert_nonce, recorded)
  const n = certNonce('/srv/repo.git', 1700000000, 'sekrit', 'sha1');
  const expect = `1700000000-${createHmac('sha1', 'sekrit').update('/srv/repo.git:1700000000').digest('hex')}`;
  assert.equal(n, expect);
  const payload = (nonce: string) => `certificate version 0.1\npusher x 1 +0000\nnonce ${nonce}\n\n`;
  const base = { serviceDir: '/srv/repo.git', seed: 'sekrit', format: 'sha1', slopLimit: 0 };
  const issued = certNonce('/srv/repo.git', 1700000030, 'sekrit', 'sha1');
  assert.deepEqual(checkNonce(payload(issued), { ...base, issued, statelessRpc: false }), { status: 'OK', nonce: issued });
  assert.deepEqual(checkNonce(payload(n), { ...base, issued, statelessRpc: false }), { status: 'BAD', nonce: issued });
  assert.deepEqual(checkNonce(payload(n), { ...base, issued, statelessRpc: true }), { status: 'SLOP', nonce: issued, slop: 30 });
  assert.deepEqual(checkNonce(payload(n), { ...base, issued, statelessRpc: true, slopLimit: 60 }), { status: 'OK', nonce: n });
  assert.deepEqual(checkNonce(payload(`${n.slice(0, -1)}${n.endsWith("0") ? "1" : "0"}`), { ...base, issued, statelessRpc: true }).status, 'BAD');
  assert.deepEqual(checkNonce('certificate version 0.1\n\n', { ...base, issued, statelessRpc: true }), { status: 'MISSING', nonce: issued });
  assert.deepEqual(checkNonce(payload(n), { ...base, issued: undefined, statelessRpc: true }), { status: 'UNSOLICITED' });
});
