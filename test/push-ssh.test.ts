/**
 * The OpenSSH ForceCommand script of docs/ssh.md, taken from the page itself,
 * serves both fetch and push (ssh replaced by a shell that sets
 * SSH_ORIGINAL_COMMAND as sshd does).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { gitAsync } from './helpers/push-net.js';

test("docs/ssh.md's ForceCommand script: git-upload-pack and git-receive-pack work, anything else is refused", { timeout: 60_000 }, async () => {
  const t = tmp('gitwire-ssh-');
  try {
    const readme = readFileSync(join(ROOT, 'docs', 'ssh.md'), 'utf8');
    const m = /```sh\n(#!\/bin\/sh\n# \/opt\/gitwire\/bin\/gitwire-ssh[\s\S]*?)```/.exec(readme);
    assert.ok(m, 'the script is in docs/ssh.md');
    const root = join(t.dir, 'srv');
    mkdirSync(root);
    const script = join(t.dir, 'gitwire-ssh');
    writeFileSync(script, m[1]!.split('/opt/gitwire/bin/gitwire').join(BIN).split('/srv/git').join(root));
    chmodSync(script, 0o755);
    const ssh = join(t.dir, 'fake-ssh');
    writeFileSync(ssh, `#!/bin/sh\nfor a; do last=$a; done\nSSH_ORIGINAL_COMMAND=$last exec ${script}\n`);
    chmodSync(ssh, 0o755);
    const src = join(t.dir, 'src');
    git(['init', '-q', '-b', 'main', src]);
    commit(src, 'base', { 'a.txt': 'a\n' });
    git(['init', '-q', '--bare', join(root, 'r.git')]);
    const env = { GIT_SSH: ssh, GIT_SSH_VARIANT: 'simple' };
    const p = await gitAsync(['push', 'ssh://git@host/r.git', 'main'], src, env);
    assert.equal(p.code, 0, p.stderr);
    assert.equal(git(['rev-parse', 'main'], { cwd: join(root, 'r.git') }).trim(), git(['rev-parse', 'main'], { cwd: src }).trim());
    const c = await gitAsync(['clone', '-q', 'ssh://git@host/r.git', join(t.dir, 'clone')], t.dir, env);
    assert.equal(c.code, 0, c.stderr);
    const bad = await gitAsync(['push', 'ssh://git@host/../r.git', 'main:x'], src, env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /bad path/);
  } finally { t.cleanup(); }
});
