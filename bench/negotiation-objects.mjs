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
 * --bundle: upload-pack as `bin/gitwire` runs it (the one-file bundle and
 * its code cache) instead of the ES modules. The bundle keeps its modules
 * to itself, so a copy of the checkout's bin/ and dist/ is made whose
 * bundle also hands out its module loader; a preloaded CommonJS module
 * catches the bundle as bin/gitwire compiles it and wraps the same entry
 * points. One untimed fetch writes the copy's code cache first. A
 * checkout without a bundle (before it existed) is measured as modules.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as fx from './fixtures.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '9' }, behind: { type: 'string', default: '0' }, root: { type: 'string' }, serve: { type: 'boolean', default: false }, bundle: { type: 'boolean', default: false } } });
const ROOT = resolve(values.root ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
const rounds = Number(values.rounds), behind = Number(values.behind);
const inc = await fx.incremental();
const tmp = mkdtempSync(join(tmpdir(), 'gitwire-negobj-'));
const env = { ...fx.env };

// the timing both modes install: outermost calls of the object layer's entry points, summed,
// written at exit (and, for serve, as a running total on SIGUSR2); needs appendFileSync in scope
const TIMING = `
let depth = 0, t0 = 0n, total = 0n;
const wrap = (proto, name) => { const f = proto[name]; proto[name] = function (...a) {
  if (depth++ === 0) t0 = process.hrtime.bigint();
  try { return f.apply(this, a); } finally { if (--depth === 0) total += process.hrtime.bigint() - t0; } }; };
const install = (Repository, ObjectDatabase) => {
  wrap(Repository.prototype, 'commit'); wrap(Repository.prototype, 'peel');
  for (const n of ['info', 'read', 'has', 'locate']) wrap(ObjectDatabase.prototype, n);
};
const report = () => appendFileSync(process.env.OBJTIME_OUT, (Number(total) / 1e6).toFixed(3) + '\\n');
process.on('exit', report);
process.on('SIGUSR2', report);
`;

const timer = join(tmp, 'timer.mjs');
writeFileSync(timer, `
import { appendFileSync } from 'node:fs';
${TIMING}
const { Repository } = await import(${JSON.stringify(join(ROOT, 'dist/repo/repository.js'))});
const { ObjectDatabase } = await import(${JSON.stringify(join(ROOT, 'dist/repo/odb.js'))});
install(Repository, ObjectDatabase);
`);

// --bundle: the same wrapping, installed on the bundle's own classes as bin/gitwire loads it
const bundleTimer = join(tmp, 'timer.cjs');
writeFileSync(bundleTimer, `
const { appendFileSync } = require('node:fs');
const vm = require('node:vm');
${TIMING}
const run = vm.Script.prototype.runInThisContext;
vm.Script.prototype.runInThisContext = function (...a) {
  const fn = run.apply(this, a);
  // a rejected code cache would time the compiler: counted, and reported by the bench
  if (this.cachedDataRejected === true) appendFileSync(process.env.OBJTIME_OUT + '.rejected', 'x');
  if (typeof fn !== 'function') return fn;
  return function (exports, req, module, ...rest) {
    const r = fn.call(this, exports, req, module, ...rest);
    const load = module.exports.__gwLoad;
    if (!load) throw new Error('timer: the bundle hands out no loader');
    install(load('repo/repository.js').Repository, load('repo/odb.js').ObjectDatabase);
    return r;
  };
};
`);
let bundleBin;
if (values.bundle && existsSync(join(ROOT, 'dist', 'gitwire.cjs'))) {
  const copy = join(tmp, 'checkout');
  for (const d of ['bin', 'dist']) cpSync(join(ROOT, d), join(copy, d), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(copy, 'package.json'));
  const file = join(copy, 'dist', 'gitwire.cjs');
  const src = readFileSync(file, 'latin1');
  const tail = "module.exports = __gwLoad('cli/main.js');";
  if (!src.includes(tail)) throw new Error('bundle: unexpected layout');
  writeFileSync(file, src.replace(tail, `${tail} module.exports.__gwLoad = __gwLoad;`), 'latin1');
  for (const f of readdirSync(join(copy, 'dist'))) if (f.startsWith('gitwire.cjs.')) rmSync(join(copy, 'dist', f));
  bundleBin = join(copy, 'bin', 'gitwire');
}
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
  // the ES modules, or (--bundle) bin/gitwire with the copy whose bundle hands out its classes
  writeFileSync(wrapper, bundleBin
    ? `#!/bin/sh\nOBJTIME_OUT=${out} NODE_OPTIONS="--require ${bundleTimer}" ${cfg}exec ${bundleBin} upload-pack "$@"\n`
    : `#!/bin/sh\nOBJTIME_OUT=${out} ${cfg}exec ${process.execPath} --import ${timer} ${runner} upload-pack "$@"\n`);
  chmodSync(wrapper, 0o755);
  const copy = join(tmp, 'client');
  rmSync(copy, { recursive: true, force: true });
  execFileSync('cp', ['-al', client, copy]);
  execFileSync('git', ['-c', 'protocol.version=2', '-C', copy, 'fetch', '-q', `--upload-pack=${wrapper}`, inc.server, '+refs/heads/*:refs/heads/*'], { env, stdio: 'ignore' });
  rmSync(copy, { recursive: true, force: true });
  return Number(readFileSync(out, 'utf8').trim());
}

if (values.serve && values.bundle) throw new Error('--bundle times one-shot upload-pack processes; --serve runs the ES modules');
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
if (bundleBin) fetchOnce(true); // writes the copy's code cache
const rejectedFile = join(tmp, 'objtime.txt.rejected');
for (let i = 0; i < rounds; i++) { res.graph.push(fetchOnce(true)); res.nograph.push(fetchOnce(false)); }
const stat = (a) => { const s = [...a].sort((x, y) => x - y); return `min ${s[0].toFixed(2)} ms, median ${s[Math.floor((s.length - 1) / 2)].toFixed(2)} ms`; };
console.log(`object-layer time per upload-pack (${ROOT}${bundleBin ? ', bin/gitwire with its bundle' : values.bundle ? ', no bundle: ES modules' : ', ES modules'}), incremental fetch${behind ? `, client ${behind} commits behind` : ''}, ${rounds} rounds`);
console.log(`  with commit-graph:        ${stat(res.graph)}`);
console.log(`  core.commitGraph=false:   ${stat(res.nograph)}`);
if (bundleBin && existsSync(rejectedFile)) console.log(`  warning: the code cache was rejected in ${readFileSync(rejectedFile, 'latin1').length} of the timed runs`);
rmSync(tmp, { recursive: true, force: true });
