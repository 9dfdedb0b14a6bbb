/**
 * The reftable backend: refs and reflogs read from `reftable/` (a stack
 * of tables, `stack.ts`), written one table per transaction
 * (`transaction.ts`). `ReftableRefStore` reads live (each call sees the
 * stack as `tables.list` says it is now, with the open tables reused);
 * its `snapshot()` pins one view of the stack for a whole request.
 *
 * Records are handed over as `Ref`s over a buffer of `<hex> SP <name>`
 * filled from the table's binary ids; a scan reuses one record and one
 * buffer, so nothing is allocated per ref, and it holds one block per
 * table at a time: a million refs are streamed in bounded memory.
 */
import { join, resolve } from 'node:path';
import type { Config } from '../../config.js';
import type { Slicer } from '../../../util/budget.js';
import { decodeName, encodeName } from '../../../util/byte-name.js';
import type { ReflogEntry } from '../../reflog.js';
import { Peel, Ref, reducePrefixes, type HeadState, type RawRef } from '../ref.js';
import type { PointReader, RefFormat, RefStore } from '../ref-store.js';
import type { RefUpdate, TransactionOptions } from '../transaction.js';
import { LogValue, RefValue, be16, cursor, getVarint } from './basics.js';
import type { BlockIter } from './block.js';
import type { TableIter } from './table.js';
import { Stack, type StackView } from './stack.js';
import { ReftableTransaction, writeOptionsOf, type WriteOptions } from './transaction.js';

const HEXCH = Buffer.from('0123456789abcdef');
/** each byte's two hex digits */
const HEX_HI = new Uint8Array(256), HEX_LO = new Uint8Array(256);
for (let c = 0; c < 256; c++) { HEX_HI[c] = HEXCH[c >>> 4]!; HEX_LO[c] = HEXCH[c & 15]!; }

/** Write `n` bytes of src[at..] as hex into dst[to..]. */
export function hexInto(dst: Buffer, to: number, src: Buffer, at: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const c = src[at + i]!;
    dst[to + 2 * i] = HEX_HI[c]!;
    dst[to + 2 * i + 1] = HEX_LO[c]!;
  }
}

/** scratch memory a scan asks the writer for: one `<hex> SP <name>` line (longer names use a buffer of the scan's own) */
const SCAN_LINE = 64 + 1 + 1024;

function hexOf(src: Buffer, at: number, n: number): Buffer {
  const b = Buffer.allocUnsafe(2 * n);
  hexInto(b, 0, src, at, n);
  return b;
}

const SYMREF_LOOP = Symbol('symref loop');
const NUL = Buffer.from([0]);

/** Which refs a scan of `prefix` may see: those under refs/ (as the files backend lists them). */
function scanPrefix(p: string): string | undefined {
  if (p.startsWith('refs/')) return p;
  return 'refs/'.startsWith(p) ? 'refs/' : undefined;
}

function tzString(min: number): string {
  const sign = min < 0 ? '-' : '+';
  const a = Math.abs(min);
  return `${sign}${String(Math.floor(a / 100)).padStart(2, '0')}${String(a % 100).padStart(2, '0')}`;
}

/**
 * Refs a linked worktree keeps in a stack of its own
 * (`$GIT_DIR/worktrees/<id>/reftable`), as git's parse_worktree_ref()
 * sorts them: HEAD and the other pseudo-refs (no `refs/` prefix),
 * `refs/worktree/`, `refs/bisect/`, `refs/rewritten/`.
 */
export function isPerWorktreeRef(name: string): boolean {
  return !name.startsWith('refs/') || name.startsWith('refs/worktree/') || name.startsWith('refs/bisect/') || name.startsWith('refs/rewritten/');
}

export class ReftableRefStore implements RefStore {
  readonly format: RefFormat = 'reftable';
  readonly hexLen: number;
  readonly stack: Stack;
  /** a linked worktree's own stack (its HEAD and other per-worktree refs), when gitDir is one */
  readonly worktreeStack: Stack | undefined;
  readonly writeOptions: WriteOptions;

