/**
 * The reftable format without git: what the writer writes the reader
 * reads back (every block type, many blocks, an index, restart points,
 * SHA-1 and SHA-256); random transactions against the stack agree with a
 * model of the refs (fast-check); damaged tables give a clear error and
 * never a crash or a hang.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { tmp } from './helpers/git.js';
import { GitwireError } from '../src/errors.js';
import {
  Table, writeTable, RefValue, LogValue, ReftableRefStore, Stack, suggestSegment, type RefRecord, type LogRecord, type WriteOptions,
} from '../src/repo/refs/index.js';

const t = tmp('gitwire-reftable-format-');
after(() => t.cleanup());
let seq = 0;

function oid(n: number, len = 20): Buffer {
  const b = Buffer.alloc(len);
  b.writeUInt32BE(n >>> 0, 0);
  b[len - 1] = 0xab;
  return b;
}

function writeFile(bytes: Buffer): string {
  const p = join(t.dir, `table-${seq++}.ref`);
  writeFileSync(p, bytes);
  return p;
}

function allRefs(tab: Table, key?: Buffer): Array<{ name: string; vt: number }> {
  const it = tab.refs(key);
  const out: Array<{ name: string; vt: number }> = [];
  while (it.next()) out.push({ name: it.it!.key.toString('latin1', 0, it.it!.keyLen), vt: it.it!.vt });
  return out;
}

const LAYOUTS = [
  { blockSize: 4096, restartInterval: 16 },
  { blockSize: 256, restartInterval: 3 },
  { blockSize: 200, restartInterval: 1 },
];

for (const hashLen of [20, 32]) {
  for (const layout of LAYOUTS) {
    test(`write then read: ${hashLen === 20 ? 'SHA-1' : 'SHA-256'}, block ${layout.blockSize}, restart every ${layout.restartInterval}`, () => {
      const names = Array.from({ length: 500 }, (_, i) => `refs/${i % 3 ? 'heads' : 'tags'}/team-${i % 17}/topic-${String(i).padStart(4, '0')}`).sort();
      const refs: RefRecord[] = names.map((n, i) => {
        const name = Buffer.from(n);
        if (i % 50 === 7) return { name, updateIndex: 3, type: RefValue.Symref, target: Buffer.from(names[0]!) };
        if (i % 40 === 5) return { name, updateIndex: 4, type: RefValue.Deletion };
        if (n.startsWith('refs/tags/')) return { name, updateIndex: 2, type: RefValue.Val2, value: oid(i, hashLen), peeled: oid(i + 1000, hashLen) };
        return { name, updateIndex: 2, type: RefValue.Val1, value: oid(i, hashLen) };
      });
      const logs: LogRecord[] = [];
      for (const n of names.slice(0, 60)) {
        for (const u of [4, 3, 2]) {
          logs.push({ name: Buffer.from(n), updateIndex: u, type: LogValue.Update, old: oid(u - 1, hashLen), new: oid(u, hashLen), who: Buffer.from('C O Mitter'), email: Buffer.from('c@example.com'), time: 1700000000 + u, tz: -130, message: Buffer.from(`push ${u}\n`) });
        }
      }
      const p = writeFile(writeTable(refs, logs, 2, 4, hashLen, layout));
      const tab = Table.open(p, 'x.ref', hashLen);
      try {
        assert.equal(tab.minUpdate, 2);
        assert.equal(tab.maxUpdate, 4);
        const got = allRefs(tab);
        assert.deepEqual(got.map((r) => r.name), names);
        assert.deepEqual(got.map((r) => r.vt), refs.map((r) => r.type));
        // every key found by a seek, through the index when there is one
        if (layout.blockSize < 4096) assert.ok(tab.refIndexPos > 0, 'many blocks: an index');
        for (let i = 0; i < names.length; i += 7) {
          const it = tab.refs(Buffer.from(names[i]!));
          assert.ok(it.next());
          assert.equal(it.it!.key.toString('latin1', 0, it.it!.keyLen), names[i]);
          if (refs[i]!.type === RefValue.Val1) assert.deepEqual(it.it!.block.buf.subarray(it.it!.valAt, it.it!.valAt + hashLen), refs[i]!.value);
        }
        // a key between two names seeks to the next one; past the last, nothing
        const mid = tab.refs(Buffer.from(`${names[100]!}-`));
        assert.ok(mid.next());
        assert.equal(mid.it!.key.toString('latin1', 0, mid.it!.keyLen), names[101]);
        assert.equal(tab.refs(Buffer.from('refs/zzz')).next(), false);
        // the logs: all of them, newest first per ref
        const li = tab.logs();
        let count = 0;
        while (li.next()) count++;
        assert.equal(count, logs.length);
      } finally { tab.unpin(); }
    });
  }
}

test('an empty table and a log-only table read as such', () => {
  const e = Table.open(writeFile(writeTable([], [], 1, 1, 20, LAYOUTS[0]!)), 'e', 20);
  assert.deepEqual(allRefs(e), []);
  assert.equal(e.logs().next(), false);
  e.unpin();
  const l = Table.open(writeFile(writeTable([], [{ name: Buffer.from('HEAD'), updateIndex: 1, type: LogValue.Update, old: oid(0), new: oid(1), message: Buffer.from('x\n') }], 1, 1, 20, LAYOUTS[0]!)), 'l', 20);
  assert.deepEqual(allRefs(l), []);
  const it = l.logs();
  assert.ok(it.next());
  assert.equal(it.it!.key.toString('latin1', 0, 4), 'HEAD');
  l.unpin();
});

test('a SHA-256 table is refused by a SHA-1 repository, and the other way round', () => {
  const p = writeFile(writeTable([{ name: Buffer.from('refs/heads/a'), updateIndex: 1, type: RefValue.Val1, value: oid(1, 32) }], [], 1, 1, 32, LAYOUTS[0]!));
  assert.throws(() => Table.open(p, 'x', 20), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT' && /hash id/.test(e.message));
  const q = writeFile(writeTable([{ name: Buffer.from('refs/heads/a'), updateIndex: 1, type: RefValue.Val1, value: oid(1) }], [], 1, 1, 20, LAYOUTS[0]!));
  assert.throws(() => Table.open(q, 'x', 32), /hash id/);
});

test("geometric compaction picks git's segments", () => {
  assert.deepEqual(suggestSegment([64, 32, 16, 8, 4, 2, 1], 2), { start: 0, end: 0 });
  assert.deepEqual(suggestSegment([64, 32, 16, 8, 4, 3, 1], 2), { start: 0, end: 6 });
  assert.deepEqual(suggestSegment([256, 32, 16, 8, 4, 3, 1], 2), { start: 1, end: 6 });
  assert.deepEqual(suggestSegment([128, 64, 1], 2), { start: 0, end: 0 });
  assert.deepEqual(suggestSegment([10, 10], 2), { start: 0, end: 2 });
});

/** A store over a fresh, empty stack. */
function freshStore(opts: Partial<WriteOptions> = {}): ReftableRefStore {
  const gd = join(t.dir, `repo-${seq++}`);
  mkdirSync(join(gd, 'reftable'), { recursive: true });
  writeFileSync(join(gd, 'reftable', 'tables.list'), '');
  const wo: WriteOptions = { blockSize: 4096, restartInterval: 16, lockTimeoutMs: 100, geometricFactor: 2, autoCompaction: true, ...opts };
  return new ReftableRefStore(gd, gd, 20, wo);
}

