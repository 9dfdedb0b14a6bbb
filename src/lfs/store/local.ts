/**
 * The default store: a repository's own `lfs/objects/aa/bb/<oid>`, where
 * git-lfs itself puts objects (so `git lfs` run on the server sees them).
 * An upload goes to `lfs/tmp/<oid>-<random>`, is hashed as it streams,
 * and is renamed into place only when its size and SHA-256 check out: a
 * partial or wrong object is never visible, and two uploads of one oid
 * at once each write their own temporary file.
 *
 * An object damaged in place afterwards (a tool, an operator, a bad disk
 * write) must not pass for its oid. Hashing each object on every request
 * costs too much (a 1 GiB object is seconds of CPU), so each object has a
 * marker, `lfs/checked/aa/bb/<oid>`, naming the file's size, mtime, ctime
 * (ns), inode and device when its bytes were last found to hash to the oid
 * (after an upload's check, or after hashing it). A write to the file, a
 * `touch` or `utimes` putting its mtime back, a replacement: each changes
 * the ctime or inode, and the object is hashed again (streamed, in 256 KiB
 * slices, one hash per file and four per process at a time) before it is trusted. An object that
 * does not hash to its oid is as good as absent: the batch asks for it
 * again and the upload replaces it. A download checks the open file
 * against the marker; without a match it hashes as it sends and withholds
 * the last piece of an object that turns out wrong (the transfer fails).
 * Damage that changes no metadata (bits rotting on the disk) is not seen.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, createWriteStream, type BigIntStats, type WriteStream } from 'node:fs';
import { lstat, mkdir, open, readFile, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { once } from 'node:events';
import { commonDirOf } from '../../repo/discover.js';
import { oidPath } from '../oid.js';
import { noteBytesMoved } from '../../util/reclaim.js';
import type { LfsStore, RepositoryStore, WriteResult } from './types.js';
import { GitwireError } from '../../errors.js';

/** what a marker records of an object found good: a change to any of them (a write sets ctime) voids it */
const stamp = (st: BigIntStats) => `${st.size} ${st.mtimeNs} ${st.ctimeNs} ${st.ino} ${st.dev}\n`;

/** hashes in progress, by object file (all stores of this process): one read of a file at a time */
const hashing = new Map<string, Promise<BigIntStats | undefined>>();

const HASH_SLICE = 256 * 1024;
/** files hashed at once in this process (each holds one slice buffer): the memory and disk reads are bounded */
const HASHES_AT_ONCE = 4;
let hashesRunning = 0;
const hashQueue: Array<() => void> = [];

/** The SHA-256 of an open file's bytes, read in slices (each slice's hash is a short turn of the event loop). */
async function hashHandle(fh: FileHandle): Promise<string> {
  if (hashesRunning >= HASHES_AT_ONCE) await new Promise<void>((resolve) => hashQueue.push(resolve));
  else hashesRunning++;
  try { return await hashSlices(fh); } finally {
    const next = hashQueue.shift();
    if (next) next(); else hashesRunning--;
  }
}

async function hashSlices(fh: FileHandle): Promise<string> {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(HASH_SLICE);
  for (let pos = 0; ;) {
    const { bytesRead } = await fh.read(buf, 0, HASH_SLICE, pos);
    if (bytesRead === 0) return hash.digest('hex');
    hash.update(buf.subarray(0, bytesRead));
    noteBytesMoved(bytesRead);
    pos += bytesRead;
  }
}

const damaged = (oid: string) => new GitwireError('GW_OBJECT_CORRUPT', `LFS object ${oid} does not hash to its oid`, { data: { oid } });

/** A write error's words for the log and the client (ENOSPC: "no space left on device"). */
function ioMessage(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC') return 'no space left on device';
  if (code === 'EDQUOT') return 'disk quota exceeded';
  if (code === 'EFBIG') return 'file too large';
  return 'the object could not be stored';
}

export class LocalRepositoryStore implements RepositoryStore {
  readonly objects: string;
  readonly tmp: string;
  constructor(readonly lfsDir: string) {
    this.objects = join(lfsDir, 'objects');
    this.tmp = join(lfsDir, 'tmp');
  }

  private file(oid: string): string { return join(this.objects, oidPath(oid)); }
  private marker(oid: string): string { return join(this.lfsDir, 'checked', oidPath(oid)); }

