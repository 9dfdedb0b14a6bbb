/**
 * The native writer's PackSource through the one relay (relaySource) and
 * packet writer, side-band-64k as upload-pack sends it: the client gets a
 * pack index-pack accepts, progress on band 2, and for a damaged source
 * no complete pack but git's abort message on band 3.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { git, tmp } from './helpers/git.js';
import { makeRichRepo } from './helpers/fixtures.js';
import { demux } from './helpers/pkt.js';
import { idsPart, indexPack, openRepo, packFiles, packNamed, planOf, ranksPart, revListObjects } from './helpers/pack-write.js';
import { PacketWriter } from '../src/pktline/writer.js';
import { StreamSink } from '../src/pktline/sink.js';
import { relaySource } from '../src/pack/relay.js';
import { writePack } from '../src/pack/produce/write/index.js';
import type { PackPlan } from '../src/pack/produce/plan.js';
import type { Repository } from '../src/repo/repository.js';

async function relayed(repo: Repository, plan: PackPlan): Promise<{ pack: Buffer; progress: string; errors: string; error?: unknown }> {
  const out = new PassThrough();
  const chunks: Buffer[] = [Buffer.from('000dpackfile\n')];
  out.on('data', (c: Buffer) => chunks.push(c));
  const writer = new PacketWriter(new StreamSink(out));
  writer.sideband = 'side-band-64k';
  let error: unknown;
  try {
    await relaySource(writePack(repo, plan, { ofsDelta: true, progress: true }), writer, { keepalive: 5, stderr: () => undefined });
  } catch (e) { error = e; }
  await new Promise((r) => setImmediate(r));
  const d = demux(Buffer.concat(chunks));
  return { pack: d.pack, progress: d.progress, errors: d.errors, error };
}

test('relay: a whole pack and an ids plan reach the client through side-band-64k, progress on band 2', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const repo = openRepo(dir);
    const objects = join(dir, '.git/objects');
    const pack = packNamed(repo, join(objects, 'pack'), packFiles(objects)[0]!);
    const all = revListObjects(dir, ['--all']).sort();
    for (const plan of [planOf([ranksPart(pack)]), planOf([idsPart(all.slice(1))])]) {
      const r = await relayed(repo, plan);
      assert.equal(r.error, undefined);
      assert.equal(r.errors, '');
      // (the writer counts what pack reuse does not take: all of the ids plan, none of the whole pack)
      assert.match(r.progress, plan.parts[0]!.kind === 'ids' ? /^Counting objects: [^\n]*, done\.\nTotal \d+ \(delta \d+\), reused \d+ \(delta \d+\), pack-reused 0 \(from 0\)\n$/
        : /^Total \d+ \(delta 0\), reused 0 \(delta 0\), pack-reused \d+ \(from 1\)\n$/);
      // (the ids plan leaves one object out: --strict checks links against a client that has it)
      const client = join(t.dir, `client-${plan.count}.git`);
      git(['clone', '-q', '--bare', '--no-local', dir, client]);
      const ix = indexPack(r.pack, t.dir, plan.count === all.length ? {} : { into: client });
      assert.equal(ix.ok, true, ix.stderr);
      assert.equal(ix.objects.length, plan.count);
    }
  } finally { t.cleanup(); }
});

test('relay: a damaged source never reaches the client as a complete pack; band 3 says why', async () => {
  const t = tmp();
  try {
    const dir = makeRichRepo(t.dir);
    git(['repack', '-adq'], { cwd: dir });
    const objects = join(dir, '.git/objects');
    const name = packFiles(objects)[0]!;
    const path = join(objects, 'pack', name);
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length * 0.6);
    bytes[at] = bytes[at]! ^ 0x40;
    writeFileSync(path, bytes);
    const repo = openRepo(dir);
    const pack = packNamed(repo, join(objects, 'pack'), name);
    for (const plan of [planOf([ranksPart(pack)]), planOf([idsPart(revListObjects(dir, ['--all']).slice(1))])]) {
      const r = await relayed(repo, plan);
      assert.ok(r.error, 'the relay fails');
      assert.match(r.errors, /aborting due to possible repository corruption on the remote side/);
      assert.match(r.progress, /^fatal: /m);
      assert.equal(indexPack(r.pack, t.dir).ok, false);
    }
  } finally { t.cleanup(); }
});
