/** `gitwire upload-pack`: git-upload-pack's options (builtin/upload-pack.c), usage and exit codes. */
import { GitwireError } from '../errors.js';
import { setLightBitmaps } from '../pack/bitmap/resident.js';
import { reachedPack } from './code-cache-tier.js';
import { stdioUploadPack } from '../transport/stdio.js';
import { UsageExit, exitWithUsage, integerValue, parseOptions, usageExit, type OptSpec, type Parsed, type Usage } from './parse-options.js';

/** The option table, in git's order. */
export const USAGE: Usage = {
  lines: ['git-upload-pack [--[no-]strict] [--timeout=<n>] [--stateless-rpc]\n                [--advertise-refs] <directory>'],
  options: [
    { kind: 'bool', long: 'stateless-rpc', help: 'quit after a single request/response exchange' },
    { kind: 'bool', long: 'http-backend-info-refs', help: 'serve up the info/refs for git-http-backend', hidden: true },
    { kind: 'alias', long: 'advertise-refs', target: 'http-backend-info-refs', help: '' },
    { kind: 'bool', long: 'strict', help: 'do not try <directory>/.git/ if <directory> is no Git directory' },
    { kind: 'integer', long: 'timeout', argh: 'n', takesArg: true, help: 'interrupt transfer after <n> seconds of inactivity' },
  ] satisfies OptSpec[],
};

export interface UploadPackArgs { directory: string; strict: boolean; statelessRpc: boolean; advertiseRefs: boolean; timeout: number }

/** cmd_upload_pack() up to entering the repository. Throws UsageExit. */
export function parseUploadPackArgs(argv: readonly string[]): UploadPackArgs {
  let strict = false, statelessRpc = false, advertiseRefs = false, timeout = 0;
  const dirs = parseOptions(argv, USAGE, (p: Parsed) => {
    const v = !p.unset;
    switch (p.spec.long) {
      case 'stateless-rpc': statelessRpc = v; return;
      case 'http-backend-info-refs': advertiseRefs = v; return;
      case 'strict': strict = v; return;
      case 'timeout': timeout = integerValue(p); return;
    }
  });
  if (dirs.length !== 1) throw usageExit(USAGE);
  return { directory: dirs[0]!, strict, statelessRpc, advertiseRefs, timeout };
}

export async function runUploadPack(args: string[]): Promise<void> {
  let o: UploadPackArgs;
  try {
    o = parseUploadPackArgs(args);
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  try {
    // git's options only (a drop-in); the producer is chosen by GITWIRE_PACK_OBJECTS, as serve's config
    const producer = process.env.GITWIRE_PACK_OBJECTS;
    if (producer !== undefined && producer !== 'native' && producer !== 'git') throw new GitwireError('GW_USAGE', `GITWIRE_PACK_OBJECTS: expected 'native' or 'git', not '${producer}'`);
    // one process per request: a bitmap is read for this request only, so nothing is built per object
    setLightBitmaps(true);
    const r = await stdioUploadPack({ ...o, argv: ['upload-pack', ...args], packObjects: producer === 'git' ? 'git' : 'native' });
    if (r.wants > 0) reachedPack();
  } catch (e) {
    if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
    throw e;
  }
  process.exit(0);
}
