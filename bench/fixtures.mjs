/**
 * Deterministic benchmark fixtures, made with real git (fast-import, fixed
 * names and dates), cached under bench/.fixtures/ (or $GITWIRE_BENCH_FIXTURES,
 * so that several checkouts can share one set) and rebuilt when this script
 * changes.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, renameSync, cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
export const FIXTURES = process.env.GITWIRE_BENCH_FIXTURES || join(HERE, '.fixtures');
/**
 * The stamp written into each fixture; a fixture with another stamp is
 * rebuilt. It was this script's own hash, which made checkouts that share
 * $GITWIRE_BENCH_FIXTURES at different versions rebuild each other's
 * fixtures in turn; it is now fixed (the hash of the last version that
 * changed a builder's output). Change it when a builder's output changes.
 * Additions that every version can live with (a commit-graph) are made by
 * `withCommitGraph()` on fixtures already built, without a rebuild.
 */
const SELF_HASH = '8ffdccb429bc';

export const env = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C',
  GIT_AUTHOR_NAME: 'Bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'Bench', GIT_COMMITTER_EMAIL: 'bench@example.com',
  GIT_AUTHOR_DATE: '1600000000 +0000', GIT_COMMITTER_DATE: '1600000000 +0000',
};
const git = (args, opts = {}) => execFileSync('git', args, { env, maxBuffer: 1 << 30, ...opts }).toString();

/** mulberry32: a small deterministic PRNG */
function prng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const SYL = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'to', 'vi', 'ze', 'pa', 'qu', 'ri', 'ba', 'do', 'fe', 'gi', 'hu', 'ja', 'xo', 'wy'];
function words(rand, n) {
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(rand() * 4);
    for (let j = 0; j < k; j++) s += SYL[Math.floor(rand() * SYL.length)];
    s += i + 1 < n ? ' ' : '';
  }
  return s;
}

function progress(label, done, total) {
  if (!process.stderr.isTTY && done !== total && done % Math.max(1, Math.floor(total / 10)) !== 0) return;
  const w = 30, f = Math.round((done / total) * w);
  process.stderr.write(`\r  ${label} [${'#'.repeat(f)}${'.'.repeat(w - f)}] ${done}/${total}${done === total ? '\n' : ''}`);
}

/** Stream commands into git fast-import with backpressure. */
async function fastImport(repo, produce) {
  const p = spawn('git', ['fast-import', '--quiet', '--done'], { cwd: repo, env, stdio: ['pipe', 'inherit', 'inherit'] });
  const write = (s) => (p.stdin.write(s) ? Promise.resolve() : new Promise((r) => p.stdin.once('drain', r)));
  await produce(write);
  await write('done\n');
  p.stdin.end();
  const code = await new Promise((r) => p.on('exit', r));
  if (code !== 0) throw new Error(`fast-import failed: ${code}`);
}

function ready(name) {
  const dir = join(FIXTURES, name);
  const stamp = join(dir, '.gitwire-fixture');
  return { dir, ok: existsSync(stamp) && readFileSync(stamp, 'utf8') === SELF_HASH, done: () => writeFileSync(stamp, SELF_HASH) };
}

/**
 * git gc writes a commit-graph (gc.writeCommitGraph) and repack alone does
 * not; users' repositories have one. Written once, on first use of a
 * fixture that lacks it (so fixtures built by any version get it).
 */
function withCommitGraph(dir) {
  const objects = existsSync(join(dir, 'objects')) ? join(dir, 'objects') : join(dir, '.git', 'objects');
  if (!existsSync(join(objects, 'info', 'commit-graph'))) git(['commit-graph', 'write', '--reachable'], { cwd: dir });
  return dir;
}

function fresh(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  git(['init', '-q', '--bare', '-b', 'main', dir]);
}

const who = (t) => `Bench <bench@example.com> ${t} +0000`;

