/**
 * `npm run bench -- bundles`: clone offload (docs/serving.md). N clones of
 * the `history` fixture (--clones, default 20) with the bundle (git 2.55
 * with transfer.bundleURI when GITWIRE_GIT_2_55 names one, else the
 * installed git with --bundle-uri=<gitwire's bundle URL>) against N plain
 * clones, through one `gitwire serve --bundles serve`, alternating. The
 * server has one commit the bundle lacks, so each bundle clone also
 * fetches. Per clone: the server's CPU (schedstat of its threads), the
 * bytes upload-pack sent (gitwire_bytes_sent_total less the bundle
 * downloads), the bundle bytes it served, and the client's wall time. Also
 * the cost of making the bundle (`gitwire bundle create`, wall and CPU).
 * Writes a markdown table to stdout.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as fx from './fixtures.mjs';
import { median } from './parse.mjs';
import { ownCpuMs } from './proc.mjs';
import { spawnServe } from './serve-process.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'gitwire');

/** a metric's value (summed over labels), over a fresh connection: a kept-alive one may have been closed while git ran synchronously */
function metric(port, name) {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let n = 0;
        for (const m of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) n += Number(m[1]);
        resolve(n);
      });
    }).on('error', reject);
  });
}

export async function bundlesBench({ clones = 20 } = {}) {
  const env = fx.env;
  const fixture = await fx.history();
  const tmp = mkdtempSync(join(tmpdir(), 'gitwire-bench-bundles-'));
  try {
    const root = join(tmp, 'root');
    execFileSync('mkdir', ['-p', root]);
    const repo = join(root, 'history.git');
    execFileSync('cp', ['-al', fixture, repo]);
    // one commit the bundle will not have: every clone fetches something after it
    const made0 = performance.now();
    const mk = spawnSync('/usr/bin/time', ['-f', '%U %S', BIN, 'bundle', 'create', '-q', repo], { env, encoding: 'utf8' });
    if (mk.status !== 0) throw new Error(`bundle create: ${mk.stderr}`);
    const makeWall = performance.now() - made0;
    const [u, s] = mk.stderr.trim().split('\n').at(-1).split(' ').map(Number);
    const bundleName = readdirSync(join(repo, 'gitwire', 'bundles')).find((n) => n.endsWith('.bundle'));
    const tip = execFileSync('git', ['commit-tree', 'main^{tree}', '-p', 'main', '-m', 'after the bundle'], { cwd: repo, env, encoding: 'utf8' }).trim();
    execFileSync('git', ['update-ref', 'refs/heads/main', tip], { cwd: repo, env });
    const git255 = process.env.GITWIRE_GIT_2_55 && existsSync(join(process.env.GITWIRE_GIT_2_55, 'bin', 'git')) ? join(process.env.GITWIRE_GIT_2_55, 'bin', 'git') : undefined;
    const { p, port, metricsPort } = await spawnServe(BIN, root, ['--bundles', 'serve'], env);
    const url = `http://127.0.0.1:${port}/history.git`;
    const rows = { bundle: [], plain: [] };
    try {
      for (let i = 0; i < clones; i++) {
        for (const kind of ['bundle', 'plain']) {
          const dest = join(tmp, `c-${kind}-${i}`);
          const args = kind === 'plain' ? ['clone', '-q', '--bare', url, dest]
            : git255 ? ['-c', 'transfer.bundleURI=true', 'clone', '-q', '--bare', url, dest]
              : ['clone', '-q', '--bare', `--bundle-uri=${url}/info/bundles/${bundleName}`, url, dest];
          const cpu0 = ownCpuMs(p.pid), sent0 = await metric(metricsPort, 'gitwire_bytes_sent_total'), dl0 = await metric(metricsPort, 'gitwire_bundle_download_bytes_total');
          const t0 = performance.now();
          const r = spawnSync(kind === 'bundle' && git255 ? git255 : 'git', args, { env, encoding: 'utf8' });
          const wall = performance.now() - t0;
          if (r.status !== 0) throw new Error(`${kind} clone: ${r.stderr}`);
          const cpu = ownCpuMs(p.pid) - cpu0;
          const dl = (await metric(metricsPort, 'gitwire_bundle_download_bytes_total')) - dl0;
          const sent = (await metric(metricsPort, 'gitwire_bytes_sent_total')) - sent0 - dl;
          rows[kind].push({ cpu, sent, dl, wall });
          rmSync(dest, { recursive: true, force: true });
        }
      }
    } finally {
      p.kill('SIGTERM');
    }
    const med = (k, f) => median(rows[k].map((x) => x[f]));
    const mb = (n) => (n / 1e6).toFixed(2);
    let out = `\n### Clone offload: ${clones} clones of history with the bundle, ${clones} without\n\n`;
    out += `client: ${git255 ? 'git 2.55, -c transfer.bundleURI=true' : 'installed git, --bundle-uri=<gitwire URL>'}; bundle made by \`gitwire bundle create\` in ${(makeWall / 1000).toFixed(2)} s wall, ${(u + s).toFixed(2)} s CPU\n\n`;
    out += '| clone | server CPU ms (median) | upload-pack MB sent (median) | bundle MB served (median) | client wall s (median) |\n|---|---|---|---|---|\n';
    for (const k of ['plain', 'bundle']) out += `| ${k === 'plain' ? 'without bundle' : 'with bundle'} | ${med(k, 'cpu').toFixed(0)} | ${mb(med(k, 'sent'))} | ${mb(med(k, 'dl'))} | ${(med(k, 'wall') / 1000).toFixed(2)} |\n`;
    out += `\nupload-pack bytes with the bundle: ${(100 * med('bundle', 'sent') / med('plain', 'sent')).toFixed(2)}% of a plain clone's; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`;
    return out;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
