/**
 * cat-file in a repository with extensions.compatObjectFormat (git 2.55
 * serves it when built with Rust; the installed git 2.39 knows nothing of
 * it): objects stored in SHA-1, named by SHA-256 as well.
 *
 * The fixture is built with real git and fixed dates, so its ids are the
 * same with any git. With GITWIRE_GIT_2_55 (a git 2.55 built with Rust)
 * it is built by that git with the extension on, so git itself writes
 * objects/loose-object-idx, and every row is compared live with that
 * git's cat-file. Without it (CI: git 2.39) the objects are made by the
 * installed git, the map is written from git 2.55's recorded
 * `rev-parse --output-object-format=sha256` of every object, and each
 * row is compared with git 2.55's recorded answer.
 * To re-record: GITWIRE_RECORD_GIT=$GITWIRE_GIT_2_55/bin/git
 * GITWIRE_RECORD_EXEC_PATH=$GITWIRE_GIT_2_55/libexec/git-core.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, tmp, BIN, type GitOpts } from './helpers/git.js';
import { Recorded, type Outcome } from './helpers/recorded.js';

const rec = new Recorded('cat-file-compat-2.55', '2.55.0');
const ORACLE = process.env.GITWIRE_GIT_2_55 ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : undefined;
const RECORD = process.env.GITWIRE_RECORD_GIT;
/** the git that builds the fixture with the extension on (and writes the map), when there is one */
const BUILDER = RECORD ?? ORACLE;
const builderEnv = (): NodeJS.ProcessEnv => (RECORD && process.env.GITWIRE_RECORD_EXEC_PATH ? { GIT_EXEC_PATH: process.env.GITWIRE_RECORD_EXEC_PATH }
  : ORACLE ? { GIT_EXEC_PATH: join(process.env.GITWIRE_GIT_2_55!, 'libexec', 'git-core') } : {});

let t: ReturnType<typeof tmp>;
let repo: string;
const ids: Record<string, string> = {};
const compat: Record<string, string> = {};

