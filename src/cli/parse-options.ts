/**
 * git's parse-options (v2.55) for every gitwire command line: an option
 * table drives parsing (abbreviations, `--no-` negation, aliases, bundled
 * short options, `--opt=value` and `--opt value`, `--`, `--end-of-options`,
 * `-h`, `--help-all`) and renders the usage text. Commands keep their own
 * option kinds and meaning; the engine hands each parsed option to the
 * command's `apply` and collects the other arguments. Nothing is printed
 * here: failures are thrown as UsageExit, which the command writes out.
 */

/** A usage failure: what goes to stderr (or stdout for -h) and the exit code. */
export class UsageExit extends Error {
  constructor(readonly stderr: string, readonly exitCode: number, readonly stdout = '') {
    super((stderr || stdout).split('\n')[0]);
  }
}

/** One entry of an option table (git's `struct option`). */
export interface OptSpec {
  /** 'group' (OPT_GROUP) and 'alias' (OPT_ALIAS) mean something to the engine; other kinds are the command's */
  kind: string;
  short?: string;
  long?: string;
  help: string;
  argh?: string;
  /** the option takes a value (git: no PARSE_OPT_NOARG) */
  takesArg?: boolean;
  /** PARSE_OPT_OPTARG: the value is optional (only as `--opt=value`) */
  optarg?: boolean;
  /** PARSE_OPT_HIDDEN: shown by --help-all only */
  hidden?: boolean;
  /** PARSE_OPT_NONEG */
  noneg?: boolean;
  /** for an alias: the long name it stands for */
  target?: string;
  /** gitwire's `--help` text where git's table has none (git's hidden options) */
  about?: string;
}

/** One option as parsed: the table entry (an alias resolved to its target), how it was named, its value. */
export interface Parsed<S extends OptSpec = OptSpec> {
  spec: S;
  /** given as `--no-<name>` */
  unset: boolean;
  /** given as a short option */
  short: boolean;
  arg?: string;
  /** the long name as given (an alias's own name) */
  long?: string;
}

/** What a command's usage is made of: the usage lines and the option table. */
export interface Usage<S extends OptSpec = OptSpec> {
  lines: readonly string[];
  options: readonly S[];
}

const OPTS_WIDTH = 26;

const resolve = <S extends OptSpec>(table: readonly S[], s: S): S => {
  if (s.kind !== 'alias') return s;
  const t = table.find((o) => o.long === s.target && o.kind !== 'alias');
  if (!t) throw new Error(`option table: alias --${s.long} of unknown --${s.target}`);
  return t;
};

/**
 * usage_with_options_internal(): the usage lines, then the option help.
 * `aliasesResolved`: inside parse_options() git has replaced each alias by
 * a copy of its target (its flags, help `alias of --x`); a command's own
 * usage calls after parsing see the raw alias entry, printed `--[no-]name ...`.
 */
export function renderUsage(u: Usage, full = false, aliasesResolved = true): string {
  return renderTable(u, full, aliasesResolved, false);
}

/**
 * gitwire's `--help`: every option, the hidden ones included (with their
 * `about` text where git gives none), on stdout with exit 0. git's own
 * `--help` opens the manual page, so no git output is matched here;
 * `-h` and `--help-all` stay git's.
 */
export function renderHelp(u: Usage): string {
  return renderTable(u, true, true, true);
}

