/** A synchronous listing of refs under a prefix (loose shadowing packed), for small namespaces such as refs/replace/. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RefStore } from './refs.js';
import { isValidRefName } from './refs.js';

export interface ListedRef { name: string; hex: string }

export function listRefs(refs: RefStore, prefix: string): ListedRef[] {
  const out = new Map<string, string>();
  for (const r of refs.packedRefs(Buffer.from(prefix))) out.set(r.name.toString(), r.hex.toString('latin1'));
  const walk = (rel: string) => {
    let ents;
    try { ents = readdirSync(join(refs.commonDir, rel), { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      const name = `${rel}/${e.name}`;
      if (e.isDirectory()) { walk(name); continue; }
      if (!name.startsWith(prefix) || !isValidRefName(name)) continue;
      const v = refs.resolve(name);
      if (v?.hex) out.set(name, v.hex.toString('latin1'));
    }
  };
  walk(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix.slice(0, prefix.lastIndexOf('/')));
  return [...out].map(([name, hex]) => ({ name, hex })).sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)));
}
