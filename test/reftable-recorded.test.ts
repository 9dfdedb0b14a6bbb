/**
 * Reftable stacks recorded from git 2.55 (test/recorded/reftable/, made
 * by scripts/record-reftable.mjs): several tables, tombstones, symrefs,
 * peeled tags, namespaces, reflogs, SHA-1 and SHA-256, blocks with an
 * index. The installed git (which cannot write reftable) replays each
 * case's recipe to make the same objects; the recorded stack is put over
 * them, and gitwire must read what git 2.55 read: refs, HEAD, reflogs,
 * and the advertisement a real client gets. A push through gitwire into
 * it is then read back.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { BIN, ROOT, git, gitEnv, tmp } from './helpers/git.js';
import { Repository } from '../src/repo/index.js';

const DIR = join(ROOT, 'test', 'recorded', 'reftable');
const t = tmp('gitwire-reftable-rec-');
after(() => t.cleanup());

interface Expected {
  git: string;
  head: string;
  refs: Array<{ oid: string; ref: string; symref?: string; peeled?: string }>;
  reflogs: Record<string, string[]>;
}
interface Recipe { format: string; config: Array<[string, string]>; recipe: string[][] }

const env = { ...gitEnv, GIT_AUTHOR_DATE: '1700000000 +0130', GIT_COMMITTER_DATE: '1700000000 +0130' };

/** The recorded case as a bare reftable repository over objects the installed git made. */
let made = 0;
function materialize(name: string): { dir: string; work: string; exp: Expected } {
  const n = made++;
  const src = join(DIR, name);
  const r = JSON.parse(readFileSync(join(src, 'recipe.json'), 'utf8')) as Recipe;
  const exp = JSON.parse(readFileSync(join(src, 'expected.json'), 'utf8')) as Expected;
  const w = join(t.dir, `${name}-work-${n}`);
  git(['init', '-q', '-b', 'main', `--object-format=${r.format}`, w], { env });
  for (const c of r.recipe) git(c, { cwd: w, env });
  const dir = join(t.dir, `${name}-${n}.git`);
  mkdirSync(dir);
  cpSync(join(w, '.git', 'objects'), join(dir, 'objects'), { recursive: true });
  cpSync(join(src, 'reftable'), join(dir, 'reftable'), { recursive: true });
  // what `git init --ref-format=reftable` leaves for older gits: HEAD naming an invalid branch, refs/heads a file
  writeFileSync(join(dir, 'HEAD'), 'ref: refs/heads/.invalid\n');
  mkdirSync(join(dir, 'refs'));
  writeFileSync(join(dir, 'refs', 'heads'), 'this repository uses the reftable format\n');
  const cfg = ['[core]', '\trepositoryformatversion = 1', '\tbare = true', '[extensions]', '\trefstorage = reftable'];
  if (r.format === 'sha256') cfg.push('\tobjectformat = sha256');
  for (const [k, v] of r.config) { const [s, key] = k.split('.'); cfg.push(`[${s}]`, `\t${key} = ${v}`); }
  writeFileSync(join(dir, 'config'), `${cfg.join('\n')}\n`);
  return { dir, work: w, exp };
}

const CASES = readdirSync(DIR).filter((n) => !n.startsWith('.')).sort();

test('the recorded cases are there', () => {
  assert.deepEqual(CASES, ['blocks-sha1', 'small-sha1', 'small-sha256']);
});

