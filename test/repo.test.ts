import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Repository, ObjType, typeName, Config, parseConfig, parseCommandLineConfig, HideRefs, locateRepository, PackIndex, Peel, PackedRefs, Ref, RefStore } from '../src/repo/index.js';
import { git, gitBuf, gitEnv, tmp } from './helpers/git.js';
import { makeRichRepo, makeAlternateRepo, makeNamespaceRepo, commit } from './helpers/fixtures.js';
import { writeFileSync, mkdirSync } from 'node:fs';
import * as fsAll from 'node:fs';
import type { FilesRefStore, RefStore as AnyRefStore } from '../src/repo/refs/index.js';
/** the files backend's own lookups (these repositories use it) */
const files = (r: AnyRefStore): FilesRefStore => r as FilesRefStore;
const require_fs = () => fsAll;

let t: ReturnType<typeof tmp>;
let rich: string, alt: string, sha256: string, ns: string;

before(() => {
  t = tmp();
  rich = makeRichRepo(t.dir);
  alt = makeAlternateRepo(t.dir, rich);
  const d256 = join(t.dir, 's256');
  mkdirSync(d256);
  sha256 = makeRichRepo(d256, { objectFormat: 'sha256' });
  ns = makeNamespaceRepo(t.dir);
});
after(() => t.cleanup());

/** Render every object like `git cat-file --batch-all-objects --batch`. */
function renderAll(repo: Repository): Buffer {
  const parts: Buffer[] = [];
  for (const oid of repo.odb.allObjectsSorted()) {
    const o = repo.odb.read(oid)!;
    parts.push(Buffer.from(`${oid.toString('hex')} ${typeName(o.type)} ${o.data.length}\n`), o.data, Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

for (const name of ['rich', 'alt', 'sha256'] as const) {
  test(`objects: every object matches git cat-file --batch-all-objects --batch (${name})`, () => {
    const dir = name === 'rich' ? rich : name === 'alt' ? alt : sha256;
    const repo = Repository.open(dir, { env: gitEnv });
    const expected = gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: dir });
    const got = renderAll(repo);
    assert.equal(got.length, expected.length);
    assert.ok(got.equals(expected));
    repo.close();
  });

  test(`refs: iteration matches for-each-ref and show-ref -d (${name})`, () => {
    const dir = name === 'rich' ? rich : name === 'alt' ? alt : sha256;
    const repo = Repository.open(dir, { env: gitEnv });
    const fer = git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: dir });
    let mine = '';
    let showref = '';
    for (const r of repo.refs.iterate()) {
      mine += `${r.hex.toString()} ${r.name.toString()}\n`;
      showref += `${r.hex.toString()} ${r.name.toString()}\n`;
      const peeled = r.peel === Peel.Peeled ? r.peeled! : r.peel === Peel.None ? undefined : repo.peel(Buffer.from(r.hex.toString(), 'hex'))?.toString('hex');
      if (peeled) showref += `${peeled.toString()} ${r.name.toString()}^{}\n`;
    }
    assert.equal(mine, fer);
    const expected = git(['show-ref', '-d'], { cwd: dir }).split('\n').filter((l) => !/ HEAD$/.test(l)).join('\n');
    assert.equal(showref, expected);
    repo.close();
  });
}

test('object types: packs contain both delta kinds', () => {
  const repo = Repository.open(rich, { env: gitEnv });
  const kinds = new Set<number>();
  for (const s of repo.odb.sources) for (const p of s.packs) for (let i = 0; i < p.index.count; i++) kinds.add(p.header(p.index.offset(i)).type);
  assert.ok(kinds.has(ObjType.OfsDelta), 'has OFS_DELTA');
  assert.ok(kinds.has(ObjType.RefDelta), 'has REF_DELTA');
  repo.close();
});

