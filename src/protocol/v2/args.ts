/** A v2 command's argument lines, up to the flush that ends them (git's wording otherwise). */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';

export async function* commandArgs(r: PktReader, command: string): AsyncGenerator<string> {
  for (;;) {
    const p = await r.readPacket();
    if (p.kind === 'data') { yield p.data.toString('latin1'); continue; }
    if (p.kind !== 'flush') throw new GitwireError('GW_PROTOCOL', `expected flush after ${command} arguments`);
    return;
  }
}
