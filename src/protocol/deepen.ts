/** deepen, deepen-since and deepen-not request lines (v0 and v2). */
import { GitwireError } from '../errors.js';
import type { UploadPackSession } from './session.js';

const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);

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

export function parseDeepenLine(s: UploadPackSession, line: string): boolean {
  if (line.startsWith('deepen ')) {
    const arg = line.slice(7);
    const n = /^(0x[0-9a-fA-F]+|0[0-7]*|[1-9]\d*)$/.test(arg) ? Number(arg.startsWith('0') && !arg.startsWith('0x') && arg.length > 1 ? parseInt(arg, 8) : arg) : NaN;
    if (!Number.isFinite(n) || n <= 0) throw die(`Invalid deepen: ${line}`);
    s.depth = n > 0x7fffffff ? 0x7fffffff : n;
    return true;
  }
  if (line.startsWith('deepen-since ')) {
    const arg = line.slice(13);
    if (!/^\d+$/.test(arg) || Number(arg) === 0) throw die(`Invalid deepen-since: ${line}`);
    s.deepenSince = Number(arg);
    s.deepenRevList = true;
    return true;
  }
  if (line.startsWith('deepen-not ')) {
    const arg = line.slice(11);
    // git resolves the name while parsing (process_deepen_not): exactly one ref must match
    const n = countRefMatches(s, arg);
    if (n > 1) throw die(`git upload-pack: ambiguous deepen-not: ${line}`);
    if (n < 1) throw die(`git upload-pack: deepen-not is not a ref: ${line}`);
    s.deepenNot.push(arg);
    s.deepenRevList = true;
    return true;
  }
  return false;
}