function g(args: string[], opts: GitOpts = {}, bin = BUILDER ?? 'git'): string {
  const r = run(bin, args, { cwd: repo, ...opts, env: { ...(bin === 'git' ? {} : builderEnv()), ...opts.env } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

const HEADER = '# loose-object-idx\n';

before(() => {
  t = tmp('gitwire-compat-');
  repo = join(t.dir, 'repo');
  g(['init', '-q', '-b', 'main', repo], { cwd: t.dir });
  g(['config', 'core.repositoryformatversion', '1']);
  g(['config', 'extensions.objectformat', 'sha1']);
  // git 2.55 maps each object as it writes it; git 2.39 cannot run with the extension set
  if (BUILDER) g(['config', 'extensions.compatobjectformat', 'sha256']);
  writeFileSync(join(repo, 'hello'), 'Hello World');
  writeFileSync(join(repo, 'path with spaces'), 'Hello World');
  mkdirSync(join(repo, 'dir', 'sub'), { recursive: true });
  writeFileSync(join(repo, 'dir', 'file.txt'), 'in a directory\n');
  symlinkSync('../hello', join(repo, 'dir', 'link'));
  symlinkSync('../../', join(repo, 'dir', 'sub', 'out'));
  writeFileSync(join(repo, 'dir', 'sub', 'keep'), '');
  g(['add', 'hello', 'dir']);
  g(['update-index', '--add', '--chmod=+x', 'path with spaces']);
  g(['commit', '-q', '-m', 'first']);
  writeFileSync(join(repo, 'second.txt'), 'second\n');
  g(['add', 'second.txt']);
  g(['commit', '-q', '-m', 'second']);
  g(['tag', '-a', '-m', 'a tag', 'v1']);
  g(['tag', '-a', '-m', 'a blob tag', 'vb', 'HEAD:hello']);
  g(['tag', '-a', '-m', 'a tag of a tag', 'vt', 'v1']);
  for (const [k, n] of Object.entries({ blob: 'HEAD:hello', tree: 'HEAD^{tree}', dirtree: 'HEAD:dir', commit: 'HEAD', parent: 'HEAD~1', tag: 'v1', blobtag: 'vb', tagtag: 'vt' })) {
    ids[k] = g(['rev-parse', n]).trim();
  }
  // a commit with a mergetag header (the tag object's lines, each after a space)
  const tagBody = g(['cat-file', 'tag', 'v1']);
  const merge = `tree ${ids.tree}\nparent ${ids.parent}\nparent ${ids.commit}\n` +
    `author A U Thor <author@example.com> 1700000000 +0000\ncommitter C O Mitter <committer@example.com> 1700000000 +0000\n` +
    `mergetag ${tagBody.replace(/\n$/, '').split('\n').join('\n ')}\n\nmerge with a mergetag\n`;
  ids.merge = g(['hash-object', '-t', 'commit', '-w', '--stdin'], { input: merge }).trim();
  // every object in the repository (sorted), as the map must hold them all
  const all = g(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)']).trim().split('\n');
  const mapArgs = ['rev-parse', '--output-object-format=sha256', ...all];
  const mapped = BUILDER && !RECORD ? { stdout: Buffer.from(g(mapArgs)) } : rec.git('map', mapArgs, { cwd: repo, env: builderEnv() });
  const lines = mapped.stdout.toString().trim().split('\n');
  assert.equal(lines.length, all.length);
  const toCompat = new Map(all.map((id, i) => [id, lines[i]!]));
  for (const k of Object.keys(ids)) compat[k] = toCompat.get(ids[k]!)!;
  const idx = HEADER + all.map((id) => `${id} ${toCompat.get(id)!}\n`).join('');
  if (BUILDER) {
    // the map git wrote has every object, whatever its order
    const written = readFileSync(join(repo, '.git', 'objects', 'loose-object-idx'), 'latin1');
    const want = new Set(idx.split('\n'));
    for (const l of written.split('\n')) if (/^[0-9a-f]{40} /.test(l)) assert.ok(want.has(l) || !all.includes(l.slice(0, 40)), `map line ${l}`);
    // (the empty blob and tree are mapped without being written)
    for (const l of idx.split('\n').slice(1)) if (l && !/^(e69de29bb2d1d6434b8b29ae775ad8c2e48c5391|4b825dc642cb6eb9a060e54bf8d69288fbee4904) /.test(l)) assert.ok(written.includes(l), `git's map has ${l}`);
  } else {
    appendFileSync(join(repo, '.git', 'config'), '[extensions]\n\tcompatobjectformat = sha256\n');
    writeFileSync(join(repo, '.git', 'objects', 'loose-object-idx'), idx);
  }
});
after(() => { rec.save(); if (!process.env.GITWIRE_TEST_KEEP) t.cleanup(); });

/** git 2.55's answer: live from the oracle (checked against the record when there is one), else the record */
function expected(key: string, args: string[], opts: GitOpts): Outcome {
  if (ORACLE && !RECORD) {
    const r = run(ORACLE, args, { ...opts, env: { ...builderEnv(), ...opts.env } });
    return { stdout: r.stdout, stderr: r.stderr, status: r.status };
  }
  return rec.git(key, args, { ...opts, env: { ...builderEnv(), ...opts.env } });
}

function cmp(key: string, args: string[], input = '', cwd = repo, env: NodeJS.ProcessEnv = {}) {
  const want = expected(key, ['cat-file', ...args], { cwd, input, env });
  const got = run(BIN, ['cat-file', ...args], { cwd, input, env });
  assert.equal(got.stderr.toString('latin1'), want.stderr.toString('latin1'), `${key}: stderr`);
  assert.equal(got.status, want.status, `${key}: status`);
  if (!got.stdout.equals(want.stdout)) {
    const a = got.stdout.toString('latin1').split('\n'), b = want.stdout.toString('latin1').split('\n');
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    assert.fail(`${key}: stdout differs at line ${i + 1}\n ours: ${a.slice(i, i + 4).join('\n')}\n git: ${b.slice(i, i + 4).join('\n')}`);
  }
}

const KINDS = ['blob', 'tree', 'dirtree', 'commit', 'merge', 'tag', 'blobtag', 'tagtag'] as const;

test('compat ids: -t -s -p -e and <type> on every kind of object, as git 2.55 answers', () => {
  for (const k of KINDS) {
    for (const id of [compat[k]!, ids[k]!, compat[k]!.slice(0, 10)]) {
      const form = id === ids[k] ? 'sha1' : id.length === 64 ? 'sha256' : 'abbrev';
      for (const o of ['-t', '-s', '-p', '-e']) cmp(`${k} ${form} ${o}`, [o, id]);
      for (const ty of ['blob', 'tree', 'commit', 'tag']) cmp(`${k} ${form} ${ty}`, [ty, id]);
    }
  }
});

test('compat names: <tree>:<path>, ^{...}, ~ and ^, and ids not in the map, as git 2.55 answers', () => {
  const c = compat;
  const names = [
    `${c.tree}:hello`, `${c.tree}:path with spaces`, `${c.tree}:dir/file.txt`, `${c.tree}:dir`, `${c.tree}:nope`, `${c.dirtree}:link`,
    `${c.commit}:hello`, `${c.tag}:hello`, `${c.tree}^{tree}`, `${c.tree}^{}`, `${c.tree}^{commit}`, `${c.commit}^{}`, `${c.commit}^{tree}`,
    `${c.tag}^{}`, `${c.tag}^{commit}`, `${c.blob}^{}`, `${c.blob}^{blob}`, `${c.blob!.slice(0, 63)}`, `${c.blob!.slice(0, 40)}`,
    // last: names whose lookup misses. After one, git 2.55 no longer finds any compat id in that process
    // (get_short_oid()'s odb_reprepare() drops the compat ids from the loose-object cache), which gitwire
    // does not copy: each of these is run on its own below as well
    `${c.commit}~1`, `${c.commit}^1`, `${c.commit}^0`, `${c.blob!.slice(0, 63)}0`, `${'0'.repeat(64)}`, `${'1'.repeat(64)}`,
  ];
  for (const n of names) for (const o of ['-t', '-p']) cmp(`name ${o} ${n}`, [o, n]);
  const input = `${names.join('\n')}\n`;
  cmp('names batch-check', ['--batch-check'], input);
  cmp('names batch', ['--batch'], input);
  cmp('names follow-symlinks', ['--batch-check', '--follow-symlinks'], input);
  cmp('names objectmode', ['--batch-check=%(objectname) %(objectmode) %(objecttype)'], input);
});

/** run `f` with the extension out of the config: git 2.39 refuses to work in the repository otherwise */
function withoutExtension(f: () => void): void {
  if (BUILDER) { f(); return; }
  const p = join(repo, '.git', 'config');
  const config = readFileSync(p, 'latin1');
  writeFileSync(p, config.replace('[extensions]\n\tcompatobjectformat = sha256\n', ''));
  try { f(); } finally { writeFileSync(p, config); }
}

test('compat ids in the batch modes: every atom, --batch-command, packed and loose, as git 2.55 answers', () => {
  const list = KINDS.flatMap((k) => [compat[k]!, ids[k]!]);
  const input = `${list.join('\n')}\n`;
  const rest = list.map((x) => `${x} some rest`).join('\n') + '\n';
  for (const where of ['loose', 'packed']) {
    if (where === 'packed') withoutExtension(() => g(['repack', '-adq']));
    cmp(`${where} batch`, ['--batch'], input);
    cmp(`${where} batch-check`, ['--batch-check'], input);
    cmp(`${where} formats`, ['--batch-check=%(objectname) %(objecttype) %(objectsize) %(objectmode) %(rest)'], rest);
    // disk sizes (zlib's output) and delta bases (pack-objects' choices) depend on the git and zlib that
    // made the objects: compared live only, against the git 2.55 that made them
    if (ORACLE && !RECORD) cmp(`${where} disk and delta`, ['--batch-check=%(objectname) %(objectsize:disk) %(deltabase)'], input);
    cmp(`${where} batch-command`, ['--batch-command'], list.flatMap((x) => [`info ${x}`, `contents ${x}`]).join('\n') + '\n');
    cmp(`${where} batch-command buffer`, ['--batch-command', '--buffer'], list.flatMap((x) => [`contents ${x}`, 'flush', `info ${x}`]).join('\n') + '\n');
    cmp(`${where} all objects`, ['--batch-all-objects', '--batch-check']);
  }
});

test('a compat map without an object: what refers to it cannot be converted, with git 2.55\'s errors', () => {
  const d = join(t.dir, 'unmapped');
  cpSync(repo, d, { recursive: true });
  const p = join(d, '.git', 'objects', 'loose-object-idx');
  // git 2.55 reads the map as written; drop the blob's line (what a pack received without a map would leave)
  const kept = readFileSync(p, 'latin1').split('\n').filter((l) => !l.startsWith(ids.blob!)).join('\n');
  writeFileSync(p, kept);
  // the unmapped blob's id last: a name that misses stops git 2.55 finding compat ids (see above)
  const input = `${KINDS.filter((k) => k !== 'blob').map((k) => compat[k]).join('\n')}\n${compat.tree}:dir/file.txt\n${compat.blob}\n`;
  cmp('unmapped batch-check', ['--batch-check'], input, d);
  cmp('unmapped batch', ['--batch'], input, d);
  for (const k of ['tree', 'commit', 'tag', 'merge'] as const) for (const o of ['-t', '-s', '-p']) cmp(`unmapped ${k} ${o}`, [o, compat[k]!], '', d);
});

test('bad extensions.compatObjectFormat settings are git 2.55\'s errors, before any output', () => {
  const cases: Array<[string, string]> = [
    ['bogus value', '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tcompatobjectformat = bogus\n'],
    ['no value', '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tcompatObjectFormat\n'],
    ['version 0', '[core]\n\trepositoryformatversion = 0\n[extensions]\n\tobjectformat = sha1\n\tcompatobjectformat = sha256\n'],
    ['twice', '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tcompatobjectformat = sha256\n\tcompatobjectformat = sha256\n'],
  ];
  for (const [name, config] of cases) {
    const d = join(t.dir, name.replace(/ /g, '-'));
    cpSync(repo, d, { recursive: true });
    writeFileSync(join(d, '.git', 'config'), config);
    cmp(`config ${name} -t`, ['-t', 'HEAD'], '', d);
    cmp(`config ${name} batch-check`, ['--batch-check'], 'HEAD\n', d);
  }
  // the same format twice: git 2.55 stops on a BUG(); gitwire says what is wrong
  const d = join(t.dir, 'same');
  cpSync(repo, d, { recursive: true });
  writeFileSync(join(d, '.git', 'config'), '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tcompatobjectformat = sha1\n');
  const r = run(BIN, ['cat-file', '-t', 'HEAD'], { cwd: d });
  assert.equal(r.status, 128);
  assert.equal(r.stdout.length, 0);
  assert.equal(r.stderr.toString(), "fatal: extensions.compatObjectFormat is 'sha1', the same as the repository's object format\n");
});
