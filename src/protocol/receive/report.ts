/**
 * The push report (git's report() and report_v2()): `unpack <status>`, then
 * `ok <ref>` or `ng <ref> <reason>` per command; with report-status-v2,
 * proc-receive's rewrites as `option` lines, one `ok` per report. Built in
 * slices (50,000 lines), returned as one buffer for one write.
 */
import { FLUSH, encode } from '../../pktline/codec.js';
import { forEachSliced } from '../../util/budget.js';
import { encodeName } from '../../util/byte-name.js';
import type { Command } from './commands.js';

export async function reportBytes(commands: Command[], unpackError: string | undefined, v2: boolean): Promise<Buffer> {
  const parts: Buffer[] = [encode(`unpack ${unpackError ?? 'ok'}\n`)];
  await forEachSliced(commands, (c) => {
    parts.push(encode(encodeName(c.error ? `ng ${c.ref} ${c.error}\n` : `ok ${c.ref}\n`)));
    if (!v2 || c.error || !c.reports) return;
    // report_v2(): proc-receive's rewrites as options, one `ok` per report
    c.reports.forEach((r, i) => {
      if (i > 0) parts.push(encode(encodeName(`ok ${c.ref}\n`)));
      if (r.refname !== undefined) parts.push(encode(encodeName(`option refname ${r.refname}\n`)));
      if (r.oldOid) parts.push(encode(`option old-oid ${r.oldOid.toString('hex')}\n`));
      if (r.newOid) parts.push(encode(`option new-oid ${r.newOid.toString('hex')}\n`));
      if (r.forcedUpdate) parts.push(encode('option forced-update\n'));
    });
  });
  parts.push(FLUSH);
  return Buffer.concat(parts);
}
