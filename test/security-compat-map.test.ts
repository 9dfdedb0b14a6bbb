/**
 * extensions.compatObjectFormat with a damaged objects/loose-object-idx,
 * served through cat-file: truncated, bad lines, CRLF, a wrong or missing
 * header, conflicting and dangling mappings, garbage, a directory in its
 * place. Every answer is git 2.55's for the same file (live: needs
 * GITWIRE_GIT_2_55, a git built with Rust, which writes the map itself).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, tmp, BIN } from './helpers/git.js';

const O = process.env.GITWIRE_GIT_2_55;
const ORACLE = O ? join(O, 'bin', 'git') : undefined;
const env = O ? { GIT_EXEC_PATH: join(O, 'libexec', 'git-core') } : {};
const skip = ORACLE ? false : 'needs GITWIRE_GIT_2_55 (a git 2.55 with compatObjectFormat)';

let t: ReturnType<typeof tmp>;
let repo: string;
let map: string;
let storage: string[] = [];
let compat: string[] = [];
let head = '';

function g(args: string[], cwd = repo, input = ''): string {
  const r = run(ORACLE!, args, { cwd, input, env: { ...env, GIT_AUTHOR_DATE: '1700000000 +0000', GIT_COMMITTER_DATE: '1700000000 +0000' } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

before(() => {
  if (skip) return;
  t = tmp('gitwire-sec-compat-');
  repo = join(t.dir, 'repo');
  g(['init', '-q', '-b', 'main', repo], t.dir);
  g(['config', 'core.repositoryformatversion', '1']);
  g(['config', 'extensions.compatobjectformat', 'sha256']);
  for (let i = 0; i < 3; i++) {
    mkdirSync(join(repo, 'd'), { recursive: true });
    writeFileSync(join(repo, 'd', `f${i}`), `file ${i}\n`);
    g(['add', '.']);
    g(['-c', 'user.name=A', '-c', 'user.email=a@x', 'commit', '-q', '-m', `c${i}`]);
  }
  g(['-c', 'user.name=A', '-c', 'user.email=a@x', 'tag', '-a', '-m', 't', 'v1']);
  storage = g(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)']).trim().split('\n');
  compat = g(['rev-parse', '--output-object-format=sha256', ...storage]).trim().split('\n');
  head = g(['rev-parse', '--output-object-format=sha256', 'HEAD']).trim();
  map = readFileSync(join(repo, '.git', 'objects', 'loose-object-idx'), 'latin1');
});
after(() => t?.cleanup());

/** the variants of the map file, each as git would meet it on disk */
function variants(): Array<[string, string | Buffer | { dir: true }]> {
  const lines = map.split('\n').slice(1, -1);
  const [a, b] = [lines[0]!, lines[1]!];
  const wrong = `${a.slice(0, 40)} ${'0'.repeat(63)}1`;
  return [
    ['as git wrote it', map],
    ['truncated in a line', map.slice(0, Math.floor(map.length / 2))],
    ['no final newline', map.slice(0, -1)],
    ['a bad line in the middle', map.replace(b, `${b.slice(0, 10)}g${b.slice(11)}`)],
    ['CRLF lines', map.replace(/\n/g, '\r\n')],
    ['no header', lines.map((l) => `${l}\n`).join('')],
    ['another header', map.replace('# loose-object-idx\n', '# loose-object-idx v2\n')],
    ['empty', ''],
    ['a conflicting mapping after', `${map}${wrong}\n`],
    ['a conflicting mapping first', map.replace('# loose-object-idx\n', `# loose-object-idx\n${wrong}\n`)],
    ['a compat id for an object that is not there', `${map}${'1'.repeat(40)} ${compat[0]!.slice(0, 63)}e\n`],
    ['a compat id mapped to two objects', `${map}${'2'.repeat(40)} ${compat[1]}\n`],
    ['upper-case hex', map.toUpperCase().replace('# LOOSE-OBJECT-IDX', '# loose-object-idx')],
    ['a trailing space', map.replace(a, `${a} `)],
    ['a NUL in a line', map.replace(b, `${b.slice(0, 50)}\0${b.slice(51)}`)],
    ['a blank line', map.replace(`${a}\n`, `${a}\n\n`)],
    ['ids the wrong way round', `# loose-object-idx\n${lines.map((l) => l.split(' ').reverse().join(' ')).join('\n')}\n`],
    ['a megabyte of garbage after', Buffer.concat([Buffer.from(map, 'latin1'), Buffer.alloc(1 << 20, 0xff)])],
    ['a directory', { dir: true }],
  ];
}

/*
 * Each compat id is asked in a process of its own: git 2.55 answers
 * "missing" for every compat id that follows one that missed in the same
 * cat-file (the miss reloads the map and clears the loose cache the compat
 * ids are found through), a defect of git's this test does not copy.
 */
test('a damaged loose-object-idx: cat-file answers as git 2.55 does for the same file', { skip, timeout: 180_000 }, () => {
  const lines = map.split('\n').slice(1, -1);
  const sample = [head, lines[0]!.slice(41), lines[Math.floor(lines.length / 2)]!.slice(41), lines.at(-1)!.slice(41), head.slice(0, 12)];
  const batch = `${[...storage, '2'.repeat(40), head].join('\n')}\n`;
  for (const [what, content] of variants()) {
    const d = join(t.dir, 'v');
    rmSync(d, { recursive: true, force: true });
    cpSync(repo, d, { recursive: true });
    const file = join(d, '.git', 'objects', 'loose-object-idx');
    rmSync(file);
    if (typeof content === 'object' && !Buffer.isBuffer(content)) mkdirSync(file); else writeFileSync(file, content);
    const asks: string[][] = [
      ['--batch-check=%(objectname) %(objecttype) %(objectsize)'], ['--batch'], ['-p', head], ['-p', `${head}^{tree}`],
      ...sample.map((id) => ['-t', id]),
    ];
    for (const args of asks) {
      const input = args[0]!.startsWith('--batch') ? batch : '';
      const want = run(ORACLE!, ['cat-file', ...args], { cwd: d, input, env });
      const got = run(BIN, ['cat-file', ...args], { cwd: d, input });
      const key = `${what}: cat-file ${args.join(' ')}`;
      assert.equal(got.stderr.toString('latin1'), want.stderr.toString('latin1'), `${key}: stderr`);
      assert.equal(got.status, want.status, `${key}: status`);
      assert.ok(got.stdout.equals(want.stdout), `${key}: stdout\n ours: ${got.stdout.toString('latin1').slice(0, 300)}\n git: ${want.stdout.toString('latin1').slice(0, 300)}`);
    }
  }
});
