/**
 * `gitwire demo`: clone this very repository through `gitwire upload-pack`
 * with the real git client, and print what happened.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Usage } from './parse-options.js';

/** demo has no options of its own: the table is for --help (and -h, gitwire's own command: exit 0) */
export const USAGE: Usage = {
  lines: ['gitwire demo [<repository>]', '', 'Clone <repository> (default: gitwire itself) with git through gitwire upload-pack,', 'over protocol v0 and v2, and print what was cloned.'],
  options: [
    { kind: 'help', short: 'h', long: 'help', help: 'print this help', noneg: true },
  ] satisfies OptSpec[],
};

export async function runDemo(argv: string[]): Promise<void> {
  let args: string[];
  try {
    // -h is git's usage (exit 129) in the parser; demo is gitwire's command, where it is --help
    args = parseOptions(argv.map((a) => (a === '-h' ? '--help' : a)), USAGE, () => undefined);
    if (args.length > 1) throw usageMessage(USAGE, 'too many arguments');
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const src = args[0] ?? root;
  const bin = join(root, 'bin', 'gitwire');
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-demo-'));
  try {
    for (const v of [0, 2]) {
      const dest = join(dir, `clone-v${v}`);
      const t0 = process.hrtime.bigint();
      const r = spawnSync('git', ['-c', `protocol.version=${v}`, 'clone', '--no-local', '--upload-pack', `${bin} upload-pack`, src, dest], { stdio: ['ignore', 'inherit', 'inherit'] });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (r.status !== 0) throw new Error(`git clone (protocol v${v}) failed`);
      const refs = spawnSync('git', ['-C', dest, 'for-each-ref', '--format=%(refname)'], { encoding: 'utf8' }).stdout.trim().split('\n');
      const count = spawnSync('git', ['-C', dest, 'count-objects', '-v'], { encoding: 'utf8' }).stdout;
      const fsck = spawnSync('git', ['-C', dest, 'fsck', '--no-progress'], { encoding: 'utf8' });
      process.stdout.write(`protocol v${v}: cloned ${src} in ${ms.toFixed(0)} ms through gitwire upload-pack\n`);
      process.stdout.write(`  refs: ${refs.length} (${refs.slice(0, 3).join(', ')}${refs.length > 3 ? ', …' : ''})\n`);
      process.stdout.write(`  ${count.split('\n').filter((l) => /^(in-pack|size-pack)/.test(l)).join(', ')}\n`);
      process.stdout.write(`  git fsck: ${fsck.status === 0 ? 'ok' : `failed\n${fsck.stderr}`}\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
