/**
 * The index ($GIT_DIR/index, versions 2, 3 and 4) read for name lookups:
 * every entry's path, stage, mode and object id, in index order. Extensions
 * are skipped; a split index's shared part is not read.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface IndexEntry { path: Buffer; stage: number; mode: number; oid: Buffer }

export function readIndex(gitDir: string, hashLen: number, env: NodeJS.ProcessEnv = process.env): IndexEntry[] {
  let b: Buffer;
  try { b = readFileSync(env.GIT_INDEX_FILE ?? join(gitDir, 'index')); } catch { return []; }
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'DIRC') return [];
  const version = b.readUInt32BE(4);
  if (version < 2 || version > 4) return [];
  const count = b.readUInt32BE(8);
  const out: IndexEntry[] = [];
  let p = 12;
  let prev: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = p;
    if (p + 40 + hashLen + 2 > b.length) break;
    const mode = b.readUInt32BE(p + 24);
    const oid = Buffer.from(b.subarray(p + 40, p + 40 + hashLen));
    const flags = b.readUInt16BE(p + 40 + hashLen);
    p += 40 + hashLen + 2;
    if (version >= 3 && flags & 0x4000) p += 2;
    let path: Buffer;
    if (version === 4) {
      // strip N bytes from the previous path, then a NUL-terminated suffix
      let c = b[p++]!;
      let strip = c & 127;
      while (c & 128) { strip += 1; c = b[p++]!; strip = (strip << 7) + (c & 127); }
      const nul = b.indexOf(0, p);
      if (nul < 0) break;
      path = Buffer.concat([prev.subarray(0, Math.max(0, prev.length - strip)), b.subarray(p, nul)]);
      p = nul + 1;
    } else {
      const len = flags & 0xfff;
      const end = len < 0xfff ? p + len : b.indexOf(0, p);
      if (end < 0 || end > b.length) break;
      path = Buffer.from(b.subarray(p, end));
      // entries are padded with 1–8 NULs to a multiple of 8 bytes
      p = start + ((end - start + 8) & ~7);
    }
    prev = path;
    out.push({ path, stage: (flags >> 12) & 3, mode, oid });
  }
  return out;
}
