/**
 * HTTP push under load and abuse, against `gitwire serve` in a child
 * process: simultaneous pushes, --max-ingests, a large push's memory
 * (peak RSS from /proc, not timed), a client that disconnects mid-pack,
 * a gzip body, and a body over --max-push-size.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, mkdirSync, readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { git, gitBuf, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { fsck, objectFiles, request as pushRequest, serverState, transcript } from './helpers/push.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { gitAsync } from './helpers/push-net.js';

function setup(t: { dir: string }) {
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  const root = join(t.dir, 'root');
  mkdirSync(root);
  const dir = join(root, 'r.git');
  git(['clone', '-q', '--bare', src, dir]);
  git(['config', 'http.receivepack', 'true'], { cwd: dir });
  const base = git(['rev-parse', 'HEAD'], { cwd: src }).trim();
  return { src, root, dir, base };
}

/** children of a process (leaked index-pack, hooks) */
function children(pid: number): string[] {
  const r = spawnSync('ps', ['--ppid', String(pid), '-o', 'pid=,args='], { encoding: 'utf8' });
  const kids = r.stdout.split('\n').filter((l) => l.trim());
  // serve forks through its spawn helper (src/util/spawn-helper.ts): its children are serve's
  return kids.flatMap((l) => (l.includes('spawn-helper.js') ? children(Number(l.trim().split(' ')[0])) : [l]));
}

/** one commit per branch c<i>, each on top of base */
function branches(src: string, base: string, n: number, tag: string): string[] {
  const tips: string[] = [];
  for (let i = 0; i < n; i++) {
    git(['checkout', '-q', '-B', `${tag}${i}`, base], { cwd: src });
    tips.push(commit(src, `${tag} ${i}`, { [`${tag}${i}.txt`]: `${tag} ${i}\n` }));
  }
  return tips;
}

test('10 simultaneous HTTP pushes to different refs all succeed; 10 to one ref give exactly one winner', { timeout: 180_000 }, async () => {
  const t = tmp('gitwire-pushload-');
  let s: ServerProc | undefined;
  try {
    const { src, root, dir, base } = setup(t);
    s = await startServe(root, ['--http', '0', '--quiet']);
    const url = `http://127.0.0.1:${s.httpPort}/r.git`;
    const tips = branches(src, base, 10, 'd');
    const rs = await Promise.all(tips.map((_, i) => gitAsync(['push', url, `d${i}:refs/heads/d${i}`], src)));
    rs.forEach((r, i) => assert.equal(r.code, 0, `push ${i}: ${r.stderr}`));
    for (const [i, tip] of tips.entries()) assert.equal(git(['rev-parse', `refs/heads/d${i}`], { cwd: dir }).trim(), tip);

    const racers = branches(src, base, 10, 'same');
    const rr = await Promise.all(racers.map((_, i) => gitAsync(['push', url, `same${i}:refs/heads/main`], src)));
    const winners = rr.map((r, i) => (r.code === 0 ? i : -1)).filter((i) => i >= 0);
    assert.equal(winners.length, 1, rr.map((r) => r.stderr).join('\n'));
    assert.equal(git(['rev-parse', 'refs/heads/main'], { cwd: dir }).trim(), racers[winners[0]!]);
    for (const [i, r] of rr.entries()) {
      if (i === winners[0]) continue;
      // refused by the lock or the old value (remote rejected), or by the client after a new advertisement
      assert.match(r.stderr, /\[remote rejected\]|\[rejected\]/, r.stderr);
    }
    assert.equal(fsck(dir).code, 0);
    assert.deepEqual(readdirSync(join(dir, 'objects')).filter((n) => n.startsWith('tmp_objdir')), []);
  } finally { await s?.stop(); t.cleanup(); }
});

test('20 pushes with --max-ingests 2 all complete', { timeout: 180_000 }, async () => {
  const t = tmp('gitwire-pushload-');
  let s: ServerProc | undefined;
  try {
    const { src, root, dir, base } = setup(t);
    s = await startServe(root, ['--http', '0', '--max-ingests', '2', '--metrics', '0']);
    const url = `http://127.0.0.1:${s.httpPort}/r.git`;
    const tips = branches(src, base, 20, 'q');
    const rs = await Promise.all(tips.map((_, i) => gitAsync(['push', url, `q${i}:refs/heads/q${i}`], src)));
    rs.forEach((r, i) => assert.equal(r.code, 0, `push ${i}: ${r.stderr}`));
    for (const [i, tip] of tips.entries()) assert.equal(git(['rev-parse', `refs/heads/q${i}`], { cwd: dir }).trim(), tip);
    const m = await (await fetch(`http://127.0.0.1:${s.metricsPort}/metrics`)).text();
    assert.match(m, /gitwire_pushes_total\{transport="http",outcome="ok"\} 20/);
    assert.match(m, /gitwire_push_refs_total\{transport="http",result="updated"\} 20/);
    assert.match(m, /gitwire_ingest_active 0/);
    // one log line per push, with its figures
    const lines = s.logs.filter((l) => l.includes('"command":"receive-pack"'));
    assert.equal(lines.length, 20);
    const e = JSON.parse(lines[0]!) as { repository: string; transport: string; durationMs: number; outcome: string; push: { updated: number; rejected: number; bytesIn: number; objects: number } };
    assert.equal(e.repository, '/r.git');
    assert.equal(e.outcome, 'ok');
    assert.equal(e.push.updated, 1);
    assert.equal(e.push.objects, 3);
    assert.ok(e.push.bytesIn > 100);
  } finally { await s?.stop(); t.cleanup(); }
});

