/**
 * The proc-receive hook (AGit flow) end to end: the real git client pushes
 * to gitwire and to `git receive-pack` on twin repositories with the same
 * hook, and the client's output (status lines, `remote:` lines in their
 * order), exit codes and refs must match. The hook is a small node script
 * made here that speaks the hook protocol and answers with what the test
 * writes to `$GIT_DIR/proc-receive.answer` (report lines, or `!die`,
 * `!version N`, `!silent`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { IMPLS, push, normalizeClient, rawReceivePack, request, emptyPack, transcript, type Impl } from './helpers/push.js';

const ZERO = '0'.repeat(40);

/** A proc-receive hook in node: negotiates, echoes what it got on stderr, answers from the answer file. */
const HOOK = `#!/usr/bin/env node
const fs = require('fs');
let buf = Buffer.alloc(0);
function fill() {
  const b = Buffer.alloc(65536);
  const n = fs.readSync(0, b, 0, b.length, null);
  if (n === 0) return false;
  buf = Buffer.concat([buf, b.subarray(0, n)]);
  return true;
}
function read() {
  while (buf.length < 4) if (!fill()) return null;
  const n = parseInt(buf.toString('latin1', 0, 4), 16);
  if (n === 0) { buf = buf.subarray(4); return ''; }
  while (buf.length < n) if (!fill()) return null;
  const s = buf.toString('utf8', 4, n);
  buf = buf.subarray(n);
  return s.replace(/\\n$/, '');
}
// a shell hook that writes to a closed pipe dies of SIGPIPE without a word; node throws EPIPE, so end as quietly
// (the server may close the hook's stdout once it has judged the answer, as git's does, before the last flush is written)
const out = (s) => { try { fs.writeSync(1, s === '' ? '0000' : (Buffer.byteLength(s) + 5).toString(16).padStart(4, '0') + s + '\\n'); } catch (e) { if (e.code === 'EPIPE') process.exit(141); throw e; } };
const say = (s) => fs.writeSync(2, s + '\\n');
let answer = '';
try { answer = fs.readFileSync('proc-receive.answer', 'utf8'); } catch {}
const lines = answer.split('\\n').filter(Boolean);
say('# proc-receive hook');
if (lines[0] === '!die') { say('fatal: dying before the version'); process.exit(1); }
let caps = '';
for (let l; (l = read()) !== '' && l !== null;) { const z = l.indexOf('\\0'); if (z >= 0) caps = l.slice(z + 1); }
say('proc-receive: server features: ' + caps);
const version = lines[0] && lines[0].startsWith('!version ') ? lines[0].slice(9) : '1';
const wantOptions = caps.split(' ').includes('push-options');
out('version=' + version + (wantOptions ? '\\0push-options' : ''));
out('');
for (let l; (l = read()) !== '' && l !== null;) say('proc-receive< ' + l);
if (wantOptions) for (let l; (l = read()) !== '' && l !== null;) say('proc-receive: option ' + l);
if (lines[0] === '!silent') process.exit(0);
for (const l of lines) if (!l.startsWith('!')) out(l);
out('');
`;

/** a sideband answer as [band 1's pkt-lines as text, band 2's bytes] (the frames may split hook output differently) */
function demux(b: Buffer): string[] {
  const bands: Buffer[][] = [[], [], [], []];
  for (let i = 0; i + 4 <= b.length;) {
    const n = parseInt(b.toString('latin1', i, i + 4), 16);
    if (n === 0) { i += 4; continue; }
    bands[b[i + 4]!]!.push(b.subarray(i + 5, i + n));
    i += n;
  }
  return [transcript(Buffer.concat(bands[1]!)).join(''), Buffer.concat(bands[2]!).toString()];
}

const PRE = 'while read o n r; do echo "pre-receive< $o $n $r"; done';
const POST = 'while read o n r; do echo "post-receive< $o $n $r"; done';

interface Setup { root: string; client: string; servers: Record<Impl, string>; a: string; b: string }

