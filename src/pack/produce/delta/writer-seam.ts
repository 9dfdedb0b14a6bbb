/**
 * The window search (./search.ts) as the pack writer's DeltaSearch
 * (../write/delta-seam.ts): the objects the writer would send whole go
 * through git's window, with git's knobs read from the repository's config
 * (pack.window, pack.depth, pack.windowMemory, pack.deltaCacheSize,
 * core.bigFileThreshold), bounded by this server's defaults where git has
 * none. Large batches run on a worker thread.
 */
import type { Config } from '../../../repo/config.js';
import type { Slicer } from '../../../util/budget.js';
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

/** one tag for every entry reused whole, whatever its pack (cross-pack pairs of them are not tried either) */
const STORED = {};

export function windowSearch(o: WindowSearchOptions): DeltaSearch {
  const k = knobs(o.config);
  return async (input) => {
    const { candidates } = input;
    const bases = input.readBase ? input.bases ?? [] : [];
    // entries stored whole in their pack are not tried against each other (git: the repack that wrote them found no delta)
    const objs: DeltaObject[] = candidates.map((c) => ({
      type: c.type, size: c.size, nameHash: c.name, load: () => input.read(c.entry), ...(c.reused ? { storedWhole: true, inPack: STORED } : {}),
    }));
    for (const b of bases) objs.push({ type: b.type, size: b.size, nameHash: b.name, load: () => input.readBase!(b.oid), preferredBase: true });
    const total = candidates.length;
    // large batches go to a worker thread, small ones stay on the loop, sliced (./search-thread.ts)
    const choices = await searchDeltasThreaded(objs, {
      ...k, hashLen: o.hashLen, slicer: o.slicer, signal: input.signal,
      onProgress: input.onProgress ? (done) => input.onProgress!(Math.min(done, total)) : undefined,
    });
    const out: SearchedDelta[] = [];
    choices.forEach((ch, i) => {
      if (!ch) return;
      if (i >= candidates.length) return; // a preferred base is never given a delta
      const target = candidates[i]!;
      const pbase = ch.base >= candidates.length ? bases[ch.base - candidates.length]! : undefined;
      const base = pbase ? { oid: pbase.oid } : { entry: candidates[ch.base]!.entry };
      // a delta dropped from the search's bounded cache is made again (the encoder gives the same bytes)
      const delta = ch.delta ?? createDelta(pbase ? input.readBase!(pbase.oid) : input.read(candidates[ch.base]!.entry), input.read(target.entry));
      if (delta) out.push({ entry: target.entry, base, delta });
    });
    return out;
  };
}
