/** v2 `bundle-uri`: the `bundle.*` configuration as key=value lines. */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import type { UploadPackSession } from '../session.js';
import { commandArgs } from './args.js';

export async function bundleUri(s: UploadPackSession, r: PktReader): Promise<void> {
  for await (const arg of commandArgs(r, 'bundle-uri')) {
    throw new GitwireError('GW_PROTOCOL', `bundle-uri: unexpected argument: '${arg}'`);
  }
  const w = s.writer;
  for (const e of s.repo.config.each()) {
    if (!e.key.startsWith('bundle.')) continue;
    if (e.value) w.data(`${e.key}=${e.value}`);
  }
  w.flush();
}
