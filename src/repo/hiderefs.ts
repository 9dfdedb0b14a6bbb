/**
 * Hidden refs (`transfer.hideRefs`, `uploadpack.hideRefs`) with git's rules,
 * and ref namespaces (`GIT_NAMESPACE`).
 */
import type { Config } from './config.js';

export class HideRefs {
  private readonly rules: Array<{ neg: boolean; full: boolean; pat: Buffer }>;
  constructor(patterns: string[]) {
    this.rules = patterns.map((p) => {
      let neg = false, full = false;
      if (p.startsWith('!')) { neg = true; p = p.slice(1); }
      if (p.startsWith('^')) { full = true; p = p.slice(1); }
      return { neg, full, pat: Buffer.from(p) };
    });
  }

  /** From config, for `section` ('uploadpack'): transfer.hiderefs and <section>.hiderefs in config order. */
  static fromConfig(config: Config, section: string): HideRefs {
    const pats: string[] = [];
    const own = `${section}.hiderefs`;
    for (const e of config.each()) {
      if (e.key === 'transfer.hiderefs' || e.key === own) {
        if (e.value === null) continue;
        pats.push(e.value.replace(/\/+$/, ''));
      }
    }
    return new HideRefs(pats);
  }

  get empty(): boolean { return this.rules.length === 0; }

  /** isHidden() on a region: the stripped name is buf[strippedAt..end], the full name buf[fullAt..end]. */
  isHiddenRegion(buf: Buffer, strippedAt: number, fullAt: number, end: number): boolean {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const r = this.rules[i]!;
      const at = r.full ? fullAt : strippedAt;
      const n = r.pat.length;
      if (end - at < n) continue;
      if (buf.compare(r.pat, 0, n, at, at + n) !== 0) continue;
      if (end - at === n || buf[at + n] === 0x2f) return !r.neg;
    }
    return false;
  }

  /**
   * ref_is_hidden(): `name` is the namespace-stripped name, `full` the name
   * with the namespace prefix.
   */
  isHidden(name: Buffer | undefined, full: Buffer): boolean {
    for (let i = this.rules.length - 1; i >= 0; i--) {
      const r = this.rules[i]!;
      const subject = r.full ? full : name;
      if (!subject) continue;
      const n = r.pat.length;
      if (subject.length < n) continue;
      if (subject.compare(r.pat, 0, n, 0, n) !== 0) continue;
      if (subject.length === n || subject[n] === 0x2f) return !r.neg;
    }
    return false;
  }
}

/** `GIT_NAMESPACE=a/b` → `refs/namespaces/a/refs/namespaces/b/`. */
export function namespacePrefix(ns: string | undefined): string {
  if (!ns) return '';
  const parts = ns.split('/').filter((p) => p.length > 0);
  return parts.map((p) => `refs/namespaces/${p}/`).join('');
}
