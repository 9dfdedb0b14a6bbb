/**
 * The fetch request table (issue #13): v0 capabilities and request lines and
 * v2 `fetch` arguments fill the same FetchRequest through the same rows; a
 * row off by configuration is unknown, and what v2 advertises is what it
 * accepts. Wire behaviour against git is in transcript/conformance.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { Repository } from '../src/repo/index.js';
import { PacketWriter } from '../src/pktline/writer.js';
import { MemorySink } from '../src/pktline/sink.js';
import { UploadPackConnection, type UploadPackSession } from '../src/protocol/session.js';
import { FETCH_ARGS, fetchFeatures, parseFetchLine } from '../src/protocol/request-args.js';
import type { FetchRequest, ProtocolVersion } from '../src/protocol/request.js';
import { GitwireError } from '../src/errors.js';

let t: ReturnType<typeof tmp>;
let dir: string;
let head: string;
before(() => {
  t = tmp('gitwire-request-');
  dir = `${t.dir}/r`;
  git(['init', '-q', '-b', 'main', dir]);
  commit(dir, 'one', { 'a.txt': 'a\n' });
  head = commit(dir, 'two', { 'a.txt': 'b\n' });
});
after(() => t.cleanup());

function session(version: ProtocolVersion, config: string[] = []): { s: UploadPackSession; repo: Repository } {
  const env = { ...gitEnv, GIT_CONFIG_COUNT: String(config.length / 2) } as NodeJS.ProcessEnv;
  for (let i = 0; i < config.length; i += 2) { env[`GIT_CONFIG_KEY_${i / 2}`] = config[i]; env[`GIT_CONFIG_VALUE_${i / 2}`] = config[i + 1]; }
  const repo = Repository.open(dir, { env });
  const conn = new UploadPackConnection(repo, new PacketWriter(new MemorySink()), { statelessRpc: true });
  return { s: conn.begin(version), repo };
}

function parse(version: ProtocolVersion, lines: string[], config: string[] = []): UploadPackSession {
  const { s, repo } = session(version, config);
  try { for (const l of lines) parseFetchLine(s, l); } finally { repo.close(); }
  return s;
}

function fails(version: ProtocolVersion, line: string, message: string, config: string[] = []): void {
  assert.throws(() => parse(version, [line], config), (e: unknown) => e instanceof GitwireError && e.message === message, `${line} -> ${message}`);
}

/** The same request, spelt in each version: the fields it sets must agree. */
const SAME: Array<{ v0: string[]; v2: string[]; expect: Partial<FetchRequest>; sideband?: string }> = [
  { v0: ['thin-pack'], v2: ['thin-pack'], expect: { thinPack: true } },
  { v0: ['ofs-delta'], v2: ['ofs-delta'], expect: { ofsDelta: true } },
  { v0: ['no-progress'], v2: ['no-progress'], expect: { noProgress: true } },
  { v0: ['include-tag'], v2: ['include-tag'], expect: { includeTag: true } },
  { v0: ['deepen-relative'], v2: ['deepen-relative'], expect: { deepenRelative: true } },
];

for (const c of SAME) {
  test(`v0 capability and v2 argument set the same field: ${c.v0.join(' ')}`, () => {
    const a = parse(0, [`want ${head} ${c.v0.join(' ')}`]);
    const b = parse(2, [`want ${head}`, ...c.v2]);
    for (const [k, v] of Object.entries(c.expect)) {
      assert.deepEqual(a.req[k as keyof FetchRequest], v, `v0 ${k}`);
      assert.deepEqual(b.req[k as keyof FetchRequest], v, `v2 ${k}`);
    }
    assert.deepEqual(a.wants.map((w) => w.toString('hex')), [head]);
    assert.deepEqual(b.wants.map((w) => w.toString('hex')), [head]);
  });
}

test('v0 capabilities: later words win as in git, per want line', () => {
  assert.equal(parse(0, [`want ${head} multi_ack_detailed multi_ack`]).req.multiAck, 2);
  assert.equal(parse(0, [`want ${head} multi_ack multi_ack_detailed`]).req.multiAck, 2);
  assert.equal(parse(0, [`want ${head} multi_ack_detailed`, `want ${head} multi_ack`]).req.multiAck, 1);
  assert.equal(parse(0, [`want ${head} side-band side-band-64k`]).sideband, 'side-band-64k');
  assert.equal(parse(0, [`want ${head} side-band`]).sideband, 'side-band');
  assert.equal(parse(0, [`want ${head} no-done`]).req.noDone, true);
  // a word inside a longer one is not the word
  assert.equal(parse(0, [`want ${head} xthin-pack multi_ack_detailedx`]).req.thinPack, false);
  // one want, however often it is named
  assert.equal(parse(0, [`want ${head}`, `want ${head}`]).wants.length, 1);
});

