import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { git, run, tmp, BIN } from './helpers/git.js';
import { makeRichRepo, makeNamespaceRepo } from './helpers/fixtures.js';
import { pkt, unpkt, demux } from './helpers/pkt.js';

let t: ReturnType<typeof tmp>;
let repo: string, s256: string, ns: string;
const UA = { GIT_USER_AGENT: 'git/test-agent' };

before(() => {
  t = tmp();
  const built = makeRichRepo(t.dir);
  repo = join(t.dir, 'repo.git');
  git(['clone', '-q', '--bare', '--no-local', built, repo]);
  git(['--git-dir', repo, 'symbolic-ref', 'refs/remotes/origin/HEAD', 'refs/heads/main']);
  git(['--git-dir', repo, 'update-ref', 'refs/heads/loose-one', 'main~1']);
  mkdirSync(join(t.dir, 's'));
  s256 = makeRichRepo(join(t.dir, 's'), { objectFormat: 'sha256' });
  ns = makeNamespaceRepo(t.dir);
});
after(() => t.cleanup());

function both(args: string[], input: Buffer | string = '', env: NodeJS.ProcessEnv = {}) {
  const e = { ...UA, ...env };
  const g = run('git', ['upload-pack', ...args], { input, env: e });
  const m = run(BIN, ['upload-pack', ...args], { input, env: e });
  return { git: g, ours: m };
}

let packSeq = 0;
/** The sorted ids a (self-contained) pack holds, as git's index-pack reads it. */
function packObjects(pack: Buffer): string[] {
  const f = join(t.dir, `p${packSeq++}.pack`);
  writeFileSync(f, pack);
  // (no --strict: an incremental pack's trees name objects the client already has)
  const ix = run('git', ['index-pack', '-o', `${f}.idx`, f]);
  assert.equal(ix.status, 0, ix.stderr.toString());
  return run('git', ['show-index'], { input: readFileSync(`${f}.idx`) }).stdout.toString().split('\n').filter(Boolean).map((l) => l.split(' ')[1]!).sort();
}

function sameBytes(args: string[], input: Buffer | string = '', env: NodeJS.ProcessEnv = {}, label = '') {
  const { git: g, ours: m } = both(args, input, env);
  assert.equal(m.status, g.status, `${label} exit status; stderr: ${m.stderr}`);
  assert.deepEqual(unpkt(m.stdout), unpkt(g.stdout), label);
  assert.ok(m.stdout.equals(g.stdout), `${label}: bytes differ`);
  return m;
}

test('v0 advertisement is byte-identical to git upload-pack --advertise-refs', () => {
  sameBytes(['--advertise-refs', repo], '', {}, 'plain');
  sameBytes(['--advertise-refs', s256], '', {}, 'sha256');
  sameBytes(['--advertise-refs', ns], '', { GIT_NAMESPACE: 'foo' }, 'namespace');
  const cfg = (k: string, v: string) => ({ GIT_CONFIG_PARAMETERS: `'${k}=${v}'` });
  sameBytes(['--advertise-refs', repo], '', cfg('uploadpack.hideRefs', 'refs/tags'), 'hidden');
  sameBytes(['--advertise-refs', repo], '', cfg('uploadpack.allowTipSHA1InWant', 'true'), 'allow tip');
  sameBytes(['--advertise-refs', repo], '', cfg('uploadpack.allowReachableSHA1InWant', 'true'), 'allow reachable');
  sameBytes(['--advertise-refs', repo], '', cfg('uploadpack.allowFilter', 'true'), 'filter');
  sameBytes(['--advertise-refs', repo], '', { GIT_PROTOCOL: 'version=1' }, 'v1');
  // v0 without --advertise-refs (no no-done), ended by the client's flush
  sameBytes([repo], '0000', {}, 'v0 conversation');
});

test('v0 advertisement of an empty repository uses capabilities^{} (newer git than 2.39 does too)', () => {
  const e = join(t.dir, 'empty.git');
  git(['init', '-q', '--bare', e]);
  const m = run(BIN, ['upload-pack', '--advertise-refs', e], { env: UA });
  const lines = unpkt(m.stdout);
  assert.equal(lines.length, 2);
  assert.match(lines[0]!, /^0{40} capabilities\^\{\}\0multi_ack /);
  assert.equal(lines[1], '0000');
});

