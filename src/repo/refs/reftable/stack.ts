/**
 * A reftable stack (git's reftable/stack.c): `tables.list` names the
 * tables, oldest first. A view is one reading of the list with its tables
 * opened by name; when a table has gone (a concurrent compaction renamed
 * the list and unlinked it) the list is read again, and only a list that
 * stays the same while a table it names is missing is an error (git's
 * retry-on-ENOENT rule). Open tables are kept by name between views (a
 * table never changes once written), and a view pins its tables, so a
 * request in flight keeps reading the files it opened.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { corrupt } from './basics.js';
import { GitwireError } from '../../../errors.js';
import { MergedIter } from './merged.js';
import { Table } from './table.js';
import type { BlockIter } from './block.js';

/** Table names as git makes them (`0x…-0x…-xxxxxxxx.ref`/`.log`), or any plain name without a path in it. */
function validTableName(n: string): boolean {
  return n.length > 0 && n.length < 256 && !n.includes('/') && n !== '.' && n !== '..' && !n.includes('\0');
}

export class StackView {
  private pins = 1;
  constructor(readonly tables: Table[], readonly listText: string) {}

  pin(): this { this.pins++; return this; }
  unpin(): void { if (--this.pins === 0) for (const t of this.tables) t.unpin(); }

  /** the update index the next table gets */
  get nextUpdateIndex(): number {
    const last = this.tables[this.tables.length - 1];
    return last ? last.maxUpdate + 1 : 1;
  }

  /** Refs merged newest-first from `key` on (tombstones hide what they delete). */
  refs(key?: Buffer, keepDeletions = false): MergedIter {
    return new MergedIter(this.tables.map((t) => t.refs(key)), keepDeletions);
  }

  /**
   * The winning ref record of exactly `key`, the newest table that has one
   * deciding (a deletion included: the caller sees the tombstone); valid
   * until the next lookup in that table.
   */
  findRef(key: Buffer): BlockIter | undefined {
    for (let i = this.tables.length - 1; i >= 0; i--) {
      const it = this.tables[i]!.findRef(key);
      if (it) return it;
    }
    return undefined;
  }

  /** Does any table hold a ref record (a deletion included) whose name begins with `prefix`? */
  anyRefUnder(prefix: Buffer): boolean {
    for (const t of this.tables) if (t.firstRefAt(prefix)?.keyStartsWith(prefix)) return true;
    return false;
  }

  /** Does any table hold a log record (a deletion included) whose key begins with `prefix`? */
  anyLogUnder(prefix: Buffer): boolean {
    for (const t of this.tables) if (t.firstLogAt(prefix)?.keyStartsWith(prefix)) return true;
    return false;
  }

  logs(key?: Buffer, keepDeletions = false): MergedIter {
    return new MergedIter(this.tables.map((t) => t.logs(key)), keepDeletions);
  }
}

export class Stack {
  private readonly open = new Map<string, Table>();
  private current?: { stamp: string; view: StackView };

  constructor(readonly dir: string, readonly hashLen: number) {}

  get listPath(): string { return join(this.dir, 'tables.list'); }

  private stamp(): string | undefined {
    try {
      const st = statSync(this.listPath, { bigint: true });
      return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    } catch { return undefined; }
  }

  private readList(): string {
    try { return readFileSync(this.listPath, 'latin1'); } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw e;
    }
  }

  /** The stack as it is now, pinned for the caller (unpin it when done). */
  view(): StackView {
    const stamp = this.stamp();
    if (this.current && stamp !== undefined && this.current.stamp === stamp) return this.current.view.pin();
    let lastText: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const text = this.readList();
      const names = text.split('\n').filter((l) => l.length > 0);
      const tables: Table[] = [];
      let missing: string | undefined;
      for (const n of names) {
        if (!validTableName(n)) { for (const t of tables) t.unpin(); throw corrupt(join(this.dir, 'tables.list'), `bad table name '${n}'`); }
        let t = this.open.get(n);
        if (!t) {
          try {
            t = Table.open(join(this.dir, n), n, this.hashLen);
          } catch (e) {
            if ((e as NodeJS.ErrnoException).code === 'ENOENT') { missing = n; break; }
            for (const x of tables) x.unpin();
            // a table that cannot be opened (EACCES, EISDIR, EIO) is storage that cannot be read, said as such
            if (e instanceof Error && !(e instanceof GitwireError)) throw corrupt(join(this.dir, n), `cannot be read: ${e.message}`);
            throw e;
          }
          this.open.set(n, t);
        }
        tables.push(t.pin());
      }
      if (missing === undefined) {
        // no list, and no directory for it: the repository was removed (admin/delete.ts), not emptied
        if (names.length === 0 && !existsSync(this.dir)) throw corrupt(this.listPath, 'the repository was removed while its refs were read');
        const view = new StackView(tables, text);
        this.retire(new Set(names));
        if (stamp !== undefined && this.stamp() === stamp) {
          const old = this.current;
          this.current = { stamp, view: view.pin() };
          old?.view.unpin();
        }
        return view;
      }
      for (const t of tables) t.unpin();
      // the list changed under us (a compaction): read it again; the same list naming a missing table is broken
      if ((lastText === text && attempt > 0) || attempt > 1000) throw corrupt(join(this.dir, missing), 'a table tables.list names is missing');
      lastText = text;
    }
  }

  /** Let go of the kept tables the list no longer names. */
  private retire(keep: Set<string>): void {
    for (const [n, t] of this.open) if (!keep.has(n)) { this.open.delete(n); t.unpin(); }
  }

  close(): void {
    this.current?.view.unpin();
    this.current = undefined;
    this.retire(new Set());
  }
}