test('HEAD: symbolic, detached and unborn', () => {
  const repo = Repository.open(rich, { env: gitEnv });
  const h = repo.refs.head();
  assert.equal(h.symref, 'refs/heads/main');
  assert.equal(h.hex!.toString(), git(['rev-parse', 'HEAD'], { cwd: rich }).trim());
  const e = join(t.dir, 'empty');
  git(['init', '-q', '-b', 'trunk', e]);
  const er = Repository.open(e, { env: gitEnv });
  assert.deepEqual(er.refs.head(), { symref: 'refs/heads/trunk', hex: undefined });
});

test('packed-refs lookup by binary search finds every ref', () => {
  const repo = Repository.open(rich, { env: gitEnv });
  const packed = PackedRefs.open(join(repo.commonDir, 'packed-refs'), repo.hexLen)!;
  const all: Ref[] = [];
  const c = packed.cursor();
  for (let r = c.next(); r; r = c.next()) all.push(r);
  assert.ok(all.length > 3);
  for (const r of all) {
    const f = files(repo.refs).lookupPacked(r.name.toString());
    assert.ok(f, r.name.toString());
    assert.equal(f!.hex.toString(), r.hex.toString());
  }
  assert.equal(files(repo.refs).lookupPacked('refs/heads/nope'), undefined);
  assert.equal(files(repo.refs).lookupPacked('refs/aaa'), undefined);
  assert.equal(files(repo.refs).lookupPacked('refs/zzz'), undefined);
  packed.unpin();
});