function renderTable(u: Usage, full: boolean, aliasesResolved: boolean, about: boolean): string {
  let out = '';
  let sawEmpty = false;
  u.lines.forEach((str, i) => {
    if (!sawEmpty && str === '') sawEmpty = true;
    str.split('\n').forEach((line, j) => {
      if (sawEmpty && line) out += `    ${line}\n`;
      else if (sawEmpty) out += '\n';
      else if (j === 0) out += `${i === 0 ? 'usage: ' : '   or: '}${line}\n`;
      else out += `${' '.repeat(7)}${line}\n`;
    });
  });
  const pad = (pos: number) => (pos < OPTS_WIDTH ? ' '.repeat(OPTS_WIDTH - pos) : `\n${' '.repeat(OPTS_WIDTH)}`);
  let needNewline = true;
  for (const raw of u.options) {
    if (raw.kind === 'group') {
      out += '\n';
      needNewline = false;
      if (raw.help) out += `${raw.help}\n`;
      continue;
    }
    const alias = raw.kind === 'alias';
    // a resolved alias is its target under the alias's names
    const o = alias && aliasesResolved ? { ...resolve(u.options, raw), short: raw.short, long: raw.long, help: `alias of --${raw.target}`, about: undefined } : raw;
    if (!full && o.hidden) continue;
    if (needNewline) { out += '\n'; needNewline = false; }
    let line = '    ';
    if (o.short) line += `-${o.short}`;
    if (o.short && o.long) line += ', ';
    if (o.long) line += o.noneg || o.long.startsWith('no-') ? `--${o.long}` : `--[no-]${o.long}`;
    if (alias && !aliasesResolved) { line += ' ...'; out += `${line}${pad(line.length)}alias of --${raw.target}\n`; continue; }
    if (o.takesArg) {
      const argh = o.argh ?? '...';
      const literal = o.argh === undefined || /[()<>[\]|]/.test(argh);
      if (o.optarg) line += o.long ? (literal ? `[=${argh}]` : `[=<${argh}>]`) : (literal ? `[${argh}]` : `[<${argh}>]`);
      else line += literal ? ` ${argh}` : ` <${argh}>`;
    }
    let pos = line.length;
    out += line;
    for (const seg of (about && o.about ? o.about : o.help).split(/(?<=\n)/)) {
      if (!seg) continue;
      out += pad(pos) + seg;
      pos = 0;
    }
    out += '\n';
    if (o.long?.startsWith('no-')) {
      const positive = o.long.slice(3);
      if (!u.options.some((x) => x.long === positive)) {
        const l = `    --${positive}`;
        out += `${l}${pad(l.length)}opposite of --no-${positive}\n`;
      }
    }
  }
  return `${out}\n`;
}

/** git's optname(): how error messages name an option */
export function describeOption(p: Parsed): string {
  if (p.short) return `switch \`${p.spec.short}'`;
  return p.unset ? `option \`no-${p.long ?? p.spec.long}'` : `option \`${p.long ?? p.spec.long}'`;
}

/** git's optnamearg(): the option as it was given, for "cannot be used together" */
export function optionWithArg(p: Parsed): string {
  if (p.short) return `-${p.spec.short}${p.arg ?? ''}`;
  return `--${p.unset ? 'no-' : ''}${p.long ?? p.spec.long}${p.arg !== undefined ? `=${p.arg}` : ''}`;
}

/** error(): the message alone on stderr, exit 129 */
export const optionError = (msg: string): UsageExit => new UsageExit(`error: ${msg}\n`, 129);

/** usage_with_options() (stderr, exit 129), with the aliases of the raw table, as a command's own call prints them */
export const usageExit = (u: Usage): UsageExit => new UsageExit(renderUsage(u, false, false), 129);

/** usage_msg_opt(): `fatal: <msg>`, an empty line, then the usage (stderr, exit 129) */
export const usageMessage = (u: Usage, msg: string): UsageExit => new UsageExit(`fatal: ${msg}\n\n${renderUsage(u, false, false)}`, 129);

const isSpace = (c: string) => c === ' ' || (c >= '\t' && c <= '\r');

/**
 * strtoimax(value, &end, 0): leading space, a sign, then 0x hex, 0 octal
 * or decimal digits. Returns the value (as a BigInt, unclamped) and how
 * many characters were used (0: no number).
 */
