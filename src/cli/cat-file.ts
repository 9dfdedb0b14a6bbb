/** `gitwire cat-file`: git cat-file's arguments and output, byte for byte (git 2.55). */
import { readSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { FdSink } from '../pktline/sink.js';
import { PacketWriter } from '../pktline/writer.js';
import { Repository } from '../repo/repository.js';
import { BatchEngine } from '../catfile/batch.js';
import { catOne } from '../catfile/single.js';
import { parseCatFileArgs, validateCatFile } from '../catfile/options.js';
import { UsageExit, exitWithUsage } from './parse-options.js';
import { GitwireError } from '../errors.js';
import { assertCatFileSupported } from '../catfile/support.js';

/**
 * Read stdin with blocking reads into one reused buffer, as git's stdio
 * does: nothing else runs in this process, and a request/response
 * client pays for every turn of the event loop and stream machinery
 * between its request and the answer. False when stdin cannot be read
 * this way (a non-blocking descriptor): the caller reads the rest as a
 * stream.
 */
function feedStdinSync(engine: BatchEngine): boolean {
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = readSync(0, buf, 0, buf.length, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
      if (code === 'EOF') return true;
      throw e;
    }
    if (n === 0) return true;
    engine.feed(buf.subarray(0, n)); // lines are answered (or copied) before the buffer is reused
  }
}

export async function runCatFile(args: string[]): Promise<void> {
  // cat-file's work is a few hot loops run once per process (a pack's reverse
  // index and header table, one lookup per request): compile them on this
  // thread when they get hot instead of running on in the slower tiers while
  // a background compile waits for a core (measured: about a quarter less CPU
  // for --batch-all-objects --batch-check on a loaded machine)
  setFlagsFromString('--no-concurrent-osr');
  // V8's code cache (bin/gitwire writes it at exit) records the flags it was
  // made under and is rejected when they differ: put the default back first
  process.prependListener('exit', () => setFlagsFromString('--concurrent-osr'));
  // git sets the repository up before parsing options; a lone -h (or gitwire's --help) works anywhere
  let repo: Repository | undefined;
  if (!(args.length === 1 && (args[0] === '-h' || args[0] === '--help'))) repo = Repository.discover();
  let req;
  try {
    req = validateCatFile(parseCatFileArgs(args));
  } catch (e) {
    if (e instanceof UsageExit) exitWithUsage(e);
    throw e;
  }
  if (!repo) repo = Repository.discover();
  assertCatFileSupported(repo);
  if (req.kind === 'batch') {
    const writer = new PacketWriter(new FdSink(1), req.buffer ? 256 * 1024 : 64 * 1024);
    const engine = new BatchEngine(repo, writer, {
      mode: req.args.batch!.kind, format: req.args.batch!.format, buffer: req.buffer,
      inputDelim: req.inputDelim ? '\n' : '\0', outputDelim: req.outputDelim ? '\n' : '\0',
      followSymlinks: req.args.followSymlinks,
      filter: req.args.filter,
      transform: req.transform,
      useMailmap: req.args.useMailmap,
      diag: (line) => { writer.push(); process.stderr.write(`${line}\n`); },
    });
    try {
      if (req.all) { engine.all(req.args.unordered); process.exit(0); }
      if (!feedStdinSync(engine)) for await (const chunk of process.stdin as AsyncIterable<Buffer>) engine.feed(chunk);
      engine.end();
    } catch (e) {
      writer.push();
      if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
      throw e;
    }
    process.exit(0);
  }
  const diag = (line: string) => { process.stderr.write(`${line}\n`); };
  const { out, code } = req.kind === 'typed'
    ? catOne(repo, { type: req.type }, req.name, { diag, mailmap: req.args.useMailmap })
    : catOne(repo, req.mode, req.name, { diag, path: req.args.path, mailmap: req.args.useMailmap });
  if (out.length) new FdSink(1).write(out);
  process.exit(code);
}
