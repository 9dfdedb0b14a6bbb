/**
 * `gitwire bundle create <directory>`: make the repository's bundle now
 * (bundle/): its advertised branches and tags in one file under
 * `<directory>/gitwire/bundles/`, which `serve --bundles` advertises to
 * cloning clients through bundle-uri (docs/serving.md). No git needed.
 */
import { Repository } from '../repo/repository.js';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const USAGE: Usage = {
  lines: [
    'gitwire bundle create [-q | --quiet] <directory>',
    '',
    "Make a bundle of the repository's advertised branches and tags (hidden refs left out)",
    'in <directory>/gitwire/bundles/, for `gitwire serve --bundles` to offer through bundle-uri.',
    'Bundles superseded for longer than the grace period are removed.',
  ],
  options: [
    { kind: 'bool', short: 'q', long: 'quiet', help: 'print nothing on success' },
    { kind: 'help', short: 'h', long: 'help', help: 'print this help', noneg: true },
  ] satisfies OptSpec[],
};

export async function runBundle(argv: string[]): Promise<void> {
  let quiet = false, args: string[];
  try {
    args = parseOptions(argv.map((a) => (a === '-h' ? '--help' : a)), USAGE, (p: Parsed) => { if (p.spec.long === 'quiet') quiet = !p.unset; });
    if (args[0] !== 'create') throw usageMessage(USAGE, args.length === 0 ? 'a subcommand is required' : `unknown subcommand: '${args[0]}'`);
    if (args.length !== 2) throw usageMessage(USAGE, args.length < 2 ? 'a directory is required' : 'too many arguments');
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const repo = Repository.open(args[1]!, { strict: false });
  const { makeBundle, pruneBundles } = await import('../bundle/index.js');
  const b = await makeBundle(repo);
  pruneBundles(b.file.slice(0, -b.name.length - 1), b.view);
  if (!quiet) {
    process.stdout.write(`created ${b.file} (${b.refs.length} refs, ${b.pack.objects ?? '?'} objects, ${b.bytes} bytes)\n`);
    for (const m of b.missing) process.stderr.write(`warning: ref '${m}' left out: its object is missing\n`);
  }
}
