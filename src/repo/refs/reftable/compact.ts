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
import { LogValue, RefValue } from './basics.js';
import { MergedIter } from './merged.js';
import type { StackView } from './stack.js';
import type { Table } from './table.js';
import type { ReftableRefStore } from './store.js';
import { acquireLock, tableName } from './transaction.js';
import { writeTableTo, type LogRecord, type RefRecord } from './writer.js';

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

/** The refs of `tables` (oldest first) merged: the newest record of each name, one at a time. */
function* mergedRefs(tables: Table[], dropTombstones: boolean): Generator<RefRecord> {
  const h = tables[0]!.hashLen;
  const rm = new MergedIter(tables.map((t) => t.refs()), !dropTombstones);
  for (let ti = rm.next(); ti; ti = rm.next()) {
    const it = ti.it!;
    const b = it.block.buf;
    const r: RefRecord = { name: Buffer.from(it.key.subarray(0, it.keyLen)), updateIndex: ti.table.minUpdate + it.n, type: it.vt as RefValue };
    if (it.vt === RefValue.Val1 || it.vt === RefValue.Val2) r.value = Buffer.from(b.subarray(it.valAt, it.valAt + h));
    if (it.vt === RefValue.Val2) r.peeled = Buffer.from(b.subarray(it.valAt + h, it.valAt + 2 * h));
    if (it.vt === RefValue.Symref) r.target = Buffer.from(b.subarray(it.symAt, it.symAt + it.symLen));
    yield r;
  }
}

/** The log records of `tables` merged (a tombstone hides what it deletes), their values copied as they are. */
function* mergedLogs(tables: Table[], dropTombstones: boolean): Generator<LogRecord> {
  const lm = new MergedIter(tables.map((t) => t.logs()), !dropTombstones);
  for (let ti = lm.next(); ti; ti = lm.next()) {
    const it = ti.it!;
    const k = it.key;
    const nameLen = it.keyLen - 9;
    const hi = 0xffffffff - k.readUInt32BE(nameLen + 1), lo = 0xffffffff - k.readUInt32BE(nameLen + 5);
    yield {
      name: Buffer.from(k.subarray(0, nameLen)), updateIndex: hi * 0x100000000 + lo, type: it.vt as LogValue,
      raw: it.vt === LogValue.Update ? Buffer.from(it.block.buf.subarray(it.valAt, it.end)) : undefined,
    };
  }
}

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
      writeTableTo(out.sink, mergedRefs(part, drop), mergedLogs(part, drop), min, max, store.hashLen, opts);
      out.flush();
      fsyncSync(tfd);
    } finally { closeSync(tfd); }
    renameSync(tmp, join(stack.dir, name));
    tmp = undefined;
    const names = tables.map((t) => t.name);
    names.splice(seg.start, seg.end - seg.start, name);
    writeSync(fd, `${names.join('\n')}\n`);
    fsyncSync(fd);
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
