/**
 * Issue #40, item 5: ref storage that cannot be read — a reftable stack
 * with a flipped header or footer byte, a truncated or missing table, a
 * garbage name in `tables.list`, a table damaged in the middle (keys out
 * of order, a restart offset moved), or a packed-refs file cut short or
 * with a bad line — gives the client `ERR` naming the repository (git:
 * `fatal: remote error: …`), over HTTP and git://, protocol v0 and v2,
 * for ls-remote, a mirror clone and a push; never a list that stops (once
 * `fatal: expected flush after ref listing`) nor part of a list shown as
 * all of it. The log names the file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, truncateSync, writeFileSync, appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { gitAsync } from './helpers/push-net.js';
import { commit } from './helpers/fixtures.js';
import { startServe, type ServerProc } from './helpers/server-process.js';
import { toReftable } from './helpers/reftable-repo.js';

let t: ReturnType<typeof tmp>;
let srv: string;
let s: ServerProc;
let w: string;

interface Damage { name: string; kind: RegExp; file: RegExp }
const damaged: Damage[] = [];

/** the position of the `k`-th occurrence of `needle` in `b` */
function nth(b: Buffer, needle: string, k = 0): number {
  let at = -1;
  for (let i = 0; i <= k; i++) { at = b.indexOf(needle, at + 1); assert.ok(at >= 0, `${needle} #${k}`); }
  return at;
}

function flip(file: string, at: number, v?: number): void {
  const b = readFileSync(file);
  b[at] = v ?? b[at]! ^ 0xff;
  writeFileSync(file, b);
}

before(async () => {
  t = tmp('gitwire-refstore-');
  srv = join(t.dir, 'srv');
  w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { f: '1\n' });
  for (let i = 0; i < 60; i++) git(['-C', w, 'branch', `topic-${String(i).padStart(2, '0')}`]);
  for (let i = 0; i < 8; i++) git(['-C', w, 'tag', '-a', '-m', `t${i}`, `v${i}`]);
  const base = join(t.dir, 'base.git');
  git(['clone', '-q', '--bare', '--mirror', w, base]);
  git(['--git-dir', base, 'symbolic-ref', 'HEAD', 'refs/heads/main']);

  const reftable = (name: string) => {
    const d = join(srv, `${name}.git`);
    cpSync(base, d, { recursive: true });
    return toReftable(d, { tables: 2, blockSize: 256, restartInterval: 4 });
  };
  const rt = (name: string, why: RegExp, damage: (dir: string, tables: string[]) => string) => {
    const r = reftable(name);
    const file = damage(join(r.dir, 'reftable'), r.tables);
    damaged.push({ name: `${name}.git`, kind: /corrupt reftable file/, file: new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*(?:${why.source})`) });
  };
  reftable('good');
  rt('header-version', /unsupported version/, (d, [, t2]) => { flip(join(d, t2!), 4, 7); return join(d, t2!); });
  rt('header-magic', /bad magic/, (d, [t1]) => { flip(join(d, t1!), 1); return join(d, t1!); });
  rt('footer', /footer/, (d, [, t2]) => { const p = join(d, t2!); flip(p, readFileSync(p).length - 30); return p; });
  rt('truncated', /./, (d, [t1]) => { const p = join(d, t1!); truncateSync(p, Math.floor(readFileSync(p).length / 2)); return p; });
  rt('missing', /missing/, (d, [t1]) => { rmSync(join(d, t1!)); return join(d, t1!); });
  rt('garbage-name', /bad table name/, (d) => { appendFileSync(join(d, 'tables.list'), '../../garbage\n'); return join(d, 'tables.list'); });
  // a key byte flipped in the middle of the first table: that key sorts after the next one
  rt('key-order', /keys out of order/, (d, [t1]) => { const p = join(d, t1!); flip(p, nth(readFileSync(p), 'topic-1') , 0xa5); return p; });
  // the first block's last restart offset moved into the middle of a record
  rt('restart', /restart|bad key lengths|keys out of order/, (d, [t1]) => {
    const p = join(d, t1!);
    const b = readFileSync(p);
    const len = b.readUIntBE(25, 3);
    const count = b.readUInt16BE(len - 2);
    const at = len - 2 - 3;
    const r = b.readUIntBE(at, 3);
    assert.ok(count > 1);
    b.writeUIntBE(r + 3, at, 3);
    writeFileSync(p, b);
    return p;
  });

  const packed = (name: string, why: RegExp, kind: RegExp, damage: (text: string) => string) => {
    const d = join(srv, `${name}.git`);
    cpSync(base, d, { recursive: true });
    git(['--git-dir', d, 'pack-refs', '--all']);
    const p = join(d, 'packed-refs');
    writeFileSync(p, damage(readFileSync(p, 'latin1')), 'latin1');
    damaged.push({ name: `${name}.git`, kind, file: new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (?:${why.source})`) });
  };
  packed('packed-cut', /\^?[0-9a-f]{12}/, /unterminated line in packed-refs/, (x) => x.slice(0, x.length - 7));
  packed('packed-garbage', /garbage here/, /unexpected line in packed-refs/, (x) => x.replace(/\n([^\n]*topic-30)\n/, '\ngarbage here\n'));
  packed('packed-hex', /[0-9a-f]*g[0-9a-f]* refs\/heads\/topic-20/, /unexpected line in packed-refs/, (x) => x.replace(/[0-9a-f](?=[0-9a-f]{39} refs\/heads\/topic-20\n)/, 'g'));
  packed('packed-peel', /\^/, /unexpected line in packed-refs/, (x) => x.replace(/\n\^([0-9a-f]{40})\n/, '\n^$1x\n'));
  // 40,000 refs (past WHOLE_MAX: read in chunks, the advertisement streamed): the damage is met after
  // thousands of ref lines have gone out, and must still end the list with ERR, not a flush
  packed('packed-big', /[0-9a-f]*z[0-9a-f]* refs\/heads\/many-39000/, /unexpected line in packed-refs/, (x) => {
    const oid = /^([0-9a-f]{40}) refs\/heads\/main$/m.exec(x)![1]!;
    const many = Array.from({ length: 40_000 }, (_, i) => `${i === 39_000 ? `${oid.slice(0, 20)}z${oid.slice(21)}` : oid} refs/heads/many-${String(i).padStart(5, '0')}\n`).join('');
    const lines = x.split('\n');
    const at = lines.findIndex((l) => l.endsWith(' refs/heads/main'));
    return [...lines.slice(0, at), ...many.trimEnd().split('\n'), ...lines.slice(at)].join('\n');
  });
  s = await startServe(srv, ['--http', '0', '--git', '0', '--export-all', '--enable', 'receive-pack']);
});
after(async () => { await s?.stop(); t?.cleanup(); });

