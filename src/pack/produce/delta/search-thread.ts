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
 * The worker holds the window; it asks for objects as the search needs
 * them, with up to 64 more it will visit next (1 MiB at most: one round
 * trip per object was most of a search of small objects), so the memory
 * bound is the loop's and that much. What it is told of each object
 * crosses as transferred typed arrays (./search-worker-meta.ts), and its
 * progress comes a few times a second. Batches of many objects go to a
 * worker whatever their bytes: their sort is a step the loop cannot cut.
 * Threads are bounded (one less
 * than the cores, at least one); when all are busy the search runs on the
 * loop, where objects over `loopMaxObject` are sent whole (their steps
 * would hold the loop). An abort ends the thread at once.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { GitwireError, type ErrorCode } from '../../../errors.js';
import { metaBuffers, workerMeta, type WorkerOptions } from './search-worker-meta.js';
import { DELTA_DEFAULTS, deltaCandidate, noPairTried, searchDeltas, type DeltaChoice, type DeltaObject, type DeltaSearchOptions, type DeltaSearchStats } from './search.js';

export interface ThreadedSearchOptions extends DeltaSearchOptions {
  /** candidates totalling fewer bytes are searched on the loop (default 4 MiB; 0: always a worker; Infinity: never) */
  workerMinBytes?: number;
  /**
   * so many candidates or more go to a worker whatever their bytes (default
   * 16,384): sorting them into search order is one step the loop cannot cut
   * (~1 ms per thousand)
   */
  workerMinCount?: number;
  /**
   * on the loop, objects larger than this are sent whole (default 1 MiB):
   * one delta or index of such an object is a step the loop cannot cut
   * (~10 ms a MiB). A batch holding one goes to a worker when one is free.
   */
  loopMaxObject?: number;
}

const LOOP_MAX_OBJECT = 1024 * 1024;
const WORKER_MIN_COUNT = 16_384;

/** worker threads searching now, and the most there may be */
let busy = 0;
export const deltaThreads = { max: Math.max(1, availableParallelism() - 1) };

/** Where the search of `objs` would run. */
export function searchPlace(objs: readonly DeltaObject[], opts: ThreadedSearchOptions = {}): 'worker' | 'loop' {
  const big = opts.bigFileThreshold ?? DELTA_DEFAULTS.bigFileThreshold;
  const loopMax = opts.loopMaxObject ?? LOOP_MAX_OBJECT;
  let bytes = 0, largest = 0, count = 0;
  for (const o of objs) {
    if (!deltaCandidate(o, big)) continue;
    bytes += o.size;
    count++;
    if (o.size > largest) largest = o.size;
  }
  const wanted = bytes >= (opts.workerMinBytes ?? 4 * 1024 * 1024) || count >= (opts.workerMinCount ?? WORKER_MIN_COUNT) || largest > loopMax;
  return wanted && busy < deltaThreads.max ? 'worker' : 'loop';
}

/** searchDeltas() on the loop, keeping each step short */
function onLoop(objs: readonly DeltaObject[], opts: ThreadedSearchOptions): Promise<Array<DeltaChoice | undefined>> {
  const big = Math.min(opts.bigFileThreshold ?? DELTA_DEFAULTS.bigFileThreshold, opts.loopMaxObject ?? LOOP_MAX_OBJECT);
  return searchDeltas(objs, { ...opts, bigFileThreshold: big });
}

/** searchDeltas(), on a worker thread when the batch is large and a thread is free. */
export async function searchDeltasThreaded(objs: readonly DeltaObject[], opts: ThreadedSearchOptions = {}): Promise<Array<DeltaChoice | undefined>> {
  // nothing to try (every object stored whole in one pack): no thread for it
  if (searchPlace(objs, opts) === 'loop' || noPairTried(objs, opts.bigFileThreshold)) return onLoop(objs, opts);
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
type FromWorker = { kind: 'load'; ids: number[] } | { kind: 'progress'; done: number; total: number } | Done | { kind: 'error'; code?: ErrorCode; message: string };

function onWorker(worker: Worker, objs: readonly DeltaObject[], opts: ThreadedSearchOptions): Promise<Array<DeltaChoice | undefined>> {
  const meta = workerMeta(objs);
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
          const ids = Array.isArray(m.ids) ? m.ids : [];
          const want = ids.map((i) => (Number.isInteger(i) ? objs[i] : undefined));
          if (want.length === 0 || want.some((o) => !o)) return finish(new GitwireError('GW_PACK_FAILED', 'delta search thread asked for no object'));
          Promise.resolve().then(() => Promise.all(want.map(async (o) => o!.load()))).then((datas) => {
            if (settled) return;
            // a copy of just these bytes crosses, back to back (a view posted as it is would copy
            // its whole backing buffer, a pack window say); the caller's buffers stay theirs
            let bytes = 0;
            for (const d of datas) bytes += d.length;
            const blob = new Uint8Array(bytes);
            const ends = new Float64Array(datas.length);
            let at = 0;
            datas.forEach((d, k) => { blob.set(d, at); at += d.length; ends[k] = at; });
            const idArr = Int32Array.from(ids);
            worker.postMessage({ kind: 'data', ids: idArr, ends, blob }, [blob.buffer, ends.buffer, idArr.buffer]);
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
    worker.postMessage({ kind: 'start', meta, opts: wopts }, metaBuffers(meta));
  });
}

