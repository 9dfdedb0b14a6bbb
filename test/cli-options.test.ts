/**
 * `gitwire upload-pack` and `gitwire receive-pack` parse their command
 * lines with git's parse-options (cli/parse-options.ts): each row runs the
 * installed git and bin/gitwire with the same arguments and compares
 * stdout, stderr and exit code byte for byte.
 *
 * The target is git 2.55; the installed git is 2.39. Where 2.39 is known
 * (from git's history) to differ, a row says how:
 * - 'marker': since v2.43 (e8e5d294dc "parse-options: show negatability
 *   of options in short help") the help lines print negatable options as
 *   `--[no-]name`. The only difference in those rows; it is applied to
 *   2.39's output, mechanically, before comparing.
 * - a string: a skip, with the reason.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { git, run, tmp, BIN } from './helpers/git.js';
import { installedGitVersion } from './helpers/recorded.js';
import { parseUploadPackArgs } from '../src/cli/upload-pack.js';
import { parseReceivePackArgs } from '../src/cli/receive-pack.js';
import { UsageExit } from '../src/cli/parse-options.js';

let t: ReturnType<typeof tmp>;

before(() => {
  t = tmp();
  git(['init', '-q', '--bare', join(t.dir, 'r.git')]);
});
after(() => t.cleanup());

const MARKER = 'marker';
/** MARKER, a skip reason, or nothing (2.39 answers as 2.55 does) */
type Known = string | undefined;

/** the negatable long options of both tables (git's OPT_BOOL, OPT_INTEGER, OPT__QUIET, OPT_HIDDEN_BOOL, OPT_ALIAS) */
const NEGATABLE = new Set(['stateless-rpc', 'http-backend-info-refs', 'advertise-refs', 'strict', 'timeout', 'quiet',
  'skip-connectivity-check', 'reject-thin-pack-for-testing']);

/** 2.39's help lines with v2.43's `--[no-]` marker: the name grows by 5, the help moves to column 26 or the next line */
function withMarker(text: string): string {
  return text.replace(/^( {4}(?:-\S, )?)--([a-z-]+)( <[^>]+>| \.\.\.)?( *)(.*)$/gm, (line, lead: string, name: string, argh = '', _pad: string, help: string) => {
    if (!NEGATABLE.has(name)) return line;
    const head = `${lead}--[no-]${name}${argh}`;
    if (!help) return head;
    return head.length < 26 ? `${head.padEnd(26)}${help}` : `${head}\n${' '.repeat(26)}${help}`;
  });
}

const UP = 'upload-pack', RP = 'receive-pack';
const KMG = 'git 2.50 (8ff1a34bdf) parses OPT_INTEGER with git_parse_signed: k/m/g factors, a range check, new wording; 2.39 uses strtol';
const LONGOPT = 'git 2.45 (b1ce2b62fa) rewrote parse_long_opt(): an abbreviated negation with a value, and `--no-` alone, resolve differently in 2.39';
const SKIPCONN = 'receive-pack --skip-connectivity-check is new in git 2.50 (68cb0b5253); 2.39 has no such option';