for (const sortedFile of [true, false]) {
  test(`packed-refs held whole in memory answers as the file read by positional reads does, and holds no descriptor (${sortedFile ? 'sorted' : 'unsorted'})`, () => {
    const d = join(t.dir, `whole-${sortedFile}.git`);
    git(['init', '-q', '--bare', d]);
    const tree = git(['mktree'], { cwd: d, input: '' }).trim();
    const c = git(['commit-tree', tree, '-m', 'one'], { cwd: d }).trim();
    const tag = git(['mktag'], { cwd: d, input: `object ${c}\ntype commit\ntag t\ntagger T <t@example.com> 1700000000 +0000\n\nt\n` }).trim();
    let input = '';
    for (let i = 0; i < 2000; i++) input += `create refs/${['heads/a', 'heads/b/', 'tags/v', 'notes/'][i % 4]}${i} ${i % 4 === 2 ? tag : c}\n`;
    git(['update-ref', '--stdin'], { cwd: d, input });
    git(['pack-refs', '--all'], { cwd: d });
    const path = join(d, 'packed-refs');
    if (!sortedFile) {
      const lines = fsAll.readFileSync(path, 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
      // each ref with its peel line, in reverse order
      const recs: string[] = [];
      for (const l of lines) if (l.startsWith('^')) recs[recs.length - 1] += `\n${l}`; else recs.push(l);
      fsAll.writeFileSync(path, `${recs.reverse().join('\n')}\n`);
    }
    const fds = () => fsAll.readdirSync('/proc/self/fd').length;
    const before = fds();
    const whole = PackedRefs.open(path, 40)!;
    assert.equal(fds(), before, 'a file read whole is closed');
    assert.ok(whole.bytes && whole.memoryBytes >= fsAll.statSync(path).size);
    const byReads = PackedRefs.open(path, 40, 0)!;
    assert.equal(byReads.bytes, undefined);
    const show = (r: Ref | undefined) => (r ? `${r.hex} ${r.name}${r.peel === Peel.Peeled ? ` ^${r.peeled}` : ''} ${r.peel}` : '-');
    const all = (p: PackedRefs, from?: string, to?: string, reuse = false) => {
      const out: string[] = [];
      const cur = p.cursor(from === undefined ? undefined : Buffer.from(from), to === undefined ? undefined : Buffer.from(to), reuse);
      for (let r = cur.next(); r; r = cur.next()) out.push(show(r));
      return out;
    };
    const every = all(byReads);
    assert.equal(every.length, 2000);
    assert.deepEqual(all(whole), every);
    assert.deepEqual(all(whole, undefined, undefined, true), every);
    for (const [from, to] of [['refs/heads/b/', 'refs/heads/b0'], ['refs/tags/', 'refs/tags0'], ['refs/heads/a1', 'refs/heads/a2'], ['a', 'b'], ['refs/zz', undefined], [undefined, 'refs/heads/a10']]) {
      assert.deepEqual(all(whole, from, to, true), all(byReads, from, to, true), `${from}..${to}`);
      assert.deepEqual(all(whole, from, to), all(byReads, from, to), `${from}..${to}`);
      // into given memory (a packet writer's scratch): chunks copied from the held file
      const mem = Buffer.alloc(whole.cursorMemory);
      const into = (p: PackedRefs) => { const out: string[] = []; const cur = p.cursor(from === undefined ? undefined : Buffer.from(from), to === undefined ? undefined : Buffer.from(to), true, mem); for (let r = cur.next(); r; r = cur.next()) out.push(show(r)); return out; };
      assert.deepEqual(into(whole), all(byReads, from, to), `into memory ${from}..${to}`);
    }
    for (const name of ['refs/heads/a0', 'refs/tags/v1998', 'refs/notes/1999', 'refs/heads/b/1', 'refs/heads/a', 'refs/tags/v19', 'refs/zzz', 'a']) {
      assert.equal(show(whole.lookup(Buffer.from(name))), show(byReads.lookup(Buffer.from(name))), name);
    }
    assert.ok(whole.lookup(Buffer.from('refs/tags/v1998'))?.peel === Peel.Peeled);
    whole.unpin();
    byReads.unpin();
  });
}

/** Every ref whose name starts with one of `prefixes`, by the snapshot's seeking scan. */
async function scanned(refs: RefStore, prefixes: string[]): Promise<string[]> {
  const out: string[] = [];
  await refs.scan(prefixes, (r) => { out.push(`${r.hex} ${r.name}${r.symref ? ` -> ${r.symref}` : ''}`); });
  return out;
}

for (const sortedFile of [true, false]) {
  test(`scans by prefix seek to each prefix and equal a filter of every ref (${sortedFile ? 'sorted' : 'unsorted'} packed-refs)`, async () => {
    const d = join(t.dir, `prefix-${sortedFile}.git`);
    git(['init', '-q', '--bare', d]);
    const tree = git(['mktree'], { cwd: d, input: '' }).trim();
    const blob = git(['commit-tree', tree, '-m', 'one'], { cwd: d }).trim();
    const names: string[] = [];
    for (let i = 0; i < 300; i++) names.push(`refs/heads/${['a', 'ab', 'b', 'b/c', 'z'][i % 5]}${i}`);
    names.push('refs/tags/v1', 'refs/tags/v10', 'refs/heads/\u00e9t\u00e9', 'refs/notes/x');
    git(['update-ref', '--stdin'], { cwd: d, input: names.map((n) => `create ${n} ${blob}\n`).join('') });
    git(['pack-refs', '--all'], { cwd: d });
    if (!sortedFile) {
      const lines = fsAll.readFileSync(join(d, 'packed-refs'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
      fsAll.writeFileSync(join(d, 'packed-refs'), `${lines.reverse().join('\n')}\n`);
    }
    // loose refs shadow and add to packed ones, and a symref is listed with its target's id
    const commitHex = git(['commit-tree', tree, '-m', 'two'], { cwd: d }).trim();
    git(['update-ref', 'refs/heads/ab1', commitHex], { cwd: d });
    git(['update-ref', 'refs/heads/ab999', commitHex], { cwd: d });
    git(['symbolic-ref', 'refs/heads/sym', 'refs/heads/ab999'], { cwd: d });
    const repo = Repository.open(d, { env: gitEnv });
    const every = await scanned(repo.refs, ['refs/']);
    assert.equal(every.map((l) => l.replace(/ -> .*/, '')).join('\n') + '\n', git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: d }));
    const cases = [['refs/heads/a'], ['refs/heads/b/', 'refs/heads/a1'], ['refs/heads/ab', 'refs/heads/a'], ['refs/tags/v1'], ['HEAD'], ['refs/heads/zz', 'refs/nothing/'],
      ['refs/heads/\u00e9'], [''], ['refs/heads/sym'], ['refs/heads/z9', 'refs/heads/z', 'refs/heads/b'], ['r', 'refs/heads/a']];
    for (const pfx of cases) {
      const want = every.filter((l) => pfx.some((p) => l.slice(41).startsWith(p)));
      assert.deepEqual(await scanned(repo.refs, pfx), want, pfx.join(','));
      assert.deepEqual(await scanned(repo.refs.snapshot(), pfx), want, `snapshot ${pfx.join(',')}`);
    }
    for (const l of every) {
      const name = l.slice(41).replace(/ -> .*/, '');
      assert.equal(repo.refs.resolve(name)?.hex?.toString(), l.slice(0, 40), name);
    }
    repo.close();
  });
}

test('namespaces: iteration under a nested namespace prefix', () => {
  const repo = Repository.open(ns, { env: { ...gitEnv, GIT_NAMESPACE: 'foo/bar' } });
  assert.equal(repo.namespace, 'refs/namespaces/foo/refs/namespaces/bar/');
  const names = [...repo.refs.iterate(repo.namespace)].map((r) => r.name.toString());
  assert.deepEqual(names, ['refs/namespaces/foo/refs/namespaces/bar/refs/heads/deep']);
});

test('hide refs: git rules with ! and ^', () => {
  const h = new HideRefs(['refs/hidden', '!refs/hidden/keep', '^refs/namespaces/foo/refs/heads/secret']);
  const b = (s: string) => Buffer.from(s);
  assert.equal(h.isHidden(b('refs/hidden/one'), b('refs/hidden/one')), true);
  assert.equal(h.isHidden(b('refs/hidden'), b('refs/hidden')), true);
  assert.equal(h.isHidden(b('refs/hiddenx'), b('refs/hiddenx')), false);
  assert.equal(h.isHidden(b('refs/hidden/keep'), b('refs/hidden/keep')), false);
  assert.equal(h.isHidden(b('refs/heads/secret'), b('refs/namespaces/foo/refs/heads/secret')), true);
  assert.equal(h.isHidden(b('refs/heads/secret'), b('refs/heads/secret')), false);
  const cfg = new Config(parseConfig('[transfer]\n\thiderefs = refs/a/\n[uploadpack]\n\thideRefs = refs/b\n[receive]\n\thiderefs = refs/c\n', 'x', 'local', []));
  const h2 = HideRefs.fromConfig(cfg, 'uploadpack');
  assert.equal(h2.isHidden(b('refs/a/x'), b('refs/a/x')), true);
  assert.equal(h2.isHidden(b('refs/b'), b('refs/b')), true);
  assert.equal(h2.isHidden(b('refs/c'), b('refs/c')), false);
});

test('config: git syntax', () => {
  const text = [
    '# comment', '[core]', '\tbare = false', '\tFileMode', '[Section "Sub Name"]', '  key = "quoted ; value" # trailing',
    '  esc = a\\tb\\\\c\\"d', '  cont = one \\', 'two', '  spaces =   a   b   ', '[legacy.Sub]', '  k = v',
    '[multi]', 'v = 1', 'v = 2', '[num]', 'a = 1k', 'b = 2m', 'c = 1g',
  ].join('\n');
  const c = new Config(parseConfig(text, 'x', 'local', []));
  assert.equal(c.getBool('core.bare', true), false);
  assert.equal(c.getBool('core.filemode', false), true);
  assert.equal(c.get('section.Sub Name.key'), 'quoted ; value');
  assert.equal(c.get('section.Sub Name.esc'), 'a\tb\\c"d');
  assert.equal(c.get('section.Sub Name.cont'), 'one two');
  assert.equal(c.get('section.Sub Name.spaces'), 'a   b');
  assert.equal(c.get('legacy.sub.k'), 'v');
  assert.deepEqual(c.getAll('multi.v'), ['1', '2']);
  assert.equal(c.getInt('num.a', 0), 1024);
  assert.equal(c.getInt('num.b', 0), 2 * 1024 * 1024);
  assert.equal(c.getInt('num.c', 0), 1024 ** 3);
  assert.throws(() => parseConfig('[core]\n key = "unterminated\n', 'x', 'local', []), /bad config line/);
});

test('config: include.path and GIT_CONFIG_PARAMETERS, with scopes', () => {
  const d = join(t.dir, 'cfg');
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'inc'), '[uploadpack]\n\tallowFilter = true\n');
  writeFileSync(join(d, 'config'), '[include]\n\tpath = inc\n[core]\n\tx = 1\n');
  const c = Config.load(d, { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_PARAMETERS: "'core.x=2' 'UploadPack.packObjectsHook'='echo hi' 'a.b'=" });
  assert.equal(c.getBool('uploadpack.allowfilter', false), true);
  assert.equal(c.get('core.x'), '2');
  assert.equal(c.getEntry('uploadpack.packobjectshook', true)?.value, 'echo hi');
  assert.equal(c.get('a.b'), null);
  assert.equal(c.getEntry('uploadpack.allowfilter', true), undefined, 'repository config is not protected');
  const parsed = parseCommandLineConfig({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'Foo.Bar', GIT_CONFIG_VALUE_0: 'v', GIT_CONFIG_PARAMETERS: "'x.y'" });
  assert.deepEqual(parsed.map((e) => [e.key, e.value]), [['foo.bar', 'v'], ['x.y', null]]);
});