  // an object is a plain file: a symbolic link planted in lfs/objects (to /etc/…, to another repository's object) is not served
  async size(oid: string): Promise<number | undefined> {
    try {
      const st = await lstat(this.file(oid));
      return st.isFile() ? st.size : undefined;
    } catch { return undefined; }
  }

  async verifiedSize(oid: string): Promise<number | undefined> {
    const st = await this.checked(oid);
    return st === undefined ? undefined : Number(st.size);
  }

  private async markerSays(oid: string, st: BigIntStats): Promise<boolean> {
    try { return (await readFile(this.marker(oid), 'utf8')) === stamp(st); } catch { return false; }
  }

  /** Record that the file as `st` describes it hashes to `oid` (best effort: without it the object is hashed again). */
  private async writeMarker(oid: string, st: BigIntStats): Promise<void> {
    const file = this.marker(oid);
    const tmp = `${file}.${randomBytes(6).toString('hex')}`;
    try {
      await mkdir(join(file, '..'), { recursive: true });
      await writeFile(tmp, stamp(st), { flag: 'wx' });
      await rename(tmp, file);
    } catch { await unlink(tmp).catch(() => undefined); }
  }

  /** The object's stat when its bytes are known to hash to `oid` (its marker, else hashing them now); undefined otherwise. */
  private async checked(oid: string): Promise<BigIntStats | undefined> {
    const file = this.file(oid);
    let st: BigIntStats;
    try { st = await lstat(file, { bigint: true }); } catch { return undefined; }
    if (!st.isFile()) return undefined;
    if (await this.markerSays(oid, st)) return st;
    let p = hashing.get(file);
    if (!p) {
      p = this.hashCheck(oid).finally(() => hashing.delete(file));
      hashing.set(file, p);
    }
    return p;
  }

  private async hashCheck(oid: string): Promise<BigIntStats | undefined> {
    let fh: FileHandle;
    try { fh = await open(this.file(oid), constants.O_RDONLY | constants.O_NOFOLLOW); } catch { return undefined; }
    try {
      const before = await fh.stat({ bigint: true });
      if (!before.isFile()) return undefined;
      const digest = await hashHandle(fh);
      const after = await fh.stat({ bigint: true });
      // changed while it was read (or replaced: the link count moves the ctime): not known good
      if (stamp(before) !== stamp(after) || digest !== oid) return undefined;
      await this.writeMarker(oid, after);
      return after;
    } catch { return undefined; } finally { await fh.close().catch(() => undefined); }
  }

  async read(oid: string, start?: number, end?: number): Promise<Readable | undefined> {
    let fh: FileHandle;
    try { fh = await open(this.file(oid), constants.O_RDONLY | constants.O_NOFOLLOW); } catch { return undefined; }
    let st: BigIntStats;
    try { st = await fh.stat({ bigint: true }); } catch { await fh.close().catch(() => undefined); return undefined; }
    if (!st.isFile()) { await fh.close().catch(() => undefined); return undefined; }
    if (!(await this.markerSays(oid, st))) {
      const whole = (start ?? 0) === 0 && (end === undefined || BigInt(end) >= st.size - 1n);
      if (whole) return this.readVerifying(oid, fh, st);
      // a range of an object not known good: the whole is hashed first (through this very handle)
      let good = false;
      try { good = (await hashHandle(fh)) === oid && stamp(await fh.stat({ bigint: true })) === stamp(st); } catch { /* unreadable: not good */ }
      if (!good) { await fh.close().catch(() => undefined); return undefined; }
      await this.writeMarker(oid, st);
    }
    // the stream closes the handle when it ends or is destroyed
    return fh.createReadStream({ start, end, highWaterMark: 64 * 1024 });
  }

