/**
 * `npm run bench -- ssh`: gitwire serve's built-in SSH server against
 * OpenSSH's sshd (Debian openssh-server, started here on loopback with its
 * own configuration), side by side in one run, interleaved:
 *
 * - sshd + stock git-upload-pack (the command the client sends, run by sshd)
 * - sshd + gitwire's one-shot CLI (the forced-command recipe of docs/ssh.md)
 * - gitwire serve --ssh
 *
 * Cases: `git ls-remote` (v2) on refs-11k and an incremental fetch: client
 * wall and server CPU per request (sshd and all its children, against
 * serve's process tree); then serve's RSS with 100 idle authenticated SSH
 * connections. Medians of alternating runs. Writes the table to stdout.
 *
 * The clone row also gives the server tree's peak RSS (sampled every
 * 20 ms) and, where `strace` is installed, the number of write calls to
 * the client's TCP socket in one more traced run per server (every process
 * of the tree, one trace file per process so no call is split).
 * `SSH_BENCH_CASES=clone` (substrings, comma-separated) runs only some cases;
 * `SSH_BENCH_CLIENT_OPTS='-c aes128-ctr'` adds options to every ssh client.
 */
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, treeCpuMs, treeRssKB } from './proc.mjs';
import * as fx from './fixtures.mjs';
import { median } from './parse.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');
const RUNS = Number(process.env.SSH_BENCH_RUNS ?? 10);
const env = fx.env;


