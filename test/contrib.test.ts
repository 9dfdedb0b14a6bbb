/**
 * What ships beside the code (issue #27): the MIT LICENSE in the repository
 * and the package, and contrib/gitwire.service, a hardened systemd unit with
 * a dedicated user, checked by `systemd-analyze verify` where it exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, gitEnv, tmp } from './helpers/git.js';
import { freePort } from './helpers/push-net.js';

const UNIT = join(ROOT, 'contrib', 'gitwire.service');
const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });

test('LICENSE is MIT, as package.json says, and the package carries it', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string; files: string[] };
  assert.equal(pkg.license, 'MIT');
  assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) \d{4} /);
  assert.ok(pkg.files.includes('LICENSE'));
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const files = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  for (const f of ['LICENSE', 'contrib/gitwire.service', 'contrib/gitwire.yaml']) assert.ok(files.includes(f), f);
});

test('the systemd unit: a dedicated user, hardening, a stop timeout above the shutdown grace', () => {
  const unit = readFileSync(UNIT, 'utf8');
  const get = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(unit)?.[1];
  assert.equal(get('User'), 'gitwire');
  assert.match(get('Type') ?? '', /^(simple|notify)$/);
  for (const k of ['NoNewPrivileges', 'ProtectSystem', 'ProtectHome', 'PrivateTmp', 'CapabilityBoundingSet', 'SystemCallFilter', 'RestrictAddressFamilies']) assert.ok(get(k) !== undefined, k);
  assert.match(get('ExecStart') ?? '', /gitwire serve --config \/etc\/gitwire\/gitwire\.yaml$/);
  assert.ok(Number(get('TimeoutStopSec')) > 10, "longer than serve's default shutdown grace");
});

test('systemd-analyze verify accepts the unit and finds a broken copy', { skip: analyze.status !== 0 ? 'systemd-analyze is not installed' : false }, () => {
  const t = tmp('gitwire-unit-');
  try {
    const good = join(t.dir, 'gitwire.service');
    copyFileSync(UNIT, good);
    const r = spawnSync('systemd-analyze', ['verify', good], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr.split('\n').filter((l) => l.includes(good)).join('\n'), '', 'no complaint about the unit');
    // the check can fail: a misspelt key is reported
    const bad = join(t.dir, 'broken.service');
    writeFileSync(bad, readFileSync(UNIT, 'utf8').replace('ProtectSystem=', 'ProtectSytem='));
    const b = spawnSync('systemd-analyze', ['verify', bad], { encoding: 'utf8' });
    assert.match(b.stderr, /Unknown key 'ProtectSytem'/);
  } finally { t.cleanup(); }
});

/** the recipe's commands from docs/operations.md's systemd section */
function recipe(): string[] {
  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const m = /## systemd\n[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc);
  if (!m) throw new Error('docs/operations.md has no systemd recipe');
  return m[1]!.split('\n').filter((l) => l.trim() !== '');
}

const unshare = process.getuid?.() === 0 ? spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']) : undefined;
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

test("the unit's Documentation= names a page of the checkout the recipe installs", () => {
  const doc = /^Documentation=file:\/opt\/gitwire\/(.*)$/m.exec(readFileSync(UNIT, 'utf8'))?.[1];
  assert.ok(doc, 'a file: link into /opt/gitwire, where the recipe puts the checkout');
  assert.ok(existsSync(join(ROOT, doc)), `${doc} exists in the checkout`);
});

test('the systemd recipe, run as written in a mount namespace, then ExecStart as the unit user: clone and push work', { skip: unshare?.status !== 0 ? 'needs root and unshare --mount' : spawnSync('htpasswd', ['-h']).error ? 'needs htpasswd' : false, timeout: 120_000 }, async () => {
  const t = tmp('gitwire-recipe-');
  const port = await freePort();
  const metrics = await freePort();
  const lines = recipe();
  const unit = readFileSync(UNIT, 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)![1]!;
  const env = [...unit.matchAll(/^Environment=(.*)$/gm)].map((m) => m[1]!);
  // what systemd itself would do, and what the test cannot: npm ci (the checkout is built), the password prompt, systemctl
  const steps = lines.map((l) => l.replace(/\s+#.*$/, '')).filter((l) => !/^cd \/opt\/gitwire && npm ci$/.test(l) && !/^systemctl /.test(l))
    .map((l) => l.replace(/^htpasswd -B -c (\S+) (\S+)$/, 'htpasswd -b -B -c $1 $2 alice-pw'));
  assert.ok(steps.some((l) => l.startsWith('htpasswd -b')), 'the htpasswd line was found');
  const script = `set -euo pipefail
T=${t.dir}
# every directory the recipe writes, layered over the real one, visible only in this namespace
for d in /etc /usr/local/bin /var /opt; do n=$(echo "$d" | tr / _); mkdir -p "$T/up$n" "$T/work$n"; mount -t overlay overlay -o "lowerdir=$d,upperdir=$T/up$n,workdir=$T/work$n" "$d"; done
mount -t tmpfs tmpfs /srv
mkdir -p /opt/gitwire && mount --bind ${ROOT} /opt/gitwire
cd /opt/gitwire
${steps.join('\n')}
# systemd's CacheDirectory= and StateDirectory=
install -d -o gitwire -g gitwire /var/cache/gitwire /var/lib/gitwire
# a repository, as the page says
install -d -o gitwire -g gitwire /srv/git/r.git
runuser -u gitwire -- git init -q --bare -b main /srv/git/r.git
cd /
# ExecStart as the unit's user, with systemd's PATH and the unit's Environment=; the ports from GITWIRE_* (the file says 8080 and 9100)
exec setpriv --reuid gitwire --regid gitwire --init-groups env -i PATH=${SYSTEMD_PATH} HOME=/var/lib/gitwire ${env.join(' ')} GITWIRE_HTTP=${port} GITWIRE_METRICS=127.0.0.1:${metrics} ${exec}
`;
  writeFileSync(join(t.dir, 'recipe.sh'), script);
  const child = spawn('unshare', ['--mount', '--propagation', 'private', 'bash', join(t.dir, 'recipe.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  try {
    for (let i = 0; i < 200 && !/gitwire serve: /.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(out, /gitwire serve: http 127\.0\.0\.1:\d+/, out);
    const src = join(t.dir, 'src');
    const g = (args: string[], cwd = t.dir) => {
      const r = spawnSync('git', args, { cwd, env: { ...gitEnv, GIT_TERMINAL_PROMPT: '0' }, encoding: 'utf8' });
      assert.equal(r.status, 0, `git ${args.join(' ')}: ${r.stderr}\n${out}`);
      return r.stdout;
    };
    g(['init', '-q', '-b', 'main', src]);
    g(['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'one'], src);
    g(['push', '-q', `http://alice:alice-pw@127.0.0.1:${port}/r.git`, 'main'], src);
    assert.match(g(['ls-remote', `http://127.0.0.1:${port}/r.git`]), /\trefs\/heads\/main\n/);
    g(['clone', '-q', `http://127.0.0.1:${port}/r.git`, join(t.dir, 'clone')]);
    assert.equal(g(['rev-parse', 'HEAD'], join(t.dir, 'clone')), g(['rev-parse', 'HEAD'], src));
    const anonymous = spawnSync('git', ['push', `http://127.0.0.1:${port}/r.git`, 'main:other'], { cwd: src, env: { ...gitEnv, GIT_TERMINAL_PROMPT: '0' }, encoding: 'utf8' });
    assert.notEqual(anonymous.status, 0, 'a push without a user is refused');
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    t.cleanup();
  }
});
