/**
 * A reftable transaction (git's refs/reftable-backend.c over
 * reftable/stack.c): prepare takes `tables.list.lock` (O_EXCL, retried
 * with backoff for reftable.lockTimeout, 100 ms by default), reads the
 * stack under the lock and verifies every edit's old value against it;
 * commit writes the edits and their reflog records into one new table,
 * renames it into place and publishes it by renaming the new list over
 * `tables.list`. Either every edit of the table is visible or none is.
 * Afterwards the stack is compacted geometrically (compact.ts) unless
 * reftable.autoCompaction is off.
 */
import { closeSync, openSync, renameSync, unlinkSync, writeSync, fsyncSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import { shouldAutocreateReflog } from '../../reflog.js';
import { checkRefnameFormat } from '../../refname.js';
import { encodeName } from '../../../util/byte-name.js';
import { Slicer } from '../../../util/budget.js';
import { TxError, type RefEdit, type RefUpdate, type TransactionOptions } from '../transaction.js';
import { hookGate, hookInput, oneUpdatePerRef, runHook } from '../hook.js';
import { DEFAULT_BLOCK_SIZE, DEFAULT_RESTART_INTERVAL, LogValue, RefValue } from './basics.js';
import type { ReftableRefStore } from './store.js';
import type { StackView } from './stack.js';
import { writeTable, type LogRecord, type RefRecord } from './writer.js';
import { autoCompact } from './compact.js';
import { fsyncRefs } from '../fsync.js';

export interface WriteOptions {
  blockSize: number;
  restartInterval: number;
  /** reftable.lockTimeout in ms; -1: wait for ever */
  lockTimeoutMs: number;
  geometricFactor: number;
  autoCompaction: boolean;
  /** fsync tables and tables.list (core.fsync's `reference`; off by default, as in git) */
  fsync?: boolean;
}

/** reftable.* configuration, with git's defaults. */
export function writeOptionsOf(config: Config | undefined): WriteOptions {
  const int = (k: string, d: number) => (config ? config.getInt(k, d) : d);
  const blockSize = int('reftable.blocksize', 0) || DEFAULT_BLOCK_SIZE;
  return {
    blockSize: Math.min(blockSize, 16777215),
    restartInterval: int('reftable.restartinterval', 0) || DEFAULT_RESTART_INTERVAL,
    lockTimeoutMs: int('reftable.locktimeout', 100),
    geometricFactor: int('reftable.geometricfactor', 0) || 2,
    autoCompaction: config ? config.getBool('reftable.autocompaction', true) : true,
    fsync: fsyncRefs(config),
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** flock_acquire(): `<path>.lock` created exclusively, retried with backoff until the timeout. */
export async function acquireLock(path: string, timeoutMs: number): Promise<number | undefined> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + Math.max(0, timeoutMs);
  let wait = 1;
  for (;;) {
    try { return openSync(lock, 'wx', 0o666); } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      if (timeoutMs >= 0 && Date.now() >= deadline) return undefined;
    }
    await sleep(timeoutMs < 0 ? wait : Math.min(wait + Math.random() * wait, Math.max(1, deadline - Date.now())));
    wait = Math.min(wait * 2, 100);
  }
}

/** git's table names: `0x<min>-0x<max>-<random>.ref` */
export function tableName(min: number, max: number): string {
  const hex = (n: number) => `0x${n.toString(16).padStart(12, '0')}`;
  return `${hex(min)}-${hex(max)}-${randomBytes(4).toString('hex')}.ref`;
}

interface Prepared {
  edit: RefEdit;
  index: number;
  /** the ref written (symrefs followed) */
  target: string;
  /** the value found under the lock (binary) */
  old?: Buffer;
  /** names that get a log record only: the symrefs followed, HEAD when it points at the target */
  logOnly: string[];
  /** the new object's type, when prepare looked it up (commit peels only a tag) */
  newType?: string;
}

/** Split `Name <email> <time> <tz>` (the ident of TransactionOptions). */
function splitIdent(ident: string): { who: Buffer; email: Buffer; time: number; tz: number } {
  const lt = ident.lastIndexOf('<'), gt = ident.lastIndexOf('>');
  const who = ident.slice(0, lt).trim();
  const email = ident.slice(lt + 1, gt);
  const [t, z] = ident.slice(gt + 1).trim().split(/\s+/);
  const tzs = z ?? '+0000';
  const sign = tzs.startsWith('-') ? -1 : 1;
  return { who: Buffer.from(who), email: Buffer.from(email), time: Number(t ?? 0), tz: sign * Number(tzs.replace(/^[+-]/, '')) };
}

export class ReftableTransaction implements RefUpdate {
  readonly rejected = new Map<number, TxError>();
  private state: 'open' | 'prepared' | 'closed' = 'open';
  private lockFd: number | undefined;
  private view?: StackView;
  private prepared: Prepared[] = [];
  private readonly zero: string;
  private edits: readonly RefEdit[] = [];
  private sortedCreating?: string[];

  constructor(readonly refs: ReftableRefStore, readonly opts: TransactionOptions = {}) {
    this.zero = '0'.repeat(refs.hexLen);
  }

  private get listPath(): string { return this.refs.stack.listPath; }

  private read(v: StackView, name: string): { oid?: Buffer; symref?: string } {
    return this.refs.readOidIn(v, name) ?? {};
  }

  async prepare(edits: RefEdit[]): Promise<void> {
    if (this.state !== 'open') throw new Error('transaction already prepared');
    oneUpdatePerRef(edits, () => this.abort());
    this.edits = edits;
    await hookGate(this.opts, 'preparing', () => hookInput(edits, this.zero), () => this.abort());
    let fd: number | undefined;
    try { fd = await acquireLock(this.listPath, this.refs.writeOptions.lockTimeoutMs); } catch (e) {
      this.abort();
      throw new TxError('generic', `cannot lock references: ${(e as Error).message}`);
    }
    if (fd === undefined) { this.abort(); throw new TxError('generic', 'cannot lock references'); }
    this.lockFd = fd;
    // the stack as it is under the lock: nobody else can add a table now
    const v = this.view = this.refs.stack.view();
    const headTarget = this.read(v, 'HEAD').symref;
    const slicer = new Slicer();
    const creating = new Set(edits.filter((e) => e.change.kind === 'update').map((e) => e.name));
    const deleting = new Set(edits.filter((e) => e.change.kind === 'delete').map((e) => e.name));
    for (let i = 0; i < edits.length; i++) {
      const tick = slicer.tick();
      if (tick) await tick;
      try {
        this.prepareOne(v, edits[i]!, i, headTarget, creating, deleting);
      } catch (e) {
        if (e instanceof TxError && e.kind !== 'generic' && this.opts.allowFailure) {
          this.rejected.set(i, e);
          this.prepared = this.prepared.filter((p) => p.index !== i);
          continue;
        }
        this.abort();
        throw e;
      }
    }
    await hookGate(this.opts, 'prepared', () => this.hookLines(), () => this.abort());
    this.state = 'prepared';
  }

  private hookLines(): string {
    const targets = new Map(this.prepared.map((p) => [p.index, p.target]));
    return hookInput(this.edits, this.zero, (i) => targets.get(i));
  }

  /** Abort after a successful prepare: the hook hears of it. */
  async abortPrepared(): Promise<void> {
    const was = this.state;
    const lines = this.opts.hook ? this.hookLines() : '';
    this.abort();
    if (was === 'prepared') await runHook(this.opts, 'aborted', lines);
  }

  private prepareOne(v: StackView, edit: RefEdit, index: number, headTarget: string | undefined, creating: Set<string>, deleting: Set<string>): void {
    const logOnly: string[] = [];
    let name = edit.name;
    let cur = this.read(v, name);
    for (let depth = 0; cur.symref && depth < 5; depth++) {
      logOnly.push(name);
      name = cur.symref;
      cur = this.read(v, name);
    }
    if (cur.symref) throw new TxError('generic', `unable to resolve reference '${edit.name}'`);
    if (!checkRefnameFormat(name) && name !== 'HEAD') throw new TxError('generic', `refusing to update ref with bad name '${name}'`);
    if (headTarget && name === headTarget && edit.name !== 'HEAD' && !logOnly.includes('HEAD')) logOnly.push('HEAD');
    const orig = edit.name;
    const ex = edit.expected;
    if (ex.kind === 'must-not-exist' && cur.oid) throw new TxError('create-exists', `cannot lock ref '${orig}': reference already exists`);
    if (ex.kind === 'must-exist-and-match') {
      const want = ex.oid.toString('hex');
      if (!cur.oid) throw new TxError('nonexistent-ref', `cannot lock ref '${orig}': reference is missing but expected ${want}`);
      if (!cur.oid.equals(ex.oid)) throw new TxError('incorrect-old-value', `cannot lock ref '${orig}': is at ${cur.oid.toString('hex')} but expected ${want}`);
    }
    let newType: string | undefined;
    if (edit.change.kind === 'update') {
      if (!cur.oid) {
        const conflict = this.conflict(v, name, creating, deleting);
        if (conflict) throw new TxError('name-conflict', `'${conflict}' exists; cannot create '${name}'`);
      }
      if (this.opts.typeOf) {
        newType = this.opts.typeOf(edit.change.new);
        if (!newType) throw new TxError('invalid-new-value', `trying to write ref '${name}' with nonexistent object ${edit.change.new.toString('hex')}`);
        if (newType !== 'commit' && name.startsWith('refs/heads/')) throw new TxError('invalid-new-value', `trying to write non-commit object ${edit.change.new.toString('hex')} to branch '${name}'`);
      }
    }
    this.prepared.push({ edit, index, target: name, old: cur.oid, logOnly, newType });
  }

  /** refs_verify_refname_available(): a ref above `name` (a directory prefix of it), or one below `name/`. */
  private conflict(v: StackView, name: string, creating: Set<string>, deleting: Set<string>): string | undefined {
    for (let at = name.indexOf('/', name.indexOf('/') + 1); at > 0; at = name.indexOf('/', at + 1)) {
      const anc = name.slice(0, at);
      if (creating.has(anc) && anc !== name) return anc;
      if (!deleting.has(anc) && this.exists(v, anc)) return anc;
    }
    // a name created below this one: the first sorted name at or after `name/` (a binary search, not a pass per edit)
    const sorted = this.sortedCreating ??= [...creating].sort();
    const key = `${name}/`;
    let lo = 0, hi = sorted.length;
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (sorted[mid]! < key) lo = mid + 1; else hi = mid; }
    if (lo < sorted.length && sorted[lo]!.startsWith(key)) return sorted[lo];
    const below = this.refs.firstUnder(v, `${name}/`, deleting);
    return below;
  }

  /**
   * Does `name` hold a value in the stack under the lock? Remembered: the
   * directories above thousands of new refs (refs/heads, refs/heads/topic)
   * are looked up once each, not once per ref.
   */
  private exists(v: StackView, name: string): boolean {
    let e = this.known.get(name);
    if (e === undefined) { e = this.refs.readRawIn(v, name) !== undefined; this.known.set(name, e); }
    return e;
  }

  private readonly known = new Map<string, boolean>();

  abort(): void {
    if (this.lockFd !== undefined) {
      try { closeSync(this.lockFd); } catch { /* closed */ }
      this.lockFd = undefined;
      try { unlinkSync(`${this.listPath}.lock`); } catch { /* gone */ }
    }
    this.view?.unpin();
    this.view = undefined;
    this.prepared = [];
    this.state = 'closed';
  }

  async commit(): Promise<void> {
    if (this.state !== 'prepared') throw new Error('transaction not prepared');
    const v = this.view!;
    const h = this.refs.hashLen;
    const stack = this.refs.stack;
    let tmp: string | undefined;
    try {
      const ts = v.nextUpdateIndex;
      const refs: RefRecord[] = [];
      const logs: LogRecord[] = [];
      const logsOn = this.opts.reflogs;
      const ident = this.opts.ident ? splitIdent(this.opts.ident) : undefined;
      const shouldLog = (name: string) => {
        if (!logsOn || !ident) return false;
        if (shouldAutocreateReflog(logsOn.mode, logsOn.bare, name)) return true;
        return this.refs.reflogExistsIn(v, name);
      };
      let u = 0;
      const zero = Buffer.alloc(h);
      // one message buffer per distinct message (a push gives every log the same one)
      const messages = new Map<string, Buffer>();
      const messageOf = (msg: string): Buffer => {
        let b = messages.get(msg);
        if (!b) {
          const m = msg.replace(/\s+/g, ' ').trim().slice(0, Math.floor(this.refs.writeOptions.blockSize / 2));
          b = Buffer.from(m ? `${m}\n` : '\n');
          messages.set(msg, b);
        }
        return b;
      };
      const addLog = (name: Buffer, old: Buffer, nw: Buffer, msg: string) => {
        logs.push({
          name, updateIndex: ts + u, type: LogValue.Update, old, new: nw,
          who: ident!.who, email: ident!.email, time: ident!.time, tz: ident!.tz, message: messageOf(msg),
        });
      };
      for (const p of this.prepared) {
        u++;
        const old = p.old ?? zero;
        const target = encodeName(p.target);
        if (p.edit.change.kind === 'update') {
          const newOid = p.edit.change.new;
          if (shouldLog(p.target)) addLog(target, old, newOid, p.edit.message);
          for (const n of p.logOnly) if (shouldLog(n)) addLog(encodeName(n), old, newOid, p.edit.message);
          if (p.old?.equals(newOid)) continue;
          const peeled = (p.newType ?? this.opts.typeOf?.(newOid)) === 'tag' ? this.opts.peel?.(newOid) : undefined;
          refs.push(peeled
            ? { name: target, updateIndex: ts, type: RefValue.Val2, value: newOid, peeled }
            : { name: target, updateIndex: ts, type: RefValue.Val1, value: newOid });
        } else {
          refs.push({ name: target, updateIndex: ts, type: RefValue.Deletion });
          // the ref's reflog goes with it: a tombstone for each of its records
          for (const idx of this.refs.logIndexesIn(v, p.target)) logs.push({ name: target, updateIndex: idx, type: LogValue.Deletion });
          for (const n of p.logOnly) if (n === 'HEAD' && shouldLog(n)) addLog(encodeName(n), old, zero, p.edit.message);
        }
      }
      const maxIndex = Math.max(ts, ts + u);
      refs.sort((a, b) => Buffer.compare(a.name, b.name));
      logs.sort((a, b) => Buffer.compare(a.name, b.name) || b.updateIndex - a.updateIndex);
      // a log tombstone and a new record for the same key: the new record stays
      const bytes = writeTable(refs, dedupeLogs(logs), ts, maxIndex, h, this.refs.writeOptions);
      const name = tableName(ts, maxIndex);
      tmp = join(stack.dir, `tmp_${randomBytes(6).toString('hex')}`);
      const fd = openSync(tmp, 'wx', 0o666);
      const sync = this.refs.writeOptions.fsync === true;
      try { writeSync(fd, bytes); if (sync) fsyncSync(fd); } finally { closeSync(fd); }
      renameSync(tmp, join(stack.dir, name));
      tmp = undefined;
      const list = `${v.listText}${v.listText && !v.listText.endsWith('\n') ? '\n' : ''}${name}\n`;
      writeSync(this.lockFd!, list);
      if (sync) fsyncSync(this.lockFd!);
      closeSync(this.lockFd!);
      this.lockFd = undefined;
      renameSync(`${this.listPath}.lock`, this.listPath);
    } catch (e) {
      if (tmp) { try { unlinkSync(tmp); } catch { /* gone */ } }
      this.abort();
      throw e instanceof TxError ? e : new TxError('generic', `unable to update refs: ${(e as Error).message}`);
    }
    this.view?.unpin();
    this.view = undefined;
    this.state = 'closed';
    if (this.refs.writeOptions.autoCompaction && process.env.GIT_TEST_REFTABLE_AUTOCOMPACTION !== 'false') {
      // a compaction that cannot lock (another writer holds the list) is skipped, as git skips it
      try { await autoCompact(this.refs); } catch { /* the table is in; compaction is an optimisation */ }
    }
    // (git compacts inside the commit, before the hook hears of it)
    await runHook(this.opts, 'committed', () => this.hookLines());
  }
}

/** Logs sorted by key with one record per key: the first (a new record sorts before the tombstone of the same key) wins. */
function dedupeLogs(logs: LogRecord[]): LogRecord[] {
  const out: LogRecord[] = [];
  for (const l of logs) {
    const last = out[out.length - 1];
    if (last && last.updateIndex === l.updateIndex && last.name.equals(l.name)) continue;
    out.push(l);
  }
  return out;
}
