/**
 * Which bitmap a repository's requests use, as git's open_bitmap() picks
 * it: a multi-pack index's bitmap (`multi-pack-index-<checksum>.bitmap`)
 * in any object directory first, else the first pack that has a .bitmap.
 * A file that cannot be used is skipped with git's message; the next one
 * is tried.
 *
 * The files found are remembered per object database until its pack scan
 * changes; the loaded bitmaps live in the resident cache.
 */
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ObjectDatabase, Source } from '../../repo/odb.js';
import type { PackFile } from '../../repo/pack.js';
import { Slicer } from '../../util/budget.js';
import { BitmapIndex, type BoundBitmap, type Pause } from './bitmap-index.js';
import { BitmapCorrupt } from './corrupt.js';
import { residentBitmaps, type ResidentEntry } from './resident.js';

interface Candidate {
  kind: 'pack' | 'midx';
  path: string;
  src: Source;
  pack?: PackFile;
  /** path and stat identity */
  key: string;
}

const found = new WeakMap<ObjectDatabase, { stamp: string; list: Candidate[] }>();

function scanStamp(odb: ObjectDatabase): string {
  return odb.sources.map((s) => `${s.scanStamp}:${s.midxStamp}:${s.packs.length}`).join('|');
}

function keyOf(path: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    return `${path}\0${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return undefined;
  }
}

function candidates(odb: ObjectDatabase): Candidate[] {
  const stamp = scanStamp(odb);
  const hit = found.get(odb);
  if (hit && hit.stamp === stamp) return hit.list;
  const list: Candidate[] = [];
  for (const src of odb.sources) {
    let path: string;
    try {
      const midx = src.midx;
      if (!midx) continue;
      path = join(src.objectsDir, 'pack', `multi-pack-index-${midx.checksum().toString('hex')}.bitmap`);
    } catch { continue; } // a midx that cannot be read has no bitmap to use
    const key = keyOf(path);
    if (key) list.push({ kind: 'midx', path, src, key });
  }
  for (const src of odb.sources) {
    for (const pack of src.packs) {
      if (!pack.packPath.endsWith('.pack')) continue;
      const path = `${pack.packPath.slice(0, -5)}.bitmap`;
      if (!existsSync(path)) continue;
      const key = keyOf(path);
      if (key) list.push({ kind: 'pack', path, src, pack, key });
    }
  }
  found.set(odb, { stamp, list });
  return list;
}

async function load(c: Candidate, pause: Pause): Promise<{ index?: BitmapIndex; failure?: string }> {
  try {
    const buf = readFileSync(c.path);
    if (c.kind === 'pack') return { index: await BitmapIndex.forPack(c.pack!, buf, c.path, pause, residentBitmaps.light) };
    const midx = c.src.midx;
    if (!midx) return { failure: `warning: cannot open '${c.path}'` };
    return { index: await BitmapIndex.forMidx(midx, buf, c.path, (name) => {
      const p = c.src.byIdx.get(name);
      if (!p || !c.src.packs.includes(p)) return undefined;
      try { void p.size; void p.index.count; } catch { return undefined; }
      return p;
    }, pause) };
  } catch (e) {
    if (e instanceof BitmapCorrupt) return { failure: e.line };
    return { failure: `error: ${(e as Error).message}` };
  }
}

/**
 * The bitmap requests of `odb` use, bound to its packs; undefined when
 * there is none that can be used. `warn` gets git's line for each file
 * skipped because it is damaged. A load gives the event loop away on
 * `slicer` between its steps.
 */
export async function openBitmap(odb: ObjectDatabase, warn: (line: string) => void = () => {}, slicer: Slicer = new Slicer()): Promise<{ bound: BoundBitmap; entry: ResidentEntry } | undefined> {
  const pause: Pause = () => slicer.due();
  for (const c of candidates(odb)) {
    const entry = await residentBitmaps.get(c.key, odb, () => load(c, pause));
    if (!entry.index) { if (entry.failure) warn(entry.failure); continue; }
    if (entry.index.file.damaged) { warn(entry.index.file.damaged.line); continue; }
    const bound = entry.index.bind(c.src);
    if (bound) return { bound, entry };
  }
  return undefined;
}
