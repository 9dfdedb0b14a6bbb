/**
 * Relaying pack-objects' output to the client.
 *
 * - Pack data is gathered into 65515-byte sideband payloads and written
 *   when the frame is full (or at least 2/3 full after a big read), when
 *   pack-objects has gone quiet, or when it has finished. Each packet's
 *   header and payload leave in one write.
 * - pack-objects' stdout is read into one reused 1 MiB buffer and handed
 *   over synchronously (pushReader); the keepalive and quiet-time timers
 *   are armed once and checked against the last chunk's time, not reset
 *   per chunk.
 * - The last byte is held back until pack-objects exits successfully, so a
 *   failed pack can never look complete.
 * - stderr goes out on band 2; a keepalive goes out after `keepalive`
 *   seconds of silence.
 * - A slow client pauses pack-objects (backpressure); a gone client kills it.
 */
import type { Child } from '../util/spawn.js';
import { Socket } from 'node:net';
import { Band, SIDEBAND_64K_MAX } from '../pktline/codec.js';
import type { PacketWriter } from '../pktline/writer.js';
import { FrameBlock } from '../pktline/frame-block.js';
import { GitwireError } from '../errors.js';

export const ABORT_MSG = 'aborting due to possible repository corruption on the remote side.';
/** characters of pack-objects' stderr kept for a failure's detail */
const STDERR_TAIL = 4096;
const THRESHOLD = Math.floor((SIDEBAND_64K_MAX + 1) * 2 / 3);
const QUIET_MS = 100;
/** a read this large means pack-objects has more ready: a 2/3-full frame need not wait */
const BIG_READ = 64 * 1024;
/** after a read smaller than this, pushReader pauses reading for COALESCE_MS so that pack-objects' small writes pile up */
const COALESCE_BELOW = 64 * 1024;
const COALESCE_MS = 1;
const PROGRESS_COALESCE_MS = 100;

export interface RelayOptions {
  /** seconds of silence before a keepalive; <0 disables */
  keepalive: number;
  /** flush a partly filled frame after pack-objects has been quiet this long (ms, default 100) */
  quietMs?: number;
  /** where progress goes without a sideband (git: its own stderr) */
  stderr?: (b: Buffer) => void;
}

export interface RelayStats { packBytes: number; frames: number }

/**
 * Where pack bytes come from: pack-objects' pipes, or a pack-objects cache
 * reader. `stdout` is pulled (backpressure per consumer); a chunk may be
 * reused by the source once the next one is pulled. `stderr` is progress
 * text; `done` settles after `stdout` ended and tells whether the pack is
 * complete. `abort` stops this consumer's share of the work.
 */
export interface PackSource {
  /** pulled bytes; unused when `push` or `readInto` is given */
  readonly stdout?: AsyncIterable<Buffer>;
  /** pushed bytes (preferred when present) */
  readonly push?: PushReader;
  /**
   * Bytes read straight into memory the relay hands over: `views` are the
   * payload areas of band frames laid out back to back in one block, filled
   * in order. Resolves to how many bytes were read (at least 1), or 0 after
   * the last one (then `done` tells whether they were whole). One call at a
   * time. Used over `stdout` when the client takes side-band-64k.
   */
  readInto?(views: Buffer[]): Promise<number>;
  readonly stderr?: AsyncIterable<Buffer>;
  readonly done: Promise<PackSourceResult>;
  abort(): Promise<void>;
}

export interface PackSourceResult {
  ok: boolean;
  /** a failure that a fresh pack-objects could avoid (cache producer gone): retried when no pack byte was sent */
  retryable?: boolean;
}

/** Thrown by relaySource when the source failed retryably before any pack byte left. */
export class PackRetry extends Error {
  constructor() { super('pack source failed before sending; retry directly'); }
}

/**
 * A source that hands its bytes over synchronously, one view at a time
 * (valid only during the call), instead of an async iterator: no promise,
 * no buffer and no stream bookkeeping per chunk.
 */
export interface PushReader {
  /** `onData` runs for every read; `onEnd` once, after the last byte (or on a read error) */
  start(onData: (b: Buffer) => void, onEnd: (err?: Error) => void): void;
  pause(): void;
  resume(): void;
}

/** Bytes per read from pack-objects' pipe (libuv's stream reads are 64 KiB into a fresh buffer each). */
const READ_BUFFER = 1024 * 1024;