// the bound is 100 MiB for 200 MB; 96 MiB of content here (the test machine is shared)
test('a large HTTP push streams: peak server RSS stays under 100 MiB', { timeout: 300_000 }, async () => {
  const t = tmp('gitwire-pushbig-');
  let s: ServerProc | undefined;
  try {
    const { src, root, dir } = setup(t);
    // 96 MiB of incompressible content
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 12; i++) files[`big${i}.bin`] = randomBytes(8 << 20);
    const tip = commit(src, 'big', files);
    s = await startServe(root, ['--http', '0', '--quiet']);
    const r = await gitAsync(['push', `http://127.0.0.1:${s.httpPort}/r.git`, 'main:refs/heads/big'], src, {}, 240_000);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git(['rev-parse', 'refs/heads/big'], { cwd: dir }).trim(), tip);
    const status = readFileSync(`/proc/${s.child.pid}/status`, 'utf8');
    const hwmKb = Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]);
    assert.ok(hwmKb < 100 * 1024, `peak RSS ${hwmKb} kB`);
  } finally { await s?.stop(); t.cleanup(); }
});

function post(port: number, body: Buffer | ((req: ReturnType<typeof httpRequest>) => void), headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/r.git/git-receive-pack', headers: { 'Content-Type': 'application/x-git-receive-pack-request', ...headers }, agent: false }, (res) => {
      const out: Buffer[] = [];
      res.on('data', (b: Buffer) => out.push(b));
      // (a body still being written when the answer is complete is cut off)
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(out) }); req.destroy(); });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Buffer.isBuffer(body)) req.end(body); else body(req);
  });
}

test('a gzip body works; a client that disconnects mid-pack leaves no objects and no child; a push over --max-push-size is refused', { timeout: 180_000 }, async () => {
  const t = tmp('gitwire-pushbody-');
  let s: ServerProc | undefined;
  try {
    const { src, root, dir, base } = setup(t);
    s = await startServe(root, ['--http', '0', '--quiet', '--max-push-size', '1m']);
    const port = s.httpPort!;
    const caps = 'report-status object-format=sha1 agent=x';

    // gzip, chunked
    const tip = commit(src, 'gz', { 'gz.txt': 'gz\n' });
    const pack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${tip}\n^${base}\n` });
    const gz = await post(port, (req) => { req.write(gzipSync(pushRequest([`${'0'.repeat(40)} ${tip} refs/heads/gz`], caps, pack))); req.end(); }, { 'Content-Encoding': 'gzip' });
    assert.equal(gz.status, 200);
    assert.deepEqual(transcript(gz.body), ['unpack ok\n', 'ok refs/heads/gz\n', '0000']);
    assert.equal(git(['rev-parse', 'refs/heads/gz'], { cwd: dir }).trim(), tip);

    // disconnect mid-pack
    const objs = objectFiles(dir);
    const bigTip = commit(src, 'cut', { 'cut.bin': randomBytes(900 << 10) });
    const bigPack = gitBuf(['pack-objects', '--stdout', '--revs', '-q'], { cwd: src, input: `${bigTip}\n^${tip}\n` });
    const body = pushRequest([`${'0'.repeat(40)} ${bigTip} refs/heads/cut`], caps, bigPack);
    // the client goes away once the server is ingesting (its quarantine exists): a fixed
    // delay raced a loaded machine, where the server made the quarantine after the checks
    // below had found none (CI, once)
    const quarantined = () => readdirSync(join(dir, 'objects')).some((n) => n.startsWith('tmp_objdir'));
    const ingesting = await new Promise<boolean>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/r.git/git-receive-pack', headers: { 'Content-Type': 'application/x-git-receive-pack-request' }, agent: false });
      const started = Date.now();
      req.on('error', () => { clearInterval(poll); resolve(false); });
      req.write(body.subarray(0, body.length >> 1));
      const poll = setInterval(() => {
        const seen = quarantined();
        if (!seen && Date.now() - started < 30_000) return;
        clearInterval(poll);
        req.destroy();
        resolve(seen);
      }, 20);
    });
    assert.ok(ingesting, 'the server never began to ingest the half pack');
    let kids: string[] = [];
    for (let i = 0; i < 50; i++) {
      kids = children(s.child.pid!);
      if (!kids.length && !quarantined()) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(kids, []);
    assert.deepEqual(objectFiles(dir), objs);
    assert.doesNotMatch(serverState(dir).refs, /refs\/heads\/cut/);

    // over --max-push-size (1 MiB): git's index-pack limit, stated to the client
    git(['checkout', '-q', 'main'], { cwd: src });
    commit(src, 'huge', { 'huge.bin': randomBytes(3 << 20) });
    const r = await gitAsync(['push', `http://127.0.0.1:${port}/r.git`, 'main:refs/heads/huge'], src);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /pack exceeds maximum allowed size|larger than the server's maximum/);
    assert.doesNotMatch(serverState(dir).refs, /refs\/heads\/huge/);
    assert.deepEqual(objectFiles(dir), objs);
    // a declared body far over the limit is refused before it is read: only its first 64 KiB are
    // sent, and the answer comes without the rest (sending it all raced the server's close: an
    // EPIPE on the write, uncaught once in CI)
    const big = await post(port, (req) => { req.write(Buffer.alloc(64 << 10)); }, { 'Content-Length': String(4 << 20) });
    assert.equal(big.status, 413);
    assert.match(big.body.toString(), /push is larger than the server's maximum \(1048576 bytes\)/);
  } finally { await s?.stop(); t.cleanup(); }
});
