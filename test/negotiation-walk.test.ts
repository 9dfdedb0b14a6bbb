/**
 * The negotiation walk (protocol/negotiation.ts) against git on random
 * histories: merges, octopus merges, several roots and commit dates out
 * of order, with no commit-graph, with one over the older part only (the
 * walk mixes graph positions with commits read as objects) and with one
 * over everything. Random wants and haves (known commits, trees, unknown
 * ids) go to `git upload-pack --stateless-rpc` and to gitwire's; the
 * answers must be the same bytes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { git, gitEnv, tmp } from './helpers/git.js';
import { pkt } from './helpers/pkt.js';
import { MemorySink } from '../src/pktline/sink.js';
import { uploadPack } from '../src/protocol/upload-pack.js';

const COMMITS = 160;
const GRAPHED = 100; // the partial graph covers the first commits only

let t: ReturnType<typeof tmp>;
const repos: Record<'none' | 'partial' | 'full', string> = { none: '', partial: '', full: '' };
let commits: string[] = [];
let trees: string[] = [];
let tips: string[] = [];

/** mulberry32 */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** fast-import text for commits [from, to): parents among earlier commits, some dates skewed far back */
function dag(from: number, to: number, rnd: () => number): string {
  let s = '';
  for (let i = from; i < to; i++) {
    const parents = new Set<number>();
    const r = rnd();
    if (i > 0 && r > 0.04) {
      parents.add(Math.max(0, i - 1 - Math.floor(rnd() * Math.min(i, 6))));
      if (r > 0.75) parents.add(Math.floor(rnd() * i));
      if (r > 0.95) parents.add(Math.floor(rnd() * i));
    }
    const skew = rnd() < 0.12 ? -Math.floor(rnd() * 20_000) : 0;
    s += parents.size ? '' : 'reset refs/heads/tmp\n';
    s += `commit refs/heads/tmp\nmark :${i + 1}\ncommitter C <c@example.com> ${1_600_000_000 + i * 100 + skew} +0000\ndata ${String(i).length}\n${i}\n`;
    const [first, ...merges] = [...parents];
    if (first !== undefined) s += `from :${first + 1}\n`;
    for (const m of merges) s += `merge :${m + 1}\n`;
    s += `M 644 inline f${i % 7}\ndata ${String(i).length + 1}\n${i}\n\n`;
  }
  return s;
}

function build(dir: string, graph: 'none' | 'partial' | 'full'): void {
  git(['init', '-q', '--bare', dir]);
  const env = { GIT_DIR: dir };
  const marks = join(dir, 'marks');
  git(['fast-import', '--quiet', '--force', `--export-marks=${marks}`], { cwd: dir, input: dag(0, GRAPHED, prng(7)), env });
  if (graph === 'partial') git(['commit-graph', 'write', '--reachable'], { cwd: dir, env });
  const rnd = prng(7);
  dag(0, GRAPHED, rnd); // the same random sequence on
  git(['fast-import', '--quiet', '--force', `--import-marks=${marks}`, `--export-marks=${marks}`], { cwd: dir, input: dag(GRAPHED, COMMITS, rnd), env });
  if (graph === 'full') git(['commit-graph', 'write', '--reachable'], { cwd: dir, env });
}

before(() => {
  t = tmp('gitwire-negwalk-');
  for (const k of ['none', 'partial', 'full'] as const) {
    repos[k] = join(t.dir, `${k}.git`);
    build(repos[k], k);
  }
  const d = repos.none;
  // commits by mark, in creation order (the three repositories hold the same objects)
  commits = readMarks(join(d, 'marks'));
  trees = commits.slice(0, 20).map((c) => git(['rev-parse', `${c}^{tree}`], { cwd: d, env: { GIT_DIR: d } }).trim());
  // branch tips: a few commits become refs (v0 wants must be advertised)
  const rnd = prng(11);
  tips = [commits[COMMITS - 1]!];
  for (let i = 0; i < 5; i++) tips.push(commits[Math.floor(rnd() * COMMITS)]!);
  for (const k of Object.values(repos)) tips.forEach((c, i) => git(['update-ref', `refs/heads/b${i}`, c], { cwd: k, env: { GIT_DIR: k } }));
  for (const k of ['partial', 'full'] as const) assert.ok(existsSync(join(repos[k], 'objects', 'info', 'commit-graph')));
  // the partial graph really leaves the newer commits out
  assert.equal(git(['commit-graph', 'verify'], { cwd: repos.partial, env: { GIT_DIR: repos.partial } }), '');
});
after(() => t.cleanup());

function readMarks(file: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
    const [m, oid] = line.split(' ');
    out[Number(m!.slice(1)) - 1] = oid!;
  }
  return out;
}

function gitReply(dir: string, body: Buffer): Buffer {
  return spawnSync('git', ['upload-pack', '--stateless-rpc', dir], { input: body, env: gitEnv, maxBuffer: 1 << 26 }).stdout;
}

async function ours(dir: string, body: Buffer): Promise<Buffer> {
  const sink = new MemorySink();
  await uploadPack({ directory: dir, input: body, output: sink, env: gitEnv, statelessRpc: true });
  return sink.data;
}

const haveArb = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: COMMITS - 1 }).map((i) => ({ kind: 'commit' as const, i })) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 19 }).map((i) => ({ kind: 'tree' as const, i })) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 0xffffff }).map((i) => ({ kind: 'unknown' as const, i })) },
);

test('random histories, wants and haves: the walk answers as git does, with no, a partial and a full commit-graph', async () => {
  await fc.assert(fc.asyncProperty(
    fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 3 }),
    fc.array(haveArb, { minLength: 1, maxLength: 40 }),
    fc.constantFrom('multi_ack_detailed', 'multi_ack'),
    async (wants, haves, ack) => {
      const lines = wants.map((w, i) => `want ${tips[w]}${i === 0 ? ` ${ack} side-band-64k` : ''}\n`);
      lines.push('0000');
      for (const h of haves) {
        const oid = h.kind === 'commit' ? commits[h.i]! : h.kind === 'tree' ? trees[h.i]! : h.i.toString(16).padStart(40, 'e');
        lines.push(`have ${oid}\n`);
      }
      lines.push('0000');
      const body = pkt(lines);
      for (const dir of Object.values(repos)) {
        const want = gitReply(dir, body);
        const got = await ours(dir, body);
        assert.equal(got.toString('latin1'), want.toString('latin1'), `${dir}\n${lines.join('')}`);
      }
    },
  ), { seed: 20261201, numRuns: 60 });
});
