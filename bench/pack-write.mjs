#!/usr/bin/env node
/**
 * The native pack writer (src/pack/produce/write/) against git's
 * pack-objects on one repository, output to /dev/null: CPU (user+sys) and
 * wall time, median of alternating runs, with the load average.
 *
 *   node bench/pack-write.mjs <repo> [--runs 3] [--case whole|ids|fetch|all] [--range A..B]
 *
 * whole: the plan is every entry of the repository's one pack (a full
 *        clone from a bitmapped pack); git: pack-objects --all --stdout
 *        with its bitmap (verbatim pack reuse).
 * ids:   the same objects but one, named by id (rev-list --objects --all
 *        but its last line): located one by one, then the writer's
 *        entry-by-entry path with CRC checks; git: pack-objects --stdout
 *        reading the same ids (no bitmap reuse).
 * fetch: the objects of --range A..B (default v2.45.0..v2.47.0), thin,
 *        for a client that has A; git: pack-objects --revs --thin B ^A.
 * Each writer run is a child process, so its CPU is measured like git's
 * (its start, reading the plan and the packs' reverse indexes included);
 * "writing alone" is the writer's share, with the reverse indexes built
 * beforehand as a resident server has them.
 */
import { spawnSync, execFileSync } from 'node:child_process';
import { loadavg, tmpdir } from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { runs: { type: 'string', default: '3' }, case: { type: 'string', default: 'all' }, child: { type: 'string' }, ids: { type: 'string' }, have: { type: 'string' }, range: { type: 'string', default: 'v2.45.0..v2.47.0' }, crc: { type: 'string', default: 'on' } } });

if (values.child) {
  // one run of the writer: plan, write to /dev/null, report bytes
  const { Repository } = await import('../dist/repo/repository.js');
  const { writePack } = await import('../dist/pack/produce/write/index.js');
  const repo = Repository.open(positionals[0]);
  repo.odb.rescan();
  const packs = repo.odb.sources.flatMap((s) => s.packs);
  let plan;
  if (values.child === 'whole') {
    const pack = packs[0];
    const n = pack.offsetsInPackOrder().length;
    const ranks = new Uint32Array(n);
    for (let i = 0; i < n; i++) ranks[i] = i;
    plan = { count: n, parts: [{ kind: 'ranks', pack, ranks }], source: 'bitmap' };
  } else {
    const { readFileSync } = await import('node:fs');
    const ids = readFileSync(values.ids, 'latin1').split('\n').filter(Boolean);
    const buf = Buffer.from(ids.join(''), 'hex');
    plan = { count: ids.length, parts: [{ kind: 'ids', ids: buf, count: ids.length }], source: 'walk' };
  }
  let clientHas;
  if (values.child === 'fetch') {
    const { readFileSync } = await import('node:fs');
    const have = new Set(readFileSync(values.have, 'latin1').split('\n').filter(Boolean));
    clientHas = (oid) => have.has(oid.toString('hex'));
    plan = { ...plan, clientHas };
  }
  // what a resident server holds already: the packs' reverse indexes (built once per pack, not per request)
  for (const p of packs) p.offsetsInPackOrder();
  const t0 = process.cpuUsage();
  const w0 = performance.now();
  const src = writePack(repo, plan, { ofsDelta: true, progress: false, verifyCrc: values.crc === 'on' });
  const block = Buffer.allocUnsafe(8 * 65520);
  const views = [];
  for (let i = 0; i < 8; i++) views.push(block.subarray(i * 65520 + 5, (i + 1) * 65520));
  let bytes = 0;
  for (;;) { const n = await src.readInto(views); if (!n) break; bytes += n; }
  const r = await src.done;
  const cpu = process.cpuUsage(t0);
  process.stdout.write(JSON.stringify({ ok: r.ok, bytes, writeCpuMs: (cpu.user + cpu.system) / 1000, writeWallMs: performance.now() - w0 }) + '\n');
  process.exit(0);
}

const repoDir = positionals[0];
if (!repoDir) { console.error('usage: node bench/pack-write.mjs <repo> [--runs N] [--case whole|ids|fetch|all] [--range A..B]'); process.exit(2); }
const runs = Number(values.runs);
const self = fileURLToPath(import.meta.url);

function timed(cmd, args, input) {
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %e', cmd, ...args], { cwd: repoDir, input, maxBuffer: 1 << 30, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  const line = r.stderr.toString().trim().split('\n').pop();
  const [u, s, e] = line.split(' ').map(Number);
  return { cpuMs: (u + s) * 1000, wallMs: e * 1000, out: r.stdout };
}
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

// ids: every object but the last one listed (so that the plan is not the whole pack: the entry-by-entry path)
const revList = (args) => execFileSync('git', ['rev-list', '--objects', ...args], { cwd: repoDir, maxBuffer: 1 << 30 }).toString().split('\n').filter(Boolean).map((l) => l.slice(0, 40));
const idList = values.case === 'ids' || values.case === 'all' ? revList(['--all']).slice(0, -1) : [];
const ids = idList.join('\n') + '\n';
const tmpd = mkdtempSync(join(tmpdir(), 'pack-write-'));
const idsFile = join(tmpd, 'ids');
writeFileSync(idsFile, ids);
// fetch: the objects of a range (a client at its start), thin
const [from, to] = values.range.split('..');
const fetchIds = values.case === 'fetch' || values.case === 'all' ? revList([to, `^${from}`]) : [];
const fetchFile = join(tmpd, 'fetch');
writeFileSync(fetchFile, fetchIds.join('\n') + '\n');
const haveFile = join(tmpd, 'have');
if (fetchIds.length) writeFileSync(haveFile, revList([from]).join('\n') + '\n');
for (const c of values.case === 'all' ? ['whole', 'ids', 'fetch'] : [values.case]) {
  const ours = [], git = [];
  let oursBytes = 0, gitBytes = 0, detail;
  for (let i = 0; i < runs; i++) {
    const o = timed(process.execPath, [self, repoDir, '--child', c, '--crc', values.crc, '--ids', c === 'fetch' ? fetchFile : idsFile, '--have', haveFile]);
    detail = JSON.parse(o.out.toString());
    if (!detail.ok) throw new Error('writer failed');
    oursBytes = detail.bytes;
    ours.push(o);
    const g = c === 'whole'
      ? timed('git', ['pack-objects', '--all', '--stdout', '-q', '--use-bitmap-index', '--delta-base-offset'], undefined)
      : c === 'fetch'
        ? timed('git', ['pack-objects', '--stdout', '-q', '--delta-base-offset', '--revs', '--thin'], `${to}\n^${from}\n`)
        : timed('git', ['pack-objects', '--stdout', '-q', '--delta-base-offset'], ids);
    gitBytes = g.out.length;
    git.push(g);
  }
  const oc = med(ours.map((x) => x.cpuMs)), gc = med(git.map((x) => x.cpuMs));
  console.log(`${c}: writer ${oc.toFixed(0)} ms CPU (${med(ours.map((x) => x.wallMs)).toFixed(0)} ms wall; writing alone ${detail.writeCpuMs.toFixed(0)} ms CPU, ${detail.writeWallMs.toFixed(0)} ms wall), ` +
    `git ${gc.toFixed(0)} ms CPU (${med(git.map((x) => x.wallMs)).toFixed(0)} ms wall); CPU ${(oc / gc).toFixed(2)}x; bytes ${oursBytes} vs ${gitBytes} (${(oursBytes / gitBytes).toFixed(4)}x); load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
}
