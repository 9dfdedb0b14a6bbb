// Unknown user vs a known user's wrong password under --htpasswd: N interleaved
// rounds per file (costs 5, 12 and a mixed file), medians in ms.
// Usage: node bench/htpasswd-timing.mjs [rounds] [module]   (module: dist/transport/htpasswd.js by default)
//        node bench/htpasswd-timing.mjs [rounds] --http <bin/gitwire>   (401s from `gitwire serve --htpasswd --auth all`)
import { execFileSync, spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import bcrypt from 'bcryptjs';

const rounds = Number(process.argv[2] ?? 40);
const http = process.argv[3] === '--http';
const mod = http ? undefined : await import(pathToFileURL(resolve(process.argv[3] ?? 'dist/transport/htpasswd.js')).href);
const dir = mkdtempSync(join(tmpdir(), 'gitwire-htpw-bench-'));
const y = (pw, cost) => bcrypt.hashSync(pw, cost).replace(/^\$2[ab]\$/, '$2y$');
const files = {
  'cost 5': [['alice', 5]],
  'cost 12': [['alice', 12]],
  // most common cost 5; alice is one of the cost-5 users, carol the odd one out
  mixed: [['alice', 5], ['bob', 5], ['dave', 5], ['carol', 12]],
};
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
/** `gitwire serve --htpasswd file --auth all` with a verify() that sends a GET and waits for its status. */
async function serve(bin, file) {
  const root = join(dir, 'root');
  mkdirSync(root, { recursive: true });
  // an existing repository: a missing one is 404 before credentials are looked at
  execFileSync('git', ['init', '-q', '--bare', join(root, 'r.git')]);
  const srv = spawn(bin, ['serve', root, '--http', '0', '--quiet', '--htpasswd', file, '--auth', 'all'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((res, rej) => {
    let buf = '';
    srv.stdout.on('data', (d) => { buf += d; const m = /"url":"http:\/\/[^:]+:(\d+)\//.exec(buf); if (m) res(Number(m[1])); });
    srv.once('exit', (c) => rej(new Error(`serve exited ${c}`)));
  });
  return {
    verify: (user, password) => new Promise((res, rej) => {
      const auth = Buffer.from(`${user}:${password}`).toString('base64');
      request({ host: '127.0.0.1', port, path: '/r.git/info/refs?service=git-upload-pack', headers: { authorization: `Basic ${auth}` }, agent: false }, (r) => {
        r.resume();
        r.on('end', () => (r.statusCode === 401 ? res(false) : r.statusCode === 200 ? res(true) : rej(new Error(`status ${r.statusCode}`))));
      }).on('error', rej).end();
    }),
    close: () => new Promise((res) => { srv.once('exit', res); srv.kill(); }),
  };
}

try {
  for (const [name, users] of Object.entries(files)) {
    const file = join(dir, name.replace(/\W/g, ''));
    writeFileSync(file, users.map(([u, c]) => `${u}:${y('right', c)}\n`).join(''));
    const h = http ? await serve(process.argv[4], file) : new mod.Htpasswd(file, () => undefined);
    await h.verify('alice', 'warmup');
    const probes = { unknown: ['mallory', 'wrong'], 'alice wrong': ['alice', 'wrong'] };
    if (name === 'mixed') probes['carol wrong'] = ['carol', 'wrong'];
    const t = Object.fromEntries(Object.keys(probes).map((k) => [k, []]));
    for (let i = 0; i < rounds; i++) {
      for (const [k, [u, p]] of Object.entries(probes)) {
        const t0 = process.hrtime.bigint();
        const ok = await h.verify(u, `${p}${i}`);
        t[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (ok) throw new Error('a wrong password was accepted');
      }
    }
    await h.close?.();
    console.log(`${name}: ` + Object.entries(t).map(([k, v]) => `${k} median ${median(v).toFixed(1)} ms (min ${Math.min(...v).toFixed(1)}, max ${Math.max(...v).toFixed(1)})`).join('; '));
  }
} finally { rmSync(dir, { recursive: true, force: true }); }
