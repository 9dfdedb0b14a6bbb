/**
 * The last t1006 differences, compared live with the installed git (2.39
 * answers these as git 2.55 does):
 * - --follow-symlinks walks a name as git does: a link out of the
 *   repository from a subdirectory keeps its trailing slash (`symlink 3`
 *   `../`), `.` is no special name, an absolute link answers with its
 *   target alone;
 * - a loose object whose header does not fit git's 32 bytes: `header for
 *   <oid> too long, exceeds 32 bytes`, then git's usual failure;
 * - `--batch-command --buffer` drops queued commands at the end under
 *   GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT;
 * - `<blob>:<path>` is diagnosed as git does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { join } from 'node:path';
import { git, run, tmp, BIN } from './helpers/git.js';

function cmp(repo: string, args: string[], input = '', env: NodeJS.ProcessEnv = {}) {
  const want = run('git', ['cat-file', ...args], { cwd: repo, input, env });
  const got = run(BIN, ['cat-file', ...args], { cwd: repo, input, env });
  const label = `${args.join(' ')} <<< ${input.slice(0, 80)}`;
  assert.equal(got.stderr.toString(), want.stderr.toString(), `${label}: stderr`);
  assert.equal(got.status, want.status, `${label}: status`);
  assert.equal(got.stdout.toString('latin1'), want.stdout.toString('latin1'), `${label}: stdout`);
}

test('t1006 leftovers: --follow-symlinks, a too-long loose header, NO_FLUSH_ON_EXIT, <blob>:<path>, as git answers', () => {
  const t = tmp('gitwire-t1006-');
  try {
    const repo = join(t.dir, 'r');
    git(['init', '-q', '-b', 'main', repo]);
    mkdirSync(join(repo, 'dir', 'subdir'), { recursive: true });
    writeFileSync(join(repo, 'morx'), 'Hello World');
    writeFileSync(join(repo, 'dir', 'f'), 'f\n');
    const links: Array<[string, string]> = [
      ['dir/subdir/out-trailing', '../../../'], ['dir/subdir/out-dir', '../../..'], ['dir/subdir/out', '../../../escape'],
      ['dir/out-dir', '../..'], ['out', '../fleem'], ['abs', '/etc/abs'], ['dot', './morx'], ['up-down', 'dir/..'],
      ['up-down-trailing', 'dir/../'], ['up-down-file', 'dir/../morx'], ['dirlink', 'dir'], ['double', 'dir//f'],
    ];
    for (const [p, target] of links) symlinkSync(target, join(repo, p));
    git(['add', '-A'], { cwd: repo });
    git(['commit', '-q', '-m', 'links'], { cwd: repo });
    const names = [...links.map(([p]) => `HEAD:${p}`), 'HEAD:abs/x/y', 'HEAD:dirlink/f', 'HEAD:dirlink/./f', 'HEAD:dirlink/../morx', 'HEAD:dir/subdir/out-trailing/x', 'HEAD:'];
    cmp(repo, ['--batch-check', '--follow-symlinks'], `${names.join('\n')}\n`);
    cmp(repo, ['--batch-check=%(objectname) %(objecttype) %(rest)', '--follow-symlinks'], `${names.join('\n')}\n`);
    cmp(repo, ['--batch', '--follow-symlinks'], `${names.join('\n')}\n`);
    // a loose object whose type is too long for git's header buffer (written directly: git refuses to make one)
    const raw = Buffer.from('abcdefghijklmnopqrstuvwxyz1234679 5\0bogus', 'latin1');
    const long = createHash('sha1').update(raw).digest('hex');
    mkdirSync(join(repo, '.git', 'objects', long.slice(0, 2)), { recursive: true });
    writeFileSync(join(repo, '.git', 'objects', long.slice(0, 2), long.slice(2)), deflateSync(raw));
    for (const o of ['-s', '-t', '-p', '-e']) cmp(repo, [o, long]);
    cmp(repo, ['--batch-check'], `${long}\n`);
    // queued commands are dropped at the end with the test knob, answered with a flush
    const env = { GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT: '1' };
    cmp(repo, ['--batch-command', '--buffer'], 'info HEAD\n', env);
    cmp(repo, ['--batch-command', '--buffer'], 'info HEAD\nflush\ninfo HEAD:morx\n', env);
    cmp(repo, ['--batch-command', '--buffer'], 'info HEAD\n', { GIT_TEST_CAT_FILE_NO_FLUSH_ON_EXIT: '0' });
    // <blob>:<path>: the tree cannot be read, and git says the path is not in it
    const blob = git(['rev-parse', 'HEAD:morx'], { cwd: repo }).trim();
    cmp(repo, ['-p', `${blob}:x`]);
    cmp(repo, ['-p', `${blob}:morx`]);
  } finally { t.cleanup(); }
});
