/** `gitwire rename <old> <new>`: move a repository to a new name with one rename(2) (docs/forks.md). */
import { renameRepository } from '../admin/rename.js';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const USAGE: Usage = {
  lines: [
    'gitwire rename [--root <dir>] <old> <new>',
    '',
    'Rename repository <old> to <new>, atomically. Names are taken as a client names them,',
    'under --root (default: the current directory); <new> must not exist.',
  ],
  options: [
    { kind: 'string', long: 'root', argh: 'dir', takesArg: true, noneg: true, help: 'the directory repository names are taken under' },
    { kind: 'help', short: 'h', long: 'help', help: 'print this help', noneg: true },
  ] satisfies OptSpec[],
};

export function runRename(argv: string[]): Promise<void> {
  let root: string | undefined, args: string[];
  try {
    args = parseOptions(argv.map((a) => (a === '-h' ? '--help' : a)), USAGE, (p: Parsed) => {
      if (p.spec.long === 'root') root = p.arg;
    });
    if (args.length !== 2) throw usageMessage(USAGE, args.length < 2 ? 'an old and a new name are required' : 'too many arguments');
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const r = renameRepository(args[0]!, args[1]!, { root });
  process.stdout.write(`renamed ${r.from} to ${r.to}\n`);
  return Promise.resolve();
}