/** refs-11k: ~2,000 commits and ~11,000 refs in packed-refs (GitLab's case). */
export async function refs11k() {
  const f = ready('refs-11k.git');
  if (f.ok) return f.dir;
  process.stderr.write('building fixture refs-11k\n');
  fresh(f.dir);
  const N = 2000;
  await fastImport(f.dir, async (write) => {
    for (let i = 1; i <= N; i++) {
      const msg = `commit ${i}\n`;
      await write(`commit refs/heads/main\nmark :${i}\ncommitter ${who(1600000000 + i * 60)}\ndata ${msg.length}\n${msg}${i > 1 ? `from :${i - 1}\n` : ''}M 100644 inline file${i % 50}.txt\ndata ${String(i).length + 1}\n${i}\n\n`);
      progress('commits', i, N);
    }
    // 3,000 branches, 2,000 lightweight tags, 2,000 annotated tags, 4,000 merge requests
    for (let i = 0; i < 3000; i++) await write(`reset refs/heads/feature/b${String(i).padStart(4, '0')}\nfrom :${1 + (i * 7) % N}\n\n`);
    for (let i = 0; i < 2000; i++) await write(`reset refs/tags/light-${String(i).padStart(4, '0')}\nfrom :${1 + (i * 11) % N}\n\n`);
    for (let i = 0; i < 2000; i++) {
      const m = `release ${i}\n`;
      await write(`tag v${String(i).padStart(4, '0')}\nfrom :${1 + (i * 13) % N}\ntagger ${who(1700000000 + i)}\ndata ${m.length}\n${m}\n`);
    }
    for (let i = 0; i < 4000; i++) await write(`reset refs/merge-requests/${i}/head\nfrom :${1 + (i * 17) % N}\n\n`);
  });
  git(['pack-refs', '--all'], { cwd: f.dir });
  git(['repack', '-adq'], { cwd: f.dir });
  f.done();
  return f.dir;
}

