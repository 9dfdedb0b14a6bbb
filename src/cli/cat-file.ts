/** `gitwire cat-file`: git cat-file's arguments and output, byte for byte. */
import { FdSink } from '../pktline/sink.js';
import { PacketWriter } from '../pktline/writer.js';
import { Repository } from '../repo/repository.js';
import { BatchEngine } from '../catfile/batch.js';
import { catOne, type SingleMode } from '../catfile/single.js';
import { GitwireError } from '../errors.js';

const USAGE = `usage: git cat-file <type> <object>
   or: git cat-file (-e | -p) <object>
   or: git cat-file (-t | -s) [--allow-unknown-type] <object>
   or: git cat-file (--batch | --batch-check | --batch-command) [--batch-all-objects]
                    [--buffer] [--follow-symlinks] [--unordered]
                    [--textconv | --filters] [-Z]
`;

function usage(msg?: string): never {
  if (msg) process.stderr.write(`error: ${msg}\n`);
  process.stderr.write(USAGE);
  process.exit(129);
}

export async function runCatFile(args: string[]): Promise<void> {
  let batch: 'contents' | 'info' | 'command' | undefined;
  let format: string | undefined;
  let buffer: boolean | undefined;
  let z = false, Z = false, all = false, unordered = false, follow = false;
  let single: 't' | 's' | 'e' | 'p' | undefined;
  const rest: string[] = [];
  for (const a of args) {
    const setBatch = (m: typeof batch, f?: string) => {
      if (batch) { process.stderr.write('error: only one batch option may be specified\n'); usage(); }
      batch = m; format = f;
    };
    if (a === '--batch' || a.startsWith('--batch=')) setBatch('contents', a.startsWith('--batch=') ? a.slice(8) : undefined);
    else if (a === '--batch-check' || a.startsWith('--batch-check=')) setBatch('info', a.startsWith('--batch-check=') ? a.slice(14) : undefined);
    else if (a === '--batch-command' || a.startsWith('--batch-command=')) setBatch('command', a.startsWith('--batch-command=') ? a.slice(16) : undefined);
    else if (a === '--buffer') buffer = true;
    else if (a === '--no-buffer') buffer = false;
    else if (a === '-z') z = true;
    else if (a === '-Z') Z = true;
    else if (a === '--batch-all-objects') all = true;
    else if (a === '--unordered') unordered = true;
    else if (a === '--follow-symlinks') follow = true;
    else if (a === '-t' || a === '-s' || a === '-e' || a === '-p') {
      if (single) usage(`-${a[1]} is incompatible with -${single}`);
      single = a[1] as 't' | 's' | 'e' | 'p';
    } else if (a.startsWith('-') && a !== '-') usage(`unknown option \`${a.replace(/^-+/, '')}'`);
    else rest.push(a);
  }
  if (!batch) {
    if (follow) usage("'--follow-symlinks' requires a batch mode");
    if (buffer !== undefined) usage("'--buffer' requires a batch mode");
    if (all) usage("'--batch-all-objects' requires a batch mode");
    if (z) usage("'-z' requires a batch mode");
    if (Z) usage("'-Z' requires a batch mode");
  }
  const repo = Repository.discover();
  if (batch) {
    if (single) usage(`'-${single}' is incompatible with batch mode`);
    if (rest.length) usage('batch modes take no arguments');
    const useBuffer = buffer ?? all;
    const writer = new PacketWriter(new FdSink(1), useBuffer ? 256 * 1024 : 64 * 1024);
    const engine = new BatchEngine(repo, writer, {
      mode: batch, format, buffer: useBuffer,
      inputDelim: z || Z ? '\0' : '\n', outputDelim: Z ? '\0' : '\n',
      followSymlinks: follow,
      diag: (line) => { writer.push(); process.stderr.write(`${line}\n`); },
    });
    try {
      if (all) { engine.all(unordered); process.exit(0); }
      for await (const chunk of process.stdin as AsyncIterable<Buffer>) engine.feed(chunk.toString('latin1'));
      engine.end();
    } catch (e) {
      writer.push();
      if (e instanceof GitwireError && e.code === 'GW_CLIENT_GONE') process.exit(128);
      throw e;
    }
    process.exit(0);
  }
  let mode: SingleMode;
  let name: string;
  if (single) {
    if (rest.length === 0) usage(`<object> required with '-${single}'`);
    if (rest.length > 1) usage('too many arguments');
    mode = single; name = rest[0]!;
  } else {
    if (rest.length === 0) usage();
    if (rest.length !== 2) usage(`only two arguments allowed in <type> <object> mode, not ${rest.length}`);
    mode = { type: rest[0]! }; name = rest[1]!;
  }
  const { out, code } = catOne(repo, mode, name);
  if (out.length) new FdSink(1).write(out);
  process.exit(code);
}
