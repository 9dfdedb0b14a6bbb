/**
 * `--include-tag`: after the walk, every annotated tag under refs/tags/
 * whose peeled object is in the pack is added, with the tags it points
 * through (pack-objects' add_ref_tag / add_tag_chain). It does not ask
 * whether the client has the tag: a tag the client sent as a have is
 * added all the same when what it peels to is packed, as git does.
 */
import { GitwireError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import { parseTag } from '../../../repo/objects.js';
import type { Repository } from '../../../repo/repository.js';
import type { Slicer } from '../../../util/budget.js';

export interface TagSink {
  /** is the object in the pack's list? */
  isPacked(oid: Buffer): boolean;
  /** add a tag object to the list (a duplicate is dropped) */
  addTag(oid: Buffer): void;
}

/** add_tag_chain() */
function addChain(repo: Repository, start: Buffer, sink: TagSink): void {
  if (sink.isPacked(start)) return;
  let oid = start;
  for (let i = 0; ; i++) {
    const o = i < 1000 ? repo.odb.read(oid) : undefined;
    if (!o || o.type !== ObjType.Tag) throw new GitwireError('GW_OBJECT_CORRUPT', `unable to pack objects reachable from tag ${start.toString('hex')}`);
    const t = parseTag(o.data, repo.hashLen);
    sink.addTag(oid);
    if (t.type !== ObjType.Tag) return;
    oid = t.object;
  }
}

/**
 * Every tag ref (in name order) that peels to a packed object, added with
 * its chain. The refs are read ahead on `slicer` first: 50,000 loose tags
 * listed at once held the loop 1.2 s.
 */
export async function includeTags(repo: Repository, sink: TagSink, pause: () => Promise<void>, slicer: Slicer): Promise<void> {
  await repo.refs.prepare(slicer);
  for (const ref of repo.refs.iterate('refs/tags/')) {
    await pause();
    const oid = ref.oid();
    if (oid.length !== repo.hashLen) continue;
    const known = ref.peeled;
    let peeled: Buffer | undefined;
    if (known) peeled = Buffer.from(known.toString('latin1'), 'hex');
    else peeled = repo.peel(oid);
    if (!peeled || !sink.isPacked(peeled)) continue;
    addChain(repo, oid, sink);
  }
}
