/** `gitwire receive-pack`: git-receive-pack's options and exit codes. */
import { GitwireError } from '../errors.js';
import { FdSink } from '../pktline/sink.js';

const USAGE = `usage: git receive-pack <git-dir>

    -q, --[no-]quiet      quiet
`;

export async function runReceivePack(args: string[]): Promise<void> {
  let quiet = false, stateless = false, advertise = false, skipConn = false, rejectThin = false;
  const dirs: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-q' || a === '--quiet') quiet = true;
    else if (a === '--no-quiet') quiet = false;
    else if (a === '--stateless-rpc') stateless = true;
    else if (a === '--no-stateless-rpc') stateless = false;
    else if (a === '--advertise-refs' || a === '--http-backend-info-refs') advertise = true;
    else if (a === '--no-advertise-refs' || a === '--no-http-backend-info-refs') advertise = false;
    else if (a === '--skip-connectivity-check') skipConn = true;
    else if (a === '--reject-thin-pack-for-testing') rejectThin = true;
    else if (a === '--') { dirs.push(...args.slice(i + 1)); break; }
    else if (a.startsWith('-') && a !== '-') { process.stderr.write(`error: unknown option \`${a.replace(/^-+/, '')}'\n${USAGE}`); process.exit(129); }
    else dirs.push(a);
  }
  if (dirs.length > 1) { process.stderr.write(`fatal: too many arguments\n\n${USAGE}`); process.exit(129); }
  if (dirs.length === 0) { process.stderr.write(`fatal: you must specify a directory\n\n${USAGE}`); process.exit(129); }
  const { receivePack } = await import('../protocol/receive-pack.js');
  const { FdPktSource } = await import('../protocol/receive/fd-source.js');
  try {
    await receivePack({
      directory: dirs[0]!, quiet, statelessRpc: stateless, advertiseRefs: advertise,
      skipConnectivityCheck: skipConn, rejectThin,
      input: new FdPktSource(0), output: new FdSink(1), argv: ['receive-pack', ...args],
    });
  } catch (e) {
    if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
    throw e;
  }
  process.exit(0);
}
