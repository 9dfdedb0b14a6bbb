/**
 * `cat-file --filter=<spec>` (git 2.48+): with --batch-all-objects objects
 * the filter rejects are skipped; with names on stdin they are reported as
 * `excluded`. git 2.39 has no --filter, so the expected output is git
 * v2.55.0's, recorded (test/recorded/); the fixture is deterministic.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { git, run, tmp, BIN, type GitOpts } from './helpers/git.js';
import { Recorded } from './helpers/recorded.js';
import { filterAccepts, parseFilterSpec } from '../src/catfile/filter.js';
import { parseUlong } from '../src/util/ulong.js';

const rec = new Recorded('cat-file-filter-2.55', '2.55.0');
let t: ReturnType<typeof tmp>;
let repo: string;

before(() => {
  t = tmp();
  repo = join(t.dir, 'filter');
  git(['init', '-q', '-b', 'main', repo]);
  const env = (n: number) => ({ GIT_AUTHOR_DATE: `${1700002000 + n} +0000`, GIT_COMMITTER_DATE: `${1700002000 + n} +0000` });
  const sizes = [0, 1, 5, 6, 15, 16, 17, 1023, 1024, 1025, 4096];
  sizes.forEach((n) => writeFileSync(join(repo, `f${n}`), 'x'.repeat(n)));
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-q', '-m', 'sizes'], { cwd: repo, env: env(1) });
  git(['tag', '-a', '-m', 'a tag', 'v1'], { cwd: repo, env: env(2) });
  git(['repack', '-adq'], { cwd: repo });
  writeFileSync(join(repo, 'loose'), 'loose blob\n');
  git(['add', '-A'], { cwd: repo });
  git(['commit', '-q', '-m', 'loose'], { cwd: repo, env: env(3) });
  void sizes;
});
after(() => { rec.save(); t.cleanup(); });

function cmpRecorded(key: string, args: string[], input = '', opts: GitOpts = {}) {
  const g = rec.git(key, ['cat-file', ...args], { cwd: repo, input, ...opts });
  const m = run(BIN, ['cat-file', ...args], { cwd: repo, input, ...opts });
  assert.equal(m.stderr.toString(), g.stderr.toString(), `${key}: stderr`);
  assert.equal(m.status, g.status, `${key}: status`);
  assert.ok(m.stdout.equals(g.stdout), `${key}: stdout differs\n ours: ${m.stdout.toString().slice(0, 800)}\n git: ${g.stdout.toString().slice(0, 800)}`);
}

const SPECS = ['blob:none', 'blob:limit=0', 'blob:limit=6', 'blob:limit=16', 'blob:limit=0x10', 'blob:limit=020', 'blob:limit=1k', 'blob:limit=1K', 'blob:limit=1m',
  'object:type=blob', 'object:type=tree', 'object:type=commit', 'object:type=tag'];

test('--batch-all-objects with --filter: blob:none, blob:limit (units, hex, octal), object:type (git 2.55, recorded)', () => {
  for (const spec of SPECS) {
    cmpRecorded(`all ${spec}`, ['--batch-all-objects', '--batch-check', `--filter=${spec}`]);
  }
  cmpRecorded('all unordered blob:limit=16', ['--batch-all-objects', '--batch-check', '--unordered', '--filter=blob:limit=16']);
  cmpRecorded('all contents object:type=tag', ['--batch-all-objects', '--batch', '--filter=object:type=tag']);
  cmpRecorded('all name only blob:none', ['--batch-all-objects', '--batch-check=%(objectname)', '--filter=blob:none']);
  cmpRecorded('all --no-filter', ['--batch-all-objects', '--batch-check', '--filter=blob:none', '--no-filter']);
});

test('--filter with names on stdin: rejected objects are `excluded` (git 2.55, recorded)', () => {
  const input = ['HEAD', 'HEAD^{tree}', 'HEAD:f0', 'HEAD:f16', 'HEAD:f4096', 'v1', 'HEAD:loose', 'HEAD:nope', 'nope'].join('\n') + '\n';
  for (const spec of ['blob:none', 'blob:limit=16', 'object:type=commit']) {
    cmpRecorded(`stdin check ${spec}`, ['--batch-check', `--filter=${spec}`], input);
    cmpRecorded(`stdin contents ${spec}`, ['--batch', `--filter=${spec}`], input);
    cmpRecorded(`stdin command ${spec}`, ['--batch-command', `--filter=${spec}`], input.split('\n').filter(Boolean).map((n) => `info ${n}`).join('\n') + '\n');
  }
});

test('filter specs: git_parse_ulong rules and the per-object test', () => {
  assert.equal(parseUlong('1k'), 1024n);
  assert.equal(parseUlong('0x10'), 16n);
  assert.equal(parseUlong('010'), 8n);
  assert.equal(parseUlong('2G'), 2n * 1024n ** 3n);
  assert.equal(parseUlong('-1'), undefined);
  assert.equal(parseUlong('1x'), undefined);
  assert.equal(parseUlong(''), undefined);
  const f = parseFilterSpec('blob:limit=16');
  assert.equal(filterAccepts(f, 3, 15), true);
  assert.equal(filterAccepts(f, 3, 16), false);
  assert.equal(filterAccepts(f, 2, 1 << 20), true);
  assert.throws(() => parseFilterSpec('sparse:path=x'), /sparse:path filters support has been dropped/);
  assert.throws(() => parseFilterSpec('blob:limit=x'), /invalid filter-spec 'blob:limit=x'/);
});
