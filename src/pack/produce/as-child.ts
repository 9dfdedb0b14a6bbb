/**
 * A pack source shown as a child process: what the pack cache's entry
 * drives (it was written for `git pack-objects` — stdout, stderr, an exit
 * code, kill), so that the native producer fills the cache, joins and the
 * fleet's spools exactly as pack-objects did, with no change there.
 *
 * stdout carries the pack, stderr the progress text, the exit code says
 * whether the pack is whole (0) or not (1), and 'close' comes after both
 * streams ended, as Node's ChildProcess orders it. kill() aborts the source.
 */
import { EventEmitter } from 'node:events';
import { Readable, finished } from 'node:stream';
import type { Child } from '../../util/spawn.js';
import type { PackSource } from '../relay.js';

/** bytes per read when the source reads into memory it is given */
const READ_SIZE = 256 * 1024;

/** The source's bytes in chunks of their own (a stream holds on to them; a source may reuse its own). */
async function* pulled(src: PackSource): AsyncGenerator<Buffer> {
  if (src.readInto) {
    for (;;) {
      const b = Buffer.allocUnsafe(READ_SIZE);
      const n = await src.readInto([b]);
      if (n <= 0) return;
      yield b.subarray(0, n);
    }
  }
  if (src.stdout) for await (const c of src.stdout) yield Buffer.from(c);
}

class SourceChild extends EventEmitter implements Child {
  readonly stdin = null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  private killed = false;

  constructor(private readonly src: PackSource) {
    super();
    this.stdout = Readable.from(pulled(src), { objectMode: false, highWaterMark: READ_SIZE });
    this.stderr = Readable.from(src.stderr ?? [], { objectMode: false });
    const ended = (s: Readable) => new Promise<void>((resolve) => { finished(s, () => resolve()); });
    void Promise.all([src.done.catch(() => ({ ok: false })), ended(this.stdout), ended(this.stderr)]).then(([r]) => {
      if (this.killed) this.signalCode = 'SIGTERM'; else this.exitCode = r.ok ? 0 : 1;
      this.emit('exit', this.exitCode, this.signalCode);
      this.emit('close', this.exitCode, this.signalCode);
    });
  }

  kill(): boolean {
    if (this.exitCode !== null || this.signalCode !== null) return false;
    this.killed = true;
    void this.src.abort().finally(() => {
      this.stdout.destroy();
      this.stderr.destroy();
    });
    return true;
  }
}

export function sourceAsChild(src: PackSource): Child {
  return new SourceChild(src);
}
