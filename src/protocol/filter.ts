/**
 * Partial-clone filter specs (`filter <spec>`), parsed and checked against
 * `uploadpackfilter.*` with git's wording.
 */
import { GitwireError, protocolError } from '../errors.js';
import type { Config, ConfigEntry } from '../repo/config.js';
import { parseBool } from '../repo/config.js';
import { parseUlong } from '../util/ulong.js';

export type FilterChoice = 'blob:none' | 'blob:limit' | 'tree' | 'sparse:oid' | 'object:type' | 'combine';

export interface FilterSpec {
  choice: FilterChoice;
  /** normalised spec as passed to pack-objects (`--filter=…`) */
  spec: string;
  treeDepth?: bigint;
  subs?: FilterSpec[];
}

const RESERVED = '~`!@#$^&*()[]{}\\;\'",<>?';

export function parseFilter(arg: string): FilterSpec {
  if (arg === 'blob:none') return { choice: 'blob:none', spec: arg };
  if (arg.startsWith('blob:limit=')) {
    // git_parse_ulong: base 0, a k/m/g unit, at most 2^64-1 after the unit (else the spec is invalid)
    const n = parseUlong(arg.slice(11));
    if (n !== undefined) return { choice: 'blob:limit', spec: `blob:limit=${n}` };
  } else if (arg.startsWith('tree:')) {
    const n = parseUlong(arg.slice(5));
    if (n === undefined) throw protocolError("expected 'tree:<depth>'");
    return { choice: 'tree', spec: `tree:${n}`, treeDepth: n };
  } else if (arg.startsWith('sparse:oid=')) {
    return { choice: 'sparse:oid', spec: arg };
  } else if (arg.startsWith('sparse:path=')) {
    throw protocolError('sparse:path filters support has been dropped');
  } else if (arg.startsWith('object:type=')) {
    const t = arg.slice(12);
    if (!['blob', 'tree', 'commit', 'tag'].includes(t)) throw protocolError(`'${t}' for 'object:type=<type>' is not a valid object type`);
    return { choice: 'object:type', spec: arg };
  } else if (arg.startsWith('combine:')) {
    const rest = arg.slice(8);
    if (!rest) throw protocolError('expected something after combine:');
    const subs = rest.split('+').map((sub) => {
      for (const c of sub) if (c <= ' ' || RESERVED.includes(c)) throw protocolError(`must escape char in sub-filter-spec: '${c}'`);
      // url_percent_decode(): a bad escape stays as it is
      let decoded: string;
      try { decoded = decodeURIComponent(sub); } catch { decoded = sub; }
      return parseFilter(decoded);
    });
    return { choice: 'combine', spec: arg, subs };
  }
  throw protocolError(`invalid filter-spec '${arg}'`);
}

/**
 * git_parse_ulong(): strtoumax in base 0 (hex, octal), an optional k/m/g
 * unit, no sign; 'invalid unit' or 'out of range' as git says.
 */
export function parseConfigUlong(v: string): bigint | 'invalid unit' | 'out of range' {
  if (v.includes('-')) return 'invalid unit';
  const m = /^[ \t\n\v\f\r]*\+?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)(.*)$/s.exec(v);
  if (!m) return 'invalid unit';
  const digits = m[1]!;
  const val = BigInt(digits.length > 1 && digits[0] === '0' && digits[1] !== 'x' && digits[1] !== 'X' ? `0o${digits.slice(1)}` : digits);
  const max = (1n << 64n) - 1n;
  if (val > max) return 'out of range';
  const u = m[2]!.toLowerCase();
  const factor = u === '' ? 1n : u === 'k' ? 1024n : u === 'm' ? 1024n ** 2n : u === 'g' ? 1024n ** 3n : 0n;
  if (!factor) return 'invalid unit';
  if (val * factor > max) return 'out of range';
  return val * factor;
}

/** The file name git names in config errors (it reads the repository's config as `config`). */
function configFile(e: ConfigEntry): string {
  return e.scope === 'local' ? 'config' : e.scope === 'worktree' ? 'config.worktree' : e.origin;
}

/** uploadpackfilter.allow, uploadpackfilter.<name>.allow, uploadpackfilter.tree.maxDepth */
export class FilterPolicy {
  fallback = true;
  allowed = new Map<string, boolean>();
  treeMaxDepth = (1n << 64n) - 1n;

  /** Read the policy; bad values die with git's wording, as upload-pack does at start. */
  static fromConfig(config: Config): FilterPolicy {
    const p = new FilterPolicy();
    for (const e of config.each()) {
      if (!e.key.startsWith('uploadpackfilter.')) continue;
      const rest = e.key.slice('uploadpackfilter.'.length);
      const dot = rest.lastIndexOf('.');
      if (dot < 0) {
        if (rest === 'allow') p.fallback = parseBool(e.value, e.key);
        continue;
      }
      const sub = rest.slice(0, dot), key = rest.slice(dot + 1);
      if (key === 'allow') p.allowed.set(sub, parseBool(e.value, e.key));
      else if (sub === 'tree' && key === 'maxdepth') {
        const cmdline = e.scope === 'command';
        if (e.value === null) {
          // config_error_nonbool(), then git_die_config_linenr()
          throw new GitwireError('GW_CONFIG', cmdline
            ? `unable to parse '${e.key}' from command-line config`
            : `bad config variable '${e.key}' in file '${configFile(e)}' at line ${e.line ?? 0}`, { errors: [`missing value for '${e.key}'`] });
        }
        const n = parseConfigUlong(e.value);
        if (typeof n === 'string') {
          throw new GitwireError('GW_CONFIG', `bad numeric config value '${e.value}' for '${e.key}'${cmdline ? '' : ` in file ${configFile(e)}`}: ${n}`);
        }
        p.allowed.set('tree', true);
        p.treeMaxDepth = n;
      }
    }
    return p;
  }

  /** Error message for a banned filter (git's wording), or undefined. */
  check(f: FilterSpec): string | undefined {
    const allowed = this.allowed.get(f.choice) ?? this.fallback;
    if (!allowed) return `filter '${f.choice}' not supported`;
    if (f.choice === 'tree' && f.treeDepth! > this.treeMaxDepth) {
      return `tree filter allows max depth ${this.treeMaxDepth}, but got ${f.treeDepth}`;
    }
    for (const s of f.subs ?? []) {
      const m = this.check(s);
      if (m) return m;
    }
    return undefined;
  }
}
