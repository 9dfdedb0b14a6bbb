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
  serve [<root>] [--http <port>] [--git <port>] [--host <addr>]
                    serve repositories over smart HTTP and git://
  demo              clone this repository through gitwire upload-pack

Options:
  --version         print gitwire's version
  --help            print this help
`;

/** The CLI's one error boundary: git's `fatal:` text and exit code. */
function fatal(e: unknown): never {
  const { text, exitCode } = GitwireError.forCli(e);
  process.stderr.write(text);
  process.exit(exitCode);
}

export async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
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
      case 'upload-pack': {
        const { runUploadPack } = await import('./upload-pack.js');
        return await runUploadPack(rest);
      }
      case 'receive-pack': {
        const { runReceivePack } = await import('./receive-pack.js');
        return await runReceivePack(rest);
      }
      case 'cat-file': {
        const { runCatFile } = await import('./cat-file.js');
        return await runCatFile(rest);
      }
      case 'serve': {
        const { runServe } = await import('./serve.js');
        return await runServe(rest);
      }
      case 'demo': {
        const { runDemo } = await import('./demo.js');
        return await runDemo(rest);
      }
      default:
        process.stderr.write(`gitwire: '${cmd}' is not a gitwire command. See 'gitwire --help'.\n`);
        process.exit(1);
    }
  } catch (e) {
    fatal(e);
  }
}
