/** v2 `object-info`: sizes of objects by id, in git's reply format. */
import { limitError, protocolError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import type { UploadPackSession } from '../session.js';
import { isHex, parseHex } from '../../repo/oid.js';
import { slicerOf } from '../negotiation.js';
import { resolveLimits } from '../limits.js';
import { commandArgs } from './args.js';

/** git's protocol-caps.c: told to the client, then fatal */
const notFlush = () => protocolError('object-info: expected flush after arguments', { wire: true });

export async function objectInfo(s: UploadPackSession, r: PktReader): Promise<void> {
  const w = s.writer;
  let size = false;
  const oids: string[] = [];
  const slicer = slicerOf(s);
  const maxIds = resolveLimits(s.opts.limits).maxHaves;
  for await (const line of commandArgs(r, 'object-info', notFlush)) {
    const tick = slicer.tick();
    if (tick) await tick;
    if (line === 'size') { size = true; continue; }
    if (line.startsWith('oid ')) {
      if (oids.length >= maxIds) throw limitError(`object-info: too many object ids in one request (limit ${maxIds})`, maxIds);
      oids.push(line.slice(4));
      continue;
    }
    // not fatal, as in git; buffered with the reply (object-info never frames on band 1)
    w.data(`ERR object-info: unexpected line: '${line}'`);
  }
  if (oids.length) {
    if (size) w.data('size');
    for (const hex of oids) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (!isHex(hex, s.repo.hexLen)) { w.data(`ERR object-info: protocol error, expected to get oid, not '${hex}'`); continue; }
      let out: string = hex;
      if (size) {
        const info = s.repo.odb.info(parseHex(hex));
        out += info ? ` ${info.size}` : ' ';
      }
      w.data(out);
    }
  }
  w.flush();
}
