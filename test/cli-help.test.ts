/**
 * `gitwire <command> --help` names every option its parser accepts, hidden
 * ones included, on stdout with exit 0; the lists come from the parsers'
 * own tables, so a new option without help fails here. `-h` is git's for
 * the commands that mirror git (usage with exit 129, matched byte for byte
 * in cli-options.test.ts and cat-file-usage.test.ts), and help with exit 0
 * for gitwire's own commands (serve, demo).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BIN, run, tmp } from './helpers/git.js';
import { USAGE as UPLOAD_PACK } from '../src/cli/upload-pack.js';
import { USAGE as RECEIVE_PACK } from '../src/cli/receive-pack.js';
import { USAGE as DEMO } from '../src/cli/demo.js';
import { USAGE as FORK } from '../src/cli/fork.js';
import { USAGE as RENAME } from '../src/cli/rename.js';
import { USAGE as BUNDLE } from '../src/cli/bundle.js';
import { CAT_FILE_OPTIONS } from '../src/catfile/options.js';
import { SERVE_FLAGS } from '../src/cli/serve.js';
import type { OptSpec } from '../src/cli/parse-options.js';

let t: ReturnType<typeof tmp>;
before(() => { t = tmp(); });
after(() => t.cleanup());

interface Opt { long?: string; short?: string }
const fromTable = (options: readonly OptSpec[]): Opt[] => options.filter((o) => o.kind !== 'group').map((o) => ({ long: o.long, short: o.short }));
const serveOpts: Opt[] = Object.entries(SERVE_FLAGS).map(([long, o]) => ({ long, short: 'short' in o ? o.short : undefined }));

const COMMANDS: Array<[string, Opt[], 'git' | 'own']> = [
  ['upload-pack', fromTable(UPLOAD_PACK.options), 'git'],
  ['receive-pack', fromTable(RECEIVE_PACK.options), 'git'],
  ['cat-file', fromTable(CAT_FILE_OPTIONS), 'git'],
  ['demo', fromTable(DEMO.options), 'own'],
  ['fork', fromTable(FORK.options), 'own'],
  ['rename', fromTable(RENAME.options), 'own'],
  ['bundle', fromTable(BUNDLE.options), 'own'],
  ['serve', serveOpts, 'own'],
];

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
function assertNamesAll(text: string, opts: Opt[], label: string): void {
  assert.ok(opts.length > 0, `${label}: a table`);
  for (const o of opts) {
    if (o.long) assert.match(text, new RegExp(`--(\\[no-\\])?${esc(o.long)}(?![\\w-])`), `${label} names --${o.long}`);
    if (o.short) assert.match(text, new RegExp(`(^|\\s)-${esc(o.short)}(?![\\w-])`, 'm'), `${label} names -${o.short}`);
  }
}

for (const [cmd, opts, kind] of COMMANDS) {
  test(`${cmd} --help: every option of its parser, exit 0; -h ${kind === 'git' ? "is git's usage" : 'too'}`, () => {
    // outside any repository: cat-file's help needs none
    const help = run(BIN, [cmd, '--help'], { cwd: t.dir });
    assert.equal(help.status, 0, help.stderr.toString());
    assert.equal(help.stderr.toString(), '');
    assertNamesAll(help.stdout.toString(), opts, `${cmd} --help`);
    const h = run(BIN, [cmd, '-h'], { cwd: t.dir });
    if (kind === 'own') {
      assert.equal(h.status, 0, h.stderr.toString());
      assert.deepEqual(h.stdout, help.stdout);
    } else {
      assert.equal(h.status, 129);
      assert.match(h.stdout.toString(), /^usage: /);
    }
  });
}

test("demo takes no option; an unknown one is a usage error, not git clone's", () => {
  const r = run(BIN, ['demo', '--bogus'], { cwd: t.dir });
  assert.equal(r.status, 129);
  assert.match(r.stderr.toString(), /^error: unknown option `bogus'\nusage: gitwire demo/);
});

test('gitwire --help points to the commands\' own help', () => {
  const r = run(BIN, ['--help']);
  assert.equal(r.status, 0);
  assert.match(r.stdout.toString(), /'gitwire <command> --help' lists all options/);
});