/**
 * pack-objects' stdout read straight into one reused buffer: its handle is
 * taken over by a socket with a static read buffer (net's `onread`), so a
 * read costs the syscall and the callback, not a 64 KiB allocation, a
 * Readable push and a promise. Undefined when the stream is not a plain
 * pipe handle or has been read already (then the iterator is used).
 */
export function pushReader(child: Child): PushReader | undefined {
  return child.adoptStdout ? adoptedReader(child) : socketReader(child.stdout);
}

/** The same for a child of the spawn helper, whose stdout socket arrives a moment after the spawn. */
function adoptedReader(child: Child): PushReader | undefined {
  let inner: PushReader | undefined;
  let started: [(b: Buffer) => void, (err?: Error) => void] | undefined;
  let paused = false;
  let none = false;
  const adopted = child.adoptStdout!((sock) => {
    if (!sock) { none = true; started?.[1](); return; }
    inner = socketReader(sock) ?? streamReader(sock);
    if (started) { inner.start(...started); if (paused) inner.pause(); }
  });
  if (!adopted) return undefined;
  return {
    start: (d, e) => { started = [d, e]; if (inner) inner.start(d, e); else if (none) e(); },
    pause: () => { paused = true; inner?.pause(); },
    resume: () => { paused = false; inner?.resume(); },
  };
}

/** Any readable stream as a PushReader (when its handle cannot be taken over). */
function streamReader(r: NonNullable<Child['stdout']>): PushReader {
  return {
    start: (onData, onEnd) => {
      let ended = false;
      const end = (err?: Error) => { if (!ended) { ended = true; onEnd(err); } };
      r.on('data', (b: Buffer) => onData(b));
      r.once('end', () => end());
      r.once('error', (e) => end(e));
      r.once('close', () => end());
    },
    pause: () => { r.pause(); },
    resume: () => { r.resume(); },
  };
}

function socketReader(stream: Child['stdout']): PushReader | undefined {
  const old = stream as (Socket & { _handle?: { useUserBuffer?: unknown; reading?: boolean } | null }) | null;
  const handle = old?._handle;
  if (!old || !handle || typeof handle.useUserBuffer !== 'function' || old.readableLength > 0 || old.readableFlowing || old.destroyed) return undefined;
  let onData: (b: Buffer) => void = () => undefined;
  let onEnd: (err?: Error) => void = () => undefined;
  let ended = false;
  const end = (err?: Error) => { if (ended) return; ended = true; onEnd(err); };
  const buffer = Buffer.allocUnsafe(READ_BUFFER);
  // pack-objects writes 8 KiB at a time: reading each as it comes is a wakeup per 8-16 KiB. After
  // a small read it gets COALESCE_MS to fill the pipe, which makes reads large (~130 KiB)
  let paused = false;
  let coalescing = false;
  const s = new Socket({ handle, readable: true, onread: { buffer, callback: (n: number, b: Uint8Array) => {
    onData((b as Buffer).subarray(0, n));
    if (n < COALESCE_BELOW && !paused && !coalescing && !ended) {
      coalescing = true;
      s.pause();
      setTimeout(() => { coalescing = false; if (!paused && !ended) s.resume(); }, COALESCE_MS);
    }
  } } } as ConstructorParameters<typeof Socket>[0]);
  s.on('end', () => end());
  s.on('error', (e) => end(e));
  // the child's own stdout socket (whose close the child's 'close' waits for) lets go of the handle once ours is done with it
  s.on('close', () => { old._handle = null; old.destroy(); end(); });
  old.destroy = ((orig) => function (this: Socket, err?: Error) {
    if (old._handle) { s.destroy(err); return this; }
    return orig.call(this, err);
  })(old.destroy);
  s.pause();
  return {
    start: (d, e) => { onData = d; onEnd = e; s.resume(); },
    pause: () => { paused = true; s.pause(); },
    resume: () => { paused = false; if (!coalescing) s.resume(); },
  };
}

/** pack-objects (or its hook) as a PackSource. */
export function childSource(child: Child): PackSource {
  const push = pushReader(child);
  return {
    stdout: push ? undefined : child.stdout! as AsyncIterable<Buffer>,
    push,
    stderr: child.stderr! as AsyncIterable<Buffer>,
    done: waitExit(child).then((e) => ({ ok: e.code === 0 })),
    abort: async () => { child.stdout?.destroy(); await killChild(child); },
  };
}

function waitExit(child: Child): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
}

export function killChild(child: Child): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const done = waitExit(child).then(() => undefined);
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 2000);
  return done.finally(() => clearTimeout(t));
}

