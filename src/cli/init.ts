/**
 * `gitwire init <directory>`: a bare repository, made natively (admin/create.ts),
 * with git init's options for it. The initial branch is `main` unless
 * `--initial-branch`, or `default-branch` in the config file (`--config`,
 * as serve reads it) or GITWIRE_DEFAULT_BRANCH, says otherwise.
 */
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

export const INIT_USAGE: Usage = {
  lines: ['gitwire init [--object-format=<format>] [--ref-format=<format>] [-b <branch-name> | --initial-branch=<name>] [--config=<file>] [-q | --quiet] <directory>'],
  options: [
    { kind: 'string', long: 'object-format', argh: 'hash', takesArg: true, noneg: true, help: 'specify the hash algorithm to use (sha1, sha256)' },
    { kind: 'string', long: 'ref-format', argh: 'format', takesArg: true, noneg: true, help: 'specify the reference format to use (files, reftable)' },
    { kind: 'string', short: 'b', long: 'initial-branch', argh: 'name', takesArg: true, noneg: true, help: 'override the name of the initial branch (default: main)' },
    { kind: 'string', long: 'config', argh: 'file', takesArg: true, noneg: true, help: "gitwire serve's config file: its default-branch names the initial branch" },
    { kind: 'bool', long: 'bare', help: 'create a bare repository (always: gitwire serves bare repositories)' },
    { kind: 'bool', short: 'q', long: 'quiet', help: 'be quiet' },
  ] satisfies OptSpec[],
};

export interface InitArgs { directory: string; objectFormat?: string; refFormat?: string; initialBranch?: string; config?: string; quiet: boolean }

export function parseInitArgs(argv: readonly string[]): InitArgs {
  const o: Omit<InitArgs, 'directory'> = { quiet: false };
  const dirs = parseOptions(argv, INIT_USAGE, (p: Parsed) => {
    switch (p.spec.long) {
      case 'object-format': o.objectFormat = p.arg; return;
      case 'ref-format': o.refFormat = p.arg; return;
      case 'initial-branch': o.initialBranch = p.arg; return;
      case 'config': o.config = p.arg; return;
      case 'quiet': o.quiet = !p.unset; return;
    }
  });
  if (dirs.length > 1) throw usageMessage(INIT_USAGE, 'too many arguments');
  if (dirs.length === 0) throw usageMessage(INIT_USAGE, 'you must specify a directory');
  return { ...o, directory: dirs[0]! };
}

/** The initial branch: the flag, else GITWIRE_DEFAULT_BRANCH, else the config file's default-branch, else main. */
async function initialBranch(a: InitArgs, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (a.initialBranch !== undefined) return a.initialBranch;
  if (env.GITWIRE_DEFAULT_BRANCH) return env.GITWIRE_DEFAULT_BRANCH;
  if (a.config === undefined) return undefined;
  const { loadConfigFile } = await import('./serve-config.js');
  const { SERVE_FLAGS } = await import('./serve.js');
  const v = await loadConfigFile(a.config, SERVE_FLAGS);
  return typeof v['default-branch'] === 'string' ? v['default-branch'] : undefined;
}

export async function runInit(args: string[]): Promise<void> {
  let a: InitArgs;
  try { a = parseInitArgs(args); } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const { GitwireError } = await import('../errors.js');
  if (a.objectFormat !== undefined && a.objectFormat !== 'sha1' && a.objectFormat !== 'sha256') throw new GitwireError('GW_USAGE', `unknown hash algorithm '${a.objectFormat}'`);
  if (a.refFormat !== undefined && a.refFormat !== 'files' && a.refFormat !== 'reftable') throw new GitwireError('GW_USAGE', `unknown ref storage format '${a.refFormat}'`);
  const { createRepository } = await import('../admin/create.js');
  const made = createRepository(a.directory, {
    objectFormat: a.objectFormat as 'sha1' | 'sha256' | undefined,
    refFormat: a.refFormat as 'files' | 'reftable' | undefined,
    initialBranch: await initialBranch(a, process.env),
  });
  if (!a.quiet) process.stdout.write(`Initialized empty Git repository in ${made.path}/\n`);
  if (a.refFormat === 'reftable') {
    // made natively; serving it runs git's pack-objects and index-pack, which need reftable support
    const { reftableRefusal } = await import('../util/git-version.js');
    const refusal = await reftableRefusal('reftable', process.env, 'fetch');
    if (refusal) process.stderr.write(`warning: the installed git cannot fetch from or push to it: ${refusal.replace(/^this repository keeps its refs in the reftable format, and /, '')}\n`);
  }
}
