/**
 * cat-file's command line as git (v2.55) parses it: cat-file's option table
 * and option kinds (command modes, batch modes, --filter) over the shared
 * parse-options engine (cli/parse-options.ts), which also renders the
 * usage text; `validateCatFile` then applies cmd_cat_file's checks in git's
 * order. Nothing here touches the repository.
 */
import { parseFilterSpec, type ObjectFilter } from './filter.js';
import { UsageExit, parseOptions, renderUsage, optionError, optionWithArg, type OptSpec, type Parsed, type Usage } from '../cli/parse-options.js';

export { UsageExit };

type Kind = 'group' | 'cmdmode' | 'bool' | 'batch' | 'string' | 'filter' | 'alias';

interface CatOpt extends OptSpec {
  kind: Kind;
  /** the command-mode letter (OPT_CMDMODE) */
  mode?: CmdMode;
}

/** git's command modes: -e -p -t -s, --batch-all-objects ('b'), --textconv ('c'), --filters ('w') */
export type CmdMode = 'e' | 'p' | 't' | 's' | 'b' | 'c' | 'w';

/** The option table, in git's order (builtin/cat-file.c). */
export const CAT_FILE_OPTIONS: readonly CatOpt[] = [
  { kind: 'group', help: 'Check object existence or emit object contents' },
  { kind: 'cmdmode', noneg: true, short: 'e', help: 'check if <object> exists', mode: 'e' },
  { kind: 'cmdmode', noneg: true, short: 'p', help: 'pretty-print <object> content', mode: 'p' },
  { kind: 'group', help: 'Emit [broken] object attributes' },
  { kind: 'cmdmode', noneg: true, short: 't', help: "show object type (one of 'blob', 'tree', 'commit', 'tag', ...)", mode: 't' },
  { kind: 'cmdmode', noneg: true, short: 's', help: 'show object size', mode: 's' },
  { kind: 'bool', long: 'allow-unknown-type', help: 'historical option -- no-op', hidden: true },
  { kind: 'bool', long: 'use-mailmap', help: 'use mail map file' },
  { kind: 'alias', long: 'mailmap', target: 'use-mailmap', help: '' },
  { kind: 'group', help: 'Batch objects requested on stdin (or --batch-all-objects)' },
  { kind: 'batch', takesArg: true, long: 'batch', argh: 'format', help: 'show full <object> or <rev> contents', optarg: true, noneg: true },
  { kind: 'batch', takesArg: true, long: 'batch-check', argh: 'format', help: "like --batch, but don't emit <contents>", optarg: true, noneg: true },
  { kind: 'bool', short: 'z', help: 'stdin is NUL-terminated', hidden: true },
  { kind: 'bool', short: 'Z', help: 'stdin and stdout is NUL-terminated' },
  { kind: 'batch', takesArg: true, long: 'batch-command', argh: 'format', help: 'read commands from stdin', optarg: true, noneg: true },
  { kind: 'cmdmode', noneg: true, long: 'batch-all-objects', help: 'with --batch[-check]: ignores stdin, batches all known objects', mode: 'b' },
  { kind: 'group', help: 'Change or optimize batch output' },
  { kind: 'bool', long: 'buffer', help: 'buffer --batch output' },
  { kind: 'bool', long: 'follow-symlinks', help: 'follow in-tree symlinks' },
  { kind: 'bool', long: 'unordered', help: 'do not order objects before emitting them' },
  { kind: 'group', help: 'Emit object (blob or tree) with conversion or filter (stand-alone, or with batch)' },
  { kind: 'cmdmode', noneg: true, long: 'textconv', help: "run textconv on object's content", mode: 'c' },
  { kind: 'cmdmode', noneg: true, long: 'filters', help: "run filters on object's content", mode: 'w' },
  { kind: 'string', takesArg: true, long: 'path', argh: 'blob|tree', help: "use a <path> for (--textconv | --filters); Not with 'batch'" },
  { kind: 'filter', takesArg: true, long: 'filter', argh: 'args', help: 'object filtering' },
];

const USAGE_LINES = [
  'git cat-file <type> <object>',
  'git cat-file (-e | -p | -t | -s) <object>',
  'git cat-file (--textconv | --filters)\n             [<rev>:<path|tree-ish> | --path=<path|tree-ish> <rev>]',
  'git cat-file (--batch | --batch-check | --batch-command) [--batch-all-objects]\n             [--buffer] [--follow-symlinks] [--unordered]\n             [--textconv | --filters] [-Z]',
];

const USAGE: Usage<CatOpt> = { lines: USAGE_LINES, options: CAT_FILE_OPTIONS };

/**
 * The usage text. Inside parse_options() aliases are already resolved into
 * copies of their option (`--[no-]mailmap`); cmd_cat_file's own usage calls
 * see the raw alias entry, which git prints with a ` ...` argument.
 */
export function usageText(full = false, aliasesResolved = true): string {
  return renderUsage(USAGE, full, aliasesResolved);
}

/** What the command line asked for, after parse-options. */
export interface ParsedArgs {
  mode?: CmdMode;
  batch?: { kind: 'contents' | 'info' | 'command'; format?: string };
  /** -1: not given (git's default applies) */
  buffer: boolean | undefined;
  followSymlinks: boolean;
  unordered: boolean;
  inputNul: boolean;
  nul: boolean;
  useMailmap: boolean;
  path?: string;
  filter?: ObjectFilter;
  /** a filter spec git parses but cat-file refuses (tree:, sparse:oid=, combine:) */
  filterUnsupported?: string;
  args: string[];
}

/** usage_msg_opt(): `fatal: <msg>`, an empty line, then the usage */
const msgFail = (msg: string) => new UsageExit(`fatal: ${msg}\n\n${usageText(false, false)}`, 129);

