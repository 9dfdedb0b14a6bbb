/**
 * Partial-clone filter specs (`filter <spec>`), parsed and checked against
 * `uploadpackfilter.*` with git's wording.
 */
import { GitwireError } from '../errors.js';
import type { Config } from '../repo/config.js';
import { parseBool } from '../repo/config.js';

export type FilterChoice = 'blob:none' | 'blob:limit' | 'tree' | 'sparse:oid' | 'object:type' | 'combine';

export interface FilterSpec {
  choice: FilterChoice;
  /** normalised spec as passed to pack-objects (`--filter=…`) */
  spec: string;
  treeDepth?: number;
  subs?: FilterSpec[];
}

const fail = (msg: string) => new GitwireError('GW_PROTOCOL', msg);
const RESERVED = '~`!@#$^&*()[]{}\\;\'",<>?';

function parseUlong(s: string): number | undefined {
  const m = /^(\d+)([kKmMgG]?)$/.exec(s);
  if (!m) return undefined;
  const u = m[2]!.toLowerCase();
  return Number(m[1]) * (u === 'k' ? 1024 : u === 'm' ? 1024 ** 2 : u === 'g' ? 1024 ** 3 : 1);
}

export function parseFilter(arg: string): FilterSpec {
  if (arg === 'blob:none') return { choice: 'blob:none', spec: arg };
  if (arg.startsWith('blob:limit=')) {
    const n = parseUlong(arg.slice(11));
    if (n !== undefined) return { choice: 'blob:limit', spec: `blob:limit=${n}` };
  } else if (arg.startsWith('tree:')) {
    const n = parseUlong(arg.slice(5));
    if (n === undefined) throw fail("expected 'tree:<depth>'");
    return { choice: 'tree', spec: `tree:${n}`, treeDepth: n };
  } else if (arg.startsWith('sparse:oid=')) {
    return { choice: 'sparse:oid', spec: arg };
  } else if (arg.startsWith('sparse:path=')) {
    throw fail('sparse:path filters support has been dropped');
  } else if (arg.startsWith('object:type=')) {
    const t = arg.slice(12);
    if (!['blob', 'tree', 'commit', 'tag'].includes(t)) throw fail(`'${t}' for 'object:type=<type>' is not a valid object type`);
    return { choice: 'object:type', spec: arg };
  } else if (arg.startsWith('combine:')) {
    const rest = arg.slice(8);
    if (!rest) throw fail('expected something after combine:');
    const subs = rest.split('+').map((sub) => {
      for (const c of sub) if (c <= ' ' || RESERVED.includes(c)) throw fail(`must escape char in sub-filter-spec: '${c}'`);
      return parseFilter(decodeURIComponent(sub));
    });
    return { choice: 'combine', spec: arg, subs };
  }
  throw fail(`invalid filter-spec '${arg}'`);
}

/** uploadpackfilter.allow, uploadpackfilter.<name>.allow, uploadpackfilter.tree.maxDepth */
export class FilterPolicy {
  fallback = true;
  allowed = new Map<string, boolean>();
  treeMaxDepth = Number.MAX_SAFE_INTEGER;

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
        p.allowed.set('tree', true);
        p.treeMaxDepth = Number(e.value);
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
