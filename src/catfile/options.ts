/**
 * cat-file's command line as git (v2.55) parses it: one option table drives
 * parsing (abbreviations, negation, bundled short options, command modes)
 * and the usage text; `validateCatFile` then applies cmd_cat_file's checks
 * in git's order. Nothing here touches the repository.
 */
import { parseFilterSpec, type ObjectFilter } from './filter.js';

/** A usage failure: what goes to stderr (or stdout for -h) and the exit code. */
export class UsageExit extends Error {
  constructor(readonly stderr: string, readonly exitCode: number, readonly stdout = '') {
    super((stderr || stdout).split('\n')[0]);
  }
}

type Kind = 'group' | 'cmdmode' | 'bool' | 'batch' | 'string' | 'filter' | 'alias';

interface OptSpec {
  kind: Kind;
  short?: string;
  long?: string;
  help: string;
  argh?: string;
  hidden?: boolean;
  /** PARSE_OPT_NONEG */
  noneg?: boolean;
  /** PARSE_OPT_OPTARG */
  optarg?: boolean;
  /** the command-mode letter (OPT_CMDMODE) */
  mode?: CmdMode;
  /** for alias: the long name it stands for */
  target?: string;
}

/** git's command modes: -e -p -t -s, --batch-all-objects ('b'), --textconv ('c'), --filters ('w') */
export type CmdMode = 'e' | 'p' | 't' | 's' | 'b' | 'c' | 'w';

/** The option table, in git's order (builtin/cat-file.c). */
export const CAT_FILE_OPTIONS: readonly OptSpec[] = [
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
  { kind: 'batch', long: 'batch', argh: 'format', help: 'show full <object> or <rev> contents', optarg: true, noneg: true },
  { kind: 'batch', long: 'batch-check', argh: 'format', help: "like --batch, but don't emit <contents>", optarg: true, noneg: true },
  { kind: 'bool', short: 'z', help: 'stdin is NUL-terminated', hidden: true },
  { kind: 'bool', short: 'Z', help: 'stdin and stdout is NUL-terminated' },
  { kind: 'batch', long: 'batch-command', argh: 'format', help: 'read commands from stdin', optarg: true, noneg: true },
  { kind: 'cmdmode', noneg: true, long: 'batch-all-objects', help: 'with --batch[-check]: ignores stdin, batches all known objects', mode: 'b' },
  { kind: 'group', help: 'Change or optimize batch output' },
  { kind: 'bool', long: 'buffer', help: 'buffer --batch output' },
  { kind: 'bool', long: 'follow-symlinks', help: 'follow in-tree symlinks' },
  { kind: 'bool', long: 'unordered', help: 'do not order objects before emitting them' },
  { kind: 'group', help: 'Emit object (blob or tree) with conversion or filter (stand-alone, or with batch)' },
  { kind: 'cmdmode', noneg: true, long: 'textconv', help: "run textconv on object's content", mode: 'c' },
  { kind: 'cmdmode', noneg: true, long: 'filters', help: "run filters on object's content", mode: 'w' },
  { kind: 'string', long: 'path', argh: 'blob|tree', help: "use a <path> for (--textconv | --filters); Not with 'batch'" },
  { kind: 'filter', long: 'filter', argh: 'args', help: 'object filtering' },
];

const USAGE_LINES = [
  'git cat-file <type> <object>',
  'git cat-file (-e | -p | -t | -s) <object>',
  'git cat-file (--textconv | --filters)\n             [<rev>:<path|tree-ish> | --path=<path|tree-ish> <rev>]',
  'git cat-file (--batch | --batch-check | --batch-command) [--batch-all-objects]\n             [--buffer] [--follow-symlinks] [--unordered]\n             [--textconv | --filters] [-Z]',
];

const OPTS_WIDTH = 26;

/**
 * usage_with_options_internal(): the usage lines, then the option help.
 * Inside parse_options() aliases are already resolved into copies of their
 * option (`--[no-]mailmap`); cmd_cat_file's own usage calls see the raw
 * alias entry, which git prints with a ` ...` argument.
 */
