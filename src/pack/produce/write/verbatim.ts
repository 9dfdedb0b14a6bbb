/**
 * A whole pack sent as it is (a full clone from one pack): the file's
 * bytes read straight into the relay's frame payloads with one vectored
 * read per block, off the event loop (libuv's pool), no copy and no
 * per-entry work.
 *
 * The pack that goes out is the file, byte for byte: its header and count,
 * every entry in file order, and its own trailer, which is the hash of all
 * that comes before it in the file, so also of all that goes before it on
 * the wire. Nothing needs hashing to make the trailer. What hashing buys is
 * a damaged file (a flipped bit, a truncation) failing the request here
 * instead of at the client's index-pack (which checks the trailer and
 * every object's id in any case, as it does behind git's pack-objects,
 * whose verbatim reuse rehashes what it sends and so hands damaged
 * entries on under a trailer that matches them). The first send of a pack
 * file hashes what it reads, and at the end the hash must equal the
 * trailer (the relay holds the last byte back until `done` says the pack
 * is whole). A send that checks out marks the open pack verified, with the
 * file's identity then (device, inode, size, change and modification
 * times); a later send of the same open pack whose file still has that
 * identity reads without hashing. Writing to the file changes its ctime,
 * so a pack modified in place is hashed again; its being replaced or
 * removed does not matter, as the reads go through the pack's own open file.
 *
 * The reads use a descriptor of their own, opened on the pack's open file
 * where the system allows it (/proc/self/fd), so a `git repack` that
 * deletes the pack mid-request, or the object database closing it, does
 * not cut the request short.
 */
import { close, fstat, open, readv, type BigIntStats } from 'node:fs';
import { createHash, type Hash } from 'node:crypto';
import { GitwireError } from '../../../errors.js';
import type { PackFile } from '../../../repo/pack.js';

const corrupt = (msg: string) => new GitwireError('GW_OBJECT_CORRUPT', msg);

/**
 * Hashing on the event loop, all verbatim packs together, per turn of the
 * loop. Each pack's own slicer would let every clone hash its block on the
 * same turn: 100 clones held the loop for seconds and other clients' answers
 * waited behind them (10.5 s for a ref advertisement, against 1.7 s with
 * git's pack-objects). Past TURN_MS of hashing in one turn, a pack waits for
 * the next turn (after the loop's I/O), so a turn holds about TURN_MS of it
 * however many clones run.
 */
const TURN_MS = 4;
let turnSpent = 0;
let turnResetQueued = false;

function charge(ms: number): void {
  turnSpent += ms;
  if (!turnResetQueued) {
    turnResetQueued = true;
    setImmediate(() => { turnSpent = 0; turnResetQueued = false; });
  }
}

async function turnRoom(): Promise<void> {
  while (turnSpent >= TURN_MS) await new Promise<void>((r) => setImmediate(r));
}

/** Open packs whose file hashed to its trailer, with the file's identity at the time (see fileIdentity). */
const verified = new WeakMap<PackFile, string>();

/** What changes when the file's bytes may have: device, inode, size, ctime and mtime (ns). */
function fileIdentity(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.ctimeNs}:${st.mtimeNs}`;
}

function statFd(fd: number): Promise<BigIntStats> {
  return new Promise((resolve, reject) => fstat(fd, { bigint: true }, (err, st) => (err ? reject(err) : resolve(st))));
}

function openFd(path: string): Promise<number> {
  return new Promise((resolve, reject) => open(path, 'r', (err, fd) => (err ? reject(err) : resolve(fd))));
}

export class VerbatimPack {
  private fd = -1;
  private pos = 0;
  /** bytes hashed (0 for a send of a verified pack) */
  hashed = 0;
  /** hashing what is read (undefined: the pack's file was verified, as it is now) */
  private hash: Hash | undefined;
  /** the file's identity when it was opened (see fileIdentity) */
  private identity = '';
  private readonly size: number;
  private readonly bodyEnd: number;
  private readonly trailer: Buffer;
  /** the read in flight (the descriptor closes after it) */
  private inflight: Promise<number> | undefined;
  private closed = false;

  constructor(private readonly pack: PackFile, private readonly format: 'sha1' | 'sha256') {
    this.size = pack.size;
    this.bodyEnd = this.size - pack.hashLen;
    this.trailer = Buffer.alloc(pack.hashLen);
  }

  get bytes(): number { return this.pos; }

  private async ensureOpen(): Promise<void> {
    if (this.fd >= 0) return;
    let fd: number;
    try {
      fd = await openFd(`/proc/self/fd/${this.pack.fd}`);
    } catch {
      fd = await openFd(this.pack.packPath);
    }
    if (this.closed) { close(fd, () => undefined); throw corrupt('closed'); }
    this.fd = fd;
    const st = await statFd(fd).catch(() => undefined);
    this.identity = st && st.size === BigInt(this.size) ? fileIdentity(st) : '';
    if (!this.identity || verified.get(this.pack) !== this.identity) this.hash = createHash(this.format === 'sha256' ? 'sha256' : 'sha1');
  }

  /** Read the next bytes into `views`; 0 at the end (after the trailer checked out). */
  async readInto(views: Buffer[]): Promise<number> {
    if (this.pos >= this.size) return 0;
    await this.ensureOpen();
    // no more than what is left of the file
    let room = this.size - this.pos;
    const vs: Buffer[] = [];
    for (const v of views) {
      if (room <= 0) break;
      const b = v.length <= room ? v : v.subarray(0, room);
      vs.push(b);
      room -= b.length;
    }
    const at = this.pos;
    const fd = this.fd;
    this.inflight = new Promise<number>((resolve, reject) => readv(fd, vs, at, (err, got) => (err ? reject(err) : resolve(got))));
    const n = await this.inflight;
    this.inflight = undefined;
    if (this.closed) return 0;
    if (n <= 0) throw corrupt(`pack ${this.pack.packPath} is truncated at ${at}`);
    const hash = this.hash;
    if (!hash) {
      this.pos += n;
      return n;
    }
    await turnRoom();
    if (this.closed) return 0;
    const t0 = performance.now();
    // hash the body, keep the trailer's bytes aside
    let left = n;
    let p = at;
    for (const v of vs) {
      if (left <= 0) break;
      const k = Math.min(v.length, left);
      const bodyPart = Math.max(0, Math.min(k, this.bodyEnd - p));
      if (bodyPart > 0) { hash.update(v.subarray(0, bodyPart)); this.hashed += bodyPart; }
      if (bodyPart < k) v.copy(this.trailer, p + bodyPart - this.bodyEnd, bodyPart, k);
      p += k;
      left -= k;
    }
    charge(performance.now() - t0);
    this.pos += n;
    if (this.pos === this.size) {
      if (!hash.digest().equals(this.trailer)) throw corrupt(`pack ${this.pack.packPath} does not match its checksum`);
      if (this.identity) verified.set(this.pack, this.identity);
    }
    return n;
  }

  close(): void {
    this.closed = true;
    const fd = this.fd;
    this.fd = -1;
    // a read in flight keeps the descriptor until it is done (its number could be reused at once)
    if (fd >= 0) {
      const done = () => close(fd, () => undefined);
      if (this.inflight) this.inflight.then(done, done); else done();
    }
  }
}
