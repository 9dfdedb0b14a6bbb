/**
 * The window search (./search.ts) as the pack writer's DeltaSearch
 * (../write/delta-seam.ts): the objects the writer would send whole go
 * through git's window, with git's knobs read from the repository's config
 * (pack.window, pack.depth, pack.windowMemory, pack.deltaCacheSize,
 * core.bigFileThreshold), bounded by this server's defaults where git has
 * none. Large batches run on a worker thread.
 */
import type { Config } from '../../../repo/config.js';
import { Slicer } from '../../../util/budget.js';
import type { DeltaSearch, SearchedDelta } from '../write/delta-seam.js';
import { createDelta } from './create-delta.js';
import { DELTA_DEFAULTS, type DeltaObject, type DeltaSearchOptions } from './search.js';
import { searchDeltasThreaded } from './search-thread.js';

export interface WindowSearchOptions {
  hashLen: number;
  slicer?: Slicer;
  /** the repository's config, for git's pack.* knobs */
  config?: Config;
}

/** git's knobs from config; a server keeps its own bounds on memory whatever the config asks. */
function knobs(config: Config | undefined): Pick<DeltaSearchOptions, 'window' | 'depth' | 'windowMemory' | 'deltaCacheSize' | 'bigFileThreshold'> {
  const num = (key: string, def: number, max: number) => {
    if (!config || config.get(key) === undefined) return def;
    const v = config.getInt(key, def);
    return v > 0 ? Math.min(v, max) : def;
  };
  return {
    window: num('pack.window', DELTA_DEFAULTS.window, 250),
    depth: Math.min(num('pack.depth', DELTA_DEFAULTS.depth, 4095), 4095),
    windowMemory: num('pack.windowmemory', DELTA_DEFAULTS.windowMemory, DELTA_DEFAULTS.windowMemory),
    deltaCacheSize: num('pack.deltacachesize', DELTA_DEFAULTS.deltaCacheSize, DELTA_DEFAULTS.deltaCacheSize),
    bigFileThreshold: num('core.bigfilethreshold', DELTA_DEFAULTS.bigFileThreshold, DELTA_DEFAULTS.bigFileThreshold),
  };
}

export function windowSearch(o: WindowSearchOptions): DeltaSearch {
  const k = knobs(o.config);
  return async (input) => {
    const { candidates } = input;
    const bases = input.readBase ? input.bases ?? [] : [];
    // an entry stored whole is not tried against others of its pack (git: the repack that wrote them found no delta)
    const objs: DeltaObject[] = candidates.map((c) => ({
      type: c.type, size: c.size, nameHash: c.name, load: () => input.read(c.entry), inPack: c.pack, storedWhole: c.reused,
    }));
    for (const b of bases) objs.push({ type: b.type, size: b.size, nameHash: b.name, load: () => input.readBase!(b.oid), preferredBase: true });
    const total = candidates.length;
    // large batches go to a worker thread, small ones stay on the loop, sliced (./search-thread.ts)
    const choices = await searchDeltasThreaded(objs, {
      ...k, hashLen: o.hashLen, slicer: o.slicer, signal: input.signal,
      onProgress: input.onProgress ? (done) => input.onProgress!(Math.min(done, total)) : undefined,
    });
    const out: SearchedDelta[] = [];
    const slicer = o.slicer ?? new Slicer();
    // (a preferred base, past the candidates, is never given a delta)
    for (let i = 0; i < candidates.length; i++) {
      const ch = choices[i];
      if (!ch) continue;
      const target = candidates[i]!;
      const pbase = ch.base >= candidates.length ? bases[ch.base - candidates.length]! : undefined;
      const base = pbase ? { oid: pbase.oid } : { entry: candidates[ch.base]!.entry };
      let delta = ch.delta;
      if (!delta) {
        // a delta dropped from the search's bounded cache is made again (the encoder gives the same bytes),
        // each a step of its own on the loop
        const p = slicer.due();
        if (p) await p;
        input.signal?.throwIfAborted();
        delta = createDelta(pbase ? input.readBase!(pbase.oid) : input.read(candidates[ch.base]!.entry), input.read(target.entry));
      }
      if (delta) out.push({ entry: target.entry, base, delta });
    }
    return out;
  };
}
