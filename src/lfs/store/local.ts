/**
 * The default store: a repository's own `lfs/objects/aa/bb/<oid>`, where
 * git-lfs itself puts objects (so `git lfs` run on the server sees them).
 * An upload goes to `lfs/tmp/<oid>-<random>`, is hashed as it streams,
 * and is renamed into place only when its size and SHA-256 check out: a
 * partial or wrong object is never visible, and two uploads of one oid
 * at once each write their own temporary file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, createWriteStream, type WriteStream } from 'node:fs';
import { lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { once } from 'node:events';
import { commonDirOf } from '../../repo/discover.js';
import { oidPath } from '../oid.js';
import { noteBytesMoved } from '../../util/reclaim.js';
import type { LfsStore, RepositoryStore, WriteResult } from './types.js';

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

  // an object is a plain file: a symbolic link planted in lfs/objects (to /etc/…, to another repository's object) is not served
  async size(oid: string): Promise<number | undefined> {
    try {
      const st = await lstat(this.file(oid));
      return st.isFile() ? st.size : undefined;
    } catch { return undefined; }
  }

  async read(oid: string, start?: number, end?: number): Promise<Readable | undefined> {
    let fh;
    try { fh = await open(this.file(oid), constants.O_RDONLY | constants.O_NOFOLLOW); } catch { return undefined; }
    // the stream closes the handle when it ends or is destroyed
    return fh.createReadStream({ start, end, highWaterMark: 64 * 1024 });
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
    return { ok: true, size: n };
  }
}

/** Objects in each repository's own `lfs/` directory (its common directory for a linked work tree). */
export class LocalStore implements LfsStore {
  forRepository(gitDir: string): RepositoryStore {
    return new LocalRepositoryStore(join(commonDirOf(gitDir), 'lfs'));
  }
}
