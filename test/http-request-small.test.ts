/**
 * Two per-request shortcuts of the smart-HTTP path, checked for giving
 * the answers the long ways gave:
 * - a small compressed request body (git gzips a fetch's haves) is
 *   inflated in one call, not through a zlib stream; what it answers,
 *   good bytes or bad, is what the stream answered, and a body that
 *   inflates past the one-call cap goes through the stream after all;
 * - the service's environment is a view of the server's (serviceEnv), not
 *   a copy: it reads as a copy with the client's GIT_PROTOCOL would, and
 *   it sees a change the library user makes to process.env later (a copy
 *   did not: that part fails on the old code).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { git, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { httpPost } from './helpers/wire.js';
import { createHttpHandler } from '../src/transport/http.js';
import { SMALL_COMPRESSED, SYNC_INFLATE_MAX } from '../src/transport/http-answer.js';
import { serviceEnv } from '../src/transport/request.js';

const pkt = (s: string) => Buffer.concat([Buffer.from((Buffer.byteLength(s) + 4).toString(16).padStart(4, '0')), Buffer.from(s)]);

/** An upload-pack request with its length, compressed with `encoding` when given. */
const post = (port: number, body: Buffer, encoding?: string) =>
  httpPost(port, '/r.git', body, 'version=2', 'upload-pack', { 'Content-Length': String(body.length), ...(encoding ? { 'Content-Encoding': encoding } : {}) });

test('small gzip and deflate request bodies: the same answers as the identity body; bad bytes get zlib\'s error; a large inflation is still capped', { timeout: 120_000 }, async () => {
  const t = tmp('gitwire-small-body-');
  const src = join(t.dir, 'src');
  git(['init', '-q', '-b', 'main', src]);
  commit(src, 'base', { 'a.txt': 'a\n' });
  commit(src, 'next', { 'b.txt': 'b\n' });
  git(['clone', '-q', '--bare', src, join(t.dir, 'root', 'r.git')]);
  const tip = git(['rev-parse', 'HEAD'], { cwd: src }).trim();
  const base = git(['rev-parse', 'HEAD~1'], { cwd: src }).trim();
  const cap = 3 * 1024 * 1024;
  const handler = createHttpHandler({ root: join(t.dir, 'root'), maxRequestBuffer: cap });
  const server = createServer((req, res) => { void handler(req, res); });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const fetch = Buffer.concat([pkt('command=fetch\n'), pkt('object-format=sha1\n'), Buffer.from('0001'),
      pkt('no-progress\n'), pkt(`want ${tip}\n`), pkt(`have ${base}\n`), pkt('done\n'), Buffer.from('0000')]);
    const ls = Buffer.concat([pkt('command=ls-refs\n'), Buffer.from('0001'), pkt('peel\n'), pkt('symrefs\n'), Buffer.from('0000')]);
    for (const [what, body] of [['fetch', fetch], ['ls-refs', ls]] as const) {
      const plain = await post(port, body);
      assert.equal(plain.status, 200, what);
      assert.ok(plain.body.length > 0, what);
      for (const [enc, packed] of [['gzip', gzipSync(body)], ['x-gzip', gzipSync(body)], ['deflate', deflateSync(body)]] as const) {
        assert.ok(packed.length <= SMALL_COMPRESSED);
        const a = await post(port, packed, enc);
        assert.equal(a.status, 200, `${what} ${enc}`);
        assert.deepEqual(a.body, plain.body, `${what} ${enc}: the answer of the identity body`);
      }
      // two gzip members, as the stream took them
      const two = await post(port, Buffer.concat([gzipSync(body.subarray(0, 10)), gzipSync(body.subarray(10))]), 'gzip');
      assert.deepEqual(two.body, plain.body, `${what}: two members`);
    }
    // bad bytes: zlib's own words, as the stream gave them
    const g = gzipSync(fetch);
    for (const [bad, msg] of [[g.subarray(0, g.length - 6), /unexpected end of file/], [Buffer.from('not gzip at all'), /incorrect header check/]] as const) {
      const a = await post(port, bad, 'gzip');
      assert.equal(a.status, 400);
      assert.match(a.body.toString(), /^zlib error inflating request: /);
      assert.match(a.body.toString(), msg);
    }
    // past what one call inflates (a small body of many flush packets): streamed, then the cap applies as before
    const under = Buffer.concat([fetch.subarray(0, fetch.length - 4), Buffer.from('0000'.repeat((SYNC_INFLATE_MAX * 2) / 4))]);
    const packedUnder = gzipSync(under);
    assert.ok(packedUnder.length <= SMALL_COMPRESSED && under.length > SYNC_INFLATE_MAX && under.length < cap);
    const plainUnder = await post(port, under);
    const gzUnder = await post(port, packedUnder, 'gzip');
    assert.equal(gzUnder.status, plainUnder.status);
    assert.deepEqual(gzUnder.body, plainUnder.body, 'a body inflated past the one-call cap is answered as the identity body');
    const over = Buffer.concat([fetch, Buffer.alloc(cap, 0x30)]);
    const packedOver = gzipSync(over);
    assert.ok(packedOver.length <= SMALL_COMPRESSED);
    const a = await post(port, packedOver, 'gzip');
    assert.equal(a.status, 413);
    assert.match(a.body.toString(), /request was larger than our maximum size/);
  } finally {
    await new Promise((r) => server.close(r));
    t.cleanup();
  }
});

