/**
 * receive.updateServerInfo while the repository is being read: many updates
 * at once over thousands of refs never show a reader a half-written
 * info/refs or objects/info/packs, leave no temporary file behind, and end
 * with what git update-server-info writes; a store where the files cannot
 * go is an error line, never a throw.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { Repository } from '../src/repo/repository.js';
import { updateServerInfo } from '../src/protocol/receive/server-info.js';

let t: { dir: string; cleanup: () => void };
let repo: string;
let head: string;
const REFS = 3000;

before(() => {
  t = tmp('gitwire-sec-server-info-');
  const work = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', work]);
  head = commit(work, 'one', { 'a.txt': 'a\n' });
  git(['tag', '-a', '-m', 'v1', 'v1'], { cwd: work });
  repo = join(t.dir, 'repo.git');
  git(['clone', '-q', '--bare', work, repo]);
  const lines = Array.from({ length: REFS }, (_, i) => `create refs/heads/b/${String(i).padStart(5, '0')} ${head}\n`).join('');
  execFileSync('git', ['update-ref', '--stdin'], { cwd: repo, input: lines, env: gitEnv });
});
after(() => t?.cleanup());

/** A complete info/refs: every line `<hex>\t<name>`, the file ending in a newline, at least `min` lines. */
function complete(text: string, min: number): boolean {
  if (!text.endsWith('\n')) return false;
  const lines = text.slice(0, -1).split('\n');
  return lines.length >= min && lines.every((l) => /^[0-9a-f]{40}\trefs\/\S+$/.test(l));
}

test('many updates at once while readers read: never a half-written file, no temporary left, the end as git writes it', { timeout: 120_000 }, async () => {
  const refsFile = join(repo, 'info', 'refs');
  const packsFile = join(repo, 'objects', 'info', 'packs');
  assert.deepEqual(await updateServerInfo(Repository.open(repo, { env: gitEnv })), []);
  let stop = false;
  let reads = 0;
  const bad: string[] = [];
  const reader = (async () => {
    while (!stop) {
      const [r, p] = await Promise.all([readFile(refsFile, 'latin1'), readFile(packsFile, 'latin1').catch(() => '\n')]);
      reads++;
      if (!complete(r, REFS)) bad.push(`info/refs of ${r.length} bytes`);
      if (!/^(P pack-[0-9a-f]{40}\.pack\n)*\n$/.test(p)) bad.push(`objects/info/packs: ${JSON.stringify(p.slice(0, 80))}`);
    }
  })();
  for (let round = 0; round < 8; round++) {
    // refs come and go between the rounds, and a pack arrives now and then
    const edits = Array.from({ length: 200 }, (_, i) => `${round % 2 ? 'delete' : 'create'} refs/heads/r/${i}${round % 2 ? '' : ` ${head}`}\n`).join('');
    execFileSync('git', ['update-ref', '--stdin'], { cwd: repo, input: edits, env: gitEnv });
    if (round === 3) execFileSync('git', ['repack', '-q', '-a'], { cwd: repo, env: gitEnv });
    const runs = await Promise.all(Array.from({ length: 6 }, () => updateServerInfo(Repository.open(repo, { env: gitEnv }))));
    for (const errs of runs) assert.deepEqual(errs, []);
  }
  stop = true;
  await reader;
  assert.ok(reads > 0);
  assert.deepEqual(bad, []);
  assert.deepEqual(readdirSync(join(repo, 'info')).filter((f) => f !== 'refs' && f !== 'exclude'), []);
  assert.deepEqual(readdirSync(join(repo, 'objects', 'info')).filter((f) => f !== 'packs'), []);
  // settled: one more update equals git's own
  await updateServerInfo(Repository.open(repo, { env: gitEnv }));
  const ours = await readFile(refsFile, 'latin1');
  git(['update-server-info'], { cwd: repo });
  assert.equal(await readFile(refsFile, 'latin1'), ours);
});

test('info/ and objects/info/ replaced by files: git\'s "unable to update" lines, no throw', async () => {
  const d = join(t.dir, 'broken.git');
  git(['clone', '-q', '--bare', repo, d]);
  rmSync(join(d, 'info'), { recursive: true, force: true });
  writeFileSync(join(d, 'info'), 'not a directory\n');
  rmSync(join(d, 'objects', 'info'), { recursive: true, force: true });
  writeFileSync(join(d, 'objects', 'info'), 'not a directory\n');
  const errs = await updateServerInfo(Repository.open(d, { env: gitEnv }));
  assert.equal(errs.length, 2);
  assert.match(errs[0]!, new RegExp(`^error: unable to update ${join(d, 'info', 'refs')}: `));
  assert.match(errs[1]!, new RegExp(`^error: unable to update ${join(d, 'objects', 'info', 'packs')}: `));
});
