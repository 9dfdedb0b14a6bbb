/**
 * What a bundle holds: the refs an anonymous fetch is shown. That is
 * upload-pack's view with no per-request filter and no namespace: HEAD and
 * every ref under `refs/`, less those `transfer.hideRefs` and
 * `uploadpack.hideRefs` hide (repo/hiderefs.ts, the rules upload-pack
 * applies). A request whose view is narrower (a refFilter, --auth-rules, a
 * namespace) is never offered the bundle (./offer.ts).
 *
 * The view's key names the hideRefs rules a bundle was made under: a
 * bundle made before the rules changed is not the current view's, and is
 * neither advertised nor served.
 */
import { createHash } from 'node:crypto';
import type { Repository } from '../repo/repository.js';
import { Slicer } from '../util/budget.js';
import type { BundleRef } from './header.js';

/** Refs a bundle may hold: printable, no space (a header line is `<oid> <name>`). */
const SAFE_NAME = /^[\x21-\x7e\x80-\uffff]+$/;

export interface ViewRefs {
  refs: BundleRef[];
  /** refs left out because their object is not in the repository (git's bundle create dies on them) */
  missing: string[];
}

/**
 * The refs of the anonymous view, HEAD first, then in name order. A
 * repository may have hundreds of thousands of refs, each looked up in the
 * object database: the scan gives the event loop away on `slicer`'s time
 * budget (util/budget.ts), as a ref advertisement does.
 */
export async function anonymousRefs(repo: Repository, slicer = new Slicer()): Promise<ViewRefs> {
  const hide = repo.hideRefs('uploadpack');
  const refs: BundleRef[] = [];
  const missing: string[] = [];
  const take = (name: string, hexBuf: Buffer | undefined) => {
    if (!hexBuf) return;
    if (!SAFE_NAME.test(name)) return;
    const hex = hexBuf.toString('latin1');
    if (!repo.odb.info(Buffer.from(hex, 'hex'))) { missing.push(name); return; }
    refs.push({ name, hex });
  };
  const head = repo.refs.head();
  if (!hide.isHidden(Buffer.from('HEAD'), Buffer.from('HEAD'))) take('HEAD', head.hex);
  for (const r of repo.refs.iterate('refs/')) {
    const due = slicer.tick();
    if (due) await due;
    if (hide.isHidden(r.name, r.name)) continue;
    take(r.name.toString('utf8'), r.hex);
  }
  return { refs, missing };
}

/** The anonymous view's key: the hideRefs rules in force, hashed (12 hex digits). */
export function viewKey(repo: Pick<Repository, 'config'>): string {
  const rules: string[] = [];
  for (const e of repo.config.each()) {
    if ((e.key === 'transfer.hiderefs' || e.key === 'uploadpack.hiderefs') && e.value !== null) rules.push(e.value);
  }
  return createHash('sha256').update(rules.join('\n')).digest('hex').slice(0, 12);
}
