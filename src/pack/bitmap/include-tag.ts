/**
 * `--include-tag` over a bitmap result (pack-objects' add_ref_tag): every
 * tag under refs/tags/ whose peeled object is in the pack is added, with
 * the tags it points through.
 */
import { GitwireError } from '../../errors.js';
import { ObjType } from '../../repo/object-type.js';
import { parseTag } from '../../repo/objects.js';
import { Peel } from '../../repo/refs/ref.js';
import type { Repository } from '../../repo/repository.js';
import type { Slicer } from '../../util/budget.js';
import type { Bitset } from './bitset.js';
import type { Positions } from './positions.js';

export async function includeTags(repo: Repository, pos: Positions, result: Bitset, slicer: Slicer, signal?: AbortSignal): Promise<void> {
  const has = (oid: Buffer) => { const p = pos.of(oid); return p >= 0 && result.get(p); };
  for (const r of repo.refs.iterate('refs/tags/')) {
    const t = slicer.tick();
    if (t) { await t; signal?.throwIfAborted(); }
    const oid = r.oid();
    const ph = r.peeled;
    const peeled = ph ? Buffer.from(ph.toString('latin1'), 'hex') : r.peel === Peel.None ? undefined : repo.peel(oid);
    if (!peeled || !has(peeled)) continue;
    if (has(oid)) continue;
    // the chain of tags down to the first non-tag
    let cur = oid;
    for (let depth = 0; depth < 100; depth++) {
      const o = repo.odb.read(cur);
      if (!o || o.type !== ObjType.Tag) throw new GitwireError('GW_OBJECT_CORRUPT', `unable to pack objects reachable from tag ${oid.toString('hex')}`);
      result.set(pos.ofOrAdd(cur, ObjType.Tag, 0));
      const t = parseTag(o.data, repo.hashLen);
      if (t.type !== ObjType.Tag) break;
      cur = t.object;
    }
  }
}