  constructor(readonly gitDir: string, readonly commonDir: string, readonly hashLen: number, config: Config | WriteOptions, stack?: Stack, worktreeStack?: Stack) {
    this.hexLen = hashLen * 2;
    this.stack = stack ?? new Stack(join(commonDir, 'reftable'), hashLen);
    this.worktreeStack = worktreeStack ?? (resolve(gitDir) !== resolve(commonDir) ? new Stack(join(gitDir, 'reftable'), hashLen) : undefined);
    this.writeOptions = 'blockSize' in config ? config : writeOptionsOf(config);
  }

  /** The view a read uses, pinned (unpin when done). */
  protected view(): StackView { return this.stack.view(); }

  /**
   * The winning record for `name`, or undefined (absent or deleted). A
   * per-worktree name of a linked worktree is read from the worktree's own
   * stack, as it is now (not pinned with the request's view).
   */
  private lookup<T>(v: StackView, name: string, f: (it: BlockIter) => T): T | undefined {
    if (this.worktreeStack && isPerWorktreeRef(name)) {
      const w = this.worktreeStack.view();
      try {
        const it = w.findRef(encodeName(name));
        return it && it.vt !== RefValue.Deletion ? f(it) : undefined;
      } finally { w.unpin(); }
    }
    const it = v.findRef(encodeName(name));
    return it && it.vt !== RefValue.Deletion ? f(it) : undefined;
  }

  private raw(it: BlockIter): RawRef | undefined {
    const b = it.block.buf;
    switch (it.vt) {
      case RefValue.Val1: case RefValue.Val2: return { hex: hexOf(b, it.valAt, this.hashLen) };
      case RefValue.Symref: return { symref: decodeName(b, it.symAt, it.symAt + it.symLen) };
      default: return undefined;
    }
  }

  /** readRaw against a given view (transactions: the stack under the lock). */
  readRawIn(v: StackView, name: string): RawRef | undefined {
    return this.lookup(v, name, (it) => this.raw(it));
  }

  /** A ref's own value with its id in binary (a copy), against a given view. */
  readOidIn(v: StackView, name: string): { oid?: Buffer; symref?: string } | undefined {
    return this.lookup(v, name, (it) => {
      const b = it.block.buf;
      switch (it.vt) {
        case RefValue.Val1: case RefValue.Val2: {
          const o = Buffer.allocUnsafe(this.hashLen);
          for (let i = 0; i < o.length; i++) o[i] = b[it.valAt + i]!;
          return { oid: o };
        }
        case RefValue.Symref: return { symref: decodeName(b, it.symAt, it.symAt + it.symLen) };
        default: return undefined;
      }
    });
  }

  /** The first ref under `prefix` not in `except`, or undefined. */
  firstUnder(v: StackView, prefix: string, except: Set<string>): string | undefined {
    const key = encodeName(prefix);
    // no table holds a name under it (a new ref's usual case): one seek per table, no merge
    if (!v.anyRefUnder(key)) return undefined;
    const m = v.refs(key);
    for (let t = m.next(); t; t = m.next()) {
      const it = t.it!;
      if (!it.keyStartsWith(key)) return undefined;
      const n = decodeName(it.key, 0, it.keyLen);
      if (!except.has(n)) return n;
    }
    return undefined;
  }

  reflogExistsIn(v: StackView, name: string): boolean {
    // no table has a record of it (a push's new refs): one seek per table, no merge
    if (!v.anyLogUnder(Buffer.concat([encodeName(name), NUL]))) return false;
    for (const e of this.logRecords(v, name)) { void e; return true; }
    return false;
  }

  /** The update indexes of `name`'s log records (what deleting its reflog puts tombstones on). */
  logIndexesIn(v: StackView, name: string): number[] {
    const key = Buffer.concat([encodeName(name), NUL]);
    const m = v.logs(key);
    const out: number[] = [];
    for (let t = m.next(); t; t = m.next()) {
      const it = t.it!;
      if (it.keyLen !== key.length + 8 || !it.keyStartsWith(key)) break;
      out.push((0xffffffff - it.key.readUInt32BE(key.length)) * 0x100000000 + (0xffffffff - it.key.readUInt32BE(key.length + 4)));
    }
    return out;
  }

