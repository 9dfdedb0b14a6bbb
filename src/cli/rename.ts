/** `gitwire rename <old> <new>`: move a repository to a new name with one rename(2) (docs/forks.md). */
import { resolve } from 'node:path';
import { GitwireError } from '../errors.js';
import { renameRepository } from '../admin/rename.js';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const USAGE: Usage = {
  lines: [
    'gitwire rename [--root <dir>] [--redis <url>] <old> <new>',
    '',
    'Rename repository <old> to <new>, atomically. Names are taken as a client names them,',
    'under --root (default: the current directory); <new> must not exist.',
  ],
  options: [
    { kind: 'string', long: 'root', argh: 'dir', takesArg: true, noneg: true, help: 'the directory repository names are taken under' },
    { kind: 'string', long: 'redis', argh: 'url', takesArg: true, noneg: true, help: 'tell the servers coordinated through this Redis to forget the old name at once' },
    { kind: 'help', short: 'h', long: 'help', help: 'print this help', noneg: true },
  ] satisfies OptSpec[],
};

export async function runRename(argv: string[]): Promise<void> {
  let root: string | undefined, redis: string | undefined, args: string[];
  try {
    args = parseOptions(argv.map((a) => (a === '-h' ? '--help' : a)), USAGE, (p: Parsed) => {
      if (p.spec.long === 'root') root = p.arg;
      if (p.spec.long === 'redis') redis = p.arg;
    });
    if (args.length !== 2) throw usageMessage(USAGE, args.length < 2 ? 'an old and a new name are required' : 'too many arguments');
    if (redis !== undefined && !/^rediss?:\/\//.test(redis)) throw usageMessage(USAGE, `--redis: expected redis://host[:port], not '${redis}'`);
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const base = resolve(root ?? '.');
  let coordinator: import('../cluster/coordinator.js').Coordinator | undefined;
  if (redis !== undefined) {
    const { createCoordinator } = await import('../cluster/index.js');
    coordinator = await createCoordinator({ redis, root: base });
    const end = Date.now() + 5000;
    while (!coordinator.status().up && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    if (!coordinator.status().up) {
      await coordinator.close();
      throw new GitwireError('GW_REPO_ADMIN', `cannot reach Redis at ${redis}: nothing renamed`);
    }
  }
  try {
    const r = renameRepository(args[0]!, args[1]!, { root: base, coordinator });
    // one round trip after the PUBLISH on the same connection: it has been sent
    if (coordinator) await coordinator.packState('gitwire-rename-flush');
    process.stdout.write(`renamed ${r.from} to ${r.to}\n`);
  } finally {
    await coordinator?.close();
  }
}
