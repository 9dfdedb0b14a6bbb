/**
 * Bounded memory for byte streams that pass through the process. Each
 * socket read is a fresh 64 KiB buffer; once used it is garbage, but V8
 * frees buffers' memory only when it collects their small wrappers, and
 * it starts a collection for external memory only after ~64 MiB of it. A
 * 1 GiB LFS upload measured 102 MiB peak RSS for serve (54 MiB idle). So every
 * RECLAIM_EVERY bytes moved (LFS transfers, SSH channels, large objects
 * streamed out in chunks of their own, all together; ssh2 makes a fresh
 * buffer per SSH packet) a minor GC (a scavenge of the young generation,
 * where those wrappers are; measured 0.07 ms) runs, and the buffers go
 * back at once. Every 2 MiB rather than 8: over a 512 MiB LFS upload and
 * download, serve's peak went from 85 to 77 MiB on Node 20 and from 99 to
 * 94 MiB on Node 24 (whose own idle footprint is 12 MiB larger), with no
 * CPU difference above the run-to-run noise. Without a way to call the
 * collector (a runtime that refuses the flag), this does nothing.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** bytes moved between two scavenges */
export const RECLAIM_EVERY = 2 * 1024 * 1024;

type Gc = (opts?: { type?: 'minor' | 'major' }) => void;

let collect: Gc | undefined | null = null;
let moved = 0;

function collector(): Gc | undefined {
  if (collect !== null) return collect;
  const existing = (globalThis as { gc?: Gc }).gc;
  if (typeof existing === 'function') return (collect = existing);
  try {
    setFlagsFromString('--expose_gc');
    const gc = runInNewContext('gc') as unknown;
    collect = typeof gc === 'function' ? (gc as Gc) : undefined;
  } catch { collect = undefined; }
  return collect;
}

/** Count `n` bytes that went through this process; now and then, give their buffers back. */
export function noteBytesMoved(n: number): void {
  moved += n;
  if (moved < RECLAIM_EVERY) return;
  moved = 0;
  collector()?.({ type: 'minor' });
}

