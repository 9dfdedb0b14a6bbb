/** `gitwire fork <source> <destination>`: a fork that borrows the source's objects through an object pool (docs/forks.md). */
import { resolve } from 'node:path';
import { forkRepository } from '../admin/fork.js';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const USAGE: Usage = {
  lines: [
    'gitwire fork [--root <dir>] [--pools <dir>] <source> <destination>',
    '',
    'Make <destination> a fork of <source>: its branches, tags and HEAD, with every',
    'object borrowed from an object pool the two share (made at the first fork).',
    'Names are taken as a client names them, under --root (default: the current directory).',
  ],
  options: [
    { kind: 'string', long: 'root', argh: 'dir', takesArg: true, noneg: true, help: 'the directory repository names are taken under' },
    { kind: 'string', long: 'pools', argh: 'dir', takesArg: true, noneg: true, help: 'where a new object pool is made (default: @pools beside the source)' },
    { kind: 'help', short: 'h', long: 'help', help: 'print this help', noneg: true },
  ] satisfies OptSpec[],
};

export async function runFork(argv: string[]): Promise<void> {
  let root: string | undefined, pools: string | undefined, args: string[];
  try {
    args = parseOptions(argv.map((a) => (a === '-h' ? '--help' : a)), USAGE, (p: Parsed) => {
      if (p.spec.long === 'root') root = p.arg;
      if (p.spec.long === 'pools') pools = p.arg;
    });
    if (args.length !== 2) throw usageMessage(USAGE, args.length < 2 ? 'a source and a destination are required' : 'too many arguments');
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const r = await forkRepository(args[0]!, args[1]!, { root, poolsDir: pools === undefined ? undefined : resolve(pools) });
  process.stdout.write(`forked ${args[0]} to ${r.path} (${r.refs} refs; objects shared through ${r.pool}${r.newPool ? ', made now' : ''})\n`);
}
