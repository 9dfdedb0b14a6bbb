/**
 * Geometric auto-compaction (git's reftable_stack_auto_compact): after a
 * table is added, the newest tables that break the geometric sequence of
 * sizes (each table at least `factor` times the next newer one) are
 * merged into one. The merge keeps the newest record of each key; the
 * tombstones of deleted refs and logs are dropped when the segment
 * reaches the bottom of the stack (nothing below is left to hide).
 *
 * It runs under `tables.list.lock` and takes each merged table's
 * `<table>.lock` as git's compaction does, so a git compacting at the same
 * time skips those tables; the old tables are unlinked after the new list
 * is in place (a reader holding them open reads on).
 */
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { LogValue, putVarint, varintLen } from './basics.js';
import { MergedIter } from './merged.js';
import type { StackView } from './stack.js';
import type { Table, TableIter } from './table.js';
import type { ReftableRefStore } from './store.js';
import { acquireLock, tableName } from './transaction.js';
import { writeTableWith, type Encoder } from './writer.js';

export interface Segment { start: number; end: number }

/** suggest_compaction_segment(): the tables [start, end) to merge; empty when the sizes are geometric. */
export function suggestSegment(sizes: number[], factor: number): Segment {
  const seg = { start: 0, end: 0 };
  const n = sizes.length;
  if (n <= 1) return seg;
  const f = factor || 2;
  let i = n - 1;
  let bytes = 0;
  for (; i > 0; i--) {
    if (sizes[i - 1]! < sizes[i]! * f) { seg.end = i + 1; bytes = sizes[i]!; break; }
  }
  for (; i > 0; i--) {
    const curr = bytes;
    bytes += sizes[i - 1]!;
    if (sizes[i - 1]! < curr * f) seg.start = i - 1;
  }
  return seg;
}

/** The size git weighs a table by: the bytes before its footer, less the header but one byte. */
function weight(t: Table): number { return t.size - (t.headerSize - 1); }

/** The winning records of `tables` (oldest first) merged, newest first per key, one at a time, where they lie in their blocks. */
function* merged(its: TableIter[], dropTombstones: boolean): Generator<TableIter> {
  const m = new MergedIter(its, !dropTombstones);
  for (let ti = m.next(); ti; ti = m.next()) yield ti;
}

/** A merged ref record written as it is but for its update index, which counts from the new table's minimum. */
function refEncoder(min: number): Encoder<TableIter> {
  return {
    key: (ti) => ti.it!.key,
    keyLen: (ti) => ti.it!.keyLen,
    extra: (ti) => ti.it!.vt,
    valueLen: (ti) => { const it = ti.it!; return varintLen(ti.table.minUpdate + it.n - min) + it.end - it.valAt; },
    value: (ti, buf, at) => {
      const it = ti.it!;
      const p = putVarint(buf, at, ti.table.minUpdate + it.n - min);
      it.block.buf.copy(buf, p, it.valAt, it.end);
    },
  };
}

/** A merged log record as it is (its key holds its update index). */
const logEncoder: Encoder<TableIter> = {
  key: (ti) => ti.it!.key,
  keyLen: (ti) => ti.it!.keyLen,
  extra: (ti) => ti.it!.vt,
  valueLen: (ti) => { const it = ti.it!; return it.vt === LogValue.Update ? it.end - it.valAt : 0; },
  value: (ti, buf, at) => { const it = ti.it!; if (it.vt === LogValue.Update) it.block.buf.copy(buf, at, it.valAt, it.end); },
};

/** Bytes to a file descriptor in writes of about 1 MiB. */
function fileSink(fd: number): { sink: (b: Buffer) => void; flush: () => void } {
  let parts: Buffer[] = [];
  let n = 0;
  const flush = () => { if (n) { writeSync(fd, Buffer.concat(parts, n)); parts = []; n = 0; } };
  return { sink: (b) => { parts.push(b); n += b.length; if (n >= 1 << 20) flush(); }, flush };
}

/**
 * Compact the segment the sizes call for, if any. Skipped (false) when
 * another process holds the list or one of the tables.
 */
export async function autoCompact(store: ReftableRefStore, all = false): Promise<boolean> {
  const stack = store.stack;
  const opts = store.writeOptions;
  const fd = await acquireLock(stack.listPath, 0);
  if (fd === undefined) return false;
  const tableLocks: string[] = [];
  let view: StackView | undefined;
  let tmp: string | undefined;
  let held = true;
  try {
    view = stack.view();
    const tables = view.tables;
    const seg = all ? { start: 0, end: tables.length } : suggestSegment(tables.map(weight), opts.geometricFactor);
    if (seg.end - seg.start < 2) return false;
    for (let i = seg.start; i < seg.end; i++) {
      const lock = join(stack.dir, `${tables[i]!.name}.lock`);
      try { closeSync(openSync(lock, 'wx', 0o666)); } catch { return false; }
      tableLocks.push(lock);
    }
    const part = tables.slice(seg.start, seg.end);
    const min = part[0]!.minUpdate, max = part[part.length - 1]!.maxUpdate;
    const name = tableName(min, max);
    tmp = join(stack.dir, `tmp_${randomBytes(6).toString('hex')}`);
    const tfd = openSync(tmp, 'wx', 0o666);
    try {
      // streamed: merged record by record, written block by block (bounded memory for a million refs)
      const out = fileSink(tfd);
      const drop = seg.start === 0;
      writeTableWith(out.sink, merged(part.map((t) => t.refs()), drop), refEncoder(min), merged(part.map((t) => t.logs()), drop), logEncoder, min, max, store.hashLen, opts);
      out.flush();
      if (opts.fsync) fsyncSync(tfd);
    } finally { closeSync(tfd); }
    renameSync(tmp, join(stack.dir, name));
    tmp = undefined;
    const names = tables.map((t) => t.name);
    names.splice(seg.start, seg.end - seg.start, name);
    writeSync(fd, `${names.join('\n')}\n`);
    if (opts.fsync) fsyncSync(fd);
    closeSync(fd);
    held = false;
    renameSync(`${stack.listPath}.lock`, stack.listPath);
    for (const t of part) { try { unlinkSync(join(stack.dir, t.name)); } catch { /* gone */ } }
    return true;
  } finally {
    if (tmp) { try { unlinkSync(tmp); } catch { /* gone */ } }
    for (const l of tableLocks) { try { unlinkSync(l); } catch { /* gone */ } }
    if (held) {
      // (only a lock still ours: once renamed, a lock by that name is another writer's)
      try { closeSync(fd); } catch { /* closed */ }
      try { unlinkSync(`${stack.listPath}.lock`); } catch { /* gone */ }
    }
    view?.unpin();
  }
}