function setup(root: string, config: Array<[string, string]>): Setup {
  const client = join(root, 'client');
  git(['init', '-q', '-b', 'main', client]);
  const a = commit(client, 'A', { 'a.txt': 'a\n' });
  const b = commit(client, 'B', { 'b.txt': 'b\n' });
  const servers = {} as Record<Impl, string>;
  for (const impl of IMPLS) {
    const dir = join(root, impl, 'server.git');
    mkdirSync(join(root, impl));
    git(['init', '-q', '--bare', '-b', 'main', dir]);
    for (const [k, v] of config) git(['config', '--add', k, v], { cwd: dir });
    const hooks: Record<string, string> = { 'proc-receive': HOOK, 'pre-receive': `#!/bin/sh\n${PRE}\n`, 'post-receive': `#!/bin/sh\n${POST}\n` };
    for (const [name, body] of Object.entries(hooks)) {
      writeFileSync(join(dir, 'hooks', name), body);
      chmodSync(join(dir, 'hooks', name), 0o755);
    }
    servers[impl] = dir;
  }
  // both servers start with main at A
  for (const impl of IMPLS) push(impl, client, servers[impl], [`${a}:refs/heads/main`]);
  return { root, client, servers, a, b };
}

interface Step { name: string; args: string[]; answer?: string[]; hook?: 'remove' }

function compare(s: Setup, steps: Step[]): void {
  for (const st of steps) {
    const out = {} as Record<Impl, { code: number; stderr: string; stdout: string }>;
    for (const impl of IMPLS) {
      const dir = s.servers[impl];
      writeFileSync(join(dir, 'proc-receive.answer'), (st.answer ?? []).join('\n'));
      if (st.hook === 'remove') unlinkSync(join(dir, 'hooks', 'proc-receive'));
      out[impl] = push(impl, s.client, dir, st.args);
    }
    const ours = out.gitwire, theirs = out.git;
    const msg = `${st.name}\n--- gitwire:\n${ours.stderr}\n--- git:\n${theirs.stderr}`;
    assert.equal(ours.code, theirs.code, `exit code: ${msg}`);
    assert.equal(normalizeClient(ours.stderr, s.servers.gitwire), normalizeClient(theirs.stderr, s.servers.git), `client output: ${msg}`);
    assert.equal(normalizeClient(ours.stdout, s.servers.gitwire), normalizeClient(theirs.stdout, s.servers.git), `client stdout: ${msg}`);
    const refs = (d: string) => git(['for-each-ref', '--format=%(objectname) %(refname)'], { cwd: d });
    assert.equal(refs(s.servers.gitwire), refs(s.servers.git), `refs after ${st.name}`);
    // every step starts from main at A and nothing else
    for (const impl of IMPLS) {
      const d = s.servers[impl];
      for (const r of refs(d).split('\n').filter(Boolean)) {
        const name = r.split(' ')[1]!;
        if (name !== 'refs/heads/main') git(['update-ref', '-d', name], { cwd: d });
      }
      git(['update-ref', 'refs/heads/main', s.a], { cwd: d });
    }
  }
}

test('proc-receive: the hook answers ok, with options, several rewrites, fall-through, forced-update; porcelain; push options', () => {
  const t = tmp('gitwire-procrecv-');
  try {
    const s = setup(t.dir, [['receive.procReceiveRefs', 'refs/for'], ['receive.advertisePushOptions', 'true']]);
    const { a, b } = s;
    compare(s, [
      { name: 'plain ok', args: ['HEAD:refs/for/main/topic'], answer: ['ok refs/for/main/topic'] },
      { name: 'ok with a normal ref beside it', args: ['HEAD:refs/heads/next', 'HEAD:refs/for/main/topic'], answer: ['ok refs/for/main/topic'] },
      {
        name: 'options: refname, old-oid, new-oid', args: ['HEAD:refs/for/main/topic'],
        answer: ['ok refs/for/main/topic', 'option refname refs/pull/123/head', `option old-oid ${a}`, `option new-oid ${b}`],
      },
      {
        name: 'forced update and two rewrites for one ref', args: ['--porcelain', 'HEAD:refs/for/main/topic'],
        answer: ['ok refs/for/main/topic', 'option refname refs/changes/24/124/1', `option old-oid ${ZERO}`, `option new-oid ${b}`,
          'ok refs/for/main/topic', 'option refname refs/changes/25/125/1', `option old-oid ${a}`, `option new-oid ${b}`, 'option forced-update'],
      },
      { name: 'fall-through: receive-pack writes the ref', args: ['HEAD:refs/for/main/topic'], answer: ['ok refs/for/main/topic', 'option fall-through'] },
      { name: 'push options reach the hook', args: ['-o', 'reviewers=a,b', '-o', 'topic=x', 'HEAD:refs/for/main/topic'], answer: ['ok refs/for/main/topic'] },
      { name: 'atomic push with proc-receive', args: ['--atomic', `${b}:refs/heads/main`, 'HEAD:refs/for/main/topic'], answer: ['ok refs/for/main/topic'] },
    ]);
  } finally { t.cleanup(); }
});