export function relayPack(child: Child, writer: PacketWriter, opts: RelayOptions): Promise<RelayStats> {
  return relaySource(childSource(child), writer, opts);
}

export async function relaySource(src: PackSource, writer: PacketWriter, opts: RelayOptions): Promise<RelayStats> {
  const sideband = writer.sideband !== 'none';
  const small = writer.sideband === 'side-band';
  const stats: RelayStats = { packBytes: 0, frames: 0 };
  let frame = writer.frameBuffer();
  let used = 0; // payload bytes at frame[5..]
  let failed: unknown;
  const quietMs = opts.quietMs ?? QUIET_MS;
  const keepaliveMs = opts.keepalive < 0 || !sideband ? -1 : opts.keepalive * 1000;
  // one timer each, checked against the time of the last chunk when it fires
  // (a clearTimeout/setTimeout pair per chunk costs more than the chunk's copy)
  let lastActive = Date.now();
  let lastData = lastActive;
  let keepaliveTimer: NodeJS.Timeout | undefined;
  let quietTimer: NodeJS.Timeout | undefined;
  let progressTimer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;

  const sendData = (n: number) => {
    if (n <= 0) return;
    stats.packBytes += n;
    stats.frames++;
    if (sideband && !small) {
      // hand the frame over whole (header and payload in one write) and
      // without a copy: the writer adopts it and gives back a free buffer
      const keep = used - n;
      const next = writer.bandFrameSwap(Band.Data, frame, 5 + n);
      if (keep > 0) frame.copy(next, 5, 5 + n, 5 + used);
      frame = next;
      used = keep;
      return;
    }
    const payload = Buffer.from(frame.subarray(5, 5 + n));
    frame.copy(frame, 5, 5 + n, 5 + used);
    used -= n;
    if (sideband) { writer.band(Band.Data, payload); writer.push(); } else { writer.raw(payload); writer.push(); }
  };

  const fail = (e: unknown) => { failed ??= e; void src.abort(); wake?.(); };
  const guard = (f: () => void) => () => {
    try { f(); } catch (e) { fail(e); }
  };

  const keepaliveTick = guard(() => {
    keepaliveTimer = undefined;
    if (failed) return;
    const idle = Date.now() - lastActive;
    // a client with bytes waiting for it needs no keepalive, and one queued behind them would only grow the queue
    if (idle >= keepaliveMs) {
      if (!writer.backedUp) writer.keepalive();
      lastActive = Date.now();
    }
    keepaliveTimer = setTimeout(keepaliveTick, keepaliveMs - (Date.now() - lastActive));
  });
  const quietTick = guard(() => {
    quietTimer = undefined;
    if (failed || used <= 1) return;
    const idle = Date.now() - lastData;
    // pack-objects went quiet: what we hold goes to the client now, not when the next frame fills
    if (idle >= quietMs) { sendData(used - 1); writer.push(); return; }
    quietTimer = setTimeout(quietTick, quietMs - idle);
  });

  // the end of pack-objects' stderr, for the log when it fails (its error names the object and the file)
  let stderrTail = '';
  const onStderr = (chunk: Buffer) => {
    lastActive = Date.now();
    stderrTail = (stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
    guard(() => {
      if (!sideband) { opts.stderr?.(chunk); return; }
      writer.progress(chunk);
      if (!progressTimer) progressTimer = setTimeout(guard(() => { progressTimer = undefined; writer.push(); }), PROGRESS_COALESCE_MS);
    })();
  };
  const stderrDone = (async () => {
    try { if (src.stderr) for await (const chunk of src.stderr) if (!failed) onStderr(chunk); } catch { /* ended with the source */ }
  })();

  /** Take one chunk of pack data (synchronously: `chunk` may be reused once this returns). */
  const feed = (chunk: Buffer) => {
    lastActive = lastData = Date.now();
    let off = 0;
    while (off < chunk.length) {
      const n = Math.min(chunk.length - off, SIDEBAND_64K_MAX - used);
      chunk.copy(frame, 5 + used, off, off + n);
      used += n;
      off += n;
      // a full frame goes at once; one at least 2/3 full goes when the read
      // that filled it was a big one (pack-objects is ahead of us). After
      // small reads a partial frame waits for more, or for the quiet time
      if (used === SIDEBAND_64K_MAX || (used >= THRESHOLD && chunk.length >= BIG_READ)) sendData(used - 1);
    }
    if (used > 1 && !quietTimer) quietTimer = setTimeout(quietTick, quietMs);
  };

  /**
   * The source reads into frame blocks and each block leaves as it was read
   * (one read, one write, no copy), but for its last byte: that is carried
   * to the front of the next block, so the pack's last byte stays back
   * until the source says the pack is whole. The next read runs while the
   * client takes the last block.
   */
  const relayInPlace = async (readInto: (views: Buffer[]) => Promise<number>) => {
    let carry = -1;
    type Read = { b: FrameBlock; n: number; err?: unknown };
    const read = (b: FrameBlock): Promise<Read> => readInto(b.views(carry)).then((n) => ({ b, n }), (err: unknown) => ({ b, n: -1, err }));
    let pending: Promise<Read> | undefined = read(FrameBlock.take());
    try {
      for (;;) {
        const r: Read = await pending;
        pending = undefined;
        if (r.n < 0) { r.b.give(); throw r.err; }
        if (failed || r.n === 0) { r.b.give(); break; }
        lastActive = lastData = Date.now();
        const payload = r.n + (carry >= 0 ? 1 : 0) - 1;
        carry = r.b.payloadByte(payload);
        const { length, frames } = r.b.frame(payload);
        stats.packBytes += payload;
        stats.frames += frames;
        const b = r.b;
        if (length > 0) writer.framed(b.buf.subarray(0, length), () => b.give()); else b.give();
        if (writer.closed) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
        pending = read(FrameBlock.take());
        if (writer.backedUp) await writer.waitDrained();
      }
    } catch (e) {
      fail(e);
    } finally {
      // a read in flight ends before its block can be reused (the source's abort ends a waiting one)
      if (pending) (await pending).b.give();
    }
    // the held-back byte, sent with the end once the source says the pack is whole
    if (carry >= 0 && !failed) { frame[5] = carry; used = 1; }
  };

  // a client that goes away stops pack-objects at once, even while it is silent
  writer.onGone(() => fail(new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly')));
  if (keepaliveMs >= 0) keepaliveTimer = setTimeout(keepaliveTick, keepaliveMs);
  try {
    const push = src.push;
    if (push) {
      await new Promise<void>((resolve) => {
        let done = false;
        wake = () => { if (!done) { done = true; resolve(); } };
        let waiting = false;
        push.start((chunk) => {
          if (failed || done) return;
          try {
            feed(chunk);
            if (writer.closed) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
          } catch (e) {
            fail(e);
            return;
          }
          if (waiting) return;
          if (writer.backedUp) {
            // backpressure: pack-objects waits while the client catches up
            waiting = true;
            push.pause();
            void writer.waitDrained().then(() => { waiting = false; if (!failed && !done) push.resume(); });
          }
        }, (err) => {
          if (err && !failed) failed = err;
          wake!();
        });
      });
    } else if (src.readInto && sideband && !small) {
      await relayInPlace(src.readInto.bind(src));
    } else if (src.stdout) {
      for await (const chunk of src.stdout) {
        if (failed) break;
        feed(chunk);
        if (writer.backedUp) await writer.waitDrained();
        if (writer.closed) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
      }
    }
    // end of output: everything but the last byte may go now
    if (!failed && used > 1) sendData(used - 1);
  } catch (e) {
    failed ??= e;
  }
  const result: PackSourceResult = failed ? (await src.abort(), { ok: false }) : await src.done;
  await stderrDone;
  for (const t of [keepaliveTimer, quietTimer, progressTimer]) if (t) clearTimeout(t);
  if (failed) throw failed;
  if (!result.ok && result.retryable && stats.packBytes === 0) throw new PackRetry();
  if (!result.ok) {
    const said = stderrTail.split(/[\r\n]+/).filter((l) => /^(fatal|error): /.test(l)).slice(-6);
    const err = new GitwireError('GW_PACK_FAILED', `git upload-pack: ${ABORT_MSG}`, said.length ? { data: { packObjects: said } } : {});
    opts.stderr?.(Buffer.from('error: git upload-pack: git-pack-objects died with error.\n'));
    try {
      // git 2.45+ sends it without the NUL that 2.39's sizeof() added
      const msg = Buffer.from(ABORT_MSG, 'latin1');
      if (sideband) { writer.band(Band.Error, msg); writer.push(); } else opts.stderr?.(msg);
    } catch { /* client gone as well */ }
    throw err;
  }
  sendData(used);
  if (sideband) writer.flush(); else writer.push();
  return stats;
}