test('discovery: bare, work tree, .git file, <dir>.git fallback, and refusal', () => {
  assert.equal(locateRepository(rich).gitDir, join(rich, '.git'));
  assert.equal(locateRepository(alt).gitDir, alt);
  assert.equal(locateRepository(alt.replace(/\.git$/, '')).gitDir, alt);
  const wt = join(t.dir, 'gitfile');
  mkdirSync(wt);
  writeFileSync(join(wt, '.git'), `gitdir: ${join(rich, '.git')}\n`);
  assert.equal(locateRepository(wt).gitDir, join(rich, '.git'));
  assert.throws(() => locateRepository(join(t.dir, 'nope')), (e: Error) => e.message === `'${join(t.dir, 'nope')}' does not appear to be a git repository`);
  assert.throws(() => Repository.open(alt.replace(/\.git$/, ''), { strict: true }), /does not appear to be a git repository/);
});

test('abbreviated ids resolve, ambiguity is reported', () => {
  const repo = Repository.open(rich, { env: gitEnv });
  const head = git(['rev-parse', 'HEAD'], { cwd: rich }).trim();
  assert.deepEqual(repo.odb.findByPrefix(head.slice(0, 7)).map((b) => b.toString('hex')), [head]);
  assert.ok(repo.odb.findByPrefix(head.slice(0, 1)).length >= 2);
});

