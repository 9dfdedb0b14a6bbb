/** deepen, deepen-since and deepen-not request lines (v0 and v2). */
import { GitwireError } from '../errors.js';
import type { UploadPackSession } from './session.js';

const die = (msg: string) => new GitwireError('GW_PROTOCOL', msg);

export function parseDeepenLine(s: UploadPackSession, line: string): boolean {
  if (line.startsWith('deepen ')) {
    const arg = line.slice(7);
    const n = /^(0x[0-9a-fA-F]+|0[0-7]*|[1-9]\d*)$/.test(arg) ? Number(arg.startsWith('0') && !arg.startsWith('0x') && arg.length > 1 ? parseInt(arg, 8) : arg) : NaN;
    if (!Number.isFinite(n) || n <= 0) throw die(`Invalid deepen: ${line}`);
    s.depth = n > 0x7fffffff ? 0x7fffffff : n;
    return true;
  }
  if (line.startsWith('deepen-since ')) {
    const arg = line.slice(13);
    if (!/^\d+$/.test(arg) || Number(arg) === 0) throw die(`Invalid deepen-since: ${line}`);
    s.deepenSince = Number(arg);
    s.deepenRevList = true;
    return true;
  }
  if (line.startsWith('deepen-not ')) {
    s.deepenNot.push(line.slice(11));
    s.deepenRevList = true;
    return true;
  }
  return false;
}
