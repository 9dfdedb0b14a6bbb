/**
 * Issue #10, defects 4, 5 and 6: negotiation and large requests cost the
 * shared server little, answer exactly as git does, and memory stays
 * bounded. Answers are compared byte for byte with `git upload-pack`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { connect } from 'node:net';
import { git, gitEnv, tmp } from './helpers/git.js';
import { pkt, unpkt } from './helpers/pkt.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { httpPost } from './helpers/wire.js';
import { countYields } from './helpers/yields.js';
import { MemorySink } from '../src/pktline/sink.js';
import { uploadPack } from '../src/protocol/upload-pack.js';
import { encode } from '../src/pktline/codec.js';
import type { Limits } from '../src/protocol/limits.js';

const N = 10_000;
let t: ReturnType<typeof tmp>;
let root: string;
let repo: string;
let chain: string[] = [];
let side: string[] = [];
let srv: ServerProc;

/** A linear history of N empty commits on main, and a 300-commit side branch from commit 50. */
function makeHistory(dir: string): void {
  git(['init', '-q', '--bare', dir]);
  let s = '';
  for (let i = 1; i <= N; i++) {
    s += `commit refs/heads/main\nmark :${i}\ncommitter C <c@example.com> ${1600000000 + i * 60} +0000\ndata ${String(i).length}\n${i}\n`;
    if (i > 1) s += `from :${i - 1}\n`;
    s += '\n';
  }
  for (let j = 1; j <= 300; j++) {
    s += `commit refs/heads/side\nmark :${N + j}\ncommitter C <c@example.com> ${1600000000 + 50 * 60 + j * 7} +0000\ndata 2\ns\nfrom :${j === 1 ? 50 : N + j - 1}\n\n`;
  }
  git(['fast-import', '--quiet'], { cwd: dir, input: s, env: { GIT_DIR: dir } });
}

/** deterministic ids nobody has */
function unknown(n: number, seed = 1): string[] {
  const out: string[] = [];
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    let h = '';
    for (let k = 0; k < 5; k++) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; h += x.toString(16).padStart(8, '0'); }
    out.push(h);
  }
  return out;
}

before(async () => {
  t = tmp('gitwire-neg-');
  root = join(t.dir, 'root');
  repo = join(root, 'big.git');
  makeHistory(repo);
  git(['--git-dir', repo, 'config', 'transfer.advertiseObjectInfo', 'true']);
  chain = git(['--git-dir', repo, 'rev-list', '--reverse', 'main']).trim().split('\n');
  side = git(['--git-dir', repo, 'rev-list', '--reverse', 'main..side']).trim().split('\n');
  assert.equal(chain.length, N);
  srv = await startServe(root, ['--http', '0', '--git', '0', '--export-all', '--quiet']);
});
after(async () => { await srv.stop(); t.cleanup(); });

function gitReply(body: Buffer, proto = ''): Buffer {
  return spawnSync('git', ['upload-pack', '--stateless-rpc', repo], { input: body, env: { ...gitEnv, GIT_PROTOCOL: proto }, maxBuffer: 1 << 28 }).stdout;
}

async function ours(body: Buffer, proto = ''): Promise<{ out: Buffer; ticks: number }> {
  const sink = new MemorySink();
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 1);
  try {
    await uploadPack({ directory: repo, input: body, output: sink, env: { ...gitEnv, GIT_PROTOCOL: proto }, statelessRpc: true });
  } finally {
    clearInterval(timer);
  }
  return { out: sink.data, ticks };
}

/** The request from defect 4: multi_ack_detailed, one have of an old common commit, then 4,000 unknown haves. */
function defect4Request(): Buffer {
  return pkt([`want ${chain[N - 1]} multi_ack_detailed side-band-64k ofs-delta\n`, '0000', `have ${chain[99]}\n`, ...unknown(4000).map((h) => `have ${h}\n`), '0000']);
}

test('defect 4: 4,000 unknown haves after an old common one get git\'s exact answer', async () => {
  const body = defect4Request();
  assert.ok(body.length > 190_000 && body.length < 205_000, 'the 195 KB request from the issue');
  const r = await ours(body);
  assert.deepEqual(unpkt(r.out), unpkt(gitReply(body)));
  assert.equal(unpkt(r.out).filter((l) => l.endsWith(' ready\n')).length, 4000);
});