function strtoimax(s: string): { value: bigint; end: number } {
  let i = 0;
  while (i < s.length && isSpace(s[i]!)) i++;
  let neg = false;
  if (s[i] === '+' || s[i] === '-') { neg = s[i] === '-'; i++; }
  let base = 10;
  if (s[i] === '0' && (s[i + 1] === 'x' || s[i + 1] === 'X') && /[0-9a-fA-F]/.test(s[i + 2] ?? '')) { base = 16; i += 2; }
  else if (s[i] === '0') base = 8;
  const digit = base === 16 ? /[0-9a-fA-F]/ : base === 8 ? /[0-7]/ : /[0-9]/;
  const start = i;
  while (i < s.length && digit.test(s[i]!)) i++;
  if (i === start) return { value: 0n, end: 0 };
  const body = s.slice(start, i);
  const v = BigInt(base === 16 ? `0x${body}` : base === 8 ? `0o${body}` : body);
  return { value: neg ? -v : v, end: i };
}

/**
 * OPTION_INTEGER's value (OPT_INTEGER over an `int`): git_parse_signed(),
 * with an optional k/m/g factor, in range for `bits`. `--no-x` gives 0.
 */
export function integerValue(p: Parsed, bits = 32): number {
  if (p.unset || p.arg === undefined) return 0;
  const arg = p.arg;
  const max = (1n << BigInt(bits - 1)) - 1n;
  const min = -max - 1n;
  const range = () => optionError(`value ${arg} for ${describeOption(p)} not in range [${min},${max}]`);
  if (!arg) throw optionError(`${describeOption(p)} expects a numerical value`);
  const { value, end } = strtoimax(arg);
  const bad = () => optionError(`${describeOption(p)} expects an integer value with an optional k/m/g suffix`);
  if (end === 0) throw bad();
  // strtoimax saturates at intmax_t and reports ERANGE
  if (value > (1n << 63n) - 1n || value < -(1n << 63n)) throw range();
  const unit = arg.slice(end).toLowerCase();
  const factor = unit === '' ? 1n : unit === 'k' ? 1024n : unit === 'm' ? 1024n ** 2n : unit === 'g' ? 1024n ** 3n : 0n;
  if (!factor) throw bad();
  if ((value < 0n && (-max - 1n) / factor > value) || (value > 0n && max / factor < value)) throw range();
  return Number(value * factor);
}

/**
 * parse_options() over `u.options`: each option goes to `apply` (an alias
 * arrives as its target), in command-line order; returns the other
 * arguments. Throws UsageExit where git exits 129 (or whatever `apply`
 * throws).
 */
