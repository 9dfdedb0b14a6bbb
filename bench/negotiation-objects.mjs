#!/usr/bin/env node
/**
 * Object-reading time inside `gitwire upload-pack` during a fetch of the
 * `incremental` fixture (issue #15): the time spent in the object layer's
 * entry points (Repository.commit/peel, ObjectDatabase.info/read/has/
 * locate; outermost calls only) is summed inside the upload-pack process
 * by a preloaded module and printed per fetch. Each round fetches with the
 * commit-graph and with core.commitGraph=false, interleaved; the minimum
 * and median over the rounds are printed (the machine is shared: the
 * minimum is the least disturbed run).
 *
 *   node bench/negotiation-objects.mjs [--rounds N] [--behind K] [--root DIR]
 *
 * --behind K: the client's branches rewound by K commits first (a deeper
 * negotiation walk); --root: another gitwire checkout (built) to measure.
 * --serve: the same fetches over git:// from one `gitwire serve` process
 * (repositories stay open between requests where the checkout pools
 * them); the first fetch is reported apart from the rest.
 */
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as fx from './fixtures.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, behind: { type: 'string', default: '0' }, root: { type: 'string' }, serve: { type: 'boolean', default: false } } });
const ROOT = resolve(values.root ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const rounds = Number(values.rounds), behind = Number(values.behind);
const inc = await fx.incremental();
const tmp = mkdtempSync(join(tmpdir(), 'gitwire-negobj-'));
const env = { ...fx.env };

const timer = join(tmp, 'timer.mjs');
writeFileSync(timer, `
import { appendFileSync } from 'node:fs';
const { Repository } = await import(${JSON.stringify(join(ROOT, 'dist/repo/repository.js'))});
const { ObjectDatabase } = await import(${JSON.stringify(join(ROOT, 'dist/repo/odb.js'))});
let depth = 0, t0 = 0n, total = 0n;
const wrap = (proto, name) => { const f = proto[name]; proto[name] = function (...a) {
  if (depth++ === 0) t0 = process.hrtime.bigint();
  try { return f.apply(this, a); } finally { if (--depth === 0) total += process.hrtime.bigint() - t0; } }; };
wrap(Repository.prototype, 'commit'); wrap(Repository.prototype, 'peel');
for (const n of ['info', 'read', 'has', 'locate']) wrap(ObjectDatabase.prototype, n);
process.on('exit', () => appendFileSync(process.env.OBJTIME_OUT, (Number(total) / 1e6).toFixed(3) + '\\n'));
// (serve: the running total on SIGUSR2, after each fetch)
process.on('SIGUSR2', () => appendFileSync(process.env.OBJTIME_OUT, (Number(total) / 1e6).toFixed(3) + '\\n'));
`);

const runner = join(tmp, 'run.mjs');
writeFileSync(runner, `const { main } = await import(${JSON.stringify(join(ROOT, 'dist/cli/main.js'))});\nawait main(process.argv.slice(2));\n`);

let client = inc.client;
if (behind > 0) {
  client = join(tmp, 'behind.git');
  cpSync(inc.client, client, { recursive: true });
  const refs = execFileSync('git', ['for-each-ref', '--format=%(refname)'], { cwd: client, env }).toString().split('\n').filter(Boolean);
  for (const r of refs) {
    try { execFileSync('git', ['update-ref', r, `${r}~${behind}`], { cwd: client, env, stdio: 'ignore' }); } catch { execFileSync('git', ['update-ref', '-d', r], { cwd: client, env }); }
  }
}

function fetchOnce(graph) {
  const out = join(tmp, 'objtime.txt');
  rmSync(out, { force: true });
  const wrapper = join(tmp, 'up.sh');
  const cfg = graph ? '' : 'GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.commitGraph GIT_CONFIG_VALUE_0=false ';
  // the ES modules, not bin/gitwire: its one-file bundle holds copies of the classes the timer wraps
  writeFileSync(wrapper, `#!/bin/sh\nOBJTIME_OUT=${out} ${cfg}exec ${process.execPath} --import ${timer} ${runner} upload-pack "$@"\n`);
  chmodSync(wrapper, 0o755);
  const copy = join(tmp, 'client');
  rmSync(copy, { recursive: true, force: true });
  execFileSync('cp', ['-al', client, copy]);
  execFileSync('git', ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `--upload-pack=${wrapper}`, inc.server, '+refs/heads/*:refs/heads/*'], { env, stdio: 'ignore' });
  rmSync(copy, { recursive: true, force: true });
  return Number(readFileSync(out, 'utf8').trim());
}

if (values.serve) {
  const out = join(tmp, 'objtime.txt');
  const port = 20000 + Math.floor(Math.random() * 20000);
  const srv = spawn(process.execPath, ['--import', timer, runner, 'serve', dirname(inc.server), '--git', String(port), '--export-all'], { env: { ...env, OBJTIME_OUT: out }, stdio: ['ignore', 'ignore', 'pipe'] });
  let up = false;
  for (let i = 0; i < 100 && !up; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try { execFileSync('git', ['ls-remote', `git://127.0.0.1:${port}/server.git`], { env, stdio: 'ignore' }); up = true; } catch { /* not yet */ }
  }
  if (!up) throw new Error('serve did not start');
  const readTotals = () => { try { return readFileSync(out, 'utf8').trim().split('\n').filter(Boolean).map(Number); } catch { return []; } };
  const mark = async () => { const n = readTotals().length; srv.kill('SIGUSR2'); while (readTotals().length === n) await new Promise((r) => setTimeout(r, 10)); };
  await mark();
  const per = [];
  for (let i = 0; i < rounds + 1; i++) {
    const copy = join(tmp, 'client');
    rmSync(copy, { recursive: true, force: true });
    execFileSync('cp', ['-al', client, copy]);
    execFileSync('git', ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `git://127.0.0.1:${port}/server.git`, '+refs/heads/*:refs/heads/*'], { env, stdio: 'ignore' });
    await mark();
    const t = readTotals();
    per.push(t[t.length - 1] - t[t.length - 2]);
  }
  srv.kill('SIGTERM');
  await new Promise((r) => srv.on('exit', r));
  const rest = per.slice(1).sort((x, y) => x - y);
  console.log(`object-layer time per fetch inside one serve (${ROOT}), incremental fetch${behind ? `, client ${behind} commits behind` : ''} over git://`);
  console.log(`  first fetch:                ${per[0].toFixed(2)} ms`);
  console.log(`  next ${rest.length}: min ${rest[0].toFixed(2)} ms, median ${rest[Math.floor((rest.length - 1) / 2)].toFixed(2)} ms`);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
}

const res = { graph: [], nograph: [] };
for (let i = 0; i < rounds; i++) { res.graph.push(fetchOnce(true)); res.nograph.push(fetchOnce(false)); }
const stat = (a) => { const s = [...a].sort((x, y) => x - y); return `min ${s[0].toFixed(2)} ms, median ${s[Math.floor((s.length - 1) / 2)].toFixed(2)} ms`; };
console.log(`object-layer time per upload-pack (${ROOT}), incremental fetch${behind ? `, client ${behind} commits behind` : ''}, ${rounds} rounds`);
console.log(`  with commit-graph:        ${stat(res.graph)}`);
console.log(`  core.commitGraph=false:   ${stat(res.nograph)}`);
rmSync(tmp, { recursive: true, force: true });