  readRaw(name: string): RawRef | undefined {
    const v = this.view();
    try { return this.lookup(v, name, (it) => this.raw(it)); } finally { v.unpin(); }
  }

  resolve(name: string): { hex?: Buffer; target: string } | undefined {
    const v = this.view();
    try {
      const r = this.resolveIn(v, name, 0);
      return r === SYMREF_LOOP ? undefined : r;
    } finally { v.unpin(); }
  }

  private resolveIn(v: StackView, name: string, depth: number): { hex?: Buffer; target: string } | undefined | typeof SYMREF_LOOP {
    if (depth > 5) return SYMREF_LOOP;
    const r = this.lookup(v, name, (it) => this.raw(it));
    if (!r) return undefined;
    if (r.symref) {
      const t = this.resolveIn(v, r.symref, depth + 1);
      if (t === SYMREF_LOOP) return t;
      return t ? t : { target: r.symref };
    }
    return { hex: r.hex, target: name };
  }

  head(): HeadState {
    const r = this.readRaw('HEAD');
    if (!r) return {};
    if (r.symref) return { symref: r.symref, hex: this.resolve(r.symref)?.hex };
    return { hex: r.hex };
  }

  knownPeeled(name: string): Buffer | 'none' | undefined {
    const v = this.view();
    try {
      let n = name;
      for (let depth = 0; depth <= 5; depth++) {
        const r = this.lookup(v, n, (it) => (it.vt === RefValue.Symref ? { symref: decodeName(it.block.buf, it.symAt, it.symAt + it.symLen) } : it.vt === RefValue.Val2 ? { peeled: hexOf(it.block.buf, it.valAt + this.hashLen, this.hashLen) } : {}));
        if (!r) return undefined;
        if ('symref' in r && r.symref) { n = r.symref; continue; }
        return 'peeled' in r ? r.peeled : undefined;
      }
      return undefined;
    } finally { v.unpin(); }
  }

  /** Refs under each prefix in name order, each record its own (undefined: a dangling symref, skipped). */
  private *walk(v: StackView, prefixes: readonly string[]): Generator<Ref | undefined> {
    const pfx = reducePrefixes(prefixes.map(scanPrefix).filter((p): p is string => p !== undefined));
    const hexLen = this.hexLen, h = this.hashLen;
    for (const p of pfx) {
      const m = v.refs(p);
      for (let t = m.next(); t; t = m.next()) {
        const it = t.it!;
        if (!it.keyStartsWith(p)) { t.checkPast(); break; }
        const need = hexLen + 1 + it.keyLen;
        const buf = Buffer.allocUnsafe(need);
        const r = new Ref(buf, 0, hexLen + 1, need, hexLen);
        buf[hexLen] = 0x20;
        it.key.copy(buf, hexLen + 1, 0, it.keyLen);
        const b = it.block.buf;
        if (it.vt === RefValue.Symref) {
          const target = decodeName(b, it.symAt, it.symAt + it.symLen);
          const res = this.resolveIn(v, target, 1);
          if (res === SYMREF_LOOP || !res?.hex) { yield undefined; continue; }
          res.hex.copy(buf, 0);
          r.symref = target;
        } else {
          hexInto(buf, 0, b, it.valAt, h);
          r.oidBuf = b;
          r.oidAt = it.valAt;
          if (it.vt === RefValue.Val2) {
            r.peelBuf = hexOf(b, it.valAt + h, h);
            r.peeledAt = 0;
            r.peel = Peel.Peeled;
          }
        }
        yield r;
      }
    }
  }