test('negotiation: haves that keep changing the answer (side branch, then older and older main commits) match git', async () => {
  const u = unknown(400, 7);
  const lines: string[] = [`want ${chain[N - 1]} multi_ack_detailed side-band-64k\n`, '0000'];
  for (let i = 0; i < 200; i++) lines.push(`have ${side[299 - i]}\n`, `have ${u[i]}\n`);
  for (let i = 0; i < 100; i++) lines.push(`have ${chain[9000 - i * 80]}\n`, `have ${u[200 + i]}\n`);
  lines.push('0000');
  const body = pkt(lines);
  assert.deepEqual(unpkt((await ours(body)).out), unpkt(gitReply(body)));
  // multi_ack (not detailed) and a v2 round with the same haves
  const plain = pkt([`want ${chain[N - 1]} multi_ack side-band-64k\n`, ...lines.slice(1)]);
  assert.deepEqual(unpkt((await ours(plain)).out), unpkt(gitReply(plain)));
  const v2 = pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${chain[N - 1]}\n`, ...lines.slice(2, -1), '0000']);
  // v2 ACKs each new have once (git 2.55's have_obj; 2.39 ACKed every have it had): the sections before the
  // pack, recorded from the v2.55.0 oracle as a digest
  const l2 = unpkt((await ours(v2, 'version=2')).out);
  const sections = l2.slice(0, l2.indexOf('packfile\n') + 1);
  assert.equal(sections.length, 105);
  assert.equal(createHash('sha256').update(JSON.stringify(sections)).digest('hex'), 'ee3beb9ceb7020386c73d627a752e99952f353f8f51817842a54f8e8f6263a15');
  // a have on the side branch only: never ready
  const sideOnly = pkt([`want ${chain[N - 1]} multi_ack_detailed side-band-64k\n`, '0000', `have ${side[10]}\n`, `have ${u[0]}\n`, '0000']);
  assert.deepEqual(unpkt((await ours(sideOnly)).out), unpkt(gitReply(sideOnly)));
});

test('defect 5: 200,000 haves (a 9.5 MB request) give the loop away while they are read, and get git\'s answer', async () => {
  const lines = [`want ${chain[N - 1]} multi_ack_detailed side-band-64k\n`, '0000', ...unknown(200_000, 3).map((h) => `have ${h}\n`), `have ${chain[5000]}\n`, '0000'];
  const body = pkt(lines);
  assert.ok(body.length > 9_000_000 && body.length < 10 * 1024 * 1024);
  const r = await ours(body);
  assert.ok(r.ticks > 0, 'timers ran while the request was worked on');
  assert.deepEqual(unpkt(r.out), unpkt(gitReply(body)));
  // object-info with 200,000 ids
  const oi = pkt(['command=object-info\n', 'object-format=sha1\n', '0001', 'size\n', ...unknown(200_000, 5).map((h) => `oid ${h}\n`), `oid ${chain[3]}\n`, '0000']);
  const r2 = await ours(oi, 'version=2');
  assert.ok(r2.ticks > 0, 'timers ran during object-info');
  const lastLines = unpkt(r2.out).slice(-2);
  assert.deepEqual(lastLines, [`${chain[3]} ${git(['--git-dir', repo, 'cat-file', '-s', chain[3]!]).trim()}`, '0000']);
});

test('limits: more haves than the cap get a clear error (stdio, in-process), the connection is not a crash', async () => {
  const sink = new MemorySink();
  const body = pkt([`want ${chain[N - 1]} multi_ack_detailed\n`, '0000', ...unknown(101, 9).map((h) => `have ${h}\n`), '0000']);
  const err = await uploadPack({ directory: repo, input: body, output: sink, env: gitEnv, statelessRpc: true, limits: { maxHaves: 100 } }).then(() => undefined, (e: unknown) => e);
  assert.equal((err as Error).message, 'upload-pack: too many haves in one request (limit 100)');
  assert.equal(unpkt(sink.data).at(-1), 'ERR upload-pack: too many haves in one request (limit 100)');
});

test('--negotiation-budget stops one long walk inside itself: no `ready`, and a non-tip want past it is refused', async () => {
  const run = async (body: Buffer, negotiationBudgetMs?: number) => {
    const sink = new MemorySink();
    let err: Error | undefined;
    const go = (limits: Partial<Limits>) => uploadPack({ directory: repo, input: body, output: sink, env: gitEnv, statelessRpc: true, limits })
      .then(() => undefined, (e: unknown) => { err = e as Error; });
    // past a budget: on countYields' clock (10 ms a reading) the first check after a yield finds it spent,
    // however fast the machine walks
    if (negotiationBudgetMs === undefined) await go({}); else await countYields(() => go({ ...COUNTING, negotiationBudgetMs }));
    return { lines: unpkt(sink.data), err };
  };
  // the defect-4 walk covers 9,900 commits: many slices
  const d4 = defect4Request();
  const within = await run(d4);
  assert.ok(within.lines.some((l) => / ready\n$/.test(l)), 'within the budget the walk finds the common commit');
  const past = await run(d4, 1);
  assert.equal(past.err, undefined);
  assert.ok(!past.lines.some((l) => / ready\n$/.test(l)), past.lines.slice(0, 3).join(''));
  assert.equal(past.lines.at(-1), 'NAK\n');
  // a want of the root commit, not a tip: stateless, so reachability decides (git's has_unreachable)
  const root = pkt([`want ${chain[0]} multi_ack_detailed side-band-64k\n`, '0000', 'done\n']);
  const ok = await run(root);
  assert.equal(ok.err, undefined);
  assert.equal(ok.lines[0], 'NAK\n');
  const refused = await run(root, 1);
  assert.equal(refused.err?.message, `git upload-pack: not our ref ${chain[0]}`);
  assert.equal(refused.lines.at(-1), `ERR upload-pack: not our ref ${chain[0]}`);
});

/** limits for the yield-counting runs: countYields' clock would spend any budget at once */
const COUNTING = { sliceMs: 2, negotiationBudgetMs: 0 };

test('shallow walks yield on the request\'s slicer: deepen-not and deepen over 10,000 commits, answers as git\'s', async () => {
  // everything the want reaches is excluded: the deepen-not walk covers the whole history, the
  // date-ordered one stops at the want, and git dies
  const env = { ...gitEnv, GIT_PROTOCOL: 'version=2' };
  const body = pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${chain[N - 1]}\n`, 'deepen-not main\n', 'done\n', '0000']);
  let err: Error | undefined;
  const out1 = new MemorySink();
  const y1 = await countYields(() => uploadPack({ directory: repo, input: body, output: out1, env, statelessRpc: true, limits: COUNTING })
    .then(() => undefined, (e: unknown) => { err = e as Error; }));
  const g = spawnSync('git', ['upload-pack', '--stateless-rpc', repo], { input: body, env });
  assert.equal(g.stderr.toString(), `fatal: ${err?.message}\n`);
  // what git had written before it died: the shallow-info line
  assert.equal(out1.data.toString('latin1'), g.stdout.toString('latin1'));
  assert.ok(y1 >= Math.floor(N / 64) - 2, `the deepen-not walk gave the loop away ${y1} times`);
  // deepen past the root: the depth walk covers the whole history
  const deep = pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${chain[N - 1]}\n`, 'deepen 20000\n', 'done\n', '0000']);
  const ours2 = new MemorySink();
  const y2 = await countYields(() => uploadPack({ directory: repo, input: deep, output: ours2, env, statelessRpc: true, limits: COUNTING }));
  const theirs = spawnSync('git', ['upload-pack', '--stateless-rpc', repo], { input: deep, env, maxBuffer: 1 << 26 }).stdout;
  const sections = (b: Buffer) => { const l = unpkt(b); return l.slice(0, l.indexOf('packfile\n') + 1); };
  assert.deepEqual(sections(ours2.data), sections(theirs));
  assert.ok(y2 >= Math.floor(N / 64) - 2, `the depth walk gave the loop away ${y2} times`);
});

test('the tip check looks at every ref and yields while it does: 10,000 refs, a tip want, git\'s answer', async () => {
  const d = join(t.dir, 'many-refs.git');
  git(['init', '-q', '--bare', d]);
  git(['--git-dir', d, 'fetch', '-q', repo, 'refs/heads/main:refs/heads/main']);
  const lines = [`${chain[N - 1]} refs/heads/main`];
  for (let i = 0; i < 10_000; i++) lines.push(`${chain[i % 5]} refs/heads/r${String(i).padStart(5, '0')}`);
  lines.push(`${chain[5]} refs/heads/zz`);
  writeFileSync(join(d, 'packed-refs'), `# pack-refs with: peeled fully-peeled sorted \n${lines.join('\n')}\n`);
  rmSync(join(d, 'refs', 'heads', 'main'), { force: true });
  const body = pkt([`want ${chain[5]} multi_ack_detailed side-band-64k\n`, '0000', 'done\n']);
  const sink = new MemorySink();
  // stateful: a want must be a tip, so a tip the check missed would be refused, not walked to
  const yields = await countYields(() => uploadPack({ directory: d, input: body, output: sink, env: gitEnv, statelessRpc: false, limits: COUNTING }));
  const g = spawnSync('git', ['upload-pack', d], { input: body, env: gitEnv, maxBuffer: 1 << 26 }).stdout;
  const afterAdvert = (b: Buffer) => { const l = unpkt(b); return l.slice(l.indexOf('0000') + 1, l.indexOf('0000') + 2); };
  assert.deepEqual(afterAdvert(sink.data), afterAdvert(g));
  assert.equal(afterAdvert(sink.data)[0], 'NAK\n');
  assert.ok(yields >= Math.floor(10_000 / 64) - 2, `the tip check gave the loop away ${yields} times`);
  // the advertisement and ls-refs to a client that never backs up: the ref scan still gives the
  // loop away (it asks every 1,024 refs; on this clock every other ask yields, the one after a
  // resume starts the slice). Before, only a backed-up client paused it.
  const adv = new MemorySink();
  const y2 = await countYields(() => uploadPack({ directory: d, input: Buffer.alloc(0), output: adv, env: gitEnv, statelessRpc: true, advertiseRefs: true, limits: COUNTING }));
  // (the ref lines: the first line's capabilities name each side's agent)
  assert.deepEqual(unpkt(adv.data).slice(1), unpkt(spawnSync('git', ['upload-pack', '--stateless-rpc', '--advertise-refs', d], { env: gitEnv, maxBuffer: 1 << 26 }).stdout).slice(1));
  assert.ok(y2 >= Math.floor(10_000 / 2048), `the advertisement gave the loop away ${y2} times`);
  const ls = pkt(['command=ls-refs\n', '0001', 'peel\n', '0000']);
  const lsOut = new MemorySink();
  const y3 = await countYields(() => uploadPack({ directory: d, input: ls, output: lsOut, env: { ...gitEnv, GIT_PROTOCOL: 'version=2' }, statelessRpc: true, limits: COUNTING }));
  assert.equal(lsOut.data.toString('latin1'), spawnSync('git', ['upload-pack', '--stateless-rpc', d], { input: ls, env: { ...gitEnv, GIT_PROTOCOL: 'version=2' }, maxBuffer: 1 << 26 }).stdout.toString('latin1'));
  assert.ok(y3 >= Math.floor(10_000 / 2048), `ls-refs gave the loop away ${y3} times`);
});

