/**
 * What ships beside the code (issue #27): the MIT LICENSE in the repository
 * and the package, and contrib/gitwire.service, a hardened systemd unit with
 * a dedicated user, checked by `systemd-analyze verify` where it exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tmp } from './helpers/git.js';

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
