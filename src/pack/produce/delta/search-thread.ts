/**
 * The delta search off the event loop: a large batch is searched on a
 * worker thread (./search-worker.ts), a small one on the loop, sliced.
 *
 * Why: on the loop the search gives way between steps, but one step (one
 * delta of a large object) cannot be cut, and the search's CPU competes
 * with every other request's. A worker takes both away, and uses a second
 * core. What it costs (bench/delta.mjs): starting a thread, and each
 * object copied once to it (the caller's buffers are never transferred:
 * they may be cached) and each kept delta once back (transferred) — about
 * a tenth of the search's own time; worth it for batches past a few MiB,
 * not for the handful of loose objects of a typical fetch.
 *
 * The worker holds the window; it asks for objects one at a time, so the
 * memory bound is the same as on the loop. Threads are bounded (one less
 * than the cores, at least one); when all are busy the search runs on the
 * loop, where objects over `loopMaxObject` are sent whole (their steps
 * would hold the loop). An abort ends the thread at once.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { GitwireError, type ErrorCode } from '../../../errors.js';
import type { WorkerMeta, WorkerOptions } from './search-worker.js';
import { DELTA_DEFAULTS, deltaCandidate, searchDeltas, type DeltaChoice, type DeltaObject, type DeltaSearchOptions, type DeltaSearchStats } from './search.js';

export interface ThreadedSearchOptions extends DeltaSearchOptions {
  /** candidates totalling fewer bytes are searched on the loop (default 4 MiB; 0: always a worker; Infinity: never) */
  workerMinBytes?: number;
  /**
   * on the loop, objects larger than this are sent whole (default 1 MiB):
   * one delta or index of such an object is a step the loop cannot cut
   * (~10 ms a MiB). A batch holding one goes to a worker when one is free.
   */
  loopMaxObject?: number;
}

const LOOP_MAX_OBJECT = 1024 * 1024;

/** worker threads searching now, and the most there may be */
let busy = 0;
export const deltaThreads = { max: Math.max(1, availableParallelism() - 1) };

/** Where the search of `objs` would run. */
export function searchPlace(objs: readonly DeltaObject[], opts: ThreadedSearchOptions = {}): 'worker' | 'loop' {
  const big = opts.bigFileThreshold ?? DELTA_DEFAULTS.bigFileThreshold;
  const loopMax = opts.loopMaxObject ?? LOOP_MAX_OBJECT;
  let bytes = 0, largest = 0;
  for (const o of objs) {
    if (!deltaCandidate(o, big)) continue;
    bytes += o.size;
    if (o.size > largest) largest = o.size;
  }
  const wanted = bytes >= (opts.workerMinBytes ?? 4 * 1024 * 1024) || largest > loopMax;
  return wanted && busy < deltaThreads.max ? 'worker' : 'loop';
}

/** searchDeltas() on the loop, keeping each step short */
function onLoop(objs: readonly DeltaObject[], opts: ThreadedSearchOptions): Promise<Array<DeltaChoice | undefined>> {
  const big = Math.min(opts.bigFileThreshold ?? DELTA_DEFAULTS.bigFileThreshold, opts.loopMaxObject ?? LOOP_MAX_OBJECT);
  return searchDeltas(objs, { ...opts, bigFileThreshold: big });
}

/** searchDeltas(), on a worker thread when the batch is large and a thread is free. */
export async function searchDeltasThreaded(objs: readonly DeltaObject[], opts: ThreadedSearchOptions = {}): Promise<Array<DeltaChoice | undefined>> {
  if (searchPlace(objs, opts) === 'loop') return onLoop(objs, opts);
  opts.signal?.throwIfAborted();
  let worker: Worker;
  try {
    worker = new Worker(new URL('./search-worker.js', import.meta.url));
  } catch {
    return onLoop(objs, opts);
  }
  busy++;
  try {
    return await onWorker(worker, objs, opts);
  } finally {
    busy--;
    void worker.terminate();
  }
}

interface Done {
  kind: 'done'; bases: Int32Array; sizes: Float64Array; depths: Uint16Array; starts: Float64Array; blob: Uint8Array; stats: DeltaSearchStats;
}
type FromWorker = { kind: 'load'; i: number } | { kind: 'progress'; done: number; total: number } | Done | { kind: 'error'; code?: ErrorCode; message: string };

function onWorker(worker: Worker, objs: readonly DeltaObject[], opts: ThreadedSearchOptions): Promise<Array<DeltaChoice | undefined>> {
  const packIds = new Map<object, number>();
  const meta: WorkerMeta[] = objs.map((o) => {
    let pack = -1;
    if (o.inPack) {
      pack = packIds.get(o.inPack) ?? packIds.size;
      packIds.set(o.inPack, pack);
    }
    return { type: o.type, size: o.size, nameHash: o.nameHash, preferredBase: o.preferredBase, childDepth: o.childDepth, pack, storedWhole: o.storedWhole };
  });
  const wopts: WorkerOptions = {
    window: opts.window, depth: opts.depth, hashLen: opts.hashLen, windowMemory: opts.windowMemory,
    bigFileThreshold: opts.bigFileThreshold, deltaCacheSize: opts.deltaCacheSize,
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (e: unknown, r?: Array<DeltaChoice | undefined>) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      if (r) resolve(r); else reject(e instanceof Error ? e : new Error(String(e)));
    };
    const onAbort = () => finish(opts.signal!.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('error', (e) => finish(e));
    worker.on('exit', (code) => finish(new GitwireError('GW_PACK_FAILED', `delta search thread exited (${code})`)));
    worker.on('message', (m: FromWorker) => {
      if (settled) return;
      switch (m.kind) {
        case 'load': {
          const o = Number.isInteger(m.i) ? objs[m.i] : undefined;
          if (!o) return finish(new GitwireError('GW_PACK_FAILED', 'delta search thread asked for no object'));
          Promise.resolve().then(() => o.load()).then((data) => {
            if (settled) return;
            // a copy of just these bytes crosses (a view posted as it is would copy its whole
            // backing buffer, a pack window say); the caller's buffer stays theirs
            const copy = new Uint8Array(data.length);
            copy.set(data);
            worker.postMessage({ kind: 'data', i: m.i, data: copy }, [copy.buffer]);
          }, (e: unknown) => finish(e));
          return;
        }
        case 'progress':
          opts.onProgress?.(m.done, m.total);
          return;
        case 'error':
          return finish(m.code ? new GitwireError(m.code, m.message) : new Error(m.message));
        case 'done': {
          if (opts.stats) Object.assign(opts.stats, m.stats);
          const out = new Array<DeltaChoice | undefined>(objs.length).fill(undefined);
          const blob = Buffer.from(m.blob.buffer, m.blob.byteOffset, m.blob.byteLength);
          for (let i = 0; i < objs.length; i++) {
            if (m.bases[i]! < 0) continue;
            const at = m.starts[i]!;
            const size = m.sizes[i]!;
            out[i] = { base: m.bases[i]!, delta: at >= 0 ? blob.subarray(at, at + size) : undefined, deltaSize: size, depth: m.depths[i]! };
          }
          return finish(undefined, out);
        }
      }
    });
    worker.postMessage({ kind: 'start', meta, opts: wopts });
  });
}

