/**
 * Driving `git index-pack --stdin` / `git unpack-objects` for a pushed
 * pack, with the arguments git's receive-pack gives them (unpack()). The
 * 12-byte pack header has already been read; the child gets
 * `--pack_header=<version>,<entries>` and the rest of the stream.
 */
import { spawnChild } from '../util/spawn.js';
import { hostname } from 'node:os';

export interface PackHeader { version: number; entries: number }

/** parse_pack_header(): an error string in git's words, or the header. */
export function parsePackHeader(b: Buffer): PackHeader | string {
  if (b.length < 12) return 'eof before pack header was fully read';
  if (b.toString('latin1', 0, 4) !== 'PACK') return 'protocol error (pack signature mismatch detected)';
  const version = b.readUInt32BE(4);
  if (version !== 2 && version !== 3) return 'protocol error (pack version unsupported)';
  return { version, entries: b.readUInt32BE(8) };
}

export interface IngestOptions {
  gitDir: string;
  env: NodeJS.ProcessEnv;
  header: PackHeader;
  unpackLimit: number;
  quiet: boolean;
  /** receive.fsckObjects: `--strict` plus the message types */
  strict?: string;
  maxInputSize: number;
  sideband: boolean;
  rejectThin?: boolean;
  shallowFile?: string;
  /** bytes already read after the header */
  first: Buffer;
  /** the rest of the client's bytes */
  source: AsyncIterator<Buffer>;
  /** a descriptor positioned right after the header, given to the child as its stdin (nothing is pumped) */
  stdinFd?: number;
  onStderr: (b: Buffer) => void;
}

export interface IngestResult {
  /** unpack status in git's words; undefined when all went well */
  error?: string;
  /** `keep` when index-pack left a .keep file (pack hash hex) */
  keep?: string;
  /** the child ran (for tests: arguments) */
  args: string[];
}

export function ingestArgs(o: Omit<IngestOptions, 'first' | 'source' | 'onStderr' | 'env' | 'gitDir'>, pid = process.pid): string[] {
  const a: string[] = [];
  if (o.shallowFile) a.push('--shallow-file', o.shallowFile);
  const hdr = `--pack_header=${o.header.version},${o.header.entries}`;
  if (o.header.entries < o.unpackLimit) {
    a.push('unpack-objects', hdr);
    if (o.quiet) a.push('-q');
    if (o.strict !== undefined) a.push(`--strict${o.strict}`);
    if (o.maxInputSize) a.push(`--max-input-size=${o.maxInputSize}`);
  } else {
    a.push('index-pack', '--stdin', hdr, `--keep=receive-pack ${pid} on ${hostname()}`);
    if (!o.quiet && o.sideband) a.push('--show-resolving-progress');
    if (o.sideband) a.push('--report-end-of-input');
    if (o.strict !== undefined) a.push(`--strict${o.strict}`);
    if (!o.rejectThin) a.push('--fix-thin');
    if (o.maxInputSize) a.push(`--max-input-size=${o.maxInputSize}`);
  }
  return a;
}

/**
 * Run the child, feeding it with backpressure until it exits. A client
 * that goes away mid-pack closes the child's stdin (it reports the
 * truncated pack); the child never outlives this call.
 */
export function ingestPack(o: IngestOptions): Promise<IngestResult> {
  const args = ingestArgs(o);
  const unpack = args.includes('unpack-objects');
  const direct = o.stdinFd !== undefined && o.first.length === 0;
  const child = spawnChild('git', args, { cwd: o.gitDir, env: o.env, stdio: [direct ? o.stdinFd! : 'pipe', unpack ? 'ignore' : 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.setEncoding('latin1');
  child.stdout?.on('data', (s: string) => { out += s; });
  child.stderr!.on('data', (b: Buffer) => o.onStderr(b));
  child.stdin?.on('error', () => { /* the child stopped reading: its exit status says why */ });
  let exited = false;
  const exit = new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.on('error', (error) => { exited = true; resolve({ code: null, error }); });
    child.on('close', (code) => { exited = true; resolve({ code }); });
  });
  const pump = direct ? Promise.resolve() : (async () => {
    const write = (b: Buffer) => new Promise<void>((resolve) => {
      if (exited || child.stdin!.destroyed) return resolve();
      if (child.stdin!.write(b)) return resolve();
      const done = () => { child.stdin!.off('drain', done); child.stdin!.off('close', done); resolve(); };
      child.stdin!.on('drain', done);
      child.stdin!.on('close', done);
    });
    if (o.first.length) await write(o.first);
    // one waiter at a time: a Promise.race against `exit` per chunk would leave a
    // reaction on `exit` holding every chunk until the child ends (the whole pack in RSS)
    let wake: ((r: IteratorResult<Buffer> | undefined) => void) | undefined;
    void exit.then(() => wake?.(undefined));
    for (;;) {
      if (exited) return;
      const next = o.source.next();
      const r = await new Promise<IteratorResult<Buffer> | undefined>((resolve, reject) => {
        wake = resolve;
        next.then(resolve, reject);
      }).finally(() => { wake = undefined; });
      if (r === undefined) { next.catch(() => undefined); return; }
      if (r.done) break;
      await write(Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value));
    }
    child.stdin!.end();
  })().catch(() => { child.stdin!.destroy(); });
  return exit.then(async (r) => {
    await pump;
    if (r.error) return { error: unpack ? 'unpack-objects abnormal exit' : 'index-pack fork failed', args };
    if (r.code !== 0) return { error: unpack ? 'unpack-objects abnormal exit' : 'index-pack abnormal exit', args };
    const m = /^keep\t([0-9a-f]+)$/m.exec(out);
    return { keep: m?.[1], args };
  });
}