test('v2 capability advertisement is byte-identical', () => {
  const env = { GIT_PROTOCOL: 'version=2', GIT_CONFIG_PARAMETERS: "'transfer.advertiseObjectInfo=true'" };
  sameBytes(['--advertise-refs', repo], '', env, 'caps');
  sameBytes(['--advertise-refs', repo], '', { ...env, GIT_CONFIG_PARAMETERS: "'transfer.advertiseObjectInfo=true' 'uploadpack.allowFilter=true' 'uploadpack.allowRefInWant=true' 'uploadpack.allowSidebandAll=true' 'lsrefs.unborn=ignore'" }, 'caps with config');
});

const V2 = { GIT_PROTOCOL: 'version=2', GIT_CONFIG_PARAMETERS: "'transfer.advertiseObjectInfo=true'" };

test('v2 ls-refs transcripts are byte-identical to git upload-pack --stateless-rpc', () => {
  const reqs: string[][] = [
    ['command=ls-refs\n', 'agent=git/test\n', '0001', '0000'],
    ['command=ls-refs\n', '0001', 'symrefs\n', 'peel\n', 'unborn\n', '0000'],
    ['command=ls-refs\n', 'object-format=sha1\n', '0001', 'peel\n', 'ref-prefix refs/heads/\n', 'ref-prefix refs/tags/v1\n', 'ref-prefix HEAD\n', '0000'],
    ['command=ls-refs\n', '0001', 'ref-prefix refs/nothing\n', '0000'],
  ];
  for (const r of reqs) sameBytes(['--stateless-rpc', repo], pkt(r), V2, r.join('|'));
  const e = join(t.dir, 'empty2.git');
  git(['init', '-q', '--bare', '-b', 'trunk', e]);
  sameBytes(['--stateless-rpc', e], pkt(['command=ls-refs\n', '0001', 'symrefs\n', 'unborn\n', '0000']), V2, 'unborn');
  sameBytes(['--stateless-rpc', ns], pkt(['command=ls-refs\n', '0001', 'symrefs\n', 'peel\n', '0000']), { ...V2, GIT_NAMESPACE: 'foo' }, 'namespace');
  sameBytes(['--stateless-rpc', repo], pkt(['command=ls-refs\n', '0001', 'symrefs\n', '0000']), { ...V2, GIT_CONFIG_PARAMETERS: "'uploadpack.hideRefs=refs/heads/feature'" }, 'hidden');
});

test('v2 object-info transcripts are byte-identical', () => {
  const head = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
  const blob = git(['--git-dir', repo, 'rev-parse', 'main:big.bin']).trim();
  sameBytes(['--stateless-rpc', repo], pkt(['command=object-info\n', '0001', 'size\n', `oid ${head}\n`, `oid ${blob}\n`, `oid ${'1'.repeat(40)}\n`, '0000']), V2, 'object-info');
});

test('v2 fetch: acknowledgments byte-identical; pack sections and pack bytes identical', () => {
  const main = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
  const old = git(['--git-dir', repo, 'rev-parse', 'main~4']).trim();
  const older = git(['--git-dir', repo, 'rev-parse', 'main~6']).trim();
  const unknown = 'ab'.repeat(20);
  // negotiation round without done: acknowledgments only
  sameBytes(['--stateless-rpc', repo], pkt(['command=fetch\n', '0001', `want ${main}\n`, `have ${unknown}\n`, '0000']), V2, 'NAK');
  sameBytes(['--stateless-rpc', repo], pkt(['command=fetch\n', '0001', 'wait-for-done\n', `want ${main}\n`, `have ${old}\n`, `have ${older}\n`, '0000']), V2, 'ACK, wait-for-done');
  // ready → pack
  const req = pkt(['command=fetch\n', '0001', 'no-progress\n', 'ofs-delta\n', `want ${main}\n`, `have ${old}\n`, '0000']);
  // with git's pack-objects behind it, the pack bytes are git's too
  const GITPACK = { ...V2, GITWIRE_PACK_OBJECTS: 'git' };
  const { git: g, ours: m } = both(['--stateless-rpc', repo], req, GITPACK);
  assert.equal(m.status, 0, m.stderr.toString());
  const dg = demux(g.stdout), dm = demux(m.stdout);
  assert.deepEqual(dm.sections, dg.sections);
  assert.ok(dm.pack.equals(dg.pack), 'same pack bytes');
  assert.ok(dm.pack.length > 32);
  // with the native producer: the same sections, and a pack of the same objects
  const n = both(['--stateless-rpc', repo], req, V2).ours;
  assert.equal(n.status, 0, n.stderr.toString());
  assert.deepEqual(demux(n.stdout).sections, dg.sections);
  assert.deepEqual(packObjects(demux(n.stdout).pack), packObjects(dg.pack));
  // shallow-info
  const sreq = pkt(['command=fetch\n', '0001', 'no-progress\n', `want ${main}\n`, 'deepen 2\n', 'done\n', '0000']);
  const s = both(['--stateless-rpc', repo], sreq, GITPACK);
  assert.deepEqual(demux(s.ours.stdout).sections, demux(s.git.stdout).sections);
  assert.ok(demux(s.ours.stdout).pack.equals(demux(s.git.stdout).pack));
  const sn = both(['--stateless-rpc', repo], sreq, V2).ours;
  assert.deepEqual(demux(sn.stdout).sections, demux(s.git.stdout).sections);
  assert.deepEqual(packObjects(demux(sn.stdout).pack), packObjects(demux(s.git.stdout).pack));
  // wanted-refs
  const wreq = pkt(['command=fetch\n', '0001', 'no-progress\n', 'want-ref refs/heads/main\n', 'done\n', '0000']);
  const w = both(['--stateless-rpc', repo], wreq, { ...V2, GIT_CONFIG_PARAMETERS: "'uploadpack.allowRefInWant=true'" });
  assert.deepEqual(demux(w.ours.stdout).sections, demux(w.git.stdout).sections);
});

