/**
 * Real git accepts our deltas: a pack written by hand here (header, one
 * object whole, the others as REF_DELTA and OFS_DELTA entries carrying
 * deltas from createDelta(), chains included, the trailer) passes
 * `git index-pack --strict`, and `git cat-file -p` then gives every target.
 * SHA-1 and SHA-256 repositories.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { createDelta } from '../src/pack/produce/delta/index.js';
import { git, gitBuf, run, tmp } from './helpers/git.js';
import { writeHistory } from './helpers/delta-history.js';

type Algo = 'sha1' | 'sha256';

function oidOf(algo: Algo, data: Buffer): Buffer {
  return createHash(algo).update(`blob ${data.length}\0`).update(data).digest();
}

/** an entry header: type and size, 4 bits then 7 bits a byte */
function entryHeader(type: number, size: number): Buffer {
  const out = [(type << 4) | (size & 0x0f)];
  size = Math.floor(size / 16);
  while (size > 0) {
    out[out.length - 1]! |= 0x80;
    out.push(size & 0x7f);
    size = Math.floor(size / 128);
  }
  return Buffer.from(out);
}

/** OFS_DELTA's distance back to the base: 7 bits a byte, high first, each continuation adding one */
function ofsDistance(d: number): Buffer {
  const out = [d & 0x7f];
  while ((d = Math.floor(d / 128)) > 0) {
    d--;
    out.unshift(0x80 | (d & 0x7f));
  }
  return Buffer.from(out);
}

interface Entry { data: Buffer; base?: number; ref?: boolean }

/** A pack of blobs: whole, or deltas (REF or OFS) against an earlier entry. */
function writePack(algo: Algo, entries: Entry[]): Buffer {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write('PACK', 0);
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(entries.length, 8);
  parts.push(head);
  let at = 12;
  const offsets: number[] = [];
  for (const e of entries) {
    offsets.push(at);
    let chunk: Buffer;
    if (e.base === undefined) {
      chunk = Buffer.concat([entryHeader(3, e.data.length), deflateSync(e.data)]);
    } else {
      const base = entries[e.base]!.data;
      const delta = createDelta(base, e.data);
      assert.ok(delta);
      chunk = e.ref
        ? Buffer.concat([entryHeader(7, delta.length), oidOf(algo, base), deflateSync(delta)])
        : Buffer.concat([entryHeader(6, delta.length), ofsDistance(at - offsets[e.base]!), deflateSync(delta)]);
    }
    parts.push(chunk);
    at += chunk.length;
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash(algo).update(body).digest()]);
}

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => { a = (Math.imul(a, 1664525) + 1013904223) >>> 0; return a / 4294967296; };
}

for (const algo of ['sha1', 'sha256'] as const) {
  test(`git index-pack --strict accepts a pack of our REF_DELTA and OFS_DELTA entries, cat-file gives every target (${algo})`, () => {
    const { dir, cleanup } = tmp('gitwire-delta-git-');
    try {
      const repo = join(dir, 'r.git');
      git(['init', '-q', '--bare', `--object-format=${algo}`, repo]);
      const src = join(dir, 'src.git');
      git(['init', '-q', '--bare', src]);
      const history = writeHistory(src, [['diff-delta.c', 6], ['builtin/pack-objects.c', 3]]).map((b) => b.data);
      const rnd = prng(7);
      const noise = Buffer.from(Array.from({ length: 70_000 }, () => Math.floor(rnd() * 256)));
      const entries: Entry[] = [
        { data: history[0]! },
        { data: history[1]!, base: 0, ref: true },
        { data: history[2]!, base: 1 }, // OFS onto a REF_DELTA: a chain
        { data: history[3]!, base: 2, ref: true },
        { data: history[4]!, base: 0 },
        { data: history[5] ?? history[4]!.subarray(1), base: 4 },
        { data: history[6]! },
        { data: history[7]!, base: 6 },
        { data: history[8]!, base: 7, ref: true },
        { data: noise },
        { data: Buffer.concat([noise.subarray(100, 66_000), noise, Buffer.from('end')]), base: 9 },
        { data: Buffer.from('y'), base: 0 }, // the smallest delta: 4 bytes
        { data: Buffer.from('hello\n') },
        { data: Buffer.from('x'.repeat(200)), base: 12, ref: true }, // nothing in common
      ];
      const pack = writePack(algo, entries);
      const packFile = join(dir, 'in.pack');
      writeFileSync(packFile, pack);
      // git 2.55 too, when the environment names one (GITWIRE_GIT_2_55: its prefix)
      const newer = process.env.GITWIRE_GIT_2_55;
      if (newer) {
        const r55 = run(join(newer, 'bin', 'git'), ['index-pack', '--strict', `--object-format=${algo}`, '-o', join(dir, 'in55.idx'), packFile], { cwd: repo });
        assert.equal(r55.status, 0, r55.stderr.toString());
      }
      const r = run('git', ['index-pack', '--strict', `--object-format=${algo}`, '-o', join(dir, 'in.idx'), packFile], { cwd: repo });
      assert.equal(r.status, 0, r.stderr.toString());
      const name = r.stdout.toString().trim();
      renameSync(packFile, join(repo, `objects/pack/pack-${name}.pack`));
      renameSync(join(dir, 'in.idx'), join(repo, `objects/pack/pack-${name}.idx`));
      for (const e of entries) {
        const oid = oidOf(algo, e.data).toString('hex');
        assert.ok(gitBuf(['cat-file', '-p', oid], { cwd: repo }).equals(e.data), `cat-file -p ${oid}`);
      }
      // the deltas were kept as deltas (verify-pack names their bases)
      const deltas = git(['verify-pack', '-v', join(repo, `objects/pack/pack-${name}.idx`)], { cwd: repo }).split('\n').filter((l) => l.split(/\s+/).length >= 7);
      assert.equal(deltas.length, entries.filter((e) => e.base !== undefined).length);
      assert.equal(run('git', ['fsck', '--strict'], { cwd: repo }).status, 0);
    } finally { cleanup(); }
  });
}