  /**
   * Refs under `prefixes` to `cb`, in name order, as one reused record:
   * `<hex> SP <name>` written into one buffer (the writer's scratch
   * memory when it lends some, so that the line leaves with a copy inside
   * one block), the binary id left where the block has it (`Ref.oidAt`).
   * A plain loop, not the generator iterate() uses: a million refs cost
   * a few hundred nanoseconds each, and a generator's resumption is a
   * good part of that.
   */
  async scan(prefixes: string | readonly string[], cb: (r: Ref) => void, pause?: () => Promise<void> | undefined, scratch?: (n: number) => Buffer | undefined): Promise<void> {
    const v = this.view();
    try {
      const pfx = reducePrefixes((typeof prefixes === 'string' ? [prefixes] : prefixes).map(scanPrefix).filter((p): p is string => p !== undefined));
      const hexLen = this.hexLen, h = this.hashLen;
      const lent = scratch?.(SCAN_LINE);
      let own = Buffer.allocUnsafe(hexLen + 1 + 256);
      const peelBuf = Buffer.allocUnsafe(hexLen);
      const rec = new Ref(lent ?? own, 0, hexLen + 1, hexLen + 1, hexLen);
      let since = 0;
      for (const p of pfx) {
        // one table (a compacted stack): its records as they are, tombstones skipped; more: merged
        const single = v.tables.length === 1 ? v.tables[0]!.refs(p) : undefined;
        const merged = single ? undefined : v.refs(p);
        for (;;) {
          // (every record counts, those skipped too: a run of tombstones yields as well)
          if (pause && ++since >= 1024) {
            since = 0;
            const w = pause();
            if (w) await w;
          }
          let it: BlockIter;
          let from: TableIter;
          if (single) {
            if (!single.next()) break;
            it = single.it!;
            from = single;
            if (it.vt === RefValue.Deletion) { if (!it.keyStartsWith(p)) { single.checkPast(); break; } continue; }
          } else {
            const t = merged!.next();
            if (!t) break;
            it = t.it!;
            from = t;
          }
          // past the prefix: the end, once the keys after this one are seen to sort after it
          if (!it.keyStartsWith(p)) { from.checkPast(); break; }
          const keyLen = it.keyLen;
          const need = hexLen + 1 + keyLen;
          let buf: Buffer;
          if (lent && need <= lent.length) { buf = lent; rec.memAt = 0; } else {
            if (own.length < need) own = Buffer.allocUnsafe(need * 2);
            buf = own;
            rec.memAt = -1;
          }
          rec.buf = buf;
          rec.nameEnd = need;
          rec.symref = undefined;
          rec.peel = Peel.Unknown;
          rec.peelBuf = buf;
          rec.peeledAt = -1;
          rec.oidAt = -1;
          buf[hexLen] = 0x20;
          // (names are short: element copies cost less than Buffer.copy's call)
          const key = it.key;
          if (keyLen > 64) key.copy(buf, hexLen + 1, 0, keyLen);
          else for (let i = 0, o = hexLen + 1; i < keyLen; i++) buf[o + i] = key[i]!;
          const b = it.block.buf;
          if (it.vt === RefValue.Symref) {
            const target = decodeName(b, it.symAt, it.symAt + it.symLen);
            const res = this.resolveIn(v, target, 1);
            if (res === SYMREF_LOOP || !res?.hex) continue;
            res.hex.copy(buf, 0);
            rec.symref = target;
          } else {
            const at = it.valAt;
            hexInto(buf, 0, b, at, h);
            rec.oidBuf = b;
            rec.oidAt = at;
            if (it.vt === RefValue.Val2) {
              hexInto(peelBuf, 0, b, at + h, h);
              rec.peelBuf = peelBuf;
              rec.peeledAt = 0;
              rec.peel = Peel.Peeled;
            }
          }
          cb(rec);
        }
      }
    } finally { v.unpin(); }
  }

  *iterate(prefix = 'refs/'): Generator<Ref> {
    const v = this.view();
    try {
      for (const r of this.walk(v, [prefix])) if (r) yield r;
    } finally { v.unpin(); }
  }

