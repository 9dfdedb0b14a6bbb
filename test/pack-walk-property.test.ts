/**
 * The property test of #37 for the walk: over random repositories (merges,
 * skewed commit dates, directories copied and moved, shared blobs, tags)
 * and random requests (wants, haves, shallow grafts, thin, include-tag,
 * every filter), the plan's object set equals what git pack-objects packs.
 * Seeded: a failure names the seed and the request.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import fc from 'fast-check';
import { git, tmp } from './helpers/git.js';
import { gitPackSet, request, walkSet } from './helpers/pack-walk.js';

const t = tmp('gitwire-walkprop-');
after(() => t.cleanup());

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface RandomRepo { gitDir: string; commits: string[]; tags: string[]; trees: string[]; blobs: string[]; patterns: string }

/** A random repository written by one `git fast-import`. */
function randomRepo(seed: number, format?: 'sha256'): RandomRepo {
  const r = rng(seed);
  const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
  const gitDir = join(t.dir, `r${seed}.git`);
  git(['init', '-q', '--bare', ...(format ? [`--object-format=${format}`] : []), gitDir]);
  const names = ['a', 'b', 'c', 'lib', 'x.md'];
  const files = new Map<string, string>();
  let s = '';
  let mark = 0;
  const commitMarks: number[] = [];
  const n = 8 + Math.floor(r() * 18);
  let date = 1700000000;
  for (let i = 0; i < n; i++) {
    // a random change to the model (write, copy a directory whole, move a file, delete); each commit writes the whole tree
    const k = 1 + Math.floor(r() * 3);
    for (let j = 0; j < k; j++) {
      const roll = r();
      const path = `${pick(names)}/${pick(names)}${r() < 0.4 ? `/${pick(names)}` : ''}`;
      if (roll < 0.55 || files.size === 0) {
        files.set(path, `content ${Math.floor(r() * 6)}\n`.repeat(1 + Math.floor(r() * 80)));
      } else if (roll < 0.75) {
        const dirFrom = pick([...files.keys()]).split('/')[0]!, dirTo = pick(names);
        if (dirFrom !== dirTo) {
          for (const p of [...files.keys()]) if (p.startsWith(`${dirTo}/`) || p === dirTo) files.delete(p);
          for (const [p, c] of [...files]) if (p.startsWith(`${dirFrom}/`)) files.set(`${dirTo}/${p.slice(dirFrom.length + 1)}`, c);
        }
      } else if (roll < 0.9) {
        const from = pick([...files.keys()]);
        const to = `${pick(names)}/moved${i}`;
        if (![...files.keys()].some((p) => p.startsWith(`${to}/`) || to.startsWith(`${p}/`))) { files.set(to, files.get(from)!); files.delete(from); }
      } else files.delete(pick([...files.keys()]));
    }
    // a path both a file and a directory cannot be: the file goes
    for (const p of [...files.keys()]) if ([...files.keys()].some((q) => q.startsWith(`${p}/`))) files.delete(p);
    const ops = ['deleteall', ...[...files].map(([p, c]) => `M 100644 inline ${p}\ndata ${Buffer.byteLength(c)}\n${c.slice(0, -1)}`)];
    const m = ++mark;
    // skewed dates: now and then a commit older than its parent
    date += r() < 0.2 ? -Math.floor(r() * 5000) : Math.floor(r() * 3000);
    const parents: number[] = [];
    if (commitMarks.length) parents.push(r() < 0.8 ? commitMarks[commitMarks.length - 1]! : pick(commitMarks));
    if (commitMarks.length > 2 && r() < 0.25) parents.push(pick(commitMarks));
    s += `commit refs/heads/b${i % 3}\nmark :${m}\ncommitter C <c@x> ${date} +0000\ndata 3\nc${i}\n`;
    if (parents.length) s += `from :${parents[0]}\n`;
    for (const p of parents.slice(1)) if (p !== parents[0]) s += `merge :${p}\n`;
    const pat = 'a/\n!a/*/\nlib/x.md\n*.md\n';
    ops.push(`M 100644 inline .sp\ndata ${pat.length}\n${pat.slice(0, -1)}`);
    s += ops.join('\n') + '\n\n';
    commitMarks.push(m);
    if (r() < 0.2) s += `tag t${i}\nfrom :${m}\ntagger T <t@x> ${date} +0000\ndata 2\nt\n\n`;
  }
  git(['fast-import', '--quiet'], { env: { GIT_DIR: gitDir }, input: s });
  if (r() < 0.5) git(['--git-dir', gitDir, 'repack', '-adq']);
  if (r() < 0.5) git(['--git-dir', gitDir, 'commit-graph', 'write', '--reachable']);
  const objs = git(['--git-dir', gitDir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)']).split('\n').filter(Boolean).map((l) => l.split(' '));
  const of = (type: string) => objs.filter((o) => o[1] === type).map((o) => o[0]!);
  const patterns = git(['--git-dir', gitDir, 'rev-parse', 'b0~0:.sp']).trim();
  return { gitDir, commits: of('commit'), tags: of('tag'), trees: of('tree'), blobs: of('blob'), patterns };
}

const FILTERS = [undefined, undefined, undefined, 'blob:none', 'blob:limit=200', 'tree:0', 'tree:1', 'tree:2', 'object:type=blob', 'object:type=tree',
  'object:type=commit', 'sparse:oid=PATTERNS', 'combine:tree:2+blob:limit=300', 'combine:sparse:oid=PATTERNS+tree:3'];

test('random repositories and requests: the walk packs what git packs', async () => {
  const repos = [randomRepo(11), randomRepo(23), randomRepo(37), randomRepo(41, 'sha256')];
  // one repository with the classic edge marking (git and the walk both read it from the repository)
  git(['--git-dir', repos[1]!.gitDir, 'config', 'pack.useSparse', 'false']);
  let cases = 0;
  await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => one(seed).catch((e: unknown) => {
    // fast-check reports the seed; the reason is printed here
    console.error(e);
    throw e;
  })), { seed: 4242, numRuns: 400, endOnFailure: true });
  async function one(seed: number): Promise<void> {
    const r = rng(seed);
    const repo = repos[seed % repos.length]!;
    const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
    const some = (a: string[], max: number) => Array.from({ length: Math.floor(r() * (max + 1)) }, () => pick(a));
    const wants = [pick(repo.commits), ...some(repo.commits, 2)];
    if (r() < 0.15 && repo.tags.length) wants.push(pick(repo.tags));
    if (r() < 0.1) wants.push(pick(repo.trees));
    if (r() < 0.05) wants.push(pick(repo.blobs));
    const haves = some(repo.commits, 3);
    if (r() < 0.1 && repo.tags.length) haves.push(pick(repo.tags));
    const useShallow = r() < 0.3;
    const filter = pick(FILTERS)?.replaceAll('PATTERNS', repo.patterns);
    const req = request(repo.gitDir, {
      wants: wants.map((h) => Buffer.from(h, 'hex')),
      haves: haves.map((h) => Buffer.from(h, 'hex')),
      extraEdges: r() < 0.1 ? [Buffer.from(pick(repo.commits), 'hex')] : [],
      shallow: useShallow ? some(repo.commits, 3).map((h) => Buffer.from(h, 'hex')) : [],
      useShallow,
      thin: r() < 0.5,
      includeTag: r() < 0.5,
      filter,
    });
    const want = gitPackSet(req, t.dir);
    const ours = await walkSet(req);
    cases++;
    if (ours.sorted.join() !== want.join()) {
      const extra = ours.sorted.filter((x) => !want.includes(x)), lacking = want.filter((x) => !ours.sorted.includes(x));
      assert.fail(`seed ${seed}: ${JSON.stringify({ ...req, wants, haves, shallow: req.shallow.map((b) => b.toString('hex')), extraEdges: req.extraEdges.map((b) => b.toString('hex')) })}: extra ${extra.join(' ')}; lacking ${lacking.join(' ')}`);
    }
  }
  assert.equal(cases, 400);
});