test('a concurrent git repack -ad does not make reads fail', async () => {
  const d = join(t.dir, 'repackme');
  git(['clone', '-q', '--no-local', rich, d]);
  const repo = Repository.open(d, { env: gitEnv });
  const oids = repo.odb.allObjectsSorted().map((b) => Buffer.from(b));
  let stop = false;
  let reads = 0;
  const reader = (async () => {
    while (!stop) {
      for (const o of oids) {
        assert.ok(repo.odb.read(o), `object ${o.toString('hex')} readable`);
        reads++;
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  for (let i = 0; i < 4; i++) {
    commit(d, `more ${i}`, { [`r${i}`]: `${i}\n` });
    await new Promise<void>((resolve, reject) => {
      const p = spawn('git', ['repack', '-adq', ...(i % 2 ? ['-f'] : [])], { cwd: d, env: gitEnv, stdio: 'ignore' });
      p.on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`repack ${c}`))));
    });
    git(['prune-packed'], { cwd: d });
  }
  stop = true;
  await reader;
  assert.ok(reads > oids.length);
  // new objects written after the repository was opened are found too
  const newest = git(['rev-parse', 'HEAD'], { cwd: d }).trim();
  assert.ok(repo.odb.read(Buffer.from(newest, 'hex')));
  repo.close();
});

