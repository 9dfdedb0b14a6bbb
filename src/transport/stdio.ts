/**
 * The stdio transport (ssh, file://, --upload-pack): a service on this
 * process's stdin and stdout.
 */
import { constants, fstatSync, openSync } from 'node:fs';
import { FdSink } from '../pktline/sink.js';
import { uploadPack, type UploadPackOptions, type UploadPackResult } from '../protocol/upload-pack.js';

/** Run upload-pack on this process's stdin/stdout. */
export function stdioUploadPack(o: Omit<UploadPackOptions, 'input' | 'output'>): Promise<UploadPackResult> {
  // an advertisement reads nothing: leave process.stdin alone (making it builds a stream, or a socket on a pipe)
  return uploadPack({ ...o, input: o.advertiseRefs ? Buffer.alloc(0) : process.stdin, output: stdoutSink(o.timeout) });
}

/**
 * This process's stdout as a sink. With `--timeout`, as git's alarm: a
 * client that takes nothing of what is written for that long ends the
 * transfer (its pack-objects killed) instead of holding it for ever. A
 * blocking descriptor cannot be timed, so stdout is opened afresh (its own
 * open file description, made non-blocking, leaving fd 1 as the parent
 * gave it) where the system allows it: a pipe (sshd, git's file:// and
 * --upload-pack) on Linux. Elsewhere (a socket, a terminal, a file) it
 * stays as it is, and only reads time out.
 */
export function stdoutSink(timeout: number | undefined, path = '/proc/self/fd/1'): FdSink {
  if (!timeout || timeout <= 0) return new FdSink(1);
  try {
    // only a pipe: a file opened afresh would lose its offset and O_APPEND (and never blocks anyway)
    if (!fstatSync(1).isFIFO()) return new FdSink(1);
    return new FdSink(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK), timeout * 1000);
  } catch {
    return new FdSink(1);
  }
}
