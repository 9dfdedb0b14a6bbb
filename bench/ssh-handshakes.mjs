#!/usr/bin/env node
/**
 * Other SSH users' logins while one address starts handshakes it never
 * finishes (issue #40 item 6): a known user logs in, runs
 * git-upload-pack and reads the advertisement, one login at a time, first
 * alone, then while 127.0.0.2 opens `--rate` connections a second. Each
 * of those sends a KEXINIT choosing the costliest key exchange the server
 * offers (diffie-hellman-group18-sha512 when offered) and a public value
 * computed once, so the attacker computes nothing per connection, waits
 * for the server's reply and closes. Reports the user's login p50/p99,
 * serve's event-loop delay p99 (prom-client's, reset at each phase) and
 * CPU, what became of the attacker's connections, and the load average.
 *
 *   node bench/ssh-handshakes.mjs [bin/gitwire] [--rate 50] [--seconds 20] [-- serve flags…]
 *
 * The attacker runs in a worker thread; the user is ssh2's client.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createDiffieHellmanGroup, createECDH, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import ssh2 from 'ssh2';

/** costliest first: what an attacker picks from the server's offer */
const COSTLIEST = [
  'diffie-hellman-group18-sha512', 'diffie-hellman-group17-sha512', 'diffie-hellman-group16-sha512', 'diffie-hellman-group15-sha512',
  'diffie-hellman-group14-sha256', 'diffie-hellman-group14-sha1', 'ecdh-sha2-nistp521', 'ecdh-sha2-nistp384', 'ecdh-sha2-nistp256',
  'curve25519-sha256', 'curve25519-sha256@libssh.org',
];
const MODP = { 'diffie-hellman-group18-sha512': 'modp18', 'diffie-hellman-group17-sha512': 'modp17', 'diffie-hellman-group16-sha512': 'modp16', 'diffie-hellman-group15-sha512': 'modp15', 'diffie-hellman-group14-sha256': 'modp14', 'diffie-hellman-group14-sha1': 'modp14' };
const CURVE = { 'ecdh-sha2-nistp521': 'secp521r1', 'ecdh-sha2-nistp384': 'secp384r1', 'ecdh-sha2-nistp256': 'prime256v1' };

const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
const str = (b) => Buffer.concat([u32(b.length), Buffer.from(b)]);
const mpint = (b) => str(b[0] & 0x80 ? Buffer.concat([Buffer.alloc(1), b]) : b);
function packet(payload) {
  let pad = 8 - ((5 + payload.length) % 8);
  if (pad < 4) pad += 8;
  return Buffer.concat([u32(1 + payload.length + pad), Buffer.from([pad]), payload, randomBytes(pad)]);
}
/** the client's public value for a method, computed once */
const publics = new Map();
function publicValue(kex) {
  if (!publics.has(kex)) {
    let msg;
    if (MODP[kex]) { const dh = createDiffieHellmanGroup(MODP[kex]); msg = mpint(dh.generateKeys()); }
    else if (CURVE[kex]) { const e = createECDH(CURVE[kex]); msg = str(e.generateKeys()); }
    else msg = str(generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
    publics.set(kex, Buffer.concat([Buffer.from([30]), msg]));
  }
  return publics.get(kex);
}

/** One attacking connection: 'refused' (closed before a byte), 'done' (the server answered the exchange), 'closed', 'timeout'. */
function attackOnce(port, from) {
  return new Promise((res) => {
    const s = connect({ port, host: '127.0.0.1', localAddress: from });
    let buf = Buffer.alloc(0), sent = false, kex = '';
    const end = (r) => { clearTimeout(t); s.destroy(); res({ r, kex }); };
    const t = setTimeout(() => end('timeout'), 20_000);
    s.on('error', () => {});
    s.on('close', () => end(sent || buf.length ? 'closed' : 'refused'));
    s.write('SSH-2.0-OpenSSH_9.2\r\n');
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!sent) {
        const nl = buf.indexOf('\r\n');
        if (nl < 0) return;
        const p = buf.subarray(nl + 2);
        if (p.length < 4 || p.length < 4 + p.readUInt32BE(0)) return;
        const payload = p.subarray(5, 4 + p.readUInt32BE(0) - p[4]);
        let off = 17;
        const lists = [];
        for (let i = 0; i < 10; i++) { const n = payload.readUInt32BE(off); lists.push(payload.toString('latin1', off + 4, off + 4 + n).split(',')); off += 4 + n; }
        kex = COSTLIEST.find((k) => lists[0].includes(k));
        const pick = (i) => lists[i][0] ?? '';
        const mine = Buffer.concat([Buffer.from([20]), randomBytes(16), str(kex), str(pick(1)), str(pick(2)), str(pick(3)), str(pick(4)), str(pick(5)), str('none'), str('none'), str(''), str(''), Buffer.from([0]), u32(0)]);
        s.write(Buffer.concat([packet(mine), packet(publicValue(kex))]));
        sent = true;
        buf = p.subarray(4 + p.readUInt32BE(0));
      }
      // the server's KEXDH_REPLY / KEX_ECDH_REPLY (31): it has done its work
      if (buf.length >= 6 && buf[5] === 31) end('done');
    });
  });
}

