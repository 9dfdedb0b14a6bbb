/**
 * The worker thread a large delta search runs on (see ./search-thread.ts).
 * It holds the window; objects come from the main thread as the search
 * asks for them.
 *
 * Asking for one object at a time made the search wait a round trip
 * through the main thread's loop per object: for tens of thousands of
 * small objects (tags, trees) the waits were most of the search (9 s for
 * 90,000 tags). So an ask also names the objects the search will visit
 * next, up to READ_AHEAD of them and READ_AHEAD_BYTES: objects that are
 * not stored whole in a pack (those are the targets, loaded whenever one
 * of their pairs is tried; an object stored whole may never be read at
 * all). They come back in one message. What was read ahead and not taken
 * is dropped once the search has gone past it.
 *
 * Messages in:  { kind: 'start', meta, opts } (meta: ./search-worker-meta.ts, transferred),
 *               { kind: 'data', ids, ends, blob } (the answer to a load: objects back to back, transferred)
 * Messages out: { kind: 'load', ids } (the first one is the object wanted now),
 *               { kind: 'progress', done, total } (at most one per PROGRESS_MS, and the last),
 *               { kind: 'done', bases, sizes, depths, starts, blob, stats }
 *               (deltas back to back in `blob`, transferred; starts[i] -1 when not kept),
 *               { kind: 'error', code?, message }
 */
import { parentPort } from 'node:worker_threads';
import { GitwireError } from '../../../errors.js';
import { Slicer } from '../../../util/budget.js';
import { STORED_WHOLE, metaObjects, type WorkerMeta, type WorkerOptions } from './search-worker-meta.js';
import { newDeltaStats, searchDeltas } from './search.js';

/**
 * progress goes to the main thread at most this often: a message per
 * object was a task on the loop per object
 */
const PROGRESS_MS = 50;
/** objects named ahead in one ask, and the most bytes of them */
const READ_AHEAD = 64;
const READ_AHEAD_BYTES = 1024 * 1024;

/** asks waiting for their answer, by the id of the object wanted */
const waiting = new Map<number, (data: Buffer) => void>();

class Reader {
  /** place of each object in the visiting order (-1: not visited) */
  private place: Int32Array;
  private order: Uint32Array = new Uint32Array(0);
  /** read ahead, not taken yet */
  private readonly ahead = new Map<number, Buffer>();
  /** asked for and not come yet */
  private readonly asked = new Set<number>();
  /** the place past the furthest object asked for (an object read again, evicted from the window, reads nothing ahead again) */
  private next = 0;

  constructor(private readonly meta: WorkerMeta) {
    this.place = new Int32Array(meta.types.length).fill(-1);
  }

  setOrder(order: Uint32Array): void {
    this.order = order;
    for (let k = 0; k < order.length; k++) this.place[order[k]!] = k;
  }

  load(i: number): Promise<Buffer> {
    // asked for ahead already: wait for that answer
    if (this.asked.has(i)) return new Promise<Buffer>((resolve) => { waiting.set(i, resolve); });
    const got = this.ahead.get(i);
    const at = this.place[i]!;
    // what the search has gone past will not be asked for as a target again
    for (const j of this.ahead.keys()) if (this.place[j]! < at - READ_AHEAD) this.ahead.delete(j);
    if (got) {
      this.ahead.delete(i);
      return Promise.resolve(got);
    }
    const ids = [i];
    let bytes = this.meta.sizes[i]!;
    if (at >= 0) {
      let k = Math.max(at + 1, this.next);
      for (; k < this.order.length && ids.length < READ_AHEAD; k++) {
        const j = this.order[k]!;
        if (this.meta.flags[j]! & STORED_WHOLE || this.ahead.has(j) || this.asked.has(j)) continue;
        bytes += this.meta.sizes[j]!;
        if (bytes > READ_AHEAD_BYTES) break;
        ids.push(j);
      }
      this.next = Math.max(this.next, k, at + 1);
    }
    for (const j of ids) this.asked.add(j);
    return new Promise<Buffer>((resolve) => {
      waiting.set(i, resolve);
      parentPort!.postMessage({ kind: 'load', ids });
    });
  }

  /** an answer: the object wanted now to its waiter, the rest kept */
  took(ids: Int32Array, ends: Float64Array, blob: Uint8Array): void {
    const all = Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
    let from = 0;
    for (let k = 0; k < ids.length; k++) {
      const j = ids[k]!;
      const data = all.subarray(from, ends[k]!);
      from = ends[k]!;
      this.asked.delete(j);
      const resolve = waiting.get(j);
      if (resolve) { waiting.delete(j); resolve(data); } else this.ahead.set(j, data);
    }
  }
}

let reader: Reader | undefined;

function start(meta: WorkerMeta, opts: WorkerOptions): void {
  const r = reader = new Reader(meta);
  const objs = metaObjects(meta, (i) => r.load(i));
  const stats = newDeltaStats();
  // (the first goes at once: the caller learns the search is under way)
  let said = -Infinity;
  searchDeltas(objs, {
    ...opts, stats,
    // nothing else runs on this thread: no need to give it away
    slicer: new Slicer(60_000),
    onOrder: (order) => r.setOrder(order),
    onProgress: (done, total) => {
      const now = performance.now();
      if (done < total && now - said < PROGRESS_MS) return;
      said = now;
      parentPort!.postMessage({ kind: 'progress', done, total });
    },
  }).then((choices) => {
    const n = choices.length;
    const bases = new Int32Array(n).fill(-1);
    const sizes = new Float64Array(n);
    const depths = new Uint16Array(n);
    const starts = new Float64Array(n + 1).fill(-1);
    let bytes = 0;
    for (const c of choices) if (c?.delta) bytes += c.delta.length;
    const blob = new Uint8Array(bytes);
    let at = 0;
    choices.forEach((c, i) => {
      if (!c) return;
      bases[i] = c.base;
      sizes[i] = c.deltaSize;
      depths[i] = c.depth;
      if (c.delta) { starts[i] = at; blob.set(c.delta, at); at += c.delta.length; }
    });
    parentPort!.postMessage({ kind: 'done', bases, sizes, depths, starts, blob, stats }, [bases.buffer, sizes.buffer, depths.buffer, starts.buffer, blob.buffer]);
  }, (e: unknown) => {
    parentPort!.postMessage({ kind: 'error', code: e instanceof GitwireError ? e.code : undefined, message: e instanceof Error ? e.message : String(e) });
  });
}

parentPort?.on('message', (m: { kind: 'start'; meta: WorkerMeta; opts: WorkerOptions } | { kind: 'data'; ids: Int32Array; ends: Float64Array; blob: Uint8Array }) => {
  if (m.kind === 'start') return start(m.meta, m.opts);
  reader?.took(m.ids, m.ends, m.blob);
});
