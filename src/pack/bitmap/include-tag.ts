/**
 * `--include-tag` over a bitmap result: pack-objects' add_ref_tag, the
 * same rule as the walk's (../produce/enumerate/include-tag.ts), with the
 * bitmap as the list of packed objects.
 */
import { ObjType } from '../../repo/object-type.js';
import type { Repository } from '../../repo/repository.js';
import type { Slicer } from '../../util/budget.js';
import { includeTags as addRefTags } from '../produce/enumerate/include-tag.js';
import type { Bitset } from './bitset.js';
import type { Positions } from './positions.js';

export async function includeTags(repo: Repository, pos: Positions, result: Bitset, slicer: Slicer, signal?: AbortSignal): Promise<void> {
  await addRefTags(repo, {
    isPacked: (oid) => { const p = pos.of(oid); return p >= 0 && result.get(p); },
    addTag: (oid) => { result.set(pos.ofOrAdd(oid, ObjType.Tag, 0)); },
  }, async () => {
    const t = slicer.tick();
    if (t) { await t; signal?.throwIfAborted(); }
  }, slicer);
}