export function usageText(full = false, aliasesResolved = true): string {
  let out = '';
  USAGE_LINES.forEach((u, i) => {
    u.split('\n').forEach((line, j) => {
      if (j === 0) out += `${i === 0 ? 'usage: ' : '   or: '}${line}\n`;
      else out += `${' '.repeat(7)}${line}\n`;
    });
  });
  let needNewline = true;
  for (const o of CAT_FILE_OPTIONS) {
    if (o.kind === 'group') {
      out += '\n';
      needNewline = false;
      if (o.help) out += `${o.help}\n`;
      continue;
    }
    if (!full && o.hidden) continue;
    if (needNewline) { out += '\n'; needNewline = false; }
    let line = '    ';
    if (o.short) line += `-${o.short}`;
    if (o.short && o.long) line += ', ';
    if (o.long) line += o.noneg || o.long.startsWith('no-') ? `--${o.long}` : `--[no-]${o.long}`;
    const takesArg = o.kind === 'batch' || o.kind === 'string' || o.kind === 'filter';
    if (takesArg) {
      const argh = o.argh ?? '...';
      const literal = /[()<>[\]|]/.test(argh);
      if (o.optarg) line += literal ? `[=${argh}]` : `[=<${argh}>]`;
      else line += literal ? ` ${argh}` : ` <${argh}>`;
    }
    const pad = (pos: number) => (pos < OPTS_WIDTH ? ' '.repeat(OPTS_WIDTH - pos) : `\n${' '.repeat(OPTS_WIDTH)}`);
    if (o.kind === 'alias') { if (!aliasesResolved) line += ' ...'; out += `${line}${pad(line.length)}alias of --${o.target}\n`; continue; }
    out += `${line}${pad(line.length)}${o.help}\n`;
  }
  return `${out}\n`;
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

const usageFail = (errLine: string) => new UsageExit(`error: ${errLine}\n${usageText()}`, 129);
const plainFail = (errLine: string) => new UsageExit(`error: ${errLine}\n`, 129);
/** usage_msg_opt(): `fatal: <msg>`, an empty line, then the usage */
const msgFail = (msg: string) => new UsageExit(`fatal: ${msg}\n\n${usageText(false, false)}`, 129);

interface Parsed { spec: OptSpec; unset: boolean; short: boolean; arg?: string }

/** parse_options() over cat-file's table. Throws UsageExit (or a fatal Error for bad filter specs). */
export function parseCatFileArgs(argv: readonly string[]): ParsedArgs {
  const r: ParsedArgs = { buffer: undefined, followSymlinks: false, unordered: false, inputNul: false, nul: false, useMailmap: false, args: [] };
  let cmd: { spec: OptSpec; name: string } | undefined;
  let filterCount = 0;

  const optName = (p: Parsed) => (p.short ? `-${p.spec.short}` : `--${p.unset ? 'no-' : ''}${p.spec.long}${p.arg !== undefined ? `=${p.arg}` : ''}`);
  const described = (p: Parsed) => (p.short ? `switch \`${p.spec.short}'` : p.unset ? `option \`no-${p.spec.long}'` : `option \`${p.spec.long}'`);

  const apply = (p: Parsed): void => {
    const s = p.spec;
    switch (s.kind) {
      case 'cmdmode': {
        const name = optName(p);
        if (cmd && cmd.spec.mode !== s.mode) throw plainFail(`options '${name}' and '${cmd.name}' cannot be used together`);
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
        if (r.batch) throw plainFail('only one batch option may be specified');
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

  /** do_get_value() checks, then take the argument where the option has one */
  const take = (spec: OptSpec, unset: boolean, short: boolean, inline: string | undefined, rest: string[]): Parsed => {
    const p: Parsed = { spec, unset, short };
    if (unset && inline !== undefined) throw plainFail(`${described(p)} takes no value`);
    if (unset && spec.noneg) throw plainFail(`${described(p)} isn't available`);
    const takesArg = spec.kind === 'batch' || spec.kind === 'string' || spec.kind === 'filter';
    if (!short && inline !== undefined && !takesArg) throw plainFail(`${described(p)} takes no value`);
    if (takesArg && !unset) {
      if (inline !== undefined) p.arg = inline;
      else if (spec.optarg) p.arg = undefined;
      else if (rest.length) p.arg = rest.shift()!;
      else throw plainFail(`${described(p)} requires a value`);
    }
    return p;
  };

  const resolveAlias = (s: OptSpec) => (s.kind === 'alias' ? CAT_FILE_OPTIONS.find((o) => o.long === s.target)! : s);

  const longOpt = (body: string, rest: string[]): void => {
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const inline = eq < 0 ? undefined : body.slice(eq + 1);
    let argStart = body;
    let unsetFlag = false, noNo = false;
    if (argStart.startsWith('no-')) {
      argStart = argStart.slice(3);
      if (argStart.startsWith('no-')) { argStart = argStart.slice(3); noNo = true; } else unsetFlag = true;
    }
    const nameStart = argStart.slice(0, argStart.indexOf('=') < 0 ? undefined : argStart.indexOf('='));
    let abbrev: { spec: OptSpec; unset: boolean } | undefined;
    let ambiguous: { spec: OptSpec; unset: boolean } | undefined;
    const register = (spec: OptSpec, unset: boolean) => {
      if (abbrev && !(abbrev.unset === unset && (abbrev.spec.kind === 'alias' || spec.kind === 'alias') && resolveAlias(abbrev.spec) === resolveAlias(spec))) ambiguous = abbrev;
      abbrev = { spec, unset };
    };
    for (const s of CAT_FILE_OPTIONS) {
      if (!s.long || s.kind === 'group') continue;
      let long = s.long;
      let optUnset = false;
      if (long.startsWith('no-')) { long = long.slice(3); optUnset = true; } else if (noNo) continue;
      const allowUnset = !s.noneg && resolveAlias(s).noneg !== true;
      if (unsetFlag !== optUnset && !allowUnset) continue;
      if (nameStart === long) {
        const spec = resolveAlias(s);
        apply(take(spec, unsetFlag !== optUnset, false, inline, rest));
        return;
      }
      if (long.startsWith(nameStart)) register(s, unsetFlag !== optUnset);
      if (allowUnset && 'no-'.startsWith(body)) register(s, !optUnset);
    }
    if (ambiguous && abbrev) {
      // git prints the error, then the usage on stdout
      throw new UsageExit(`error: ambiguous option: ${body} (could be --${ambiguous.unset ? 'no-' : ''}${ambiguous.spec.long} or --${abbrev.unset ? 'no-' : ''}${abbrev.spec.long})\n`, 129, usageText());
    }
    if (abbrev) { apply(take(resolveAlias(abbrev.spec), abbrev.unset, false, inline, rest)); return; }
    void name;
    throw usageFail(`unknown option \`${body}'`);
  };

  const checkTypos = (arg: string): void => {
    if (arg.length < 3) return;
    if (arg.startsWith('no-')) throw plainFail(`did you mean \`--${arg}\` (with two dashes)?`);
    for (const s of CAT_FILE_OPTIONS) if (s.long && s.long.startsWith(arg)) throw plainFail(`did you mean \`--${arg}\` (with two dashes)?`);
  };

  const rest = [...argv];
  while (rest.length) {
    const a = rest.shift()!;
    if (a[0] !== '-' || a.length === 1) { r.args.push(a); continue; }
    if (a === '--help-all') throw new UsageExit('', 129, usageText(true));
    if (a === '--help') throw new UsageExit('', 129, usageText());
    if (a[1] !== '-') {
      // parse_short_opt(), with check_typos() on the first letter
      for (let i = 1; i < a.length; i++) {
        const c = a[i]!;
        const spec = CAT_FILE_OPTIONS.find((o) => o.short === c);
        if (!spec) {
          if (i === 1) checkTypos(a.slice(1));
          if (c === 'h') throw new UsageExit('', 129, usageText());
          throw usageFail(`unknown switch \`${c}'`);
        }
        apply(take(spec, false, true, undefined, rest));
        if (i === 1 && a.length > 2) checkTypos(a.slice(1));
      }
      continue;
    }
    if (a === '--') { r.args.push(...rest); break; }
    if (a === '--end-of-options') { r.args.push(...rest); break; }
    longOpt(a.slice(2), rest);
  }
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
