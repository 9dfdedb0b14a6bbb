/**
 * A v2 command's argument lines, up to the flush that ends them. Anything
 * else is git's `expected flush after <command> arguments`, or the
 * command's own error (`notFlush`).
 */
import { protocolError, type GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import { Slicer } from '../../util/budget.js';

export async function* commandArgs(r: PktReader, command: string, notFlush?: () => GitwireError): AsyncGenerator<string> {
  // a request already in memory is read without waiting on I/O: 65,000 lines in slices
  const slicer = new Slicer();
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const p = await r.readPacket();
    if (p.kind === 'data') { yield p.data.toString('latin1'); continue; }
    if (p.kind !== 'flush') throw notFlush ? notFlush() : protocolError(`expected flush after ${command} arguments`);
    return;
  }
}
