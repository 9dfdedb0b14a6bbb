/**
 * The stdio transport (ssh, file://, --upload-pack): a service on this
 * process's stdin and stdout.
 */
import { FdSink } from '../pktline/sink.js';
import { uploadPack, type UploadPackOptions, type UploadPackResult } from '../protocol/upload-pack.js';

/** Run upload-pack on this process's stdin/stdout. */
export function stdioUploadPack(o: Omit<UploadPackOptions, 'input' | 'output'>): Promise<UploadPackResult> {
  // an advertisement reads nothing: leave process.stdin alone (making it builds a stream, or a socket on a pipe)
  return uploadPack({ ...o, input: o.advertiseRefs ? Buffer.alloc(0) : process.stdin, output: new FdSink(1) });
}