test('proc-receive: ng, bad reports, a hook that dies, is missing, answers nothing or an unknown version (git messages in git order)', () => {
  const t = tmp('gitwire-procrecv-');
  try {
    const s = setup(t.dir, [['receive.procReceiveRefs', 'refs/for'], ['receive.procReceiveRefs', 'ad:refs/review/']]);
    compare(s, [
      { name: 'ng with a reason', args: ['HEAD:refs/for/main/topic'], answer: ['ng refs/for/main/topic error msg'] },
      { name: 'ng without a reason', args: ['--porcelain', 'HEAD:refs/for/main/topic'], answer: ['ng refs/for/main/topic'] },
      { name: 'report on an unknown ref', args: ['HEAD:refs/for/main/topic'], answer: ['ok refs/for/a/b/c/my/topic'] },
      { name: 'report on an unexpected ref', args: ['HEAD:refs/heads/next', 'HEAD:refs/for/main/topic'], answer: ['ok refs/heads/next', 'ok refs/for/main/topic'] },
      { name: 'incomplete line and bad status', args: ['HEAD:refs/for/main/topic'], answer: ['ok', 'xx refs/for/main/topic'] },
      { name: 'option before ok', args: ['HEAD:refs/for/main/topic'], answer: ['option refname refs/x', 'option refname refs/y', 'ok refs/for/main/topic'] },
      { name: 'no report', args: ['HEAD:refs/heads/next', 'HEAD:refs/for/main/topic'], answer: ['!silent'] },
      { name: 'unknown version', args: ['HEAD:refs/for/main/topic'], answer: ['!version 2'] },
      { name: 'modifiers: a modify of refs/review is not the hook\'s', args: ['HEAD:refs/review/main/topic'], answer: ['ok refs/review/main/topic'] },
      { name: 'dies before the version', args: ['HEAD:refs/for/main/topic'], answer: ['!die'] },
      { name: 'atomic and the hook fails: every ref fails', args: ['--atomic', 'HEAD:refs/heads/next', 'HEAD:refs/for/main/topic'], answer: ['!die'] },
      { name: 'no hook', args: ['HEAD:refs/heads/next', 'HEAD:refs/for/main/topic'], hook: 'remove' },
    ]);
  } finally { t.cleanup(); }
});

test('proc-receive: report-status (v1) and report-status-v2 on the wire, byte for byte', async () => {
  const t = tmp('gitwire-procrecv-');
  try {
    const s = setup(t.dir, [['receive.procReceiveRefs', 'refs/for']]);
    const answer = ['ok refs/for/main/topic', 'option refname refs/pull/1/head', `option new-oid ${s.b}`, 'ok refs/for/next/topic', 'option fall-through'];
    for (const caps of ['report-status', 'report-status-v2', 'report-status report-status-v2 side-band-64k']) {
      const got = {} as Record<Impl, string[]>;
      for (const impl of IMPLS) {
        writeFileSync(join(s.servers[impl], 'proc-receive.answer'), answer.join('\n'));
        const req = request([`${ZERO} ${s.a} refs/for/main/topic`, `${ZERO} ${s.a} refs/for/next/topic`], caps, emptyPack());
        const r = await rawReceivePack(impl, s.servers[impl], req, {}, ['--stateless-rpc']);
        assert.equal(r.code, 0, r.stderr);
        got[impl] = caps.includes('side-band') ? demux(r.stdout) : transcript(r.stdout);
        git(['update-ref', '-d', 'refs/for/next/topic'], { cwd: s.servers[impl] });
      }
      assert.deepEqual(got.gitwire, got.git, caps);
      if (!caps.includes('side-band')) assert.ok(got.gitwire.includes(caps.includes('v2') ? 'option refname refs/pull/1/head\n' : 'ok refs/for/main/topic\n'), got.gitwire.join(''));
    }
  } finally { t.cleanup(); }
});