for (const name of CASES) {
  test(`${name}: refs, HEAD and reflogs read as git 2.55 read them`, () => {
    const { dir, exp } = materialize(name);
    const repo = Repository.open(dir, { env: gitEnv });
    try {
      assert.equal(repo.refs.format, 'reftable');
      // the replay made the same objects
      for (const r of exp.refs) if (!r.symref) assert.ok(repo.odb.has(Buffer.from(r.oid, 'hex')), `${r.ref} ${r.oid}`);
      const got = [...repo.refs.iterate('refs/')].map((r) => ({
        oid: r.hex.toString(), ref: r.name.toString(), symref: r.symref,
        peeled: r.peeled?.toString() ?? (repo.peel(Buffer.from(r.hex.toString(), 'hex'))?.toString('hex')),
      }));
      assert.deepEqual(got, exp.refs.map((r) => ({ oid: r.oid, ref: r.ref, symref: r.symref, peeled: r.peeled })));
      assert.equal(repo.refs.head().symref, exp.head);
      for (const [ref, lines] of Object.entries(exp.reflogs)) {
        const ours = repo.refs.readReflog(ref).reverse().map((e) => `${e.new.toString('hex')} ${e.time} ${e.message}`);
        assert.deepEqual(ours, lines, `reflog of ${ref}`);
        assert.ok(repo.refs.reflogExists(ref));
      }
      assert.equal(repo.refs.reflogExists('refs/heads/never'), false);
      // every ref found by a lookup too
      for (const r of exp.refs) assert.equal(repo.refs.resolve(r.ref)?.hex?.toString(), r.oid, r.ref);
      assert.equal(repo.refs.readRaw('refs/heads/gone'), undefined);
    } finally { repo.close(); }
  });

  test(`${name}: a real client's ls-remote through gitwire (v0 and v2)`, () => {
    const { dir, exp } = materialize(name);
    for (const v of ['0', '2']) {
      const r = spawnSync('git', ['-c', `protocol.version=${v}`, 'ls-remote', `--upload-pack=${BIN} upload-pack`, dir], { env: gitEnv, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      const want = exp.refs.flatMap((x) => [`${x.oid}\t${x.ref}`, ...(x.peeled ? [`${x.peeled}\t${x.ref}^{}`] : [])]);
      const headOid = exp.refs.find((x) => x.ref === exp.head)?.oid;
      const lines = r.stdout.trim().split('\n');
      assert.deepEqual(lines, [...(headOid ? [`${headOid}\tHEAD`] : []), ...want], `v${v}`);
    }
    rmSync(dir, { recursive: true, force: true });
  });
}

/** git's own helpers (unpack-objects, index-pack) open the repository: they must know reftable (>= 2.45) */
const ORACLE_BIN = process.env.GITWIRE_GIT_2_55 ? join(process.env.GITWIRE_GIT_2_55, 'bin') : undefined;
const pushEnv = ORACLE_BIN ? { ...gitEnv, PATH: `${ORACLE_BIN}:${process.env.PATH}` } : gitEnv;
const helpersKnowReftable = (() => {
  const v = /(\d+)\.(\d+)/.exec(spawnSync('git', ['version'], { env: pushEnv, encoding: 'utf8' }).stdout);
  return !!v && (Number(v[1]) > 2 || Number(v[2]) >= 45);
})();

test(`push into a recorded stack through gitwire${helpersKnowReftable ? ', read back' : ' with a git too old for reftable: refused cleanly, nothing changed'}`, () => {
  const { dir, work, exp } = materialize('small-sha1');
  const before = readFileSync(join(dir, 'reftable', 'tables.list'), 'utf8');
  git(['commit', '-q', '--allow-empty', '-m', 'pushed'], { cwd: work, env });
  const tip = git(['rev-parse', 'HEAD'], { cwd: work }).trim();
  const r = spawnSync('git', ['push', `--receive-pack=${BIN} receive-pack`, dir, 'HEAD:refs/heads/main', 'HEAD:refs/heads/fresh', ':refs/heads/side'], { cwd: work, env: pushEnv, encoding: 'utf8' });
  const stray = () => readdirSync(join(dir, 'reftable')).filter((f) => f.endsWith('.lock') || f.startsWith('tmp_'));
  if (!helpersKnowReftable) {
    // the installed git's unpack-objects would refuse the repository's extension: refused first, in plain words
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /reftable format, and receiving a push runs git on the server, whose version \d+\.\d+\S* cannot read it: git 2\.45 or later is needed/, r.stderr);
    assert.doesNotMatch(r.stderr, /unknown repository extension|unpack/);
    assert.equal(readFileSync(join(dir, 'reftable', 'tables.list'), 'utf8'), before);
    assert.deepEqual(stray(), []);
    return;
  }
  assert.equal(r.status, 0, r.stderr);
  const repo = Repository.open(dir, { env: gitEnv });
  try {
    assert.equal(repo.refs.resolve('refs/heads/main')?.hex?.toString(), tip);
    assert.equal(repo.refs.resolve('refs/heads/fresh')?.hex?.toString(), tip);
    assert.equal(repo.refs.readRaw('refs/heads/side'), undefined);
    // the symref to the deleted branch dangles now: listed by no one
    assert.ok(![...repo.refs.iterate()].some((x) => x.name.toString() === 'refs/heads/alias'));
    assert.equal(repo.refs.readRaw('refs/heads/alias')?.symref, 'refs/heads/side');
    const others = exp.refs.filter((x) => !['refs/heads/main', 'refs/heads/side', 'refs/heads/alias'].includes(x.ref));
    for (const o of others) assert.equal(repo.refs.resolve(o.ref)?.hex?.toString(), o.oid, o.ref);
  } finally { repo.close(); }
  const after = readFileSync(join(dir, 'reftable', 'tables.list'), 'utf8').trim().split('\n');
  // one table more, or fewer after auto-compaction; never a lock or a stray table left
  assert.ok(after.length <= before.trim().split('\n').length + 1);
  assert.deepEqual(stray(), []);
  assert.deepEqual(readdirSync(join(dir, 'reftable')).filter((f) => f !== 'tables.list').sort(), [...after].sort());
  // a push whose old value is stale is refused
  const stale = spawnSync('git', ['push', `--receive-pack=${BIN} receive-pack`, `--force-with-lease=refs/heads/fresh:${exp.refs[0]!.oid}`, dir, 'HEAD~1:refs/heads/fresh'], { cwd: work, env: pushEnv, encoding: 'utf8' });
  assert.notEqual(stale.status, 0);
  assert.match(stale.stderr, /stale info/);
});

test('clone of a recorded stack through gitwire: the native producer reads reftable repositories with any git on the server', () => {
  const { dir } = materialize('small-sha1');
  for (const v of ['0', '2']) {
    const dest = join(t.dir, `clone-native-v${v}-${made}`);
    const r = spawnSync('git', ['-c', `protocol.version=${v}`, 'clone', '-q', '--bare', `--upload-pack=${BIN} upload-pack`, `file://${dir}`, dest], { env: pushEnv, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(spawnSync('git', ['--git-dir', dest, 'fsck', '--strict'], { encoding: 'utf8' }).status, 0);
    assert.ok(spawnSync('git', ['--git-dir', dest, 'for-each-ref'], { encoding: 'utf8' }).stdout.length > 0);
  }
});

test(`clone of a recorded stack through gitwire with --pack-objects git${helpersKnowReftable ? '' : ' and a git too old for reftable: a refusal naming the git it needs, not pack-objects\' own words'}`, () => {
  const { dir } = materialize('small-sha1');
  for (const v of ['0', '2']) {
    const dest = join(t.dir, `clone-v${v}-${made}`);
    const r = spawnSync('git', ['-c', `protocol.version=${v}`, 'clone', '-q', '--bare', `--upload-pack=${BIN} upload-pack`, `file://${dir}`, dest], { env: { ...pushEnv, GITWIRE_PACK_OBJECTS: 'git' }, encoding: 'utf8' });
    if (helpersKnowReftable) { assert.equal(r.status, 0, r.stderr); continue; }
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /reftable format, and sending a pack runs git on the server, whose version \d+\.\d+\S* cannot read it: git 2\.45 or later is needed/, `v${v}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /unknown repository extension/);
  }
});
