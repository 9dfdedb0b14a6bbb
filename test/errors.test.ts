/**
 * Errors (issue #13): every code renders itself for the wire and for the
 * CLI, and upload-pack's one boundary sends each wire error exactly once,
 * with the bytes git sends (ERR, or band 3 under v2 sideband-all).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { pkt } from './helpers/pkt.js';
import {
  ERROR_CODES, GitwireError, clientGone, refsCorrupt, refsUnreadable, wirePath, limitError, notARepo, notOurRef, pktBadLength, pktBadLengthChar, pktEof, protocolError,
  type ErrorCode,
} from '../src/errors.js';
import { requestTooLarge, tooManyHaves } from '../src/protocol/limits.js';
import { PacketWriter } from '../src/pktline/writer.js';
import { MemorySink } from '../src/pktline/sink.js';
import { encode } from '../src/pktline/codec.js';
import { uploadPack, type UploadPackOptions } from '../src/protocol/upload-pack.js';

/** Whether each code's message goes on the wire by default: one row per code (the type demands every code). */
const WIRE_BY_DEFAULT: Record<ErrorCode, boolean> = {
  GW_PKT_BAD_LENGTH_CHAR: false,
  GW_PKT_BAD_LENGTH: false,
  GW_PKT_TOO_LONG: false,
  GW_PKT_EOF: false,
  GW_PKT_REMOTE_ERR: false,
  GW_NOT_A_REPO: false,
  GW_UNSUPPORTED_REPO: false,
  GW_NO_GIT: false,
  GW_CONFIG: false,
  GW_OBJECT_MISSING: false,
  GW_OBJECT_CORRUPT: false,
  GW_PROTOCOL: false,
  GW_NOT_OUR_REF: false,
  GW_PACK_FAILED: false,
  GW_CLIENT_GONE: false,
  GW_USAGE: false,
  GW_TIMEOUT: false,
  GW_LIMIT: true,
  GW_REF_UPDATE: false,
  GW_REFS_CORRUPT: false,
  GW_PUSH_REJECTED: false,
  GW_DUBIOUS_OWNERSHIP: false,
  GW_REPO_EXISTS: false,
  GW_REPO_NAME: false,
  GW_REPO_ADMIN: false,
  GW_BUNDLE: false,
};

function band3(msg: string): Buffer {
  return encode(Buffer.concat([Buffer.from([3]), Buffer.from(msg)]));
}

function rendered(e: GitwireError, sidebandAll = false): { wrote: boolean; bytes: Buffer; writes: number } {
  const sink = new MemorySink();
  const w = new PacketWriter(sink);
  w.sidebandAll = sidebandAll;
  const wrote = e.toWire(w);
  return { wrote, bytes: sink.data, writes: sink.stats.writes };
}

test('the code table and the test table name the same codes', () => {
  assert.deepEqual(Object.keys(ERROR_CODES).sort(), Object.keys(WIRE_BY_DEFAULT).sort());
});

for (const code of Object.keys(WIRE_BY_DEFAULT) as ErrorCode[]) {
  test(`${code}: code, brand, CLI and wire rendering`, () => {
    const e = new GitwireError(code, `something about ${code}`, { data: { n: 1 } });
    assert.equal(e.code, code);
    assert.equal(e.name, 'GitwireError');
    assert.ok(e instanceof GitwireError);
    assert.ok(e instanceof Error);
    assert.equal(e.exitCode, 128);
    assert.equal(e.httpStatus, undefined);
    assert.deepEqual(e.data, { n: 1 });
    assert.ok(Object.isFrozen(e.data));
    assert.equal(e.toCli(), `fatal: something about ${code}\n`);
    assert.deepEqual(GitwireError.forCli(e), { text: `fatal: something about ${code}\n`, exitCode: 128 });
    const plain = rendered(e);
    const framed = rendered(e, true);
    if (WIRE_BY_DEFAULT[code]) {
      assert.equal(e.wire, e.message);
      assert.ok(plain.wrote);
      assert.deepEqual(plain.bytes, encode(`ERR something about ${code}`));
      assert.equal(plain.writes, 1, 'an error leaves at once');
      assert.deepEqual(framed.bytes, band3(`something about ${code}`));
    } else {
      assert.equal(e.wire, undefined);
      assert.equal(plain.wrote, false);
      assert.equal(plain.bytes.length, 0);
      assert.equal(framed.bytes.length, 0);
    }
    // an explicit wire text wins, and `false` silences a wire-by-default code
    assert.deepEqual(rendered(new GitwireError(code, 'stderr text', { wire: 'client text' })).bytes, encode('ERR client text'));
    assert.equal(rendered(new GitwireError(code, 'x', { wire: false })).wrote, false);
    // options carry through
    const o = new GitwireError(code, 'x', { exitCode: 1, httpStatus: 413, errors: ['first'] });
    assert.equal(o.exitCode, 1);
    assert.equal(o.httpStatus, 413);
    assert.equal(o.toCli(), 'error: first\nfatal: x\n');
  });
}