/** refs-1m: 1,000,000 refs in packed-refs (one ref per commit, as linux.git would have). */
export async function refs1m() {
  const f = ready('refs-1m.git');
  if (f.ok) return f.dir;
  process.stderr.write('building fixture refs-1m\n');
  fresh(f.dir);
  const N = 1_000_000;
  await fastImport(f.dir, async (write) => {
    let batch = '';
    for (let i = 1; i <= N; i++) {
      const msg = `c${i}\n`;
      batch += `commit refs/heads/main\nmark :${i}\ncommitter ${who(1600000000 + i)}\ndata ${msg.length}\n${msg}${i > 1 ? `from :${i - 1}\n` : ''}\n`;
      if (i % 5000 === 0) { await write(batch); batch = ''; progress('commits', i, N); }
    }
    await write(batch);
    // marks → refs: written with export-marks below
    await write(`reset refs/heads/main\nfrom :${N}\n\n`);
  });
  // one ref per commit, straight into packed-refs (sorted, as git writes it)
  const revs = git(['rev-list', '--reverse', 'main'], { cwd: f.dir, maxBuffer: 1 << 30 }).split('\n').filter(Boolean);
  const lines = [];
  for (let i = 0; i < revs.length; i++) {
    const kind = i % 10 === 0 ? 'tags' : 'heads';
    lines.push(`${revs[i]} refs/${kind}/r${String(i).padStart(7, '0')}`);
  }
  lines.push(`${revs[revs.length - 1]} refs/heads/main`);
  lines.sort((a, b) => (a.slice(41) < b.slice(41) ? -1 : 1));
  writeFileSync(join(f.dir, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${lines.join('\n')}\n`);
  rmSync(join(f.dir, 'refs', 'heads', 'main'), { force: true });
  f.done();
  return f.dir;
}

/**
 * The reftable twin of a fixture (refs-11k, refs-1m): `<name>-reftable.git`
 * beside it, its objects hard-linked and its refs converted by `git refs
 * migrate` of `gitBin`, a git >= 2.45 (the installed one may be older).
 * packed-refs is a hard link to the original's; migrate replaces it by a
 * rename, so the original stays as it was. Rebuilt when the original is.
 */
export function reftableTwin(dir, gitBin) {
  const twin = `${dir.replace(/\.git$/, '')}-reftable.git`;
  const stamp = join(twin, '.gitwire-reftable-fixture');
  const want = `${readFileSync(join(dir, '.gitwire-fixture'), 'utf8')} reftable\n`;
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return twin;
  process.stderr.write(`building fixture ${twin.slice(twin.lastIndexOf('/') + 1)}\n`);
  rmSync(twin, { recursive: true, force: true });
  execFileSync('cp', ['-al', dir, twin]);
  rmSync(join(twin, '.gitwire-fixture'), { force: true });
  execFileSync(gitBin, ['refs', 'migrate', '--ref-format=reftable'], { cwd: twin, env, stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(stamp, want);
  return twin;
}

/** history: tens of thousands of commits over a few thousand files with realistic edits; repacked with bitmaps. */
export async function history() {
  const f = ready('history.git');
  if (f.ok) return withCommitGraph(f.dir);
  process.stderr.write('building fixture history (a few minutes, once)\n');
  fresh(f.dir);
  const rand = prng(42);
  const FILES = 2500, COMMITS = 30000, LINES = 30;
  const files = [];
  for (let i = 0; i < FILES; i++) {
    const lines = [];
    for (let l = 0; l < LINES; l++) lines.push(words(rand, 10));
    files.push({ path: `src/mod${String(i % 50).padStart(2, '0')}/file${String(i).padStart(4, '0')}.txt`, lines });
  }
  await fastImport(f.dir, async (write) => {
    let s = `commit refs/heads/main\nmark :1\ncommitter ${who(1600000000)}\ndata 8\ninitial\n`;
    for (const fl of files) { const c = `${fl.lines.join('\n')}\n`; s += `M 100644 inline ${fl.path}\ndata ${Buffer.byteLength(c)}\n${c}\n`; }
    await write(`${s}\n`);
    const branches = ['main', 'next', 'maint', 'topic/a', 'topic/b'];
    for (let i = 2; i <= COMMITS; i++) {
      const br = i % 10 === 0 ? branches[1 + (i % 4)] : 'main';
      const msg = `change ${i}: ${words(rand, 6)}\n`;
      let c = `commit refs/heads/${br}\nmark :${i}\ncommitter ${who(1600000000 + i * 600)}\ndata ${Buffer.byteLength(msg)}\n${msg}from :${i - 1}\n`;
      for (let k = 0; k < 4; k++) {
        const fl = files[Math.floor(rand() * FILES)];
        for (let e = 0; e < 4; e++) fl.lines[Math.floor(rand() * LINES)] = words(rand, 10);
        const body = `${fl.lines.join('\n')}\n`;
        c += `M 100644 inline ${fl.path}\ndata ${Buffer.byteLength(body)}\n${body}\n`;
      }
      await write(`${c}\n`);
      if (i % 500 === 0) progress('commits', i, COMMITS);
    }
    for (let t = 0; t < 60; t++) {
      const m = `release ${t}\n`;
      await write(`tag v${t}.0\nfrom :${500 * (t + 1)}\ntagger ${who(1700000000 + t)}\ndata ${m.length}\n${m}\n`);
    }
  });
  process.stderr.write('  repacking with bitmaps\n');
  git(['repack', '-adq', '-b', '--window=10', '--depth=50'], { cwd: f.dir });
  git(['pack-refs', '--all'], { cwd: f.dir });
  f.done();
  return withCommitGraph(f.dir);
}

/** incremental: a client clone of `history`, and the server with a few hundred new commits on several branches. */
export async function incremental() {
  const base = await history();
  const f = ready('incremental');
  // each side has a commit-graph of everything it reaches (the server's includes its alternate's commits)
  if (f.ok) return { server: withCommitGraph(join(f.dir, 'server.git')), client: withCommitGraph(join(f.dir, 'client.git')) };
  process.stderr.write('building fixture incremental\n');
  rmSync(f.dir, { recursive: true, force: true });
  mkdirSync(f.dir, { recursive: true });
  const client = join(f.dir, 'client.git');
  git(['clone', '-q', '--bare', '--no-local', base, client]);
  const server = join(f.dir, 'server.git');
  git(['clone', '-q', '--bare', '--shared', base, server]);
  const rand = prng(7);
  await fastImport(server, async (write) => {
    let mark = 1;
    for (const br of ['main', 'next', 'topic/a', 'feature/new']) {
      const from = br === 'feature/new' ? 'main' : br;
      for (let i = 0; i < 80; i++) {
        const msg = `incremental ${br} ${i}\n`;
        const body = `${words(rand, 200)}\n`;
        await write(`commit refs/heads/${br}\nmark :${mark}\ncommitter ${who(1700000000 + mark * 60)}\ndata ${msg.length}\n${msg}${i === 0 ? `from refs/heads/${from}^0\n` : `from :${mark - 1}\n`}M 100644 inline inc/${br.replace('/', '-')}/${i % 20}.txt\ndata ${Buffer.byteLength(body)}\n${body}\n`);
        mark++;
      }
    }
  });
  f.done();
  return { server: withCommitGraph(server), client: withCommitGraph(client) };
}

/** A small repository with 10 refs, for start-up cost. */
export async function small() {
  const f = ready('small.git');
  if (f.ok) return f.dir;
  fresh(f.dir);
  await fastImport(f.dir, async (write) => {
    for (let i = 1; i <= 10; i++) {
      const msg = `c${i}\n`;
      await write(`commit refs/heads/b${i}\nmark :${i}\ncommitter ${who(1600000000 + i)}\ndata ${msg.length}\n${msg}${i > 1 ? `from :${i - 1}\n` : ''}M 100644 inline f\ndata 2\n${i % 10}\n\n`);
    }
  });
  git(['symbolic-ref', 'HEAD', 'refs/heads/b10'], { cwd: f.dir });
  f.done();
  return f.dir;
}

export { cpSync, renameSync };