  /**
   * The whole object, hashed as it is read; the last chunk is held back
   * until the hash is known, and the stream fails (GW_OBJECT_CORRUPT)
   * instead of giving it when the bytes are not the oid's.
   */
  private readVerifying(oid: string, fh: FileHandle, st: BigIntStats): Readable {
    const hash = createHash('sha256');
    let held: Buffer | undefined;
    const check = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        hash.update(chunk);
        const out = held;
        held = chunk;
        done(null, out);
      },
      flush: (done) => {
        void (async () => {
          const same = await fh.stat({ bigint: true }).then((now) => stamp(now) === stamp(st), () => false);
          if (hash.digest('hex') !== oid) { await unlink(this.marker(oid)).catch(() => undefined); done(damaged(oid)); return; }
          if (same) await this.writeMarker(oid, st);
          done(null, held);
        })();
      },
    });
    const src = fh.createReadStream({ highWaterMark: 64 * 1024, autoClose: false });
    src.on('error', (e) => check.destroy(e));
    src.pipe(check);
    const close = () => { src.destroy(); void fh.close().catch(() => undefined); };
    check.once('close', close);
    return check;
  }

  /** A new temporary file for an upload of `oid` (a subclass may put it elsewhere). */
  protected openTemp(oid: string): { file: string; out: WriteStream } {
    const file = join(this.tmp, `${oid}-${randomBytes(8).toString('hex')}`);
    return { file, out: createWriteStream(file, { flags: 'wx', highWaterMark: 256 * 1024 }) };
  }

  async write(oid: string, body: AsyncIterable<Buffer>, opts: { expectedSize?: number; maxSize?: number }): Promise<WriteResult> {
    try { await mkdir(this.tmp, { recursive: true }); } catch (e) { return { ok: false, kind: 'store-failed', message: ioMessage(e), cause: e }; }
    const { file: tmpFile, out } = this.openTemp(oid);
    // 'close' may come before anyone waits for it (after an error): waited on through this promise
    const closed = new Promise<void>((resolve) => out.once('close', () => resolve()));
    let failed: unknown;
    /** a write waiting for 'drain' (or for the error that ends the stream) */
    let waiting: (() => void) | undefined;
    const wake = () => { const w = waiting; waiting = undefined; w?.(); };
    out.on('error', (e) => { failed ??= e; wake(); });
    out.on('drain', wake);
    const hash = createHash('sha256');
    let n = 0;
    const cleanup = async () => {
      out.destroy();
      await closed;
      await unlink(tmpFile).catch(() => undefined);
    };
    try {
      for await (const chunk of body) {
        if (failed) break;
        n += chunk.length;
        if (opts.maxSize !== undefined && n > opts.maxSize) { await cleanup(); return { ok: false, kind: 'too-large', limit: opts.maxSize }; }
        if (opts.expectedSize !== undefined && n > opts.expectedSize) { await cleanup(); return { ok: false, kind: 'mismatch', message: `expected ${opts.expectedSize} bytes, got more` }; }
        hash.update(chunk);
        noteBytesMoved(chunk.length);
        // backpressure: the body is not read faster than the disk takes it
        if (!out.write(chunk) && !failed) await new Promise<void>((resolve) => { waiting = resolve; });
      }
      if (failed) { await cleanup(); return { ok: false, kind: 'store-failed', message: ioMessage(failed), cause: failed }; }
      out.end();
      await Promise.race([once(out, 'finish'), closed]);
    } catch (e) {
      await cleanup();
      if (failed) return { ok: false, kind: 'store-failed', message: ioMessage(failed), cause: failed };
      throw e;
    }
    await closed;
    if (failed) { await unlink(tmpFile).catch(() => undefined); return { ok: false, kind: 'store-failed', message: ioMessage(failed), cause: failed }; }
    const digest = hash.digest('hex');
    if (opts.expectedSize !== undefined && n !== opts.expectedSize) {
      await unlink(tmpFile).catch(() => undefined);
      return { ok: false, kind: 'mismatch', message: `expected ${opts.expectedSize} bytes, got ${n}` };
    }
    if (digest !== oid) {
      await unlink(tmpFile).catch(() => undefined);
      return { ok: false, kind: 'mismatch', message: `content has SHA-256 ${digest}, not ${oid}` };
    }
    const dest = this.file(oid);
    try {
      await mkdir(join(dest, '..'), { recursive: true });
      // atomic: a reader sees the old state or the whole object; the same bytes may win twice
      await rename(tmpFile, dest);
    } catch (e) {
      await unlink(tmpFile).catch(() => undefined);
      return { ok: false, kind: 'store-failed', message: ioMessage(e), cause: e };
    }
    // the bytes were just hashed: the marker says so for the file as it now stands (a rename sets its ctime)
    try {
      const st = await lstat(dest, { bigint: true });
      if (st.isFile() && Number(st.size) === n) await this.writeMarker(oid, st);
    } catch { /* no marker: the object is hashed when next asked for */ }
    return { ok: true, size: n };
  }
}

/** Objects in each repository's own `lfs/` directory (its common directory for a linked work tree). */
export class LocalStore implements LfsStore {
  forRepository(gitDir: string): RepositoryStore {
    return new LocalRepositoryStore(join(commonDirOf(gitDir), 'lfs'));
  }
}