/** [label, command, argv, how 2.39 is known to differ] — `r.git` is a repository in the test's directory */
const ROWS: Array<[string, string, string[], Known]> = [
  ['-h', UP, ['-h'], MARKER],
  ['-h with more arguments', UP, ['-h', 'r.git'], MARKER],
  ['--help-all', UP, ['--help-all'], MARKER],
  ['unknown option', UP, ['--bogus', 'r.git'], MARKER],
  ['unknown option with a value', UP, ['--bogus=1'], MARKER],
  ['unknown switch', UP, ['-x'], MARKER],
  ['unknown non-ascii switch', UP, ['-é'], MARKER],
  ['single-dash long option', UP, ['-strict', 'r.git'], undefined],
  ['single-dash negation', UP, ['-no-strict', 'r.git'], undefined],
  ['ambiguous abbreviation', UP, ['--s', 'r.git'], MARKER],
  ['abbreviation, no directory', UP, ['--state'], MARKER],
  ['abbreviated negation, no directory', UP, ['--no-state'], MARKER],
  ['alias abbreviation, no directory', UP, ['--adv'], MARKER],
  ['bool takes no value', UP, ['--strict=1', 'r.git'], undefined],
  ['negation takes no value', UP, ['--no-strict=1', 'r.git'], undefined],
  ['alias takes no value', UP, ['--advertise-refs=1', 'r.git'], undefined],
  ['--timeout without a value', UP, ['--timeout'], undefined],
  ['--timeout= (empty)', UP, ['--timeout=', 'r.git'], undefined],
  ['--timeout=5, no directory', UP, ['--timeout=5'], MARKER],
  ['--timeout 5, no directory', UP, ['--timeout', '5'], MARKER],
  ['abbreviated --time 5, no directory', UP, ['--time', '5'], MARKER],
  ['--timeout=abc', UP, ['--timeout=abc', 'r.git'], KMG],
  ['--timeout=1k', UP, ['--timeout=1k'], KMG],
  ['--timeout out of range', UP, ['--timeout=99999999999', 'r.git'], KMG],
  ['no directory', UP, [], MARKER],
  ['two directories', UP, ['r.git', 'r.git'], MARKER],
  ['-- then an option-like directory', UP, ['--', '--strict'], undefined],
  ['--end-of-options', UP, ['--end-of-options', '--strict', 'x'], MARKER],
  ['abbreviated negation with a value', UP, ['--no-state=1'], LONGOPT],
  ['--no- alone', UP, ['--no-'], LONGOPT],

  ['-h', RP, ['-h'], MARKER],
  ['--help-all', RP, ['--help-all'], 'git 2.39 crashes on hidden options without help (fixed in 2.43, cd52d9e90f)'],
  ['unknown option', RP, ['--bogus'], MARKER],
  ['unknown switch', RP, ['-x'], MARKER],
  ['no directory', RP, [], MARKER],
  ['two directories', RP, ['r.git', 'r.git'], MARKER],
  ['-q, no directory', RP, ['-q'], MARKER],
  ['-qq, no directory', RP, ['-qq'], MARKER],
  ['bundled unknown switch', RP, ['-qx'], MARKER],
  ['-h inside a bundle', RP, ['-qh'], MARKER],
  ['--quiet takes no value', RP, ['--quiet=1'], undefined],
  ['hidden option takes no value', RP, ['--stateless-rpc=1', 'r.git'], undefined],
  ['abbreviated negation, two directories', RP, ['--no-q', 'a', 'b'], MARKER],
  ['alias abbreviation, no directory', RP, ['--adv'], MARKER],
  ['abbreviation of a hidden option, no directory', RP, ['--reject'], MARKER],
  ['ambiguous --s', RP, ['--s'], SKIPCONN],
  ['--skip-connectivity-check, no directory', RP, ['--skip-connectivity-check'], SKIPCONN],
  ['-- then a switch-like directory', RP, ['--', '-q', 'x'], MARKER],
];

const [major, minor] = installedGitVersion();
const live255 = major > 2 || (major === 2 && minor >= 55);

for (const [label, cmd, args, known] of ROWS) {
  const skip = !live255 && known !== undefined && known !== MARKER ? `git ${major}.${minor} differs from 2.55: ${known}` : false;
  test(`${cmd} ${label}: git's stdout, stderr and exit code`, { skip }, () => {
    const want = run('git', [cmd, ...args], { cwd: t.dir, input: '' });
    const got = run(BIN, [cmd, ...args], { cwd: t.dir, input: '' });
    const adjust = (b: Buffer) => (!live255 && known === MARKER ? withMarker(b.toString()) : b.toString());
    assert.equal(got.stderr.toString(), adjust(want.stderr), `${label}: stderr`);
    assert.equal(got.stdout.toString(), adjust(want.stdout), `${label}: stdout`);
    assert.equal(got.status, want.status, `${label}: exit code`);
  });
}

