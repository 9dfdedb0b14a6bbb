/** v2 `bundle-uri`: the `bundle.*` configuration as key=value lines. */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import type { UploadPackSession } from '../session.js';

export async function bundleUri(s: UploadPackSession, r: PktReader): Promise<void> {
  for (;;) {
    const p = await r.readPacket();
    if (p.kind === 'flush') break;
    if (p.kind === 'data') throw new GitwireError('GW_PROTOCOL', `bundle-uri: unexpected argument: '${p.data.toString()}'`);
    throw new GitwireError('GW_PROTOCOL', 'bundle-uri: expected flush after arguments');
  }
  const w = s.writer;
  for (const e of s.repo.config.each()) {
    if (!e.key.startsWith('bundle.')) continue;
    if (e.value) w.data(`${e.key}=${e.value}`);
  }
  w.flush();
}
