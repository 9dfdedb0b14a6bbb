/** deepen-not: how many refs a name matches (the request table parses the deepen lines). */
import type { UploadPackSession } from './session.js';

/** git's ref_rev_parse_rules, as expand_ref() tries them */
const RULES = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];

/**
 * expand_ref(): how many of the rules name an existing ref. Every candidate
 * name is checked with check_refname_format before it touches the disk
 * (RefStore.resolve); refs a per-request refFilter hides do not exist here.
 */
export function countRefMatches(s: UploadPackSession, name: string): number {
  let n = 0;
  const filter = s.opts.refFilter;
  for (const r of RULES) {
    const full = r.replace('%s', name);
    const res = s.repo.refs.resolve(full);
    if (!res?.hex) continue;
    if (filter && (!filter(full) || !filter(res.target))) continue;
    n++;
  }
  return n;
}
