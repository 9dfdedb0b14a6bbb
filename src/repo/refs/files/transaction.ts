/**
 * A ref transaction in two phases, with the lock protocol every git
 * process honours (refs/files-backend.c):
 *
 * prepare: for each edit, create `<ref>.lock` exclusively (retrying for
 *   core.filesRefLockTimeout), read the ref under the lock, verify the
 *   expected old value, write the new value into the lock file; symrefs
 *   are followed (the symref gets a log-only entry), the branch HEAD points
 *   to gets a HEAD log entry; deletions of packed refs take
 *   `packed-refs.lock`. Any failure rolls back every lock.
 * commit: reflogs, rename each lock over its ref, rewrite packed-refs
 *   without the deleted refs, unlink deleted loose refs and their logs.
 *
 * With `allowFailure` (git's REF_TRANSACTION_ALLOW_FAILURE) an edit that
 * fails for a ref-specific reason is rejected alone and the others go on;
 * a generic failure (I/O) fails the whole transaction.
 */
import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmdirSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { FilesRefStore as RefStore } from './store.js';
import { removeEmptyParents } from '../../reflog.js';
import { TxError, type RefEdit, type RefUpdate, type TransactionOptions } from '../transaction.js';
import { HookAbortError, hookGate, hookInput, oneUpdatePerRef, runHook } from '../hook.js';
import { forEachSliced, Slicer } from '../../../util/budget.js';
import { strerror } from '../../../util/strerror.js';
import { decodeName, fsPath } from '../../../util/byte-name.js';

/** `done`: renamed into place or removed at commit (nothing left to unlock) */
interface Lock { path: string; lockPath: string; fd: number | undefined; done?: boolean }

interface Prepared {
  edit: RefEdit;
  index: number;
  /** the ref actually written (after following symrefs) */
  target: string;
  oldHex?: string;
  inPacked: boolean;
  lock: Lock;
  /** log-only entries: symrefs followed, HEAD */
  logOnly: string[];
}