/** Peak resident memory of a process (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * One v2 conversation over git:// from a client that reads only after it
 * has sent its whole request (a slow or loaded client): the reply's
 * packets, up to the server closing, or up to the flush that ends a
 * packfile section (the client then hangs up, as git does).
 */
function slowReader(port: number, body: Buffer): Promise<{ lines: string[]; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const line = Buffer.from('git-upload-pack /big.git\0host=127.0.0.1\0\0version=2\0');
    const s = connect(port, '127.0.0.1');
    const timer = setTimeout(() => { s.destroy(); reject(new Error('no end of the conversation in 300 s')); }, 300_000);
    let buf = Buffer.alloc(0);
    const lines: string[] = [];
    let inPack = false;
    let mine = false;
    s.pause();
    s.on('error', () => { /* seen as what was (not) received */ });
    s.write(Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0')), line]));
    s.write(body, () => s.resume());
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      while (buf.length >= 4) {
        const n = parseInt(buf.toString('latin1', 0, 4), 16);
        if (n > 0 && n < 4) { buf = buf.subarray(4); if (n === 1) lines.push('0001'); continue; }
        if (n === 0) {
          buf = buf.subarray(4);
          lines.push('0000');
          if (inPack) { mine = true; s.end(); }
          continue;
        }
        if (buf.length < n) break;
        const d = buf.subarray(4, n);
        buf = buf.subarray(n);
        if (inPack) continue; // sideband pack data
        lines.push(d.toString('latin1'));
        if (d.toString('latin1') === 'packfile\n') inPack = true;
      }
    });
    s.on('close', () => { clearTimeout(timer); resolve({ lines, closedByServer: !mine }); });
  });
}