test('a copy of the package brands its errors the same way (Symbol.for)', () => {
  const foreign = { [Symbol.for('gitwire.error')]: true };
  assert.ok(foreign instanceof GitwireError);
  assert.ok(!(new Error('x') instanceof GitwireError));
  assert.deepEqual(GitwireError.forCli(new Error('boom')), { text: 'fatal: boom\n', exitCode: 128 });
  assert.deepEqual(GitwireError.forCli('text'), { text: 'fatal: text\n', exitCode: 128 });
});

/** The helpers: git's wording on stderr, what the client sees, and the details. */
const HELPERS: Array<{ name: string; e: GitwireError; code: ErrorCode; message: string; wire?: string; data?: Record<string, unknown> }> = [
  { name: 'notOurRef', e: notOurRef('ab'.repeat(20)), code: 'GW_NOT_OUR_REF', message: `git upload-pack: not our ref ${'ab'.repeat(20)}`, wire: `upload-pack: not our ref ${'ab'.repeat(20)}`, data: { oid: 'ab'.repeat(20) } },
  { name: 'protocolError', e: protocolError('unknown capability \'x\''), code: 'GW_PROTOCOL', message: 'unknown capability \'x\'' },
  { name: 'protocolError told', e: protocolError('unknown ref refs/heads/x', { wire: true }), code: 'GW_PROTOCOL', message: 'unknown ref refs/heads/x', wire: 'unknown ref refs/heads/x' },
  { name: 'limitError', e: limitError('too big', 7), code: 'GW_LIMIT', message: 'too big', wire: 'too big', data: { limit: 7 } },
  { name: 'tooManyHaves', e: tooManyHaves(3), code: 'GW_LIMIT', message: 'upload-pack: too many haves in one request (limit 3)', wire: 'upload-pack: too many haves in one request (limit 3)', data: { limit: 3 } },
  { name: 'requestTooLarge', e: requestTooLarge(9), code: 'GW_LIMIT', message: 'request was larger than our maximum size (9)', wire: 'request was larger than our maximum size (9)', data: { limit: 9 } },
  { name: 'notARepo', e: notARepo('/x'), code: 'GW_NOT_A_REPO', message: '\'/x\' does not appear to be a git repository', data: { directory: '/x' } },
  { name: 'pktEof', e: pktEof(), code: 'GW_PKT_EOF', message: 'the remote end hung up unexpectedly' },
  { name: 'clientGone', e: clientGone(), code: 'GW_CLIENT_GONE', message: 'the remote end hung up unexpectedly' },
  { name: 'pktBadLength', e: pktBadLength(2), code: 'GW_PKT_BAD_LENGTH', message: 'protocol error: bad line length 2' },
  { name: 'pktBadLengthChar', e: pktBadLengthChar('00zz'), code: 'GW_PKT_BAD_LENGTH_CHAR', message: 'protocol error: bad line length character: 00zz' },
];

for (const h of HELPERS) {
  test(`helper ${h.name}`, () => {
    assert.equal(h.e.code, h.code);
    assert.equal(h.e.message, h.message);
    assert.equal(h.e.wire, h.wire);
    assert.deepEqual(h.e.data, h.data ?? {});
    assert.equal(h.e.toCli(), `fatal: ${h.message}\n`);
    assert.deepEqual(rendered(h.e).bytes, h.wire === undefined ? Buffer.alloc(0) : encode(`ERR ${h.wire}`));
  });
}

// ---- the boundary: real requests through uploadPack ----

let t: ReturnType<typeof tmp>;
let repo: string;
let head: string;
before(() => {
  t = tmp('gitwire-errors-');
  repo = `${t.dir}/r`;
  git(['init', '-q', '-b', 'main', repo]);
  head = commit(repo, 'one', { 'a.txt': 'a\n' });
  commit(repo, 'two', { 'a.txt': 'b\n' });
  git(['config', 'uploadpack.allowRefInWant', 'true'], { cwd: repo });
  git(['config', 'uploadpack.allowSidebandAll', 'true'], { cwd: repo });
  git(['config', 'uploadpack.allowFilter', 'true'], { cwd: repo });
  git(['config', 'uploadpackfilter.blob:none.allow', 'false'], { cwd: repo });
});
after(() => t.cleanup());

async function serve(input: Buffer, proto: string, extra: Partial<UploadPackOptions> = {}): Promise<{ out: Buffer; err?: GitwireError }> {
  const sink = new MemorySink();
  try {
    await uploadPack({ directory: repo, input, output: sink, env: { ...gitEnv, GIT_PROTOCOL: proto }, statelessRpc: true, ...extra });
    return { out: sink.data };
  } catch (e) {
    assert.ok(e instanceof GitwireError, String(e));
    return { out: sink.data, err: e };
  }
}