/** names this many levels deep have their directories made and checked off the event loop */
const DEEP = 32;
function isDeep(name: string): boolean {
  let n = 0;
  for (let at = name.indexOf('/'); at >= 0; at = name.indexOf('/', at + 1)) if (++n > DEEP) return true;
  return false;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class RefTransaction implements RefUpdate {
  private locks = new Map<string, Lock>();
  /** names above a ref being created, and whether packed-refs holds them (seen when this transaction began) */
  private readonly packedAncestors = new Map<string, boolean>();
  /** ref locks opened by the edit being prepared, whose descriptors it closes */
  private readonly opened: Lock[] = [];
  private prepared: Prepared[] = [];
  private packedLock: Lock | undefined;
  /** edits rejected in allowFailure mode: index → error */
  readonly rejected = new Map<number, TxError>();
  private state: 'open' | 'prepared' | 'closed' = 'open';
  private readonly zero: string;
  private edits: readonly RefEdit[] = [];
  /** the input of the nested packed-refs transaction's hook calls, when it is committed too */
  private packedInput?: string;

  constructor(readonly refs: RefStore, readonly opts: TransactionOptions = {}) {
    this.zero = '0'.repeat(refs.hexLen);
  }

  private refPath(name: string): string {
    return join(name === 'HEAD' || !name.startsWith('refs/') ? this.refs.gitDir : this.refs.commonDir, name);
  }

  /** hold_lock_file_for_update_timeout(): O_EXCL create, retried with backoff until the timeout. */
  /** a lock path as git's messages show it (receive-pack runs in `<gitdir>/.`) */
  private shown(lockPath: string): string {
    const root = this.opts.displayRoot;
    if (!root) return lockPath;
    for (const d of [this.refs.commonDir, this.refs.gitDir]) {
      if (lockPath.startsWith(`${d}/`)) return `${d}/${root}/${lockPath.slice(d.length + 1)}`;
    }
    return lockPath;
  }

  private async lockFile(path: string, timeoutMs: number, refname?: string): Promise<Lock> {
    const lockPath = `${path}.lock`;
    const deadline = Date.now() + timeoutMs;
    let wait = 1;
    for (;;) {
      try {
        const fd = openSync(fsPath(lockPath), 'wx', 0o666);
        return { path, lockPath, fd };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST' || Date.now() >= deadline) {
          const pre = refname ? `cannot lock ref '${refname}': ` : '';
          const msg = code === 'EEXIST'
            ? `${pre}Unable to create '${this.shown(lockPath)}': File exists.\n\nAnother git process seems to be running in this repository, or the lock file may be stale`
            : `${pre}Unable to create '${this.shown(lockPath)}': ${strerror(e)}`;
          throw new TxError(code === 'EEXIST' ? 'create-exists' : 'generic', msg);
        }
      }
      await sleep(Math.min(wait + Math.random() * wait, Math.max(1, deadline - Date.now())));
      wait = Math.min(wait * 2, 50);
    }
  }

  private async lockRef(name: string, creating: boolean): Promise<Lock> {
    const have = this.locks.get(name);
    if (have) return have;
    const path = this.refPath(name);
    try {
      // a deep name's directories are made on the thread pool: each level's mkdir walks every level
      // above it, so 2,000 levels are millions of lookups the event loop should not wait for
      if (isDeep(name)) {
        await mkdir(fsPath(dirname(path)), { recursive: true });
        await this.refs.learnDirs(path);
      } else {
        mkdirSync(fsPath(dirname(path)), { recursive: true });
      }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'EEXIST') {
        const conflict = this.conflictingRef(name);
        if (conflict) {
          if (!creating) throw new TxError('nonexistent-ref', `unable to resolve reference '${name}'`);
          throw this.conflictError(name, conflict, name);
        }
        throw new TxError('generic', `unable to create lock file ${path}.lock; non-directory in the way`);
      }
      throw new TxError('generic', `unable to create directory for ${path}`);
    }
    const lock = await this.lockFile(path, this.opts.lockTimeoutMs ?? 100, name);
    this.locks.set(name, lock);
    this.opened.push(lock);
    return lock;
  }

  /**
   * refs_verify_refname_available(): a ref that is a directory prefix of
   * `name`, or below `name/`. A ref this transaction deletes still counts,
   * as in git 2.55, which resolves no conflicts inside a transaction
   * (receive-pack deletes in a transaction of its own first).
   */
  private conflictingRef(name: string, dirsExist = false): string | undefined {
    // a loose ref above `name` is a file where one of its directories goes; once
    // the directories exist (the lock's were made) there is none, else the walk
    // stops at the first ancestor that is not a directory: one lstat each
    let looseDone = dirsExist;
    const ancestors: string[] = [];
    for (let at = name.indexOf('/', name.indexOf('/') + 1); at > 0; at = name.indexOf('/', at + 1)) ancestors.push(name.slice(0, at));
    for (const anc of ancestors) {
      if (looseDone) break;
      // (no exception for a missing file: 50,000 of them were 1.3 s)
      const st = lstatSync(fsPath(this.refPath(anc)), { throwIfNoEntry: false });
      if (!st) { looseDone = true; break; }
      if (st.isDirectory()) continue;
      looseDone = true;
      if (this.refs.resolve(anc)?.hex || this.refs.readLoose(anc)) return anc;
    }
    // packed refs above `name`: one lookup each in the packed-refs (not per ancestor re-opened)
    // the ancestors are mostly shared by a push's refs (refs/heads, refs/heads/team): looked up once each
    const unknown = ancestors.filter((a) => !this.packedAncestors.has(a));
    const found = this.refs.packedAmong(unknown);
    for (const a of unknown) this.packedAncestors.set(a, found.has(a));
    for (const anc of ancestors) if (this.packedAncestors.get(anc)) return anc;
    // refs below `name`: loose ones only if it is a directory (no listing of a directory that is not there)
    const dir = lstatSync(fsPath(this.refPath(name)), { throwIfNoEntry: false })?.isDirectory() ?? false;
    if (dir) for (const r of this.refs.iterate(`${name}/`)) return decodeName(r.name);
    return this.refs.firstPackedUnder(`${name}/`);
  }

  /**
   * git's wording for a conflict: one with a loose ref is found while the
   * ref is locked (lock_raw_ref) and says so; one with a packed ref is
   * found by the batch check after it.
   */
  private conflictError(orig: string, conflict: string, name: string): TxError {
    const pre = this.refs.readLoose(conflict) ? `cannot lock ref '${orig}': ` : '';
    return new TxError('name-conflict', `${pre}'${conflict}' exists; cannot create '${name}'`);
  }

  /** Read a ref without following symrefs: loose first, then packed. */
  private readRaw(name: string): { hex?: string; symref?: string; inPacked: boolean } {
    const loose = this.refs.readLoose(name);
    const packed = name.startsWith('refs/') ? this.refs.lookupPacked(name) : undefined;
    if (loose?.symref) return { symref: loose.symref, inPacked: !!packed };
    if (loose?.hex) return { hex: loose.hex.toString('latin1'), inPacked: !!packed };
    const st = statSync(fsPath(this.refPath(name)), { throwIfNoEntry: false });
    if (st && !st.isDirectory()) {
      // a loose file that is not a ref (junk): treated as broken, like git
      return { inPacked: !!packed };
    }
    return { hex: packed?.hex.toString('latin1'), inPacked: !!packed };
  }

  /** Phase one. Throws TxError (after rolling back) unless the failure is per-ref and allowFailure is set. */
  async prepare(edits: RefEdit[]): Promise<void> {
    if (this.state !== 'open') throw new Error('transaction already prepared');
    oneUpdatePerRef(edits, () => this.abort());
    this.edits = edits;
    await hookGate(this.opts, 'preparing', () => hookInput(edits, this.zero), () => this.abort());
    const headTarget = this.refs.readLoose('HEAD')?.symref;
    // thousands of refs in one push: other requests run between slices (the locks stay held)
    const slicer = new Slicer();
    for (let i = 0; i < edits.length; i++) {
      const tick = slicer.tick();
      if (tick) await tick;
      try {
        await this.prepareOne(edits[i]!, i, headTarget);
      } catch (e) {
        if (e instanceof TxError && e.kind !== 'generic' && this.opts.allowFailure) {
          this.rejected.set(i, e);
          this.releaseFor(i);
          continue;
        }
        this.abort();
        throw e;
      }
    }
    // deletions also go through a packed-refs transaction of their own, with its own hook calls
    // (git's files_transaction_prepare): prepared when packed-refs holds one of them, else aborted
    const dels = this.prepared.filter((p) => p.edit.change.kind === 'delete');
    if (dels.length) {
      const input = dels.map((p) => `${this.zero} ${this.zero} ${p.target}\n`).join('');
      if (dels.some((p) => p.inPacked)) {
        for (const state of ['preparing', 'prepared'] as const) {
          if (await runHook(this.opts, state, input) !== 0) { this.abort(); throw new HookAbortError(state); }
        }
        this.packedInput = input;
      } else {
        await runHook(this.opts, 'aborted', input);
      }
    }
    await hookGate(this.opts, 'prepared', () => this.hookLines(), () => this.abort());
    this.state = 'prepared';
  }

  /** the edits as the hook names them from "prepared" on: through symrefs to the refs they reach */
  private hookLines(): string {
    const targets = new Map(this.prepared.map((p) => [p.index, p.target]));
    return hookInput(this.edits, this.zero, (i) => targets.get(i));
  }

  /** Abort after a successful prepare (the caller changed its mind): the hook hears of it. */
  async abortPrepared(): Promise<void> {
    const was = this.state;
    // the lines before abort() forgets the prepared targets (symrefs name the refs they reach, as in "prepared")
    const lines = this.opts.hook ? this.hookLines() : '';
    this.abort();
    if (was === 'prepared') await runHook(this.opts, 'aborted', lines);
  }

  private async prepareOne(edit: RefEdit, index: number, headTarget: string | undefined): Promise<void> {
    try {
      await this.prepareLocked(edit, index, headTarget);
    } finally {
      // a lock keeps its file, not its descriptor (git's close_ref_gently): a push of
      // thousands of refs must not run out of descriptors
      // only the ones this edit opened (looking at every lock for every edit was quadratic: 18 s of 50,000)
      for (const l of this.opened) if (l.fd !== undefined) { closeSync(l.fd); l.fd = undefined; }
      this.opened.length = 0;
    }
  }

  private async prepareLocked(edit: RefEdit, index: number, headTarget: string | undefined): Promise<void> {
    const logOnly: string[] = [];
    let name = edit.name;
    const creating = edit.change.kind === 'update';
    let lock = await this.lockRef(name, creating);
    let cur = this.readRaw(name);
    for (let depth = 0; cur.symref && depth < 5; depth++) {
      logOnly.push(name);
      name = cur.symref;
      lock = await this.lockRef(name, creating);
      cur = this.readRaw(name);
    }
    if (cur.symref) throw new TxError('generic', `unable to resolve reference '${edit.name}'`);
    if (headTarget && name === headTarget && edit.name !== 'HEAD' && !logOnly.includes('HEAD')) {
      await this.lockRef('HEAD', false);
      logOnly.push('HEAD');
    }
    const p: Prepared = { edit, index, target: name, oldHex: cur.hex, inPacked: cur.inPacked, lock, logOnly };
    this.prepared.push(p);
    const ex = edit.expected;
    const orig = edit.name;
    if (ex.kind === 'must-not-exist' && cur.hex) {
      throw new TxError('create-exists', `cannot lock ref '${orig}': reference already exists`);
    }
    if (ex.kind === 'must-exist-and-match') {
      const want = ex.oid.toString('hex');
      if (!cur.hex) throw new TxError('nonexistent-ref', `cannot lock ref '${orig}': reference is missing but expected ${want}`);
      if (cur.hex !== want) throw new TxError('incorrect-old-value', `cannot lock ref '${orig}': is at ${cur.hex} but expected ${want}`);
    }
    if (edit.change.kind === 'update') {
      const hex = edit.change.new.toString('hex');
      if (!cur.hex) {
        const conflict = this.conflictingRef(name, true);
        if (conflict) throw this.conflictError(orig, conflict, name);
      }
      if (this.opts.typeOf) {
        const t = this.opts.typeOf(edit.change.new);
        if (!t) throw new TxError('invalid-new-value', `trying to write ref '${name}' with nonexistent object ${hex}`);
        if (t !== 'commit' && name.startsWith('refs/heads/')) throw new TxError('invalid-new-value', `trying to write non-commit object ${hex} to branch '${name}'`);
      }
      if (cur.hex !== hex) {
        writeSync(lock.fd!, `${hex}\n`);
      }
    } else if (cur.inPacked && !this.packedLock) {
      this.packedLock = await this.lockFile(join(this.refs.commonDir, 'packed-refs'), this.opts.packedLockTimeoutMs ?? 1000);
    }
  }

  /** Drop the locks a rejected edit took (unless another edit holds them too). */
  private releaseFor(index: number): void {
    const mine = this.prepared.filter((p) => p.index === index);
    this.prepared = this.prepared.filter((p) => p.index !== index);
    const still = new Set<Lock>();
    for (const p of this.prepared) { still.add(p.lock); for (const n of p.logOnly) { const l = this.locks.get(n); if (l) still.add(l); } }
    for (const p of mine) {
      for (const n of [p.target, ...p.logOnly, p.edit.name]) {
        const l = this.locks.get(n);
        if (l && !still.has(l)) { this.unlock(l); this.locks.delete(n); }
      }
    }
    // names locked before the failure was found (symref chains)
    for (const [n, l] of [...this.locks]) {
      if (!still.has(l) && !this.prepared.some((p) => p.target === n || p.logOnly.includes(n))) { this.unlock(l); this.locks.delete(n); }
    }
    if (this.packedLock && !this.prepared.some((p) => p.edit.change.kind === 'delete' && p.inPacked)) {
      this.unlock(this.packedLock);
      this.packedLock = undefined;
    }
  }

  private unlock(l: Lock): void {
    if (l.fd !== undefined) { try { closeSync(l.fd); } catch { /* closed */ } l.fd = undefined; }
    try { unlinkSync(fsPath(l.lockPath)); } catch { /* gone */ }
  }

  /** Release every lock; nothing changes. */
  abort(): void {
    for (const l of this.locks.values()) this.unlock(l);
    this.locks.clear();
    if (this.packedLock) { this.unlock(this.packedLock); this.packedLock = undefined; }
    this.prepared = [];
    this.state = 'closed';
  }

  /**
   * Phase two: make every prepared edit visible. The renames of thousands
   * of refs give the event loop away between slices (the locks stay held,
   * so no other writer sees a half-done transaction's refs change under it).
   */
  async commit(): Promise<void> {
    if (this.state !== 'prepared') throw new Error('transaction not prepared');
    this.state = 'closed';
    const deleted: string[] = [];
    const slicer = new Slicer();
    try {
      const ident = this.opts.ident;
      const logs = this.opts.reflogs;
      for (const p of this.prepared) {
        if (p.edit.change.kind !== 'update') continue;
        const tick = slicer.tick();
        if (tick) await tick;
        const newHex = p.edit.change.new.toString('hex');
        if (logs && ident && isDeep(p.target)) await logs.prepareDeep(p.target);
        if (logs && ident) {
          const old = p.oldHex ?? this.zero;
          logs.append(p.target, old, newHex, ident, p.edit.message);
          for (const n of p.logOnly) logs.append(n, old, newHex, ident, p.edit.message);
        }
        const l = p.lock;
        if (p.oldHex === newHex) { unlinkSync(fsPath(l.lockPath)); l.done = true; continue; }
        renameInto(l);
      }
      const deletes = this.prepared.filter((p) => p.edit.change.kind === 'delete');
      if (deletes.length) {
        if (this.packedLock) this.rewritePacked(new Set(deletes.filter((d) => d.inPacked).map((d) => d.target)));
        for (const p of deletes) {
          const tick = slicer.tick();
          if (tick) await tick;
          const path = this.refPath(p.target);
          try { unlinkSync(fsPath(path)); } catch { /* only packed */ }
          deleted.push(path);
          logs?.remove(p.target);
          if (logs && ident) for (const n of p.logOnly) if (n === 'HEAD') logs.append(n, p.oldHex ?? this.zero, this.zero, ident, p.edit.message);
        }
      }
    } catch (e) {
      this.abort();
      await this.removeParents(deleted, slicer);
      throw e instanceof TxError ? e : new TxError('generic', `unable to update refs: ${(e as Error).message}`);
    }
    for (const l of this.locks.values()) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (!l.done) this.unlock(l);
    }
    this.locks.clear();
    await this.removeParents(deleted, slicer);
    if (this.packedInput !== undefined) await runHook(this.opts, 'committed', this.packedInput);
    await runHook(this.opts, 'committed', () => this.hookLines());
  }

  /** The empty directories deleted refs leave, once no lock file is left in them (git's REF_DELETED_RMDIR). */
  private async removeParents(paths: string[], slicer: Slicer): Promise<void> {
    const refsRoot = join(this.refs.commonDir, 'refs');
    await forEachSliced(paths, (path) => removeEmptyParents(path, refsRoot), slicer);
  }

  /** Write packed-refs without `drop` into packed-refs.lock (streamed), then rename it into place. */
  private rewritePacked(drop: Set<string>): void {
    const lock = this.packedLock!;
    const hexLen = this.refs.hexLen;
    let fd: number;
    try { fd = openSync(lock.path, 'r'); } catch { this.unlock(lock); this.packedLock = undefined; return; }
    const out: Buffer[] = [];
    let outLen = 0;
    const emit = (s: Buffer | string) => {
      const b = typeof s === 'string' ? Buffer.from(s) : s;
      out.push(b); outLen += b.length;
      if (outLen >= 1 << 20) { writeSync(lock.fd!, Buffer.concat(out)); out.length = 0; outLen = 0; }
    };
    emit('# pack-refs with: peeled fully-peeled sorted \n');
    try {
      const size = fstatSync(fd).size;
      const chunk = Buffer.allocUnsafe(1 << 20);
      let carry = Buffer.alloc(0);
      let pos = 0;
      let fullyPeeled = false;
      let first = true;
      let skipping = false;
      let pendingRef: { hex: string; line: Buffer } | undefined;
      const finishPending = (peelLine: Buffer | undefined) => {
        if (!pendingRef) return;
        emit(pendingRef.line); emit('\n');
        if (peelLine) { emit(peelLine); emit('\n'); }
        else if (!fullyPeeled && this.opts.peel) {
          const p = this.opts.peel(Buffer.from(pendingRef.hex, 'hex'));
          if (p) emit(`^${p.toString('hex')}\n`);
        }
        pendingRef = undefined;
      };
      const onLine = (l: Buffer) => {
        if (l.length === 0) return;
        if (l[0] === 0x23) { if (first) fullyPeeled = l.toString('latin1').includes(' fully-peeled'); first = false; return; }
        first = false;
        if (l[0] === 0x5e) { if (!skipping) finishPending(l); return; }
        finishPending(undefined);
        const name = decodeName(l, hexLen + 1);
        skipping = drop.has(name);
        if (!skipping) pendingRef = { hex: l.toString('latin1', 0, hexLen), line: Buffer.from(l) };
      };
      while (pos < size) {
        const n = readSync(fd, chunk, 0, chunk.length, pos);
        if (n <= 0) break;
        pos += n;
        let buf = carry.length ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
        let start = 0;
        for (;;) {
          const nl = buf.indexOf(10, start);
          if (nl < 0) break;
          onLine(buf.subarray(start, nl));
          start = nl + 1;
        }
        carry = Buffer.from(buf.subarray(start));
        buf = carry;
      }
      if (carry.length) onLine(carry);
      finishPending(undefined);
    } finally {
      closeSync(fd);
    }
    if (outLen) writeSync(lock.fd!, Buffer.concat(out));
    closeSync(lock.fd!); lock.fd = undefined;
    renameSync(lock.lockPath, lock.path);
    this.packedLock = undefined;
  }
}

/**
 * commit_ref(): the lock renamed over its ref. A directory where the ref
 * goes (left by refs once below it) is removed if it holds only empty
 * directories, then the rename is tried again (git lstats first; trying
 * the rename first spares a syscall per ref in the usual case).
 */
function renameInto(l: Lock): void {
  try {
    renameSync(fsPath(l.lockPath), fsPath(l.path));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR') throw e;
    removeEmptyDirectories(l.path);
    renameSync(fsPath(l.lockPath), fsPath(l.path));
  }
  l.done = true;
}

/**
 * remove_empty_directories(): a directory tree holding nothing but
 * directories is removed; anything else in it leaves it (and the rename
 * after it then fails with git's error).
 */
function removeEmptyDirectories(path: string): void {
  let st;
  try { st = lstatSync(fsPath(path)); } catch { return; }
  if (!st.isDirectory()) return;
  const rm = (d: string): boolean => {
    for (const e of readdirSync(fsPath(d), { withFileTypes: true, encoding: 'buffer' })) {
      if (!e.isDirectory() || !rm(join(d, decodeName(e.name)))) return false;
    }
    try { rmdirSync(fsPath(d)); return true; } catch { return false; }
  };
  rm(path);
}
