/**
 * gitwire's command line. Each command is loaded only when used, so
 * start-up stays lean.
 */
import { GitwireError } from '../errors.js';

const HELP = `usage: gitwire <command> [<args>]

Commands:
  upload-pack [--[no-]strict] [--timeout=<n>] [--stateless-rpc]
              [--advertise-refs | --http-backend-info-refs] <directory>
                    serve git fetch/clone/ls-remote over stdio (v0, v1, v2)
  receive-pack [--stateless-rpc] [--advertise-refs | --http-backend-info-refs]
               [--quiet] <directory>
                    receive git push over stdio (git push --receive-pack=…)
  cat-file <args>   git cat-file, with one write per object
  init [--object-format=<hash>] [--ref-format=<format>] [-b <branch>] <directory>
                    create a bare repository (initial branch main)
  delete <directory>
                    delete a bare repository (atomically)
  serve [<root>] [--http <port>] [--git <port>] [--ssh <port>] [--host <addr>] [<options>]
                    serve repositories over smart HTTP, git:// and SSH
  demo [<repository>]
                    clone a repository (default: gitwire) through gitwire upload-pack
  fork [--root <dir>] [--pools <dir>] <source> <destination>
                    fork a repository; the two share objects through an object pool
  rename [--root <dir>] <old> <new>
                    rename a repository atomically
  bundle create <directory>
                    make the repository's bundle, offered to clones through bundle-uri

'gitwire <command> --help' lists all options of a command.

Options:
  -C <path>         run as if gitwire was started in <path> (repeatable, as git's)
  --version         print gitwire's version
  -h, --help        print this help
`;

/** The CLI's one error boundary: git's `fatal:` text and exit code. */
function fatal(e: unknown): never {
  const { text, exitCode } = GitwireError.forCli(e);
  process.stderr.write(text);
  process.exit(exitCode);
}

/** Each command and how it is loaded and run. */
const RUN: Record<string, (args: string[]) => Promise<void>> = {
  'upload-pack': async (args) => (await import('./upload-pack.js')).runUploadPack(args),
  'receive-pack': async (args) => (await import('./receive-pack.js')).runReceivePack(args),
  'cat-file': async (args) => (await import('./cat-file.js')).runCatFile(args),
  serve: async (args) => (await import('./serve.js')).runServe(args),
  init: async (args) => (await import('./init.js')).runInit(args),
  delete: async (args) => (await import('./delete.js')).runDelete(args),
  demo: async (args) => (await import('./demo.js')).runDemo(args),
  fork: async (args) => (await import('./fork.js')).runFork(args),
  rename: async (args) => (await import('./rename.js')).runRename(args),
  bundle: async (args) => (await import('./bundle.js')).runBundle(args),
};

export { codeCacheTier } from './code-cache-tier.js';

/** The commands (bin/gitwire writes a V8 code cache for these only, not for help, version or a mistyped name). */
export const COMMANDS: readonly string[] = Object.keys(RUN);

/**
 * git's `-C <path>` before the command: each changes the directory, relative
 * to the one before; an empty path changes nothing. Returns the arguments
 * from the command on.
 */
function changeDirectories(argv: string[]): string[] {
  let i = 0;
  while (argv[i] === '-C') {
    const path = argv[i + 1];
    if (path === undefined) {
      process.stderr.write(`no directory given for '-C' option\n${HELP.slice(0, HELP.indexOf('\n') + 1)}`);
      process.exit(129);
    }
    if (path !== '') {
      try {
        process.chdir(path);
      } catch (e) {
        const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'No such file or directory' : (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'Not a directory' : (e as NodeJS.ErrnoException).code === 'EACCES' ? 'Permission denied' : (e as Error).message;
        process.stderr.write(`fatal: cannot change to '${path}': ${why}\n`);
        process.exit(128);
      }
    }
    i += 2;
  }
  return argv.slice(i);
}

export async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = changeDirectories(argv);
  try {
    switch (cmd) {
      case '--version':
      case 'version': {
        const { version } = await import('../version.js');
        process.stdout.write(`gitwire version ${version()}\n`);
        return;
      }
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(HELP);
        return;
    }
    const run = Object.hasOwn(RUN, cmd) ? RUN[cmd] : undefined;
    if (!run) {
      const { similarCommandsText } = await import('./suggest.js');
      process.stderr.write(`gitwire: '${cmd}' is not a gitwire command. See 'gitwire --help'.\n${similarCommandsText(cmd, [...COMMANDS, 'help', 'version'])}`);
      process.exit(1);
    }
    return await run(rest);
  } catch (e) {
    fatal(e);
  }
}
