// Server CPU for clones served from the pack cache (hits): start `gitwire serve
// --pack-cache`, clone once (the miss that stores the entry), then time N hit
// clones and read the server's CPU (utime+stime from /proc) around them.
// Usage: node bench/pack-cache-cpu.mjs <bin/gitwire> <root> <repo> [clones]
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [bin, root, repo, clonesArg] = process.argv.slice(2);
const N = Number(clonesArg ?? 10);
const tmp = mkdtempSync(join(tmpdir(), 'gitwire-cache-cpu-'));
const cacheDir = join(tmp, 'cache');
const ticks = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
const cpuMs = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return ((Number(f[11]) + Number(f[12])) / ticks) * 1000; };
const srv = spawn(bin, ['serve', root, '--http', '0', '--export-all', '--pack-cache', cacheDir, '--pack-cache-min-occurrences', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  let buf = '';
  srv.stdout.on('data', (d) => { buf += d; const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(buf); if (m) resolve(Number(m[1])); });
  srv.once('exit', (c) => reject(new Error(`serve exited ${c}`)));
});
const clone = (i) => execFileSync('git', ['-c', 'protocol.version=2', 'clone', '-q', '--bare', `http://127.0.0.1:${port}/${repo}`, join(tmp, `c${i}`)]);
try {
  clone('miss');
  for (let i = 0; i < 100 && !readdirSync(cacheDir).some((n) => n.endsWith('.pack')); i++) await new Promise((r) => setTimeout(r, 50));
  clone('warm');
  const c0 = cpuMs(srv.pid), t0 = Date.now();
  for (let i = 0; i < N; i++) { clone(i); rmSync(join(tmp, `c${i}`), { recursive: true, force: true }); }
  const cpu = cpuMs(srv.pid) - c0, wall = Date.now() - t0;
  const size = readdirSync(cacheDir).filter((n) => n.endsWith('.pack')).map((n) => readFileSync(join(cacheDir, n)).length)[0];
  console.log(JSON.stringify({ clones: N, entryBytes: size, serverCpuMsPerClone: +(cpu / N).toFixed(1), wallMsPerClone: +(wall / N).toFixed(1) }));
} finally {
  srv.kill();
  rmSync(tmp, { recursive: true, force: true });
}