export function parseOptions<S extends OptSpec>(argv: readonly string[], u: Usage<S>, apply: (p: Parsed<S>) => void): string[] {
  const table = u.options;
  const args: string[] = [];
  const resolved = () => renderUsage(u);
  const unknown = (msg: string) => new UsageExit(`error: ${msg}\n${resolved()}`, 129);
  const help = (full = false) => new UsageExit('', 129, renderUsage(u, full));

  /** do_get_value()'s checks, then the value where the option takes one */
  const take = (spec: S, unset: boolean, short: boolean, inline: string | undefined, rest: string[], long?: string): Parsed<S> => {
    const target = resolve(table, spec);
    const p: Parsed<S> = { spec: target, unset, short, long };
    if (unset && inline !== undefined) throw optionError(`${describeOption(p)} takes no value`);
    if (unset && target.noneg) throw optionError(`${describeOption(p)} isn't available`);
    if (!short && inline !== undefined && !target.takesArg) throw optionError(`${describeOption(p)} takes no value`);
    if (target.takesArg && !unset) {
      if (inline !== undefined) p.arg = inline;
      else if (target.optarg) p.arg = undefined;
      else if (rest.length) p.arg = rest.shift()!;
      else throw optionError(`${describeOption(p)} requires a value`);
    }
    return p;
  };

  const isAliasPair = (a: S, b: S) => (a.kind === 'alias' || b.kind === 'alias') && resolve(table, a) === resolve(table, b);

  /** parse_long_opt() */
  const longOpt = (body: string, rest: string[]): void => {
    const eq = body.indexOf('=');
    const inline = eq < 0 ? undefined : body.slice(eq + 1);
    let argStart = body;
    let unsetFlag = false, noNo = false;
    if (argStart.startsWith('no-')) {
      argStart = argStart.slice(3);
      if (argStart.startsWith('no-')) { argStart = argStart.slice(3); noNo = true; } else unsetFlag = true;
    }
    const nameStart = argStart.slice(0, argStart.indexOf('=') < 0 ? undefined : argStart.indexOf('='));
    let abbrev: { spec: S; unset: boolean } | undefined;
    let ambiguous: { spec: S; unset: boolean } | undefined;
    const register = (spec: S, unset: boolean) => {
      if (abbrev && !(abbrev.unset === unset && isAliasPair(abbrev.spec, spec))) ambiguous = abbrev;
      abbrev = { spec, unset };
    };
    for (const s of table) {
      if (!s.long || s.kind === 'group') continue;
      let long = s.long;
      let optUnset = false;
      if (long.startsWith('no-')) { long = long.slice(3); optUnset = true; } else if (noNo) continue;
      const allowUnset = !s.noneg && resolve(table, s).noneg !== true;
      if (unsetFlag !== optUnset && !allowUnset) continue;
      if (nameStart === long) { apply(take(s, unsetFlag !== optUnset, false, inline, rest, s.long)); return; }
      if (long.startsWith(nameStart)) register(s, unsetFlag !== optUnset);
      if (allowUnset && 'no-'.startsWith(body)) register(s, !optUnset);
    }
    if (ambiguous && abbrev) {
      // git prints the error, then the usage on stdout
      throw new UsageExit(`error: ambiguous option: ${body} (could be --${ambiguous.unset ? 'no-' : ''}${ambiguous.spec.long} or --${abbrev.unset ? 'no-' : ''}${abbrev.spec.long})\n`, 129, resolved());
    }
    if (abbrev) { apply(take(abbrev.spec, abbrev.unset, false, inline, rest, abbrev.spec.long)); return; }
    throw unknown(`unknown option \`${body}'`);
  };

  /** check_typos(): a long option given with one dash */
  const checkTypos = (arg: string): void => {
    if (arg.length < 3) return;
    if (arg.startsWith('no-') || table.some((s) => s.long?.startsWith(arg))) throw optionError(`did you mean \`--${arg}\` (with two dashes)?`);
  };

  const rest = [...argv];
  const total = rest.length;
  while (rest.length) {
    const a = rest.shift()!;
    if (a[0] !== '-' || a.length === 1) { args.push(a); continue; }
    if (total === 1 && a === '-h') throw help();
    if (a[1] !== '-') {
      // parse_short_opt() over the bundle, with check_typos() after its first letter
      for (let i = 1; i < a.length; i++) {
        const c = a[i]!;
        const spec = table.find((o) => o.short === c && o.kind !== 'group');
        if (!spec) {
          if (i === 1) checkTypos(a.slice(1));
          if (c === 'h') throw help();
          if (c.charCodeAt(0) > 0x7f) throw unknown(`unknown non-ascii option in string: \`${i === 1 ? a : `-${a.slice(i)}`}'`);
          throw unknown(`unknown switch \`${c}'`);
        }
        const target = resolve(table, spec);
        // a short option's value is the rest of the bundle, else the next argument
        const tail = a.slice(i + 1);
        if (target.takesArg && tail) {
          apply(take(spec, false, true, tail, rest));
          break;
        }
        apply(take(spec, false, true, undefined, rest));
        if (i === 1 && a.length > 2) checkTypos(a.slice(1));
      }
      continue;
    }
    if (a === '--' || a === '--end-of-options') { args.push(...rest); break; }
    if (a === '--help-all') throw help(true);
    if (a === '--help') throw new UsageExit('', 0, renderHelp(u));
    longOpt(a.slice(2), rest);
  }
  return args;
}

/** Write a UsageExit out as git does (stderr, then stdout) and exit with its code. */
export function exitWithUsage(u: UsageExit): never {
  if (u.stderr) process.stderr.write(u.stderr);
  if (u.stdout) process.stdout.write(u.stdout);
  process.exit(u.exitCode);
}
