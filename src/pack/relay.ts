/**
 * Relaying pack-objects' output to the client.
 *
 * - Pack data is gathered into 65515-byte sideband payloads and written
 *   only when the buffer is at least 2/3 full, when pack-objects has gone
 *   quiet, or when it has finished (git 2.54's rule). Each packet's header
 *   and payload leave in one write.
 * - The last byte is held back until pack-objects exits successfully, so a
 *   failed pack can never look complete.
 * - stderr goes out on band 2; a keepalive goes out after `keepalive`
 *   seconds of silence.
 * - A slow client pauses pack-objects (backpressure); a gone client kills it.
 */
import type { Child } from '../util/spawn.js';
import { Band, SIDEBAND_64K_MAX } from '../pktline/codec.js';
import type { PacketWriter } from '../pktline/writer.js';
import { GitwireError } from '../errors.js';

export const ABORT_MSG = 'aborting due to possible repository corruption on the remote side.';
const THRESHOLD = Math.floor((SIDEBAND_64K_MAX + 1) * 2 / 3);
const QUIET_MS = 100;
const PROGRESS_COALESCE_MS = 100;
const KEEPALIVE = Buffer.from('0005\x01', 'latin1');

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
  readonly stdout: AsyncIterable<Buffer>;
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

/** pack-objects (or its hook) as a PackSource. */
export function childSource(child: Child): PackSource {
  return {
    stdout: child.stdout! as AsyncIterable<Buffer>,
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
  let frame = Buffer.allocUnsafe(5 + SIDEBAND_64K_MAX);
  let used = 0; // payload bytes at frame[5..]
  let failed: unknown;
  let keepaliveTimer: NodeJS.Timeout | undefined;
  let quietTimer: NodeJS.Timeout | undefined;
  let progressTimer: NodeJS.Timeout | undefined;

  const sendData = (n: number) => {
    if (n <= 0) return;
    stats.packBytes += n;
    stats.frames++;
    if (sideband && !small) {
      // hand the frame over whole: header and payload in one write. The
      // writer copies it into its buffer, so the frame is reused (a fresh
      // 64 KiB buffer per frame costs page faults and GC, not just a copy)
      const keep = used - n;
      if (writer.bandFrameRetains(5 + n)) {
        const out = frame;
        frame = Buffer.allocUnsafe(5 + SIDEBAND_64K_MAX);
        if (keep > 0) out.copy(frame, 5, 5 + n, 5 + used);
        used = keep;
        writer.bandFrame(Band.Data, out.subarray(0, 5 + n));
        return;
      }
      writer.bandFrame(Band.Data, frame.subarray(0, 5 + n));
      if (keep > 0) frame.copy(frame, 5, 5 + n, 5 + used);
      used = keep;
      return;
    }
    const payload = Buffer.from(frame.subarray(5, 5 + n));
    frame.copy(frame, 5, 5 + n, 5 + used);
    used -= n;
    if (sideband) { writer.band(Band.Data, payload); writer.push(); } else { writer.raw(payload); writer.push(); }
  };

  const guard = (f: () => void) => () => {
    try { f(); } catch (e) { failed ??= e; void src.abort(); }
  };

  const armKeepalive = () => {
    if (keepaliveTimer) clearTimeout(keepaliveTimer);
    if (opts.keepalive < 0 || !sideband) return;
    keepaliveTimer = setTimeout(guard(() => {
      writer.push();
      if (writer.sidebandAll || writer.sideband !== 'none') writer.raw(KEEPALIVE);
      writer.push();
      armKeepalive();
    }), opts.keepalive * 1000);
  };

  const onStderr = (chunk: Buffer) => {
    armKeepalive();
    guard(() => {
      if (!sideband) { opts.stderr?.(chunk); return; }
      writer.progress(chunk);
      if (!progressTimer) progressTimer = setTimeout(guard(() => { progressTimer = undefined; writer.push(); }), PROGRESS_COALESCE_MS);
    })();
  };
  const stderrDone = (async () => {
    try { if (src.stderr) for await (const chunk of src.stderr) if (!failed) onStderr(chunk); } catch { /* ended with the source */ }
  })();

  // a client that goes away stops pack-objects at once, even while it is silent
  writer.sink.onClose?.(() => { failed ??= new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly'); void src.abort(); });
  armKeepalive();
  try {
    for await (const chunk of src.stdout) {
      if (failed) break;
      armKeepalive();
      if (quietTimer) { clearTimeout(quietTimer); quietTimer = undefined; }
      let off = 0;
      while (off < chunk.length) {
        const n = Math.min(chunk.length - off, SIDEBAND_64K_MAX - used);
        chunk.copy(frame, 5 + used, off, off + n);
        used += n;
        off += n;
        if (used >= THRESHOLD) sendData(used - 1);
      }
      // pack-objects went quiet: what we hold goes to the client now, not when the next frame fills
      if (used > 1) quietTimer = setTimeout(guard(() => { quietTimer = undefined; sendData(used - 1); writer.push(); }), opts.quietMs ?? QUIET_MS);
      if (writer.sink.backedUp) await writer.drained();
      if (writer.sink.closed) throw new GitwireError('GW_CLIENT_GONE', 'the remote end hung up unexpectedly');
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
    const err = new GitwireError('GW_PACK_FAILED', `git upload-pack: ${ABORT_MSG}`);
    opts.stderr?.(Buffer.from('error: git upload-pack: git-pack-objects died with error.\n'));
    try {
      const msg = Buffer.from(`${ABORT_MSG}\0`, 'latin1');
      if (sideband) { writer.band(Band.Error, msg); writer.push(); } else opts.stderr?.(msg);
    } catch { /* client gone as well */ }
    throw err;
  }
  sendData(used);
  if (sideband) writer.flush(); else writer.push();
  return stats;
}