const url = (kind: 'http' | 'git', name: string) => kind === 'http' ? `http://127.0.0.1:${s.httpPort}/${name}` : `git://127.0.0.1:${s.gitPort}/${name}`;

test('the undamaged reftable repository is served whole (the fixture is sound)', async () => {
  for (const kind of ['http', 'git'] as const) {
    for (const v of ['0', '2']) {
      const r = await gitAsync(['-c', `protocol.version=${v}`, 'ls-remote', url(kind, 'good.git')]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.split('\n').filter((l) => l.includes('\trefs/')).length, 61 + 16);
    }
  }
});

test('damaged ref storage: ls-remote over HTTP and git://, v0 and v2, is an ERR naming the repository, with no ref listed', async () => {
  for (const d of damaged) {
    for (const kind of ['http', 'git'] as const) {
      for (const v of ['0', '2']) {
        const r = await gitAsync(['-c', `protocol.version=${v}`, 'ls-remote', url(kind, d.name)]);
        const what = `${d.name} ${kind} v${v}`;
        assert.notEqual(r.code, 0, `${what}: ${r.stdout}`);
        assert.equal(r.stdout, '', `${what}: refs listed`);
        assert.match(r.stderr, new RegExp(`fatal: remote error: refs of '/${d.name.replace('.', '\\.')}' cannot be read: ${d.kind.source}`), `${what}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /expected flush|Could not read from remote/, what);
      }
    }
  }
  // the log names the file and what is wrong with it
  const errs = s.logs.filter((l) => l.includes('"GW_REFS_CORRUPT"')).map((l) => JSON.parse(l) as { repository: string; error: string });
  for (const d of damaged) {
    const e = errs.find((x) => x.repository === `/${d.name}`);
    assert.ok(e && d.file.test(e.error), `${d.name}: ${e?.error}`);
  }
  // the 40,000-ref file failed after most of its list had been sent (and the client still took none of it)
  const big = s.logs.filter((l) => l.includes('"/packed-big.git"') && l.includes('"GW_REFS_CORRUPT"')).map((l) => JSON.parse(l) as { bytesOut: number });
  assert.ok(big.some((b) => b.bytesOut > 1_000_000), JSON.stringify(big));
});

test('damaged ref storage: a mirror clone fails with the same words, and a push is refused before anything is written', async () => {
  for (const d of damaged) {
    const c = await gitAsync(['clone', '-q', '--mirror', url('http', d.name), join(t.dir, `m-${d.name}`)]);
    assert.notEqual(c.code, 0, d.name);
    assert.match(c.stderr, /remote error: refs of .* cannot be read/, `${d.name}: ${c.stderr}`);
    const p = await gitAsync(['-C', w, 'push', url('git', d.name), 'HEAD:refs/heads/pushed']);
    assert.notEqual(p.code, 0, d.name);
    // a reftable repository with a git older than 2.45 on the server is refused for that first, as cleanly
    assert.match(p.stderr, /remote error: (refs of .* cannot be read|this repository keeps its refs in the reftable format, .* git 2\.45 or later is needed)/, `${d.name}: ${p.stderr}`);
  }
});
