/** Garbage in: upload-pack answers with a typed error or finishes; it never crashes or hangs. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { join } from 'node:path';
import { git, gitEnv, tmp } from './helpers/git.js';
import { commit } from './helpers/fixtures.js';
import { encode } from '../src/pktline/codec.js';
import { MemorySink } from '../src/pktline/sink.js';
import { uploadPack } from '../src/protocol/upload-pack.js';
import { GitwireError } from '../src/errors.js';

let t: ReturnType<typeof tmp>;
let repo: string;
let head: string;
before(() => {
  t = tmp();
  const w = join(t.dir, 'w');
  git(['init', '-q', '-b', 'main', w]);
  commit(w, 'one', { a: '1\n' });
  repo = join(t.dir, 'r.git');
  git(['clone', '-q', '--bare', w, repo]);
  head = git(['--git-dir', repo, 'rev-parse', 'main']).trim();
});
after(() => t.cleanup());

const words = ['want', 'have', 'done', 'shallow', 'deepen', 'deepen-since', 'deepen-not', 'filter', 'command=ls-refs', 'command=fetch', 'command=object-info',
  'ref-prefix', 'peel', 'symrefs', 'unborn', 'thin-pack', 'ofs-delta', 'wait-for-done', 'object-format=sha1', 'oid', 'size', 'agent=x', 'ERR'];

const line = fc.oneof(
  fc.constantFrom('0000', '0001', '0002'),
  fc.tuple(fc.constantFrom(...words), fc.oneof(fc.constant(''), fc.constant(` ${'e'.repeat(40)}`), fc.constant(' 3'), fc.string({ maxLength: 12 }))).map(([w, a]) => `${w}${a}\n`),
  fc.constant(`want ${'0'.repeat(40)} side-band-64k\n`),
  fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b).toString('latin1')),
);

async function feed(lines: string[], proto: string, stateless: boolean): Promise<void> {
  const input = Buffer.concat(lines.map((l) => (/^000[012]$/.test(l) ? Buffer.from(l) : l.length > 0 && l.length < 60000 ? encode(l) : Buffer.from(l, 'latin1'))));
  const sink = new MemorySink();
  const run = uploadPack({ directory: repo, input, output: sink, env: { ...gitEnv, GIT_PROTOCOL: proto }, statelessRpc: stateless });
  const timeout = new Promise<'hang'>((r) => setTimeout(() => r('hang'), 10_000).unref());
  const r = await Promise.race([run.then(() => 'ok' as const, (e: unknown) => e), timeout]);
  assert.notEqual(r, 'hang', 'no hang');
  if (r !== 'ok') assert.ok(r instanceof GitwireError, `typed error, got ${String(r)}`);
}

test('random requests to v0 and v2 upload-pack give a typed error or an answer', async () => {
  await fc.assert(fc.asyncProperty(fc.array(line, { maxLength: 12 }), fc.constantFrom('', 'version=2'), fc.boolean(), async (lines, proto, stateless) => {
    // never ask for a pack by chance: a valid want + done would spawn pack-objects, which is fine but slow
    const safe = lines.map((l) => l.replace(head, 'e'.repeat(40)));
    await feed(safe, proto, stateless);
  }), { numRuns: 300 });
});