test('defect 6: four parallel 1,000,000-have v2 fetches over git:// are refused by the request cap, the refusal reaches clients that read late; server RSS stays under 300 MB', async () => {
  // its own server (default limits), so its peak RSS is this test's alone
  const own = await startServe(root, ['--git', '0', '--export-all', '--quiet']);
  try {
    const haves = unknown(1_000_000, 11);
    const request = (hs: string[]) => Buffer.concat([
      pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${chain[N - 1]}\n`]),
      Buffer.concat(hs.map((h) => encode(`have ${h}\n`))),
      Buffer.from('0000'),
    ]);
    const big = request(haves); // 48 MB each
    const replies = await Promise.all([0, 1, 2, 3].map(() => slowReader(own.gitPort!, big)));
    for (const r of replies) {
      // the capability advertisement, then the refusal; the server closes
      assert.equal(r.lines[0], 'version 2\n', r.lines.slice(0, 3).join('|'));
      assert.match(r.lines[1] ?? '', /^agent=gitwire\//);
      assert.equal(r.lines.at(-1), 'ERR request was larger than our maximum size (10485760)', r.lines.slice(-2).join('|'));
      assert.ok(r.closedByServer);
    }
    // the refused requests are what the bound is about (taken before the packs below, which the native
    // producer makes in this process: pack-objects' memory used to be another process's)
    const peak = peakRssMb(own.child.pid!);
    assert.ok(peak < 300, `server peak RSS ${peak.toFixed(0)} MB`);
    // under the cap: 50,000 unknown haves and a common one each, four at once, all answered
    const under = request([...haves.slice(0, 50_000), chain[10]!]);
    const ok = await Promise.all([0, 1, 2, 3].map(() => slowReader(own.gitPort!, under)));
    for (const r of ok) {
      const at = r.lines.indexOf('acknowledgments\n');
      assert.deepEqual(r.lines.slice(at, at + 5), ['acknowledgments\n', `ACK ${chain[10]}\n`, 'ready\n', '0001', 'packfile\n'], r.lines.slice(0, 12).join('|'));
    }
    const ls = await new Promise<string>((resolve) => {
      const c = spawn('git', ['ls-remote', `git://127.0.0.1:${own.gitPort}/big.git`, 'refs/heads/main'], { env: gitEnv });
      let out = '';
      c.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      c.on('close', () => resolve(out));
    });
    assert.equal(ls, `${chain[N - 1]}\trefs/heads/main\n`);
  } finally {
    await own.stop();
  }
});