if (!isMainThread) {
  const { port, rate, seconds, from } = workerData;
  const counts = {};
  const pending = [];
  const t0 = Date.now();
  let n = 0;
  while (Date.now() - t0 < seconds * 1000) {
    pending.push(attackOnce(port, from).then(({ r, kex }) => { counts[r] = (counts[r] ?? 0) + 1; counts.kex = kex || counts.kex; }));
    n++;
    const next = t0 + (n * 1000) / rate;
    await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
  }
  await Promise.all(pending);
  parentPort.postMessage({ started: n, ...counts });
} else {
  const { values: o, positionals } = parseArgs({ allowPositionals: true, options: { rate: { type: 'string', default: '50' }, seconds: { type: 'string', default: '20' } } });
  const bin = resolve(positionals[0] ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'gitwire'));
  const extra = positionals.slice(1);
  const rate = Number(o.rate), seconds = Number(o.seconds);
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'A', GIT_AUTHOR_EMAIL: 'a@x', GIT_COMMITTER_NAME: 'C', GIT_COMMITTER_EMAIL: 'c@x' };
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-ssh-hs-'));
  const srv = join(dir, 'srv'), keys = join(dir, 'keys'), w = join(dir, 'w');
  mkdirSync(srv); mkdirSync(keys);
  execFileSync('git', ['init', '-q', '-b', 'main', w], { env });
  execFileSync('git', ['-C', w, 'commit', '-q', '--allow-empty', '-m', 'one'], { env });
  execFileSync('git', ['clone', '-q', '--bare', w, join(srv, 'r.git')], { env });
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'id')]);
  execFileSync('cp', [join(dir, 'id.pub'), join(keys, 'alice.pub')]);
  const child = spawn(bin, ['serve', srv, '--ssh', '0', '--ssh-keys', keys, '--ssh-host-key', join(dir, 'host'), '--metrics', '0', '--quiet', ...extra], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const ports = await new Promise((res, rej) => {
    let out = '';
    const p = {};
    child.stdout.on('data', (d) => {
      out += d;
      const s = /"url":"ssh:\/\/[^:]+:(\d+)\//.exec(out), m = /"metrics":"http:\/\/.*?:(\d+)\/metrics"/.exec(out);
      if (s) p.ssh = Number(s[1]);
      if (m) p.metrics = Number(m[1]);
      if (p.ssh && p.metrics) res(p);
    });
    child.on('exit', () => rej(new Error(`serve exited: ${out}`)));
  });
  child.stdout.resume();
  const key = readFileSync(join(dir, 'id'));
  const metric = (name) => new Promise((res) => {
    request({ host: '127.0.0.1', port: ports.metrics, path: '/metrics' }, (r) => {
      let b = '';
      r.on('data', (d) => { b += d; });
      r.on('end', () => { const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(b); res(m ? Number(m[1]) : NaN); });
    }).end();
  });
  const cpu = () => { const f = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
  const login = () => new Promise((res) => {
    const t0 = performance.now();
    const c = new ssh2.Client();
    const done = (ok) => { c.end(); res({ ms: performance.now() - t0, ok }); };
    c.on('error', () => done(false));
    c.on('ready', () => c.exec("git-upload-pack '/r.git'", (e, ch) => {
      if (e) return done(false);
      let out = '';
      ch.on('data', (d) => { out += d; if (out.endsWith('0000')) done(true); });
      ch.stderr.resume();
    }));
    c.connect({ host: '127.0.0.1', port: ports.ssh, username: 'git', privateKey: key, hostVerifier: () => true, readyTimeout: 30_000 });
  });
  const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
  async function phase(name, attack) {
    await metric('nodejs_eventloop_lag_p99_seconds'); // resets the histogram
    const c0 = cpu(), l0 = loadavg()[0];
    const worker = attack ? new Worker(fileURLToPath(import.meta.url), { workerData: { port: ports.ssh, rate, seconds, from: '127.0.0.2' } }) : undefined;
    const got = worker ? new Promise((r) => worker.once('message', r)) : Promise.resolve(undefined);
    const lat = [];
    let failed = 0;
    const t0 = Date.now();
    while (Date.now() - t0 < seconds * 1000) { const r = await login(); if (r.ok) lat.push(r.ms); else failed++; }
    const lag = await metric('nodejs_eventloop_lag_p99_seconds');
    const usedMs = cpu() - c0;
    const a = await got;
    console.log(JSON.stringify({
      phase: name, logins: lat.length, failed, p50: +pct(lat, 50).toFixed(1), p99: +pct(lat, 99).toFixed(1), max: +Math.max(...lat).toFixed(1),
      serveLoopP99ms: +(lag * 1000).toFixed(1), serveCpuPct: +((usedMs / (seconds * 1000)) * 100).toFixed(1), attacker: a, load1: [l0, loadavg()[0]].map((x) => +x.toFixed(2)),
    }));
  }
  try {
    await phase('alone', false);
    await phase(`${rate}/s from 127.0.0.2`, true);
  } finally { child.kill(); rmSync(dir, { recursive: true, force: true }); }
}
