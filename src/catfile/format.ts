/** cat-file batch formats, compiled once: literal parts and atoms. */
import { GitwireError } from '../errors.js';

export type Atom = 'objectname' | 'objecttype' | 'objectsize' | 'objectsize:disk' | 'rest' | 'deltabase' | 'objectmode';
export type Part = string | { atom: Atom };

const ATOMS = new Set<string>(['objectname', 'objecttype', 'objectsize', 'objectsize:disk', 'rest', 'deltabase', 'objectmode']);
export const DEFAULT_FORMAT = '%(objectname) %(objecttype) %(objectsize)';

export interface CompiledFormat {
  parts: Part[];
  needType: boolean;
  needSize: boolean;
  needDisk: boolean;
  needDelta: boolean;
  splitOnWhitespace: boolean;
  /** true when nothing but the name is needed (no object lookup) */
  nameOnly: boolean;
}

export function compileFormat(fmt: string): CompiledFormat {
  const parts: Part[] = [];
  let lit = '';
  let i = 0;
  while (i < fmt.length) {
    const pct = fmt.indexOf('%', i);
    if (pct < 0) { lit += fmt.slice(i); break; }
    lit += fmt.slice(i, pct);
    i = pct + 1;
    if (fmt[i] === '%') { lit += '%'; i++; continue; }
    if (fmt[i] !== '(') { lit += '%'; continue; }
    // strbuf_expand_bad_format() wording (git 2.44+)
    const end = fmt.indexOf(')', i + 1);
    if (end < 0) throw new GitwireError('GW_USAGE', `bad cat-file format: element '${fmt.slice(i)}' does not end in ')'`);
    const name = fmt.slice(i + 1, end);
    if (!ATOMS.has(name)) throw new GitwireError('GW_USAGE', `bad cat-file format: %${fmt.slice(i, end + 1)}`);
    if (lit) { parts.push(lit); lit = ''; }
    parts.push({ atom: name as Atom });
    i = end + 1;
  }
  if (lit) parts.push(lit);
  const has = (a: Atom) => parts.some((p) => typeof p !== 'string' && p.atom === a);
  const needType = has('objecttype'), needSize = has('objectsize'), needDisk = has('objectsize:disk'), needDelta = has('deltabase');
  return {
    parts, needType, needSize, needDisk, needDelta,
    splitOnWhitespace: has('rest'),
    nameOnly: !needType && !needSize && !needDisk && !needDelta,
  };
}