const NAMES = ['refs/heads/main', 'refs/heads/a', 'refs/heads/a-b', 'refs/heads/z', 'refs/tags/v1', 'refs/heads/team/x', 'refs/heads/team/y', 'refs/notes/n'];

test('property: random transactions against the stack agree with a model of the refs', async () => {
  const edit = fc.record({
    name: fc.constantFrom(...NAMES),
    op: fc.constantFrom('update', 'delete'),
    value: fc.integer({ min: 1, max: 6 }),
    check: fc.constantFrom('any', 'exact', 'absent', 'wrong'),
  });
  await fc.assert(fc.asyncProperty(
    fc.array(fc.array(edit, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 12 }),
    fc.boolean(), fc.constantFrom(128, 4096),
    async (txs, compact, blockSize) => {
      const store = freshStore({ autoCompaction: compact, blockSize, restartInterval: 2 });
      const model = new Map<string, number>();
      let tablesWritten = 0;
      try {
        for (const tx of txs) {
          const names = new Set<string>();
          const edits = tx.filter((e) => !names.has(e.name) && names.add(e.name)).map((e) => {
            const cur = model.get(e.name);
            const expected = e.check === 'exact' && cur !== undefined ? { kind: 'must-exist-and-match' as const, oid: oid(cur) }
              : e.check === 'absent' ? { kind: 'must-not-exist' as const }
                : e.check === 'wrong' ? { kind: 'must-exist-and-match' as const, oid: oid(99) } : { kind: 'any' as const };
            return { name: e.name, change: e.op === 'update' ? { kind: 'update' as const, new: oid(e.value) } : { kind: 'delete' as const }, expected, message: 'm' };
          });
          // what the model says: every edit's old value holds, and no update is below or above a ref that stays
          const after = new Map(model);
          let ok = edits.every((e) => {
            const cur = model.get(e.name);
            if (e.expected.kind === 'must-not-exist') return cur === undefined;
            if (e.expected.kind === 'must-exist-and-match') return cur !== undefined && oid(cur).equals(e.expected.oid);
            return true;
          });
          for (const e of edits) if (e.change.kind === 'update') after.set(e.name, e.change.new.readUInt32BE(0)); else after.delete(e.name);
          const created = edits.filter((e) => e.change.kind === 'update' && !model.has(e.name)).map((e) => e.name);
          for (const n of created) for (const o of after.keys()) if (o !== n && (o.startsWith(`${n}/`) || n.startsWith(`${o}/`))) ok = false;
          const tx2 = store.transaction({});
          let committed = true;
          try { await tx2.prepare(edits); await tx2.commit(); } catch (e) {
            assert.ok(e instanceof GitwireError && e.code === 'GW_REF_UPDATE', String(e));
            committed = false;
          }
          assert.equal(committed, ok, `transaction ${JSON.stringify(tx)} on ${JSON.stringify([...model])}`);
          if (committed) { tablesWritten++; model.clear(); for (const [k, v] of after) model.set(k, v); }
          const seen = [...store.iterate('refs/')].map((r) => [r.name.toString(), Buffer.from(r.hex.toString(), 'hex').readUInt32BE(0)]);
          assert.deepEqual(seen, [...model].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)));
          for (const n of NAMES) assert.equal(store.readRaw(n)?.hex?.toString(), model.has(n) ? oid(model.get(n)!).toString('hex') : undefined);
        }
        const tables = readFileSync(join(store.commonDir, 'reftable', 'tables.list'), 'latin1').split('\n').filter(Boolean);
        if (!compact) assert.equal(tables.length, tablesWritten, 'one table per committed transaction');
        // no table is left behind that the list does not name, nor a lock
        assert.deepEqual(readdirSync(join(store.commonDir, 'reftable')).filter((f) => f !== 'tables.list').sort(), [...tables].sort());
      } finally { store.close(); }
    },
  ), { numRuns: 60, seed: 20261202 });
});