  async prepare(slicer: Slicer): Promise<void> { void slicer; }

  /** The reflog of `name`, newest first, as the merged stack has it. */
  private *logRecords(v: StackView, name: string): Generator<ReflogEntry> {
    const n = encodeName(name);
    const key = Buffer.concat([n, NUL]);
    const m = v.logs(key);
    const h = this.hashLen;
    for (let t = m.next(); t; t = m.next()) {
      const it = t.it!;
      if (it.keyLen !== key.length + 8 || !it.keyStartsWith(key)) break;
      if (it.vt !== LogValue.Update) continue;
      const b = it.block.buf;
      let p = it.valAt;
      const old = Buffer.from(b.subarray(p, p + h)); p += h;
      const nw = Buffer.from(b.subarray(p, p + h)); p += h;
      const end = it.block.restartAt;
      const nl = getVarint(b, p, end); p = cursor.pos + nl;
      const el = getVarint(b, p, end); p = cursor.pos + el;
      const time = getVarint(b, p, end); p = cursor.pos;
      let tz = be16(b, p); p += 2;
      if (tz & 0x8000) tz -= 0x10000;
      const ml = getVarint(b, p, end); p = cursor.pos;
      let message = b.toString('utf8', p, p + ml);
      if (message.endsWith('\n')) message = message.slice(0, -1);
      yield { old, new: nw, time, tz: tzString(tz), message };
    }
  }

  readReflog(name: string): ReflogEntry[] {
    const v = this.view();
    try { return [...this.logRecords(v, name)].reverse(); } finally { v.unpin(); }
  }

  reflogExists(name: string): boolean {
    const v = this.view();
    try { return this.reflogExistsIn(v, name); } finally { v.unpin(); }
  }

  transaction(opts: TransactionOptions = {}): RefUpdate {
    return new ReftableTransaction(this.liveStore, opts);
  }

  /** the store that reads live (a snapshot's transactions go there) */
  protected get liveStore(): ReftableRefStore { return this; }

  snapshot(): RefStore { return new ReftableSnapshot(this); }

  /** Point reads from one pinned view (a snapshot's own reads go to its view). */
  pointReader(): PointReader { return new ReftableSnapshot(this.liveStore); }

  get memoryBytes(): number { return 0; }

  close(): void { this.stack.close(); this.worktreeStack?.close(); }
}

/**
 * What a linked worktree's HEAD points to (a ref name) in a reftable
 * repository: the HEAD record of its own stack (its HEAD file only says
 * `ref: refs/heads/.invalid`, for older git); undefined when HEAD is
 * detached or missing.
 */
export function worktreeHeadSymref(worktreeGitDir: string, hashLen: number): string | undefined {
  const st = new Stack(join(worktreeGitDir, 'reftable'), hashLen);
  try {
    const v = st.view();
    try {
      const it = v.findRef(encodeName('HEAD'));
      return it && it.vt === RefValue.Symref ? decodeName(it.block.buf, it.symAt, it.symAt + it.symLen) : undefined;
    } finally { v.unpin(); }
  } finally { st.close(); }
}

/** One request's view: the stack read once, on first use, its tables pinned until close(). */
export class ReftableSnapshot extends ReftableRefStore {
  private pinned?: StackView;
  private closed = false;

  constructor(private readonly live: ReftableRefStore) {
    super(live.gitDir, live.commonDir, live.hashLen, live.writeOptions, live.stack, live.worktreeStack);
  }

  protected override view(): StackView {
    if (this.closed) throw new Error('ref snapshot used after close');
    this.pinned ??= this.live.stack.view();
    return this.pinned.pin();
  }

  override async prepare(slicer: Slicer): Promise<void> { void slicer; if (!this.closed) this.view().unpin(); }

  protected override get liveStore(): ReftableRefStore { return this.live; }

  override snapshot(): RefStore { return this; }

  override close(): void {
    this.closed = true;
    const p = this.pinned;
    this.pinned = undefined;
    p?.unpin();
  }
}
