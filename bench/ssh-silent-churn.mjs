#!/usr/bin/env node
/**
 * Silent connections from many addresses against a known key (issue #40
 * item 6): each of N loopback addresses (127.0.1.1, …) holds one
 * connection that never sends a byte and opens a new one 5 ms after the
 * server closes it, so every slot the server frees is taken again at
 * once. After 3 s of that, the OpenSSH client logs in with a known key
 * and runs git-upload-pack, 10 times in turn. Prints how many logins
 * succeeded, their times, how many silent connections were opened, the
 * server's refusals and evictions by outcome, and the load average.
 *
 *   node bench/ssh-silent-churn.mjs [bin/gitwire] [addresses=1000] [-- serve flags…]
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const dash = args.indexOf('--');
const extra = dash >= 0 ? args.slice(dash + 1) : [];
const [binArg, nArg] = dash >= 0 ? args.slice(0, dash) : args;
const bin = resolve(binArg ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'gitwire'));
const ADDRS = Number(nArg ?? 1000);
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const d = mkdtempSync(join(tmpdir(), 'gitwire-ssh-churn-'));
const srv = join(d, 'srv'), keys = join(d, 'keys');
mkdirSync(srv); mkdirSync(keys);
execFileSync('git', ['init', '-q', '--bare', join(srv, 'r.git')], { env });
execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(d, 'id')]);
copyFileSync(join(d, 'id.pub'), join(keys, 'alice.pub'));
const child = spawn(bin, ['serve', srv, '--ssh', '0', '--ssh-keys', keys, '--ssh-host-key', join(d, 'host'), ...extra], { env, stdio: ['ignore', 'pipe', 'inherit'] });
const outcomes = {};
const port = await new Promise((res) => {
  let o = '';
  child.stdout.on('data', (x) => {
    o += x;
    for (const m of String(x).matchAll(/"outcome":"([a-z-]+)"/g)) outcomes[m[1]] = (outcomes[m[1]] ?? 0) + 1;
    const p = /"url":"ssh:\/\/[^:]+:(\d+)\//.exec(o);
    if (p) res(Number(p[1]));
  });
});
let opened = 0, stop = false;
const hold = (addr) => {
  if (stop) return;
  opened++;
  const s = connect({ port, host: '127.0.0.1', localAddress: addr });
  s.on('error', () => {});
  s.resume(); // reads the server's close
  s.on('close', () => setTimeout(() => hold(addr), 5));
};
for (let i = 0; i < ADDRS; i++) hold(`127.0.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`);
await new Promise((r) => setTimeout(r, 3000));
const ssh = ['-i', join(d, 'id'), '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no',
  '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', '-p', String(port), 'git@127.0.0.1', "git-upload-pack '/r.git'"];
let ok = 0;
const times = [], errors = [];
const t0 = Date.now(), o0 = opened;
for (let i = 0; i < 10; i++) {
  const t = Date.now();
  // asynchronously: the silent connections go on while it logs in
  const r = await new Promise((res) => {
    const c = spawn('ssh', ssh, { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (x) => { err += x; });
    c.on('close', (code) => res({ code, err }));
    c.stdin.on('error', () => {});
    c.stdin.end('0000');
  });
  times.push(Date.now() - t);
  if (r.code === 0) ok++; else errors.push(r.err.trim());
}
const perSec = Math.round(((opened - o0) * 1000) / (Date.now() - t0));
console.log(JSON.stringify({ addresses: ADDRS, logins: `${ok}/10`, times, silentOpenedPerSec: perSec, outcomes, errors: [...new Set(errors)], load1: +loadavg()[0].toFixed(2) }));
stop = true;
child.kill();
rmSync(d, { recursive: true, force: true });
process.exit(0);