test('a snapshot keeps reading the tables it opened while the stack is compacted underneath', async () => {
  const store = freshStore({ autoCompaction: false });
  for (let i = 1; i <= 6; i++) {
    const tx = store.transaction({});
    await tx.prepare([{ name: `refs/heads/b${i}`, change: { kind: 'update', new: oid(i) }, expected: { kind: 'any' }, message: 'm' }]);
    await tx.commit();
  }
  const snap = store.snapshot();
  assert.equal([...snap.iterate()].length, 6);
  const { autoCompact } = await import('../src/repo/refs/reftable/compact.js');
  assert.ok(await autoCompact(store, true));
  const tx = store.transaction({});
  await tx.prepare([{ name: 'refs/heads/b1', change: { kind: 'delete' }, expected: { kind: 'any' }, message: 'm' }]);
  await tx.commit();
  // the old tables are unlinked; the snapshot still reads them
  assert.equal([...snap.iterate()].length, 6);
  assert.equal([...store.iterate()].length, 5);
  snap.close();
  store.close();
});

/** Every way of reading a table: open, every ref, seeks, every log. */
function readAll(path: string, hashLen: number): void {
  const tab = Table.open(path, 'm.ref', hashLen);
  try {
    const it = tab.refs();
    let n = 0;
    while (it.next()) assert.ok(++n < 100000, 'no endless iteration');
    for (const k of ['refs/heads/m', 'refs/tags/', 'HEAD', 'zzz']) { const s = tab.refs(Buffer.from(k)); let m = 0; while (s.next()) assert.ok(++m < 100000); }
    const li = tab.logs();
    let l = 0;
    while (li.next()) assert.ok(++l < 100000);
  } finally { tab.unpin(); }
}