test('deepen arguments: git\'s number forms, same rows in both versions', () => {
  for (const v of [0, 2] as const) {
    assert.equal(parse(v, ['deepen 0x10']).req.depth, 16);
    assert.equal(parse(v, ['deepen 010']).req.depth, 8);
    // (int)strtol(arg, &end, 0), as git 2.39 and 2.55 take it: past int the value wraps, past long it is -1
    assert.equal(parse(v, ['deepen 99999999999']).req.depth, 1215752191);
    assert.equal(parse(v, ['deepen 4294967297']).req.depth, 1);
    assert.equal(parse(v, ['deepen 0x7fffffff']).req.depth, 0x7fffffff);
    assert.equal(parse(v, ['deepen  +7']).req.depth, 7);
    const since = parse(v, ['deepen-since 1700000000']).req;
    assert.equal(since.deepenSince, 1700000000);
    assert.equal(since.deepenRevList, true);
    // parse_timestamp (strtoumax): 0 and a negative date are taken; only the overflow value is refused
    assert.equal(parse(v, ['deepen-since 0']).req.deepenSince, 0);
    assert.equal(parse(v, ['deepen-since 0x10']).req.deepenSince, 16);
    assert.equal(parse(v, ['deepen-since -5']).req.deepenSince, Number(2n ** 64n - 5n));
    assert.deepEqual(parse(v, ['deepen-not main']).req.deepenNot, ['main']);
    fails(v, 'deepen 0', 'Invalid deepen: deepen 0');
    fails(v, 'deepen 2147483648', 'Invalid deepen: deepen 2147483648');
    fails(v, 'deepen 99999999999999999999', 'Invalid deepen: deepen 99999999999999999999');
    fails(v, 'deepen 5x', 'Invalid deepen: deepen 5x');
    fails(v, 'deepen-since x', 'Invalid deepen-since: deepen-since x');
    fails(v, 'deepen-since 99999999999999999999999', 'Invalid deepen-since: deepen-since 99999999999999999999999');
    fails(v, 'deepen-not nope', 'git upload-pack: deepen-not is not a ref: deepen-not nope');
  }
});

test('a word in the wrong version, or with a value it does not take, is unknown in git\'s words', () => {
  const v0 = (l: string) => `git upload-pack: protocol error, expected to get object ID, not '${l}'`;
  const v2 = (l: string) => `unexpected line: '${l}'`;
  for (const l of ['thin-pack', 'done', 'have ' + head, 'want-ref refs/heads/main', 'deepen', 'want', 'bogus']) fails(0, l, v0(l));
  for (const l of ['multi_ack', 'side-band-64k', 'no-done', 'session-id=x', 'thin-pack x', 'done ', 'deepen', 'have', 'bogus']) fails(2, l, v2(l));
  fails(0, 'want nothex', v0('want nothex'));
  fails(2, `want ${head.slice(0, 39)}`, `git upload-pack: protocol error, expected to get oid, not 'want ${head.slice(0, 39)}'`);
  // get_oid_hex reads the first 40 characters, in either case, and nothing after them (git 2.39 and 2.55)
  assert.deepEqual(parse(2, [`want ${head} thin-pack`]).wants.map((w) => w.toString('hex')), [head]);
  assert.deepEqual(parse(2, [`want ${head.toUpperCase()}`]).wants.map((w) => w.toString('hex')), [head]);
  assert.deepEqual(parse(0, [`want ${head.toUpperCase()} thin-pack`]).wants.map((w) => w.toString('hex')), [head]);
  fails(2, 'have zz', 'git upload-pack: expected SHA1 object, got \'zz\'');
});

test('rows off by configuration are unknown; what v2 advertises is what it accepts', () => {
  const want = `want ${head}`;
  // off
  fails(2, 'filter blob:none', 'unexpected line: \'filter blob:none\'');
  fails(2, 'want-ref refs/heads/main', 'unexpected line: \'want-ref refs/heads/main\'');
  fails(2, 'sideband-all', 'unexpected line: \'sideband-all\'');
  assert.equal(parse(0, [`${want} filter`]).req.filterRequested, false);
  fails(0, 'filter blob:none', 'git upload-pack: filtering capability not negotiated');
  assert.equal(fetchFeatures(session(2).s), 'shallow wait-for-done');
  // on
  const on = ['uploadpack.allowFilter', 'true', 'uploadpack.allowRefInWant', 'true', 'uploadpack.allowSidebandAll', 'true'];
  assert.equal(fetchFeatures(session(2, on).s), 'shallow wait-for-done filter ref-in-want sideband-all');
  const s = parse(2, ['want-ref refs/heads/main', 'filter blob:none', 'sideband-all', 'done', 'wait-for-done'], on);
  assert.deepEqual(s.req.wantedRefs.map((r) => [r.name, r.oid.toString('hex')]), [['refs/heads/main', head]]);
  assert.equal(s.req.filter?.spec, 'blob:none');
  assert.equal(s.req.sidebandAll, true);
  assert.equal(s.writer.sidebandAll, true, 'framing starts at once, as git sets use_sideband while parsing');
  assert.equal(s.req.done, true);
  assert.equal(s.req.waitForDone, true);
  const v0 = parse(0, [`${want} filter`, 'filter blob:none'], on);
  assert.equal(v0.req.filter?.spec, 'blob:none');
  fails(0, 'filter tree:0', 'git upload-pack: filtering capability not negotiated', on);
});

test('every row names a version and applies in it', () => {
  for (const r of FETCH_ARGS) assert.ok(r.v0 || r.v2, r.name);
  const names = FETCH_ARGS.filter((r) => r.v2).map((r) => r.name);
  assert.equal(new Set(names).size, names.length, 'one v2 row per word');
  const v0Lines = FETCH_ARGS.filter((r) => r.v0 === 'line').map((r) => r.name);
  assert.equal(new Set(v0Lines).size, v0Lines.length, 'one v0 line row per word');
});

test('each request gets fresh state (v2 commands do not share flags or lists)', () => {
  const repo = Repository.open(dir, { env: gitEnv });
  try {
    const conn = new UploadPackConnection(repo, new PacketWriter(new MemorySink()), { statelessRpc: false });
    const a = conn.begin(2);
    parseFetchLine(a, `want ${head}`);
    parseFetchLine(a, 'thin-pack');
    const b = conn.begin(2);
    assert.notEqual(a, b);
    assert.equal(b.wants.length, 0);
    assert.equal(b.flags.size, 0);
    assert.equal(b.req.thinPack, false);
    assert.equal(conn.stats.wants, 1, 'the finished request joins the totals');
    assert.equal(conn.current, b);
  } finally { repo.close(); }
});
