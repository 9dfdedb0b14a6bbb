/**
 * isAncestor (receive.denyNonFastForwards, authorizePush's `kind`) against
 * `git merge-base --is-ancestor` on a random DAG with merges and committer
 * dates out of order, and the walk's cost on a force push over a long history.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { git, run, tmp } from './helpers/git.js';
import { Repository } from '../src/repo/repository.js';
import { isAncestor } from '../src/repo/reach.js';

/** fast-import stream: commit i has parents from `parents[i]`, committer time `times[i]`. */
function dagStream(parents: number[][], times: number[]): string {
  let s = '';
  for (let i = 0; i < parents.length; i++) {
    s += `commit refs/heads/c${i}\nmark :${i + 1}\ncommitter C <c@example.com> ${times[i]} +0000\ndata 4\nc${String(i).padStart(2, '0').slice(-2)}\n`;
    const ps = parents[i]!;
    if (ps.length) s += `from :${ps[0]! + 1}\n`;
    for (const p of ps.slice(1)) s += `merge :${p + 1}\n`;
    s += '\n';
  }
  return s;
}

test('isAncestor answers as git merge-base --is-ancestor on a random DAG with skewed dates', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'r.git');
    git(['init', '-q', '--bare', dir]);
    let seed = 12345;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
    const N = 160;
    const parents: number[][] = [], times: number[] = [];
    for (let i = 0; i < N; i++) {
      const ps: number[] = [];
      if (i > 0 && rnd(12) !== 0) ps.push(i - 1 - rnd(Math.min(i, 8)));
      if (i > 2 && rnd(4) === 0) { const m = rnd(i); if (!ps.includes(m)) ps.push(m); }
      parents.push(ps);
      // mostly increasing, with a commit dated before its parents now and then
      times.push(1_600_000_000 + i * 60 - (rnd(7) === 0 ? 3600 * (1 + rnd(5)) : 0));
    }
    git(['fast-import', '--quiet'], { cwd: dir, input: dagStream(parents, times) });
    const ids = git(['for-each-ref', '--format=%(refname:lstrip=2) %(objectname)'], { cwd: dir }).trim().split('\n')
      .reduce((m, l) => { const [n, h] = l.split(' '); m.set(Number(n!.slice(1)), h!); return m; }, new Map<number, string>());
    const repo = new Repository(dir, dir, process.env);
    let yes = 0, checked = 0;
    try {
      for (let k = 0; k < 250; k++) {
        const a = rnd(N), b = rnd(N);
        const ha = ids.get(a)!, hb = ids.get(b)!;
        const r = run('git', ['merge-base', '--is-ancestor', ha, hb], { cwd: dir });
        assert.ok(r.status === 0 || r.status === 1, String(r.stderr));
        const got = await isAncestor(repo, Buffer.from(ha, 'hex'), Buffer.from(hb, 'hex'));
        assert.equal(got, r.status === 0, `is c${a} an ancestor of c${b}?`);
        if (got) yes++;
        checked++;
      }
    } finally { repo.close(); }
    assert.equal(checked, 250);
    assert.ok(yes > 20 && yes < 230, `both answers are exercised (${yes} yes)`);
  } finally { t.cleanup(); }
});

test('a force push over a long history walks down to the merge base, not the whole history', async () => {
  const t = tmp();
  try {
    const dir = join(t.dir, 'r.git');
    git(['init', '-q', '--bare', dir]);
    // 3,000 commits of trunk, then two 5-commit branches off its tip
    const parents: number[][] = [], times: number[] = [];
    for (let i = 0; i < 3000; i++) { parents.push(i ? [i - 1] : []); times.push(1_600_000_000 + i); }
    for (const side of [0, 1]) for (let j = 0; j < 5; j++) {
      parents.push([j ? parents.length - 1 : 2999]); times.push(1_600_010_000 + side * 100 + j);
    }
    git(['fast-import', '--quiet'], { cwd: dir, input: dagStream(parents, times) });
    const hex = (i: number) => git(['rev-parse', `refs/heads/c${i}`], { cwd: dir }).trim();
    const repo = new Repository(dir, dir, process.env);
    try {
      let reads = 0;
      const counting = { commit: (oid: Buffer) => { reads++; return repo.commit(oid); } };
      const oldTip = Buffer.from(hex(3004), 'hex'), newTip = Buffer.from(hex(3009), 'hex');
      assert.equal(await isAncestor(counting, oldTip, newTip), false);
      assert.ok(reads < 100, `commits read: ${reads}`);
      reads = 0;
      assert.equal(await isAncestor(counting, Buffer.from(hex(2999), 'hex'), newTip), true);
      assert.ok(reads < 100, `commits read: ${reads}`);
      assert.equal(await isAncestor(counting, Buffer.from(hex(0), 'hex'), newTip), true, 'the root is an ancestor');
    } finally { repo.close(); }
  } finally { t.cleanup(); }
});
