/**
 * The worker thread a large delta search runs on (see ./search-thread.ts).
 * It holds the window; objects come from the main thread one at a time,
 * as the search asks for them.
 *
 * Messages in:  { kind: 'start', meta, opts }, { kind: 'data', i, data } (the answer to a load)
 * Messages out: { kind: 'load', i }, { kind: 'progress', done, total },
 *               { kind: 'done', bases, sizes, depths, starts, blob, stats }
 *               (deltas back to back in `blob`, transferred; starts[i] -1 when not kept),
 *               { kind: 'error', code?, message }
 */
import { parentPort } from 'node:worker_threads';
import { GitwireError } from '../../../errors.js';
import { Slicer } from '../../../util/budget.js';
import { newDeltaStats, searchDeltas, type DeltaObject, type DeltaSearchOptions } from './search.js';

/** what crosses to the worker of each object (no load function) */
export interface WorkerMeta {
  type: number; size: number; nameHash: number;
  preferredBase?: boolean; childDepth?: number;
  /** which pack it is read from: a number per pack (-1: none) */
  pack: number; storedWhole?: boolean;
}

export type WorkerOptions = Omit<DeltaSearchOptions, 'signal' | 'slicer' | 'onProgress' | 'stats'>;

const waiting = new Map<number, (data: Buffer) => void>();

function start(meta: WorkerMeta[], opts: WorkerOptions): void {
  const packs = new Map<number, object>();
  const objs: DeltaObject[] = meta.map((m, i) => {
    let pack: object | undefined;
    if (m.pack >= 0) {
      pack = packs.get(m.pack);
      if (!pack) packs.set(m.pack, pack = {});
    }
    return {
      type: m.type, size: m.size, nameHash: m.nameHash, preferredBase: m.preferredBase, childDepth: m.childDepth,
      inPack: pack, storedWhole: m.storedWhole,
      load: () => new Promise<Buffer>((resolve) => { waiting.set(i, resolve); parentPort!.postMessage({ kind: 'load', i }); }),
    };
  });
  const stats = newDeltaStats();
  searchDeltas(objs, {
    ...opts, stats,
    // nothing else runs on this thread: no need to give it away
    slicer: new Slicer(60_000),
    onProgress: (done, total) => parentPort!.postMessage({ kind: 'progress', done, total }),
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

parentPort?.on('message', (m: { kind: 'start'; meta: WorkerMeta[]; opts: WorkerOptions } | { kind: 'data'; i: number; data: Uint8Array }) => {
  if (m.kind === 'start') return start(m.meta, m.opts);
  const resolve = waiting.get(m.i);
  waiting.delete(m.i);
  resolve?.(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
});
