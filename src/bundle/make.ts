/**
 * Making a bundle: the anonymous view's refs (./refs.ts) and one pack of
 * everything they reach, made by the native pack producer
 * (pack/produce/producer.ts) as for a clone with no haves: a repository
 * repacked into one bitmapped pack is sent as that pack verbatim, so a
 * bundle costs about a copy of it. The pack is pulled as the file takes it
 * (one chunk in memory at a time), the producer yields on its time budget,
 * and the file appears under its name only once whole (./store.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import type { Repository } from '../repo/repository.js';
import { bundleHeader, type BundleRef } from './header.js';
import { anonymousRefs, viewKey } from './refs.js';
import { BUNDLE_NAME, bundleDir, removeDeadTemps, tempName } from './store.js';

export interface MakeBundleOptions {
  /** where the bundle goes (default: the repository's bundle directory) */
  dir?: string;
  /** the clock, in ms (tests) */
  now?: number;
  /** stop making it (the file is not left behind) */
  signal?: AbortSignal;
}

export interface MadeBundle {
  name: string;
  file: string;
  token: number;
  view: string;
  bytes: number;
  refs: BundleRef[];
  /** refs left out: their object is missing */
  missing: string[];
  /** how the pack was made (bitmap, walk) and its size */
  pack: { source?: string; objects?: number; bytes: number };
  ms: number;
}

export async function makeBundle(repo: Repository, opts: MakeBundleOptions = {}): Promise<MadeBundle> {
  const t0 = performance.now();
  if (repo.namespace) throw new GitwireError('GW_BUNDLE', 'a bundle is made of the whole repository, not of a namespace (GIT_NAMESPACE is set)');
  const { refs, missing } = await anonymousRefs(repo);
  if (refs.length === 0) throw new GitwireError('GW_BUNDLE', 'Refusing to create empty bundle.');
  const view = viewKey(repo);
  const dir = opts.dir ?? bundleDir(repo);
  await mkdir(dir, { recursive: true });
  // a maker killed mid-make left a bundle-sized file: gone before another is begun
  removeDeadTemps(dir);
  // built before the file is opened: a header too long for a server to read back is refused (header.ts) with nothing written
  const header = await bundleHeader(repo.format, refs);
  const tmp = join(dir, tempName(randomBytes(6).toString('hex')));
  const fh = await open(tmp, 'wx', 0o644);
  let done = false;
  try {
    await fh.write(header);
    const wants = [...new Set(refs.map((r) => r.hex))].map((h) => Buffer.from(h, 'hex'));
    const { nativePack } = await import('../pack/produce/producer.js');
    let made: { source?: string; objects?: number } = {};
    const src = nativePack(repo, {
      gitDir: repo.commonDir, wants, haves: [], extraEdges: [], shallow: [], useShallow: false,
      thin: false, progress: false, ofsDelta: true, includeTag: false, env: repo.env,
    }, { onDone: (r) => { made = { source: r.source, objects: r.objects }; } });
    const errors: string[] = [];
    const stderr = (async () => { for await (const b of src.stderr ?? []) errors.push(b.toString('utf8')); })();
    const onAbort = () => { void src.abort(); };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let packBytes = 0;
    try {
      for await (const chunk of src.stdout!) {
        if (opts.signal?.aborted) break;
        // the chunk may be reused once the next is pulled: written before that
        await fh.write(chunk);
        packBytes += chunk.length;
      }
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
    }
    const r = await src.done;
    await stderr;
    if (opts.signal?.aborted) throw new GitwireError('GW_BUNDLE', 'making the bundle was stopped');
    if (!r.ok) throw new GitwireError('GW_BUNDLE', `the pack for the bundle could not be made${errors.length ? `: ${errors.join('').trim()}` : ''}`);
    await fh.sync();
    await fh.close();
    done = true;
    const token = await nextToken(dir, opts.now ?? Date.now());
    const name = `${token}-${view}.bundle`;
    const file = join(dir, name);
    await rename(tmp, file);
    return { name, file, token, view, bytes: header.length + packBytes, refs, missing, pack: { ...made, bytes: packBytes }, ms: performance.now() - t0 };
  } catch (e) {
    if (!done) await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}

/** A creation token above every bundle's in `dir`: the time in seconds, or one past the highest. */
async function nextToken(dir: string, nowMs: number): Promise<number> {
  let max = 0;
  for (const n of await readdir(dir).catch(() => [] as string[])) {
    const m = BUNDLE_NAME.exec(n);
    if (m) max = Math.max(max, Number(m[1]));
  }
  return Math.max(Math.floor(nowMs / 1000), max + 1);
}