test('an unknown extensions.refStorage is refused in git\'s words', () => {
  const d = join(t.dir, 'refstorage-bogus.git');
  git(['init', '-q', '--bare', d]);
  git(['--git-dir', d, 'config', 'core.repositoryformatversion', '1']);
  git(['--git-dir', d, 'config', 'extensions.refStorage', 'bogus']);
  assert.throws(() => Repository.open(d, { env: gitEnv }), /invalid value for 'extensions.refstorage': 'bogus'/);
});

test('multi-pack-index: objects are found through it and read exactly as git does', () => {
  const d = join(t.dir, 'midx');
  git(['clone', '-q', '--no-local', rich, d]);
  for (let i = 0; i < 3; i++) {
    commit(d, `midx ${i}`, { [`m${i}`]: `${i}\n`.repeat(100) });
    git(['repack', '-q'], { cwd: d });
  }
  git(['multi-pack-index', 'write'], { cwd: d });
  const repo = Repository.open(d, { env: gitEnv });
  assert.ok(repo.odb.sources[0]!.midx, 'multi-pack-index loaded');
  assert.ok(renderAll(repo).equals(gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: d })));
  assert.ok(repo.odb.midxHits > 0);
  repo.close();
});

test('pack .idx version 1 reads the same objects', () => {
  const d = join(t.dir, 'idxv1');
  git(['clone', '-q', '--bare', '--no-local', rich, d]);
  git(['repack', '-adq'], { cwd: d });
  const packDir = join(d, 'objects', 'pack');
  const { readdirSync, rmSync } = require_fs();
  const pack = readdirSync(packDir).find((f: string) => f.endsWith('.pack'))!;
  const idx = join(packDir, pack.replace(/\.pack$/, '.idx'));
  rmSync(idx);
  git(['index-pack', '--index-version=1', '-o', idx, join(packDir, pack)], { cwd: d });
  const repo = Repository.open(d, { env: gitEnv });
  assert.equal(repo.odb.sources[0]!.packs[0]!.index.buf.u32(0) === 0xff744f63, false, 'a v1 index (no magic)');
  assert.ok(renderAll(repo).equals(gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: d })));
  repo.close();
});

test('large index files are read through windows, not whole', () => {
  const saved = PackIndex.wholeFileLimit;
  PackIndex.wholeFileLimit = 0;
  try {
    for (const dir of [rich, sha256]) {
      const repo = Repository.open(dir, { env: gitEnv });
      assert.ok(renderAll(repo).equals(gitBuf(['cat-file', '--batch-all-objects', '--batch'], { cwd: dir })));
      const head = git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
      assert.deepEqual(repo.odb.findByPrefix(head.slice(0, 9)).map((b) => b.toString('hex')), [head]);
      repo.close();
    }
  } finally {
    PackIndex.wholeFileLimit = saved;
  }
});

test('an unsorted packed-refs is still looked up and iterated in order', () => {
  const d = join(t.dir, 'unsorted.git');
  git(['clone', '-q', '--bare', '--no-local', rich, d]);
  git(['pack-refs', '--all'], { cwd: d });
  const lines = fsAll.readFileSync(join(d, 'packed-refs'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  // keep each ^peeled line with its ref, reverse the order, drop the sorted trait
  const groups: string[][] = [];
  for (const l of lines) { if (l.startsWith('^')) groups[groups.length - 1]!.push(l); else groups.push([l]); }
  fsAll.writeFileSync(join(d, 'packed-refs'), `# pack-refs with: peeled fully-peeled \n${groups.reverse().flat().join('\n')}\n`);
  const repo = Repository.open(d, { env: gitEnv });
  assert.equal([...repo.refs.iterate()].map((r) => `${r.hex} ${r.name}`).join('\n') + '\n', git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: d }));
  for (const g of groups) {
    const [hex, name] = g[0]!.split(' ');
    assert.equal(files(repo.refs).lookupPacked(name!)?.hex.toString(), hex, name);
  }
  assert.equal(repo.refs.knownPeeled('refs/heads/main'), 'none');
  repo.close();
});
