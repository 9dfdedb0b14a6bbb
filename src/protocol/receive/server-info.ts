/**
 * receive.updateServerInfo: after a push, the files a dumb HTTP client
 * reads, as git's update_server_info() writes them (server-info.c):
 *
 * - `info/refs`: every ref under refs/ in name order, `<hex>\t<name>`,
 *   and for an annotated tag a second line `<peeled>\t<name>^{}`; a ref
 *   whose object is missing leaves the file as it was (git's
 *   add_info_ref() stops the listing);
 * - `objects/info/packs`: `P <pack>` for each local pack, then an empty
 *   line; packs the old file lists keep its order, the others follow in
 *   the order git's receive-pack came to know them: the packs there when
 *   the push began in directory order (raw readdir order, as git reads
 *   the directory), then the ones the push made. A file naming a pack that
 *   is gone, or carrying the old `D`/`T` lines, is rewritten from scratch
 *   in that order (git's own order there is not reproducible: it sorts
 *   such packs by the addresses of their structs in its heap);
 * - a leftover `info/rev-cache` is removed.
 *
 * Each file is written to `<path>_XXXXXX` and renamed into place, and only
 * when its content changed (git leaves an identical file untouched).
 * Nothing here throws: a failure is one of git's `unable to update` lines,
 * returned for the caller to log.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, opendir, readFile, rename, unlink } from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ObjType } from '../../repo/object-type.js';
import type { Repository } from '../../repo/repository.js';

/** refs listed between turns of the event loop */
const REFS_PER_TURN = 2000;

const turn = () => new Promise<void>((r) => setImmediate(r));

/** The text of info/refs, or undefined when a ref's object is missing (git gives up on the file). */
async function infoRefs(repo: Repository): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let n = 0;
  for (const r of repo.refs.iterate('refs/')) {
    if (++n % REFS_PER_TURN === 0) await turn();
    const oid = Buffer.from(r.hex.toString('latin1'), 'hex');
    const info = repo.odb.info(oid);
    if (!info) return undefined;
    const name = r.name;
    parts.push(r.hex, Buffer.from('\t'), name, Buffer.from('\n'));
    if (info.type === ObjType.Tag) {
      const peeled = repo.peel(oid);
      if (peeled) parts.push(Buffer.from(`${peeled.toString('hex')}\t`, 'latin1'), name, Buffer.from('^{}\n'));
    }
  }
  return Buffer.concat(parts);
}

/** The text of objects/info/packs. */
async function infoPacks(objectsDir: string, infoFile: string, since: number): Promise<Buffer> {
  // directory order as readdir(3) gives it (fs.readdir sorts)
  const names: string[] = [];
  try { for await (const e of await opendir(join(objectsDir, 'pack'))) names.push(e.name); } catch { /* no packs */ }
  // a pack git knows: its index is there, and the pack file too
  const found = names.filter((f) => f.endsWith('.idx')).map((f) => `${f.slice(0, -4)}.pack`).filter((p) => existsSync(join(objectsDir, 'pack', p)));
  const isNew = (p: string) => { try { return statSync(join(objectsDir, 'pack', p)).mtimeMs >= since; } catch { return true; } };
  const packs = [...found.filter((p) => !isNew(p)), ...found.filter(isNew)];
  const oldOrder = new Map<string, number>();
  let stale = true;
  let old: string | undefined;
  try { old = await readFile(infoFile, 'latin1'); } catch { /* none: stale */ }
  if (old !== undefined) {
    stale = false;
    let count = 0;
    for (const raw of old.split('\n')) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw; // strbuf_getline() drops a CR too
      if (!line) continue;
      if (line.startsWith('P ')) {
        const p = line.slice(2);
        if (!packs.includes(p)) { stale = true; break; }
        oldOrder.set(p, count++);
      } else if (line[0] === 'D' || line[0] === 'T') { stale = true; break; }
      // anything else: git says "unrecognized" and reads on
    }
  }
  const rank = (p: string) => (stale ? -1 : oldOrder.get(p) ?? -1);
  const ordered = packs.map((p, i) => ({ p, i, old: rank(p) })).sort((a, b) => {
    if (a.old >= 0 && b.old >= 0) return a.old - b.old;
    if (a.old >= 0) return -1;
    if (b.old >= 0) return 1;
    return a.i - b.i;
  });
  return Buffer.from(`${ordered.map((x) => `P ${x.p}\n`).join('')}\n`, 'latin1');
}

/** update_info_file(): write `content` to `path` through a temporary file, unless it already holds exactly that. */
async function updateFile(path: string, content: Buffer): Promise<void> {
  let old: Buffer | undefined;
  try { old = await readFile(path); } catch { /* none */ }
  if (old && old.equals(content)) return;
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}_${randomBytes(6).toString('base64url').slice(0, 6)}`;
  const fh = await open(tmp, 'wx', 0o666);
  try {
    await fh.writeFile(content);
  } catch (e) {
    await fh.close();
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
  await fh.close();
  try { await rename(tmp, path); } catch (e) { await unlink(tmp).catch(() => undefined); throw e; }
}

/**
 * update_server_info(repo, 0), after a push that began at `pushStartedMs`.
 * Returns git's error lines for what could not be updated (none when all
 * went well).
 */
export async function updateServerInfo(repo: Repository, pushStartedMs = Date.now()): Promise<string[]> {
  const errors: string[] = [];
  const objectsDir = repo.env.GIT_OBJECT_DIRECTORY ?? join(repo.commonDir, 'objects');
  const refsPath = join(repo.commonDir, 'info', 'refs');
  const packsPath = join(objectsDir, 'info', 'packs');
  const failed = (path: string, e: unknown) => {
    const msg = (e as NodeJS.ErrnoException | undefined)?.message;
    errors.push(`error: unable to update ${path}${msg ? `: ${msg}` : ''}`);
  };
  try {
    const refs = await infoRefs(repo);
    if (refs) await updateFile(refsPath, refs); else failed(refsPath, undefined);
  } catch (e) { failed(refsPath, e); }
  try { await updateFile(packsPath, await infoPacks(objectsDir, packsPath, pushStartedMs)); } catch (e) { failed(packsPath, e); }
  await unlink(join(repo.commonDir, 'info', 'rev-cache')).catch(() => undefined);
  return errors;
}
