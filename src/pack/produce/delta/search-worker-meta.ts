/**
 * What crosses to the delta search's worker thread (./search-worker.ts)
 * about each object: its fields column by column in typed arrays, which
 * are transferred, so the hand-over costs the loop nothing however many
 * objects there are. (An array of one object per entry was cloned on the
 * loop: ~230 ms for 90,000 of them.) The objects' contents go one at a
 * time, as the search asks for them.
 */
import type { DeltaObject, DeltaSearchOptions } from './search.js';

export const PREFERRED_BASE = 1;
export const STORED_WHOLE = 2;

export interface WorkerMeta {
  types: Uint8Array;
  sizes: Float64Array;
  names: Uint32Array;
  /** PREFERRED_BASE | STORED_WHOLE */
  flags: Uint8Array;
  childDepths: Uint16Array;
  /** which pack each is read from: a number per pack (-1: none) */
  packs: Int32Array;
}

export type WorkerOptions = Omit<DeltaSearchOptions, 'signal' | 'slicer' | 'onProgress' | 'stats' | 'onOrder'>;

/** The columns for `objs` (on the caller's thread). */
export function workerMeta(objs: readonly DeltaObject[]): WorkerMeta {
  const n = objs.length;
  const m: WorkerMeta = {
    types: new Uint8Array(n), sizes: new Float64Array(n), names: new Uint32Array(n),
    flags: new Uint8Array(n), childDepths: new Uint16Array(n), packs: new Int32Array(n),
  };
  const packIds = new Map<object, number>();
  for (let i = 0; i < n; i++) {
    const o = objs[i]!;
    let pack = -1;
    if (o.inPack) {
      pack = packIds.get(o.inPack) ?? packIds.size;
      packIds.set(o.inPack, pack);
    }
    m.types[i] = o.type;
    m.sizes[i] = o.size;
    m.names[i] = o.nameHash;
    m.flags[i] = (o.preferredBase ? PREFERRED_BASE : 0) | (o.storedWhole ? STORED_WHOLE : 0);
    m.childDepths[i] = Math.min(o.childDepth ?? 0, 0xffff);
    m.packs[i] = pack;
  }
  return m;
}

/** The buffers of `m`, to transfer. */
export function metaBuffers(m: WorkerMeta): ArrayBuffer[] {
  return [m.types.buffer, m.sizes.buffer, m.names.buffer, m.flags.buffer, m.childDepths.buffer, m.packs.buffer] as ArrayBuffer[];
}

/** The objects again (on the worker), each loaded through `load`. */
export function metaObjects(m: WorkerMeta, load: (i: number) => Promise<Buffer>): DeltaObject[] {
  const n = m.types.length;
  const packs = new Map<number, object>();
  const objs = new Array<DeltaObject>(n);
  for (let i = 0; i < n; i++) {
    let pack: object | undefined;
    const p = m.packs[i]!;
    if (p >= 0) {
      pack = packs.get(p);
      if (!pack) packs.set(p, pack = {});
    }
    const f = m.flags[i]!;
    objs[i] = {
      type: m.types[i]!, size: m.sizes[i]!, nameHash: m.names[i]!, childDepth: m.childDepths[i]! || undefined,
      preferredBase: (f & PREFERRED_BASE) !== 0 || undefined, storedWhole: (f & STORED_WHOLE) !== 0 || undefined, inPack: pack,
      load: () => load(i),
    };
  }
  return objs;
}
