/**
 * `gitwire delete <directory>`: delete a bare repository atomically
 * (admin/delete.ts): renamed away first, so a server sees it gone at once,
 * then removed. A running `gitwire serve` resolves every request's path
 * afresh and finds nothing there from that moment.
 */
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const DELETE_USAGE: Usage = {
  lines: ['gitwire delete [-q | --quiet] <directory>'],
  options: [
    { kind: 'bool', short: 'q', long: 'quiet', help: 'be quiet' },
  ] satisfies OptSpec[],
};

export async function runDelete(args: string[]): Promise<void> {
  let quiet = false;
  let dirs: string[];
  try {
    dirs = parseOptions(args, DELETE_USAGE, (p: Parsed) => { if (p.spec.long === 'quiet') quiet = !p.unset; });
    if (dirs.length > 1) throw usageMessage(DELETE_USAGE, 'too many arguments');
    if (dirs.length === 0) throw usageMessage(DELETE_USAGE, 'you must specify a directory');
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const { deleteRepository } = await import('../admin/delete.js');
  const r = await deleteRepository(dirs[0]!);
  if (!quiet) process.stdout.write(`Deleted repository ${r.path}\n`);
}
