/** `gitwire upload-pack`: git-upload-pack's options and exit codes. */
import { GitwireError } from '../errors.js';
import { stdioUploadPack } from '../transport/stdio.js';

const USAGE = `usage: git upload-pack [<options>] <dir>

    --stateless-rpc       quit after a single request/response exchange
    --strict              do not try <directory>/.git/ if <directory> is no Git directory
    --timeout <n>         interrupt transfer after <n> seconds of inactivity
`;

export async function runUploadPack(args: string[]): Promise<void> {
  let strict = false, stateless = false, advertise = false, timeout = 0;
  const dirs: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--strict') strict = true;
    else if (a === '--no-strict') strict = false;
    else if (a === '--stateless-rpc') stateless = true;
    else if (a === '--no-stateless-rpc') stateless = false;
    else if (a === '--advertise-refs' || a === '--http-backend-info-refs') advertise = true;
    else if (a.startsWith('--timeout=')) timeout = Number(a.slice(10));
    else if (a === '--timeout') timeout = Number(args[++i]);
    else if (a === '--') { dirs.push(...args.slice(i + 1)); break; }
    else if (a.startsWith('-')) { process.stderr.write(`error: unknown option \`${a.replace(/^-+/, '')}'\n${USAGE}`); process.exit(129); }
    else dirs.push(a);
  }
  if (dirs.length !== 1 || !Number.isFinite(timeout)) { process.stderr.write(USAGE); process.exit(129); }
  try {
    await stdioUploadPack({ directory: dirs[0]!, strict, statelessRpc: stateless, advertiseRefs: advertise, timeout, argv: ['upload-pack', ...args] });
  } catch (e) {
    if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
    throw e;
  }
  process.exit(0);
}
