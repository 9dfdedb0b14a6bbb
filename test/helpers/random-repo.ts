/**
 * Random repositories for the property tests of #37: merges, skewed commit
 * dates, directories copied and moved, shared blobs, tags, a sparse pattern
 * blob; written by one `git fast-import` (deterministic per seed).
 */
import { join } from 'node:path';
import { git } from './git.js';

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export interface RandomRepo { gitDir: string; commits: string[]; tags: string[]; trees: string[]; blobs: string[]; patterns: string }

/** A random repository written by one `git fast-import`. */
export function randomRepo(dir: string, seed: number, format?: 'sha256'): RandomRepo {
  const r = rng(seed);
  const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
  const gitDir = join(dir, `r${seed}.git`);
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

