/** placeholder replaced by the v2 implementation */
import type { UploadPackSession } from '../session.js';
import type { PktReader } from '../../pktline/reader.js';
export interface ServeV2Options { advertiseOnly: boolean; statelessRpc: boolean; sessionId?: string }
export async function serveV2(_s: UploadPackSession, _r: PktReader, _o: ServeV2Options): Promise<void> {
  throw new Error('protocol v2 not implemented');
}