// With a git v2.55.0 built locally (as conformance.test.ts uses it), every row, the skipped ones included, is
// compared with it as it is: no marker adjustment, no skips. CI has only the installed git: these are skipped there.
/** a git v2.55.0 installed under the prefix GITWIRE_GIT_2_55 names (built outside the repository) */
const GIT_255_PREFIX = process.env.GITWIRE_GIT_2_55 ?? '/nonexistent';
const GIT_255 = join(GIT_255_PREFIX, 'bin', 'git');
const oracle = existsSync(GIT_255) ? false : 'git 2.55 oracle not installed (set GITWIRE_GIT_2_55 to its install prefix)';
for (const [label, cmd, args] of ROWS) {
  test(`${cmd} ${label}: git 2.55's stdout, stderr and exit code`, { skip: oracle }, () => {
    const want = run(GIT_255, [cmd, ...args], { cwd: t.dir, input: '', env: { GIT_EXEC_PATH: join(GIT_255_PREFIX, 'libexec', 'git-core') } });
    const got = run(BIN, [cmd, ...args], { cwd: t.dir, input: '' });
    assert.equal(got.stderr.toString(), want.stderr.toString(), `${label}: stderr`);
    assert.equal(got.stdout.toString(), want.stdout.toString(), `${label}: stdout`);
    assert.equal(got.status, want.status, `${label}: exit code`);
  });
}

test('the marker adjustment changes only option help lines', () => {
  const h = run('git', [UP, '-h']).stdout.toString();
  const lines = h.split('\n');
  assert.deepEqual(withMarker(h).split('\n').slice(0, 3), lines.slice(0, 3)); // the usage lines keep their `--[no-]strict`
  assert.equal(withMarker('    --timeout <n>         x\n'), '    --[no-]timeout <n>    x\n');
  assert.equal(withMarker('    --advertise-refs ...  alias of --y\n'), '    --[no-]advertise-refs ...\n                          alias of --y\n');
});

test('abbreviations, negations, aliases and values reach the command as git parses them', () => {
  assert.deepEqual(parseUploadPackArgs(['--state', '--adv', '--str', '--time=1k', 'd']),
    { directory: 'd', strict: true, statelessRpc: true, advertiseRefs: true, timeout: 1024 });
  assert.deepEqual(parseUploadPackArgs(['--strict', '--no-str', '--timeout', '0x10', '--http-backend-info-refs', '--no-advertise-refs', 'd']),
    { directory: 'd', strict: false, statelessRpc: false, advertiseRefs: false, timeout: 16 });
  assert.deepEqual(parseUploadPackArgs(['--timeout=7', '--no-timeout', '--', '-d']),
    { directory: '-d', strict: false, statelessRpc: false, advertiseRefs: false, timeout: 0 });
  assert.deepEqual(parseReceivePackArgs(['-qq', '--no-quiet', '--skip', '--rej', '--adv', '--state', 'd']),
    { directory: 'd', quiet: false, statelessRpc: true, advertiseRefs: true, skipConnectivityCheck: true, rejectThin: true });
  assert.equal(parseReceivePackArgs(['--qu', 'd']).quiet, true);
  assert.throws(() => parseUploadPackArgs(['--timeout=2g', 'd']), (e: unknown) =>
    e instanceof UsageExit && e.exitCode === 129 && e.stderr === "error: value 2g for option `timeout' not in range [-2147483648,2147483647]\n");
  assert.throws(() => parseReceivePackArgs(['--s', 'd']), (e: unknown) =>
    e instanceof UsageExit && e.stderr.startsWith('error: ambiguous option: s (could be --skip-connectivity-check or --stateless-rpc)\n') && e.stdout.startsWith('usage: git receive-pack'));
});

test('abbreviated options serve as the full ones do (--adv --state)', () => {
  const full = run(BIN, [UP, '--advertise-refs', '--stateless-rpc', 'r.git'], { cwd: t.dir, input: '' });
  const abbrev = run(BIN, [UP, '--adv', '--state', 'r.git'], { cwd: t.dir, input: '' });
  assert.equal(full.status, 0);
  assert.ok(full.stdout.length > 0);
  assert.deepEqual(abbrev.stdout, full.stdout);
  assert.equal(abbrev.status, full.status);
});
