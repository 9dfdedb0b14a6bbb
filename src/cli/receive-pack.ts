/** `gitwire receive-pack`: git-receive-pack's options (builtin/receive-pack.c), usage and exit codes. */
import { GitwireError } from '../errors.js';
import { FdSink } from '../pktline/sink.js';
import { UsageExit, exitWithUsage, parseOptions, usageMessage, type OptSpec, type Parsed, type Usage } from './parse-options.js';

/** The option table, in git's order; all but --quiet are hidden (git gives them no help; `about` is gitwire's --help). */
export const USAGE: Usage = {
  lines: ['git receive-pack <git-dir>'],
  options: [
    { kind: 'countup', short: 'q', long: 'quiet', help: 'quiet' },
    { kind: 'bool', long: 'skip-connectivity-check', help: '', hidden: true, about: 'do not check that the pushed objects connect to existing ones' },
    { kind: 'bool', long: 'stateless-rpc', help: '', hidden: true, about: 'quit after a single request/response exchange' },
    { kind: 'bool', long: 'http-backend-info-refs', help: '', hidden: true, about: 'serve up the info/refs for git-http-backend' },
    { kind: 'alias', long: 'advertise-refs', target: 'http-backend-info-refs', help: '' },
    { kind: 'bool', long: 'reject-thin-pack-for-testing', help: '', hidden: true, about: 'refuse a thin pack (for tests)' },
  ] satisfies OptSpec[],
};

export interface ReceivePackArgs { directory: string; quiet: boolean; statelessRpc: boolean; advertiseRefs: boolean; skipConnectivityCheck: boolean; rejectThin: boolean }

/** cmd_receive_pack() up to entering the repository. Throws UsageExit. */
export function parseReceivePackArgs(argv: readonly string[]): ReceivePackArgs {
  let quiet = 0, statelessRpc = false, advertiseRefs = false, skipConnectivityCheck = false, rejectThin = false;
  const dirs = parseOptions(argv, USAGE, (p: Parsed) => {
    const v = !p.unset;
    switch (p.spec.long) {
      case 'quiet': quiet = p.unset ? 0 : quiet + 1; return; // OPT__QUIET counts up
      case 'skip-connectivity-check': skipConnectivityCheck = v; return;
      case 'stateless-rpc': statelessRpc = v; return;
      case 'http-backend-info-refs': advertiseRefs = v; return;
      case 'reject-thin-pack-for-testing': rejectThin = v; return;
    }
  });
  if (dirs.length > 1) throw usageMessage(USAGE, 'too many arguments');
  if (dirs.length === 0) throw usageMessage(USAGE, 'you must specify a directory');
  return { directory: dirs[0]!, quiet: quiet > 0, statelessRpc, advertiseRefs, skipConnectivityCheck, rejectThin };
}

export async function runReceivePack(args: string[]): Promise<void> {
  let o: ReceivePackArgs;
  try {
    o = parseReceivePackArgs(args);
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  const { receivePack } = await import('../protocol/receive-pack.js');
  const { FdPktSource } = await import('../protocol/receive/fd-source.js');
  try {
    // hooks learn the transport (GITWIRE_PROTOCOL); who pushed is what the caller's environment says (GITWIRE_USER, REMOTE_USER)
    await receivePack({ ...o, input: new FdPktSource(0), output: new FdSink(1), argv: ['receive-pack', ...args], env: { ...process.env, GITWIRE_PROTOCOL: 'stdio' } });
  } catch (e) {
    if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
    throw e;
  }
  process.exit(0);
}
