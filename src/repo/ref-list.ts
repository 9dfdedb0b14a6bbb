/** A synchronous listing of refs under a prefix (loose shadowing packed), for small namespaces such as refs/replace/. */
import type { RefStore } from './refs/index.js';

export interface ListedRef { name: string; hex: string }

export function listRefs(refs: RefStore, prefix: string): ListedRef[] {
  const out: ListedRef[] = [];
  for (const r of refs.iterate(prefix)) out.push({ name: r.name.toString(), hex: r.hex.toString('latin1') });
  return out;
}