test('damaged tables: truncated, bad restart offsets, bogus block types, oversized lengths give a clear error, never a crash or a hang', () => {
  const refs: RefRecord[] = Array.from({ length: 80 }, (_, i) => ({ name: Buffer.from(`refs/heads/m${String(i).padStart(3, '0')}`), updateIndex: 1, type: RefValue.Val1, value: oid(i) }));
  const logs: LogRecord[] = refs.slice(0, 20).map((r, i) => ({ name: r.name, updateIndex: 1, type: LogValue.Update, old: oid(0), new: oid(i), who: Buffer.from('a'), email: Buffer.from('b'), time: 1, tz: 0, message: Buffer.from('m\n') }));
  const good = writeTable(refs, logs, 1, 1, 20, { blockSize: 256, restartInterval: 4 });
  readAll(writeFile(good), 20);
  const mutants: Array<[string, Buffer, boolean?]> = [];
  for (const cut of [1, 10, 24, 30, 100, 256, good.length - 69, good.length - 1]) mutants.push([`truncated to ${cut}`, good.subarray(0, cut), true]);
  const at = (i: number, v: number) => { const b = Buffer.from(good); b[i] = v; return b; };
  // the first block: its type, its length, its restart table (the footer's CRC covers only the footer)
  mutants.push(['bogus first block type', at(24, 0x7a), true]);
  mutants.push(['oversized first block length', at(25, 0xff), true]);
  const blockLen = good.readUIntBE(25, 3);
  mutants.push(['restart count zero', (() => { const b = Buffer.from(good); b.writeUInt16BE(0, blockLen - 2); return b; })()]);
  mutants.push(['restart count huge', (() => { const b = Buffer.from(good); b.writeUInt16BE(0xffff, blockLen - 2); return b; })()]);
  for (const off of [0, 3, 6]) mutants.push([`bad restart offset ${off}`, (() => { const b = Buffer.from(good); b.writeUIntBE(0xfffff0, blockLen - 2 - 3 - off, 3); return b; })()]);
  mutants.push(['bogus second block type', at(256, 0x00), true]);
  mutants.push(['oversized second block length', (() => { const b = Buffer.from(good); b.writeUIntBE(0xffffff, 257, 3); return b; })()]);
  // every byte of the first two blocks flipped in turn
  for (let i = 24; i < 512 && i < good.length - 68; i += 3) mutants.push([`byte ${i} flipped`, at(i, good[i]! ^ 0xff)]);
  // the log section's bytes
  const footer = good.subarray(good.length - 68);
  const logPos = footer.readUInt32BE(24 + 24 + 4);
  for (let i = logPos; i < logPos + 40; i += 5) mutants.push([`log byte ${i} flipped`, at(i, good[i]! ^ 0x55)]);
  mutants.push(['footer crc', at(good.length - 1, good[good.length - 1]! ^ 1), true]);
  let errors = 0;
  for (const [what, bytes, mustFail] of mutants) {
    const p = writeFile(bytes);
    try {
      readAll(p, 20);
      // a flipped byte inside a name or an id is another valid table
      assert.ok(!mustFail, `${what}: read as a valid table`);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      assert.ok(e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT', `${what}: ${(e as Error).stack}`);
      assert.match(e.message, /^corrupt reftable file: /, what);
      errors++;
    }
  }
  assert.ok(errors >= mutants.filter((m) => m[2]).length, `${errors} of ${mutants.length} mutants detected`);
});

test('a tables.list naming a table that is missing (and stays missing) is an error, not a loop', () => {
  const gd = join(t.dir, `repo-${seq++}`);
  mkdirSync(join(gd, 'reftable'), { recursive: true });
  writeFileSync(join(gd, 'reftable', 'tables.list'), '0x000000000001-0x000000000001-deadbeef.ref\n');
  const s = new Stack(join(gd, 'reftable'), 20);
  assert.throws(() => s.view(), (e: unknown) => e instanceof GitwireError && e.code === 'GW_REFS_CORRUPT' && /missing/.test(e.message));
  writeFileSync(join(gd, 'reftable', 'tables.list'), '../../etc/passwd\n');
  assert.throws(() => s.view(), /bad table name/);
});