test('v0 stateless-rpc negotiation transcript is byte-identical', () => {
  const main = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
  const old = git(['--git-dir', repo, 'rev-parse', 'main~4']).trim();
  const unknown = 'cd'.repeat(20);
  for (const caps of ['multi_ack_detailed side-band-64k thin-pack ofs-delta', 'multi_ack side-band-64k', 'side-band-64k']) {
    sameBytes(['--stateless-rpc', repo], pkt([`want ${main} ${caps}\n`, '0000', `have ${unknown}\n`, `have ${old}\n`, '0000']), {}, caps);
  }
  // shallow lines
  sameBytes(['--stateless-rpc', repo], pkt([`want ${main} multi_ack_detailed side-band-64k shallow\n`, 'deepen 2\n', '0000']), {}, 'deepen');
});

test('protocol violations give git\'s errors (t5704 and friends)', () => {
  const cases: Array<[string, Buffer, NodeJS.ProcessEnv]> = [
    ['unknown capability', pkt(['command=ls-refs\n', 'foo\n', '0001', '0000']), V2],
    ['invalid command', pkt(['command=nope\n', '0001', '0000']), V2],
    ['no command', pkt(['agent=x\n', '0000']), V2],
    ['mismatched object format', pkt(['command=ls-refs\n', 'object-format=sha256\n', '0001', '0000']), V2],
    ['ls-refs unexpected line', pkt(['command=ls-refs\n', '0001', 'bogus\n', '0000']), V2],
    ['ls-refs expected flush', pkt(['command=ls-refs\n', '0001', 'peel\n', '0001', '0000']), V2],
    ['fetch unexpected line', pkt(['command=fetch\n', '0001', 'bogus\n', '0000']), V2],
    ['fetch expected flush', pkt(['command=fetch\n', '0001', 'thin-pack\n', '0001', '0000']), V2],
    ['bad want', pkt([`want ${'e'.repeat(40)} side-band-64k\n`, '0000']), {}],
    ['garbage', Buffer.from('zzzzgarbage'), {}],
    ['bad length', Buffer.from('0003'), {}],
    ['v2 bad want', pkt(['command=fetch\n', '0001', `want ${'e'.repeat(40)}\n`, '0000']), V2],
    ['not an oid', pkt(['want nope\n', '0000']), {}],
  ];
  for (const [label, input, env] of cases) {
    const { git: g, ours: m } = both(['--stateless-rpc', repo], input, env);
    assert.equal(m.status, g.status, `${label}: exit ${m.status} vs ${g.status}\n${m.stderr}`);
    assert.equal(m.stderr.toString(), g.stderr.toString(), label);
    assert.ok(m.stdout.equals(g.stdout), `${label}: stdout ${JSON.stringify(m.stdout.toString())} vs ${JSON.stringify(g.stdout.toString())}`);
  }
});

test('deepen-relative only deepens client shallows our refs reach (byte-identical to git)', () => {
  const main = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
  const mid = git(['--git-dir', repo, 'rev-parse', 'main~3']).trim();
  const dangling = git(['--git-dir', repo, 'commit-tree', '-p', 'main~5', '-m', 'dangling', 'main^{tree}']).trim();
  for (const depth of ['1', '2']) {
    sameBytes(['--stateless-rpc', repo], pkt([`want ${main} multi_ack_detailed side-band-64k shallow deepen-relative\n`, `shallow ${mid}\n`, `shallow ${dangling}\n`, `deepen ${depth}\n`, '0000']), {}, `deepen-relative ${depth}`);
  }
});
