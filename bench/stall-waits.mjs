/**
 * Other clients' slowest wait while one request, within every limit,
 * does the most it may (issue #24, items 1-3): a poller asks `serve` for
 * another repository's info/refs, one request at a time, for as long as
 * each attack runs.
 *
 *   node bench/stall-waits.mjs [bin/gitwire] [case-substring]
 *
 * Needs `git` on the PATH; builds its repositories under the system's
 * temporary directory and removes them.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = resolve(process.argv[2] ?? join(fileURLToPath(new URL('.', import.meta.url)), '..', 'bin', 'gitwire'));
const only = process.argv[3];
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_AUTHOR_NAME: 'A', GIT_AUTHOR_EMAIL: 'a@x', GIT_COMMITTER_NAME: 'C', GIT_COMMITTER_EMAIL: 'c@x' };
const git = (args, opts = {}) => execFileSync('git', args, { env, ...opts }).toString();

function http(url, method, headers, body) {
  return new Promise((res, rej) => {
    const r = request(url, { method, headers: body ? { ...headers, 'Content-Length': String(body.length) } : headers }, (a) => {
      const parts = [];
      a.on('data', (d) => parts.push(d));
      a.on('end', () => res({ status: a.statusCode, body: Buffer.concat(parts) }));
      a.on('error', rej);
    });
    r.on('error', rej);
    r.end(body);
  });
}
const pkt = (s) => { const b = Buffer.from(s); return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]); };
const FLUSH = Buffer.from('0000');
function emptyPack() { const h = Buffer.from('PACK\0\0\0\x02\0\0\0\0', 'latin1'); return Buffer.concat([h, createHash('sha1').update(h).digest()]); }
function push(cmds, { shallow = [], pack, caps = 'report-status agent=git/2.55.0' } = {}) {
  const parts = shallow.map((s) => pkt(`shallow ${s}`));
  cmds.forEach((c, i) => parts.push(pkt(i ? c : `${c}\0${caps}`)));
  parts.push(FLUSH);
  if (pack) parts.push(pack);
  return Buffer.concat(parts);
}

const dir = mkdtempSync(join(tmpdir(), 'gitwire-stalls-'));
try {
  const src = join(dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  git(['commit', '-q', '--allow-empty', '-m', 'a'], { cwd: src });
  const tip = git(['rev-parse', 'HEAD'], { cwd: src }).trim();
  const root = join(dir, 'root');
  for (const n of ['r.git', 'other.git']) git(['clone', '-q', '--bare', src, join(root, n)]);
  const r = join(root, 'r.git');
  git(['config', 'http.receivepack', 'true'], { cwd: r });
  git(['update-ref', '--stdin'], { cwd: r, input: Array.from({ length: 1000 }, (_, i) => `create refs/heads/b${i} ${tip}\n`).join('') });
  git(['pack-refs', '--all'], { cwd: r });

  const child = spawn(bin, ['serve', root, '--http', '0', '--quiet'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((res, rej) => {
    let b = '';
    child.stdout.on('data', (d) => { b += d; const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(b); if (m) res(Number(m[1])); });
    child.once('exit', (c) => rej(new Error(`serve exited ${c}`)));
  });
  const base = `http://127.0.0.1:${port}/r.git`;
  const poll = `http://127.0.0.1:${port}/other.git/info/refs?service=git-upload-pack`;
  const Z = '0'.repeat(40);
  const rp = (body) => http(`${base}/git-receive-pack`, 'POST', { 'Content-Type': 'application/x-git-receive-pack-request' }, body);
  /** as git's remote-curl sends a body over http.postBuffer: chunked, 64 KiB writes */
  const rpChunked = (body) => new Promise((res, rej) => {
    const q = request(`${base}/git-receive-pack`, { method: 'POST', headers: { 'Content-Type': 'application/x-git-receive-pack-request', Accept: 'application/x-git-receive-pack-result', 'Transfer-Encoding': 'chunked' } }, (a) => {
      const parts = [];
      a.on('data', (d) => parts.push(d));
      a.on('end', () => res({ status: a.statusCode, body: Buffer.concat(parts) }));
      a.on('error', rej);
    });
    q.on('error', rej);
    for (let at = 0; at < body.length; at += 65536) q.write(body.subarray(at, at + 65536));
    q.end();
  });
  const lsRefs = (f) => {
    const p = [pkt('command=ls-refs\n'), Buffer.from('0001')];
    for (let i = 0; i < 65_000; i++) p.push(pkt(`ref-prefix ${f(i)}\n`));
    p.push(FLUSH);
    return http(`${base}/git-upload-pack`, 'POST', { 'Content-Type': 'application/x-git-upload-pack-request', 'Git-Protocol': 'version=2' }, Buffer.concat(p));
  };
  const cases = {
    'push of a 1,000-level ref': () => rp(push([`${Z} ${tip} refs/heads/${'d/'.repeat(1000)}x`], { pack: emptyPack() })),
    'push of a 4,000-level ref': () => rp(push([`${Z} ${tip} refs/heads/${'e/'.repeat(4000)}x`], { pack: emptyPack() })),
    'ls-refs, 65,000 prefixes matching nothing': () => lsRefs((i) => `refs/zz/${i}`),
    'ls-refs, 65,000 prefixes matching': () => lsRefs((i) => `refs/heads/b${i}`),
    'push with 190,000 shallow lines': () => rp(push([`${Z} ${tip} refs/heads/sh`], { shallow: Array.from({ length: 190_000 }, (_, i) => i.toString(16).padStart(40, 'a')), pack: emptyPack() })),
    'push of 50,000 creations': () => rp(push(Array.from({ length: 50_000 }, (_, i) => `${Z} ${tip} refs/heads/n/${i}`), { pack: emptyPack() })),
    'push of 50,000 creations as git sends it (chunked, side-band-64k, report-status-v2)': () => rpChunked(push(Array.from({ length: 50_000 }, (_, i) => `${Z} ${tip} refs/heads/g/${i}`), { pack: emptyPack(), caps: 'report-status-v2 side-band-64k quiet object-format=sha1 agent=git/2.55.0' })),
    'push of 50,000 deletions of missing refs': () => rp(push(Array.from({ length: 50_000 }, (_, i) => `${i.toString(16).padStart(40, 'f')} ${Z} refs/heads/gone/${i}`))),
  };
  console.log('| attack | status | its wall ms | others\' max wait ms | polls |\n|---|---:|---:|---:|---:|');
  for (const [name, attack] of Object.entries(cases)) {
    if (only && !name.includes(only)) continue;
    let stop = false, max = 0, polls = 0;
    const poller = (async () => {
      while (!stop) {
        const t0 = performance.now();
        await http(poll, 'GET', {});
        if (polls++ > 0) max = Math.max(max, performance.now() - t0);
        await new Promise((res) => setTimeout(res, 5));
      }
    })();
    while (polls === 0) await new Promise((res) => setTimeout(res, 5));
    const t0 = performance.now();
    const a = await attack();
    const wall = performance.now() - t0;
    stop = true;
    await poller;
    console.log(`| ${name} | ${a.status} | ${wall.toFixed(0)} | ${max.toFixed(0)} | ${polls} |`);
  }
  child.kill();
} finally {
  execFileSync('rm', ['-rf', dir]);
}
