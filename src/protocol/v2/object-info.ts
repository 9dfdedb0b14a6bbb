/** v2 `object-info`: sizes of objects by id, in git's reply format. */
import { GitwireError } from '../../errors.js';
import type { PktReader } from '../../pktline/reader.js';
import type { UploadPackSession } from '../session.js';
import { isHex } from '../shallow.js';
import { slicerOf } from '../negotiation.js';
import { resolveLimits } from '../limits.js';

export async function objectInfo(s: UploadPackSession, r: PktReader): Promise<void> {
  const w = s.writer;
  let size = false;
  const oids: string[] = [];
  const slicer = slicerOf(s);
  const maxIds = resolveLimits(s.opts.limits).maxHaves;
  for (;;) {
    const tick = slicer.tick();
    if (tick) await tick;
    const p = await r.readPacket();
    if (p.kind !== 'data') {
      if (p.kind !== 'flush') {
        w.error('object-info: expected flush after arguments');
        throw new GitwireError('GW_PROTOCOL', 'object-info: expected flush after arguments');
      }
      break;
    }
    const line = p.data.toString('latin1');
    if (line === 'size') { size = true; continue; }
    if (line.startsWith('oid ')) {
      if (oids.length >= maxIds) throw new GitwireError('GW_LIMIT', `object-info: too many object ids in one request (limit ${maxIds})`);
      oids.push(line.slice(4));
      continue;
    }
    w.data(`ERR object-info: unexpected line: '${line}'`);
  }
  if (oids.length) {
    if (size) w.data('size');
    for (const hex of oids) {
      const tick = slicer.tick();
      if (tick) await tick;
      if (!isHex(hex, s.repo.hexLen)) { w.data(`ERR object-info: protocol error, expected to get oid, not '${hex}'`); continue; }
      let out = hex;
      if (size) {
        const info = s.repo.odb.info(Buffer.from(hex, 'hex'));
        out += info ? ` ${info.size}` : ' ';
      }
      w.data(out);
    }
  }
  w.flush();
}
