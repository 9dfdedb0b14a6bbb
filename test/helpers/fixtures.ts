/**
 * Fixture repositories made with real git at test time (never committed).
 * Each builder is deterministic: fixed names and dates.
 */
import { mkdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, gitEnv } from './git.js';

let tick = 1700000000;
function commitEnv(): NodeJS.ProcessEnv {
  tick += 60;
  return { GIT_AUTHOR_DATE: `${tick} +0000`, GIT_COMMITTER_DATE: `${tick} +0000` };
}

export function commit(dir: string, msg: string, files: Record<string, string | Buffer>): string {
  for (const [name, content] of Object.entries(files)) {
    const p = join(dir, name);
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, content);
  }
  git(['add', '-A'], { cwd: dir });
  git(['commit', '-q', '--allow-empty', '-m', msg], { cwd: dir, env: commitEnv() });
  return git(['rev-parse', 'HEAD'], { cwd: dir }).trim();
}

function lines(n: number, seed: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += `line ${i} of file ${seed} ${(i * 7919 + seed) % 1000}\n`;
  return s;
}

/**
 * A non-bare repository with: an OFS_DELTA pack, a REF_DELTA pack, loose
 * objects, a >1 MiB blob, branches, lightweight and annotated tags (and a
 * tag of a tag), packed and loose refs.
 */
export function makeRichRepo(dir: string, opts: { objectFormat?: 'sha1' | 'sha256' } = {}): string {
  const repo = join(dir, 'rich');
  git(['init', '-q', '-b', 'main', ...(opts.objectFormat ? [`--object-format=${opts.objectFormat}`] : []), repo]);
  for (let i = 0; i < 12; i++) {
    commit(repo, `commit ${i}`, { 'a.txt': lines(200 + i * 3, 1), [`dir${i % 3}/f${i}.txt`]: lines(50, i), 'b.txt': lines(100, i % 2) });
  }
  git(['tag', 'v1.0'], { cwd: repo });
  git(['tag', '-a', '-m', 'annotated one', 'v1.1'], { cwd: repo, env: commitEnv() });
  git(['branch', 'feature/x', 'HEAD~3'], { cwd: repo });
  git(['-c', 'pack.writeBitmapHashCache=false', 'repack', '-adfq'], { cwd: repo });
  // second pack with REF_DELTA entries
  for (let i = 12; i < 18; i++) commit(repo, `commit ${i}`, { 'a.txt': lines(260 + i, 1), 'c.txt': lines(80 + i, 3) });
  const big = Buffer.alloc(1200 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 10)) & 0xff;
  commit(repo, 'big blob', { 'big.bin': big });
  const base = git(['rev-parse', 'v1.1^{}'], { cwd: repo }).trim();
  git(['pack-objects', '-q', '--revs', join(repo, '.git/objects/pack/pack')], { cwd: repo, input: `HEAD\n^${base}\n` });
  git(['prune-packed'], { cwd: repo });
  git(['pack-refs', '--all'], { cwd: repo });
  // loose objects and loose refs on top
  git(['tag', '-a', '-m', 'tag of v1.1', 'v1.1-outer', 'v1.1'], { cwd: repo, env: commitEnv() });
  for (let i = 18; i < 21; i++) commit(repo, `loose ${i}`, { 'a.txt': lines(300 + i, 1), [`loose/${i}.txt`]: lines(10, i) });
  git(['tag', 'v2.0'], { cwd: repo });
  git(['tag', '-a', '-m', 'tree tag', 'treetag', 'HEAD^{tree}'], { cwd: repo, env: commitEnv() });
  git(['branch', 'loose-branch', 'HEAD~1'], { cwd: repo });
  git(['update-ref', 'refs/merge-requests/1/head', 'HEAD~2'], { cwd: repo });
  git(['symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/heads/main'], { cwd: repo });
  return repo;
}

/** A clone of `source` that borrows its objects through objects/info/alternates. */
export function makeAlternateRepo(dir: string, source: string): string {
  const repo = join(dir, 'alt.git');
  git(['clone', '-q', '--bare', '--shared', source, repo]);
  git(['--git-dir', repo, 'fetch', '-q', source, '+refs/heads/*:refs/heads/*'], {});
  const work = join(dir, 'alt-work');
  git(['clone', '-q', repo, work]);
  commit(work, 'alt commit', { 'alt.txt': 'only in alt\n' });
  git(['push', '-q', 'origin', 'HEAD:refs/heads/alt'], { cwd: work });
  return repo;
}

/** A repository with refs in two namespaces and a hidden-ref config. */
export function makeNamespaceRepo(dir: string): string {
  const repo = join(dir, 'ns');
  git(['init', '-q', '-b', 'main', repo]);
  const c1 = commit(repo, 'one', { 'x': '1\n' });
  const c2 = commit(repo, 'two', { 'x': '2\n' });
  git(['update-ref', 'refs/namespaces/foo/refs/heads/main', c1], { cwd: repo });
  git(['update-ref', 'refs/namespaces/foo/refs/heads/secret', c2], { cwd: repo });
  git(['update-ref', 'refs/namespaces/foo/refs/namespaces/bar/refs/heads/deep', c2], { cwd: repo });
  git(['symbolic-ref', 'refs/namespaces/foo/HEAD', 'refs/namespaces/foo/refs/heads/main'], { cwd: repo });
  git(['update-ref', 'refs/hidden/one', c1], { cwd: repo });
  git(['update-ref', 'refs/heads/visible', c1], { cwd: repo });
  return repo;
}

export { gitEnv, appendFileSync };
