/**
 * A v2 command's argument lines, up to the flush that ends them. Anything
 * else is git's `expected flush after <command> arguments`, or the
 * command's own error (`notFlush`).
 */
import { protocolError, type GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';

export async function* commandArgs(r: PktReader, command: string, notFlush?: () => GitwireError): AsyncGenerator<string> {
  for (;;) {
    const p = await r.readPacket();
    if (p.kind === 'data') { yield p.data.toString('latin1'); continue; }
    if (p.kind !== 'flush') throw notFlush ? notFlush() : protocolError(`expected flush after ${command} arguments`);
    return;
  }
}
