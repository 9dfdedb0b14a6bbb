/**
 * Replace refs (`refs/replace/<oid>` → replacement), as git's
 * lookup_replace_object(): followed up to 5 deep, turned off by
 * GIT_NO_REPLACE_OBJECTS or core.useReplaceRefs=false; the base comes from
 * GIT_REPLACE_REF_BASE.
 */
import type { Repository } from './repository.js';
import { listRefs } from './ref-list.js';
import { isHex } from './oid.js';
import { GitwireError } from '../errors.js';

const MAXREPLACEDEPTH = 5;

export class ReplaceMap {
  private map: Map<string, Buffer> | undefined;
  enabled: boolean;

  constructor(readonly repo: Repository) {
    const env = repo.env;
    this.enabled = env.GIT_NO_REPLACE_OBJECTS === undefined && repo.config.getBool('core.usereplacerefs', true);
  }

  private load(): Map<string, Buffer> {
    if (this.map) return this.map;
    const base = this.repo.env.GIT_REPLACE_REF_BASE || 'refs/replace/';
    const map = new Map<string, Buffer>();
    const hexLen = this.repo.hexLen;
    for (const r of listRefs(this.repo.refs, base)) {
      const from = r.name.slice(base.length);
      if (!isHex(from, hexLen)) continue;
      map.set(from, Buffer.from(r.hex, 'hex'));
    }
    this.map = map;
    return map;
  }

  /** The object to read in place of `oid` (itself when not replaced). */
  lookup(oid: Buffer): Buffer {
    if (!this.enabled) return oid;
    const map = this.load();
    if (map.size === 0) return oid;
    let cur = oid;
    for (let depth = 0; ; depth++) {
      const next = map.get(cur.toString('hex'));
      if (!next) return cur;
      if (depth >= MAXREPLACEDEPTH) throw new GitwireError('GW_OBJECT_CORRUPT', `replace depth too high for object ${oid.toString('hex')}`);
      cur = next;
    }
  }
}