export async function sshBench() {
  const sshd = '/usr/sbin/sshd';
  if (spawnSync(sshd, ['-V'], { stdio: 'ignore' }).error) {
    process.stderr.write('ssh bench: /usr/sbin/sshd not found (Debian openssh-server); skipped\n');
    return '';
  }
  const T = mkdtempSync(join(tmpdir(), 'gitwire-ssh-bench-'));
  const refs11k = await fx.refs11k();
  const inc = await fx.incremental();
  const hist = await fx.history();
  const srv = join(T, 'srv');
  mkdirSync(srv);
  // the served repositories, under one root for every server
  // copies: a symlink leading out of the root is not served
  execFileSync('cp', ['-a', refs11k, join(srv, 'refs-11k.git')]);
  execFileSync('cp', ['-a', inc.server, join(srv, 'inc.git')]);
  execFileSync('cp', ['-a', hist, join(srv, 'history.git')]);
  const key = (name) => { const f = join(T, name); execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', f]); return f; };
  const stock = key('stock'), oneshot = key('oneshot'), hostKey = key('host');
  // sshd: key `stock` runs what the client asks (stock git-upload-pack), key `oneshot` the forced command of docs/ssh.md
  const script = join(T, 'gitwire-ssh');
  const readme = readFileSync(join(ROOT, 'docs', 'ssh.md'), 'utf8'); // the ForceCommand script of docs/ssh.md
  const m = /```sh\n(#!\/bin\/sh\n# \/opt\/gitwire\/bin\/gitwire-ssh[\s\S]*?)```/.exec(readme);
  writeFileSync(script, m[1].split('/opt/gitwire/bin/gitwire').join(BIN).split('/srv/git').join(srv));
  chmodSync(script, 0o755);
  const auth = join(T, 'authorized_keys');
  writeFileSync(auth, `${readFileSync(`${stock}.pub`, 'utf8').trim()}\ncommand="${script}",no-port-forwarding,no-pty ${readFileSync(`${oneshot}.pub`, 'utf8').trim()}\n`);
  chmodSync(auth, 0o600);
  const sshdPort = await freePort();
  const cfg = join(T, 'sshd_config');
  writeFileSync(cfg, [`Port ${sshdPort}`, 'ListenAddress 127.0.0.1', `HostKey ${hostKey}`, `AuthorizedKeysFile ${auth}`, 'StrictModes no', 'PasswordAuthentication no',
    'KbdInteractiveAuthentication no', 'UsePAM no', 'AcceptEnv GIT_PROTOCOL', `PidFile ${join(T, 'sshd.pid')}`, 'PermitRootLogin prohibit-password', 'LogLevel ERROR', ''].join('\n'));
  mkdirSync('/run/sshd', { recursive: true });
  const d = spawn(sshd, ['-D', '-e', '-f', cfg], { stdio: ['ignore', 'ignore', 'inherit'] });
  // gitwire serve --ssh with a key directory holding the same client key
  const keys = join(T, 'keys');
  mkdirSync(keys);
  writeFileSync(join(keys, 'bench.pub'), readFileSync(`${stock}.pub`));
  // as users start it: through the bin's sh line (serve's node flags)
  const s = spawn(BIN, ['serve', srv, '--ssh', '0', '--ssh-keys', keys, '--ssh-host-key', join(T, 'gw_host'), '--quiet'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const gwPort = await new Promise((resolve, reject) => {
    let b = '';
    s.stdout.on('data', (x) => { b += x; const mm = /"url":"ssh:\/\/[^:]+:(\d+)\//.exec(b); if (mm) resolve(Number(mm[1])); });
    s.on('exit', (c) => reject(new Error(`serve exited ${c}`)));
  });
  s.stdout.resume();
  await new Promise((r) => setTimeout(r, 500));
  const user = process.env.USER || 'root';
  const clientOpts = process.env.SSH_BENCH_CLIENT_OPTS ? ` ${process.env.SSH_BENCH_CLIENT_OPTS}` : '';
  const sshCmd = (k, port) => `ssh -i ${k} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR${clientOpts} -p ${port}`;
  const rows = {
    'sshd + git': { pid: d.pid, url: (r) => `ssh://${user}@127.0.0.1${srv}/${r}`, ssh: sshCmd(stock, sshdPort) },
    'sshd + gitwire one-shot': { pid: d.pid, url: (r) => `ssh://${user}@127.0.0.1/${r}`, ssh: sshCmd(oneshot, sshdPort) },
    'gitwire serve --ssh': { pid: s.pid, url: (r) => `ssh://git@127.0.0.1/${r}`, ssh: sshCmd(stock, gwPort) },
  };
  const runOnce = async (row, args, cwd) => {
    const cpu0 = treeCpuMs(row.pid);
    let peak = 0;
    const sample = setInterval(() => { try { peak = Math.max(peak, treeRssKB(row.pid)); } catch { /* a child just left */ } }, 20);
    const t0 = process.hrtime.bigint();
    const r = await new Promise((resolve) => {
      const c = spawn('git', args, { cwd, env: { ...env, GIT_SSH_COMMAND: row.ssh }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (b) => { err += b; });
      c.on('close', (status) => resolve({ status, stderr: err }));
    });
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    clearInterval(sample);
    if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
    await new Promise((res) => setTimeout(res, 100)); // sshd reaps its children
    return { wall, cpu: treeCpuMs(row.pid) - cpu0, peakKB: peak };
  };
  const hasStrace = !spawnSync('strace', ['-V'], { stdio: 'ignore' }).error;
  /** write calls to the client's socket (local port `port`) by every process under `pid`, in one run */
  const socketWrites = async (row, port, args, cwd) => {
    const dir = mkdtempSync(join(T, 'strace-'));
    const st = spawn('strace', ['-ff', '-qq', '-yy', '-e', 'trace=write,writev,sendmsg,sendto', '-e', 'signal=none', '-o', join(dir, 'w'), '-p', String(row.pid)], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 1000)); // attached
    await runOnce(row, args, cwd);
    st.kill('SIGINT');
    await new Promise((r) => st.on('exit', r));
    let n = 0;
    const re = /^(?:write|writev|sendmsg|sendto)\(\d+<TCP:\[127\.0\.0\.1:(\d+)->/;
    for (const f of readdirSync(dir)) for (const l of readFileSync(join(dir, f), 'utf8').split('\n')) { const m = re.exec(l); if (m && Number(m[1]) === port) n++; }
    return n;
  };
  const ports = { 'sshd + git': sshdPort, 'sshd + gitwire one-shot': sshdPort, 'gitwire serve --ssh': gwPort };
  const cases = [
    { name: 'ls-remote v2, refs-11k', args: (row) => ['-c', 'protocol.version=2', 'ls-remote', row.url('refs-11k.git')] },
    {
      name: 'incremental fetch v2',
      args: (row) => ['-c', 'protocol.version=2', 'fetch', '-q', row.url('inc.git'), '+refs/heads/*:refs/remotes/bench/*'],
      cwd: () => { const c = join(T, `client-${Math.random().toString(36).slice(2)}`); execFileSync('git', ['clone', '-q', '--bare', '--no-local', inc.client, c], { env }); return c; },
    },
    {
      name: 'clone of history (bare)', runs: Math.max(2, Math.ceil(RUNS / 3)), detail: true,
      args: (row) => ['-c', 'protocol.version=2', 'clone', '-q', '--bare', row.url('history.git'), 'clone.git'],
      cwd: () => { const c = join(T, `client-${Math.random().toString(36).slice(2)}`); mkdirSync(c); return c; },
    },
  ];
  const out = [];
  const only = process.env.SSH_BENCH_CASES?.split(',').filter(Boolean);
  for (const c of cases.filter((x) => !only || only.some((o) => x.name.includes(o)))) {
    const res = Object.fromEntries(Object.keys(rows).map((k) => [k, { wall: [], cpu: [], peakKB: [] }]));
    for (let i = 0; i < (c.runs ?? RUNS) + 1; i++) {
      for (const [k, row] of Object.entries(rows)) {
        const cwd = c.cwd ? c.cwd() : T;
        const r = await runOnce(row, c.args(row), cwd);
        if (c.cwd) rmSync(cwd, { recursive: true, force: true });
        if (i === 0) continue; // warm-up
        res[k].wall.push(r.wall);
        res[k].cpu.push(r.cpu);
        res[k].peakKB.push(r.peakKB);
      }
    }
    for (const [k, v] of Object.entries(res)) {
      const row = { case: c.name, server: k, wallMs: median(v.wall), cpuMs: median(v.cpu) };
      if (c.detail) {
        row.rssMB = median(v.peakKB) / 1024;
        if (hasStrace) {
          const cwd = c.cwd ? c.cwd() : T;
          row.writes = await socketWrites(rows[k], ports[k], c.args(rows[k]), cwd);
          if (c.cwd) rmSync(cwd, { recursive: true, force: true });
        }
      }
      out.push(row);
    }
  }
  // 100 idle authenticated connections: serve's RSS
  let idleLine = '';
  if (!only || only.includes('idle')) {
    const rss0 = treeRssKB(s.pid);
    const idle = [];
    for (let i = 0; i < 100; i++) {
      idle.push(spawn('ssh', [...rows['gitwire serve --ssh'].ssh.split(' ').slice(1), '-N', 'git@127.0.0.1'], { stdio: 'ignore' }));
      // in batches: fewer than 64 unauthenticated at once from one address (--ssh-max-unauthenticated)
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 1500));
    }
    await new Promise((r) => setTimeout(r, 5000));
    const alive = idle.filter((p) => p.exitCode === null).length;
    const rss1 = treeRssKB(s.pid);
    for (const p of idle) p.kill('SIGTERM');
    idleLine = `100 idle authenticated SSH connections (ssh -N): serve's RSS ${(rss0 / 1024).toFixed(0)} MiB before, ${(rss1 / 1024).toFixed(0)} MiB with them (${alive} connected) (tree: serve and its spawn helper).`;
  }
  s.kill('SIGTERM');
  d.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  rmSync(T, { recursive: true, force: true });
  const lines = ['| case | server | client wall (median) | server CPU per request (median) | server peak RSS (median) | writes to the client socket |', '|---|---|---|---|---|---|'];
  for (const r of out) {
    const rss = r.rssMB === undefined ? '' : `${r.rssMB.toFixed(0)} MiB`;
    const w = r.writes === undefined ? '' : String(r.writes);
    lines.push(`| ${r.case} | ${r.server} | ${r.wallMs.toFixed(0)} ms | ${r.cpuMs.toFixed(0)} ms | ${rss} | ${w} |`);
  }
  lines.push('', idleLine, `Runs: ${RUNS} per row, interleaved, after one warm-up; CPU from /proc (10 ms ticks).`);
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(await sshBench());