test('git://: connections lingering after a refusal hold their slots only until a new client needs one', async () => {
  // two slots, a 64 KiB cap; two clients from different addresses are refused and keep their connections open
  const own = await startServe(root, ['--git', '0', '--export-all', '--quiet', '--max-connections', '2', '--max-request-buffer', String(64 << 10)]);
  const held: Array<ReturnType<typeof connect>> = [];
  try {
    const over = Buffer.concat([
      pkt(['command=fetch\n', 'object-format=sha1\n', '0001', `want ${chain[N - 1]}\n`]),
      Buffer.concat(unknown(2000, 5).map((h) => encode(`have ${h}\n`))),
    ]);
    const line = Buffer.from('git-upload-pack /big.git\0host=127.0.0.1\0\0version=2\0');
    await Promise.all(['127.0.0.2', '127.0.0.3'].map((localAddress) => new Promise<void>((resolve, reject) => {
      // half-open: our side stays open after the server's FIN, as a client still sending would
      const s = connect({ port: own.gitPort!, host: '127.0.0.1', localAddress, allowHalfOpen: true });
      held.push(s);
      let got = '';
      s.on('error', reject);
      s.on('data', (d: Buffer) => { got += d.toString('latin1'); if (got.includes('ERR request was larger')) resolve(); });
      s.write(Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0')), line, over]));
    })));
    // both are refused and lingering (they never close): a third client still gets in
    const ls = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const c = spawn('git', ['ls-remote', `git://127.0.0.1:${own.gitPort}/big.git`, 'refs/heads/main'], { env: gitEnv });
      let out = '';
      c.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      c.on('close', (code) => resolve({ code, out }));
    });
    assert.equal(ls.code, 0);
    assert.equal(ls.out, `${chain[N - 1]}\trefs/heads/main\n`);
  } finally {
    for (const s of held) s.destroy();
    await own.stop();
  }
});

test('fairness: while the defect-4 request runs, other clients\' ls-remote completes (p99 is measured in npm run bench)', async () => {
  const big = pkt([`want ${chain[N - 1]} multi_ack_detailed side-band-64k\n`, '0000', `have ${chain[99]}\n`,
    ...unknown(4000).flatMap((h, i) => [`have ${h}\n`, ...(i % 20 === 0 ? [`have ${side[(i / 20) % 300]}\n`] : [])]), '0000']);
  const abusive = httpPost(srv.httpPort!, '/big.git', big);
  const lsRemote = () => new Promise<string>((resolve, reject) => {
    const c = spawn('git', ['ls-remote', `git://127.0.0.1:${srv.gitPort}/big.git`, 'refs/heads/side'], { env: gitEnv });
    let out = '';
    c.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`ls-remote exited ${code}`))));
  });
  const others = await Promise.all([lsRemote(), lsRemote(), lsRemote()]);
  for (const o of others) assert.equal(o, `${side[299]}\trefs/heads/side\n`);
  const r = await abusive;
  assert.equal(r.status, 200);
  assert.deepEqual(unpkt(r.body), unpkt(gitReply(big)));
});