/** parse_options() over cat-file's table. Throws UsageExit (or a fatal Error for bad filter specs). */
export function parseCatFileArgs(argv: readonly string[]): ParsedArgs {
  const r: ParsedArgs = { buffer: undefined, followSymlinks: false, unordered: false, inputNul: false, nul: false, useMailmap: false, args: [] };
  let cmd: { spec: CatOpt; name: string } | undefined;
  let filterCount = 0;

  const apply = (p: Parsed<CatOpt>): void => {
    const s = p.spec;
    switch (s.kind) {
      case 'cmdmode': {
        const name = optionWithArg(p);
        if (cmd && cmd.spec.mode !== s.mode) throw optionError(`options '${name}' and '${cmd.name}' cannot be used together`);
        if (!cmd || cmd.spec.mode !== s.mode) cmd = { spec: s, name };
        r.mode = p.unset ? undefined : s.mode;
        if (p.unset) cmd = undefined;
        return;
      }
      case 'bool': {
        const v = !p.unset;
        switch (s.long ?? s.short) {
          case 'buffer': r.buffer = v; return;
          case 'follow-symlinks': r.followSymlinks = v; return;
          case 'unordered': r.unordered = v; return;
          case 'use-mailmap': r.useMailmap = v; return;
          case 'z': r.inputNul = v; return;
          case 'Z': r.nul = v; return;
          default: return; // --allow-unknown-type: a no-op since git 2.50
        }
      }
      case 'batch': {
        if (r.batch) throw optionError('only one batch option may be specified');
        const kind = s.long === 'batch' ? 'contents' : s.long === 'batch-check' ? 'info' : 'command';
        r.batch = { kind, format: p.arg };
        return;
      }
      case 'string': r.path = p.unset ? undefined : p.arg; return;
      case 'filter': {
        if (p.unset || p.arg === undefined) { r.filter = undefined; r.filterUnsupported = undefined; filterCount = 0; return; }
        if (filterCount > 0 && r.filter?.choice === 'auto') throw new Error("an 'auto' filter is incompatible with any other filter");
        const f = parseFilterSpec(p.arg); // throws git's fatal message
        filterCount++;
        if (filterCount > 1) { r.filterUnsupported = 'combine'; r.filter = undefined; return; }
        if (f.choice === 'tree' || f.choice === 'sparse:oid' || f.choice === 'combine' || f.choice === 'auto') r.filterUnsupported = f.choice;
        else r.filter = f;
        return;
      }
      default: return;
    }
  };

  r.args = parseOptions(argv, USAGE, apply);
  return r;
}

/** What cat-file will do, after cmd_cat_file()'s compatibility checks. */
export type CatFileRequest =
  | { kind: 'batch'; args: ParsedArgs; transform?: 'c' | 'w'; all: boolean; buffer: boolean; inputDelim: number; outputDelim: number }
  | { kind: 'single'; args: ParsedArgs; mode: 'e' | 'p' | 't' | 's' | 'c' | 'w'; name: string }
  | { kind: 'typed'; args: ParsedArgs; type: string; name: string };

/** cmd_cat_file() after parse_options: git's checks, in git's order. */
export function validateCatFile(a: ParsedArgs): CatFileRequest {
  const opt = a.mode;
  const cw = opt === 'c' || opt === 'w';
  const epts = opt === 'e' || opt === 'p' || opt === 't' || opt === 's';
  if (a.filterUnsupported) throw new UsageExit(`usage: objects filter not supported: '${a.filterUnsupported}'\n`, 129);
  if (a.filter && !a.batch) throw new UsageExit('usage: objects filter only supported in batch mode\n', 129);
  const all = opt === 'b';
  if (a.path !== undefined && !cw) throw msgFail("'--path=<path|tree-ish>' needs '--filters' or '--textconv'");
  if (!a.batch) {
    if (a.followSymlinks) throw msgFail("'--follow-symlinks' requires a batch mode");
    if (a.buffer !== undefined) throw msgFail("'--buffer' requires a batch mode");
    if (all) throw msgFail("'--batch-all-objects' requires a batch mode");
    if (a.inputNul) throw msgFail("'-z' requires a batch mode");
    if (a.nul) throw msgFail("'-Z' requires a batch mode");
  }
  const inputDelim = a.inputNul || a.nul ? 0 : 10;
  const outputDelim = a.nul ? 0 : 10;
  if (a.batch) {
    let transform: 'c' | 'w' | undefined;
    if (cw) transform = opt as 'c' | 'w';
    else if (opt && opt !== 'b') throw msgFail(`'-${opt}' is incompatible with batch mode`);
    else if (a.args.length) throw msgFail('batch modes take no arguments');
    return { kind: 'batch', args: a, transform, all, buffer: a.buffer ?? all, inputDelim, outputDelim };
  }
  if (opt) {
    if (!a.args.length && opt === 'c') throw msgFail("<rev> required with '--textconv'");
    if (!a.args.length && opt === 'w') throw msgFail("<rev> required with '--filters'");
    if (!a.args.length && epts) throw msgFail(`<object> required with '-${opt}'`);
    if (a.args.length !== 1) throw msgFail('too many arguments');
    return { kind: 'single', args: a, mode: opt as 'e' | 'p' | 't' | 's' | 'c' | 'w', name: a.args[0]! };
  }
  if (!a.args.length) throw new UsageExit(usageText(false, false), 129);
  if (a.args.length !== 2) throw msgFail(`only two arguments allowed in <type> <object> mode, not ${a.args.length}`);
  return { kind: 'typed', args: a, type: a.args[0]!, name: a.args[1]! };
}