test('serviceEnv: reads as a copy with the client\'s GIT_PROTOCOL; sees process.env as it is when read; writes stay in it', () => {
  const key = 'GITWIRE_TEST_ENV_VIEW';
  const prev = process.env.GIT_PROTOCOL;
  process.env.GIT_PROTOCOL = 'version=1';
  delete process.env[key];
  try {
    const env = serviceEnv(undefined, 'version=2');
    const copy: NodeJS.ProcessEnv = { ...process.env, GIT_PROTOCOL: 'version=2' };
    assert.deepEqual({ ...env }, copy);
    assert.deepEqual(Object.keys(env).sort(), Object.keys(copy).sort());
    const inKeys: string[] = [];
    for (const k in env) inKeys.push(k);
    assert.deepEqual(inKeys.sort(), Object.keys(copy).sort());
    assert.equal(env.GIT_PROTOCOL, 'version=2');
    assert.ok('PATH' in env);
    // no protocol from the client: the server's own is not passed on
    const none = serviceEnv(undefined, undefined);
    assert.equal(none.GIT_PROTOCOL, undefined);
    assert.ok(!('GIT_PROTOCOL' in none));
    assert.ok(!Object.keys(none).includes('GIT_PROTOCOL'));
    // a variable the library user sets later is seen (a copy made per request did not see it)
    process.env[key] = 'later';
    assert.equal(env[key], 'later');
    assert.ok(Object.keys(env).includes(key));
    // writes and deletes stay in the view
    env.GITWIRE_TEST_ONLY_VIEW = 'x';
    delete env[key];
    assert.equal(env.GITWIRE_TEST_ONLY_VIEW, 'x');
    assert.equal(process.env.GITWIRE_TEST_ONLY_VIEW, undefined);
    assert.equal(env[key], undefined);
    assert.equal(process.env[key], 'later');
    // a child gets the view's variables
    const r = spawnSync('/bin/sh', ['-c', `printf '%s|%s|%s' "$GIT_PROTOCOL" "$GITWIRE_TEST_ONLY_VIEW" "\${${key}-unset}"`], { env, encoding: 'utf8' });
    assert.equal(r.stdout, 'version=2|x|unset');
    // a base object of the user's is read the same way
    const mine: NodeJS.ProcessEnv = { A: '1', GIT_PROTOCOL: 'version=1' };
    const v = serviceEnv(mine, 'version=2');
    mine.B = '2';
    assert.deepEqual({ ...v }, { A: '1', B: '2', GIT_PROTOCOL: 'version=2' });
  } finally {
    if (prev === undefined) delete process.env.GIT_PROTOCOL; else process.env.GIT_PROTOCOL = prev;
    delete process.env[key];
  }
});