function count(hay: Buffer, needle: Buffer): number {
  let n = 0;
  for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) n++;
  return n;
}

const V2 = (args: string[], command = 'fetch') => pkt([`command=${command}`, '0001', ...args, '0000']);
const missing = 'f'.repeat(40);

const BOUNDARY: Array<{ name: string; proto: string; input: () => Buffer; code: ErrorCode; wire?: () => Buffer; opts?: Partial<UploadPackOptions> }> = [
  { name: 'v0 want of an unknown object', proto: '', input: () => pkt([`want ${missing} multi_ack_detailed side-band-64k\n`, '0000']), code: 'GW_NOT_OUR_REF', wire: () => encode(`ERR upload-pack: not our ref ${missing}`) },
  { name: 'v0 bad want line (stderr only)', proto: '', input: () => pkt(['want nothex\n', '0000']), code: 'GW_PROTOCOL' },
  { name: 'v0 banned filter', proto: '', input: () => pkt([`want ${head} filter\n`, 'filter blob:none\n', '0000']), code: 'GW_PROTOCOL', wire: () => encode('ERR filter \'blob:none\' not supported') },
  { name: 'v2 unknown want-ref', proto: 'version=2', input: () => V2(['want-ref refs/heads/nope']), code: 'GW_PROTOCOL', wire: () => encode('ERR unknown ref refs/heads/nope') },
  { name: 'v2 unknown want-ref under sideband-all: band 3', proto: 'version=2', input: () => V2(['sideband-all', 'want-ref refs/heads/nope']), code: 'GW_PROTOCOL', wire: () => encode(Buffer.concat([Buffer.from([3]), Buffer.from('unknown ref refs/heads/nope')])) },
  { name: 'v2 duplicate want-ref', proto: 'version=2', input: () => V2(['want-ref refs/heads/main', 'want-ref refs/heads/main']), code: 'GW_PROTOCOL', wire: () => encode('ERR duplicate want-ref refs/heads/main') },
  { name: 'v2 want of an unknown object', proto: 'version=2', input: () => V2([`want ${missing}`]), code: 'GW_NOT_OUR_REF', wire: () => encode(`ERR upload-pack: not our ref ${missing}`) },
  { name: 'v2 unexpected line (stderr only)', proto: 'version=2', input: () => V2(['bogus']), code: 'GW_PROTOCOL' },
  { name: 'v2 too many haves', proto: 'version=2', input: () => V2([`want ${head}`, `have ${head}`, `have ${head}`]), code: 'GW_LIMIT', wire: () => encode('ERR upload-pack: too many haves in one request (limit 1)'), opts: { limits: { maxHaves: 1 } } },
  { name: 'v2 object-info without its flush', proto: 'version=2', input: () => pkt(['command=object-info', '0001', 'size', '0001']), code: 'GW_PROTOCOL', wire: () => encode('ERR object-info: expected flush after arguments') },
];

for (const b of BOUNDARY) {
  test(`boundary: ${b.name}`, async () => {
    if (b.name.startsWith('v2 object-info')) git(['config', 'transfer.advertiseObjectInfo', 'true'], { cwd: repo });
    try {
      const { out, err } = await serve(b.input(), b.proto, b.opts);
      assert.equal(err?.code, b.code, `thrown: ${err?.message}`);
      const errPkts = count(out, Buffer.from('ERR ')) + count(out, Buffer.from([0x03]));
      if (b.wire) {
        const want = b.wire();
        assert.equal(count(out, want), 1, `the error is sent exactly once: ${out.toString('latin1')}`);
        assert.ok(out.subarray(out.length - want.length).equals(want), 'the error is the last thing sent');
      } else {
        assert.equal(errPkts, 0, `nothing on the wire: ${out.toString('latin1')}`);
      }
    } finally {
      if (b.name.startsWith('v2 object-info')) git(['config', '--unset', 'transfer.advertiseObjectInfo'], { cwd: repo });
    }
  });
}

test('refsUnreadable: the client is told the repository (its spelling without control bytes, bounded), the log keeps the file', () => {
  const e = refsCorrupt('/srv/p.git/packed-refs', 'unexpected line in packed-refs', 'zz');
  assert.equal(e.code, 'GW_REFS_CORRUPT');
  assert.equal(e.wire, undefined);
  const said = refsUnreadable(e, '/p\x1b[31m\n.git');
  assert.equal(said.wire, "refs of '/p?[31m?.git' cannot be read: unexpected line in packed-refs");
  assert.equal(said.message, 'unexpected line in packed-refs: /srv/p.git/packed-refs: zz');
  assert.equal(said.data.file, '/srv/p.git/packed-refs');
  assert.equal(wirePath('x'.repeat(1000)).length, 256);
});
