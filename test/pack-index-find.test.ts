/**
 * PackIndex.find (interpolation probes, then bisection) against a plain
 * search, on v2 indexes built in memory: uniform ids, ids bunched in a few
 * clusters, ids sharing their first five bytes, and ids that are absent.
 * Each index is searched three ways: held whole, read from its file in
 * 4 KiB pages throughout, and read in pages until it switches to a whole
 * copy part-way (the switch can happen inside one lookup).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PackIndex } from '../src/repo/pack-index.js';

function indexOf(ids: Buffer[]): Buffer {
  ids.sort(Buffer.compare);
  const n = ids.length;
  const b = Buffer.alloc(8 + 256 * 4 + n * 28 + 40);
  b.writeUInt32BE(0xff744f63, 0);
  b.writeUInt32BE(2, 4);
  for (let byte = 0, i = 0; byte < 256; byte++) {
    while (i < n && ids[i]![0]! <= byte) i++;
    b.writeUInt32BE(i, 8 + byte * 4);
  }
  const names = 8 + 256 * 4;
  ids.forEach((id, i) => { id.copy(b, names + i * 20); b.writeUInt32BE(12 + i * 10, names + n * 24 + i * 4); });
  return b;
}

const sha = (s: string) => createHash('sha1').update(s).digest();

function check(ids: Buffer[], misses: Buffer[]): void {
  const bytes = indexOf(ids);
  const sorted = [...ids].sort(Buffer.compare);
  const present = new Set(sorted.map((x) => x.toString('hex')));
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-idx-'));
  const file = join(dir, 'pack-x.idx');
  writeFileSync(file, bytes);
  const saved = PackIndex.wholeFileLimit;
  try {
    for (const how of ['whole', 'paged', 'paged, then whole'] as const) {
      PackIndex.wholeFileLimit = how === 'paged' ? 0 : saved;
      const idx = how === 'whole' ? new PackIndex(bytes, 20) : PackIndex.open(file, 20);
      try {
        // absent ids first: a paged index then takes its first lookups in pages
        for (const m of misses) if (!present.has(m.toString('hex'))) assert.equal(idx.find(m), -1, `${how}: absent ${m.toString('hex')}`);
        sorted.forEach((id, i) => assert.equal(idx.find(id), i, `${how}: id ${id.toString('hex')}`));
        if (how === 'paged') assert.equal(idx.buf.isWhole, false, 'stayed in pages');
        if (how === 'paged, then whole') assert.equal(idx.buf.isWhole, true, 'switched to a whole copy');
      } finally { idx.close(); }
    }
  } finally {
    PackIndex.wholeFileLimit = saved;
    rmSync(dir, { recursive: true, force: true });
  }
}

test('find: uniform ids, present and absent', () => {
  const ids = Array.from({ length: 20000 }, (_, i) => sha(`o${i}`));
  const misses = Array.from({ length: 5000 }, (_, i) => sha(`m${i}`));
  // absent ids next to present ones (same first bytes, last byte off by one)
  for (let i = 0; i < 2000; i += 7) { const m = Buffer.from(ids[i]!); m[19] = m[19]! ^ 1; misses.push(m); const p = Buffer.from(ids[i]!); p[4] = p[4]! ^ 1; misses.push(p); }
  check(ids, misses);
});

test('find: bunched and shared-prefix ids (interpolation guesses badly)', () => {
  const ids: Buffer[] = [];
  for (let i = 0; i < 6000; i++) {
    const id = sha(`b${i}`);
    id[0] = 0x42;
    if (i % 3 === 0) { id[1] = 0; id[2] = 0; } else if (i % 3 === 1) { id[1] = 0xff; id[2] = 0xff; id[3] = 0xff; }
    if (i % 10 === 0) { id[1] = 7; id[2] = 7; id[3] = 7; id[4] = 7; } // the same 4-byte key
    ids.push(id);
  }
  const uniq = [...new Map(ids.map((x) => [x.toString('hex'), x])).values()];
  const misses = uniq.slice(0, 3000).map((x, i) => { const m = Buffer.from(x); const j = i % 2 ? 19 : 5; m[j] = m[j]! ^ 0x10; return m; });
  misses.push(Buffer.alloc(20, 0x42), Buffer.alloc(20, 0), Buffer.alloc(20, 0xff));
  check(uniq, misses);
});
