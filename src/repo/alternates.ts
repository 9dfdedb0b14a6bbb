/**
 * objects/info/alternates as git reads and writes it: one directory a line,
 * `#` comments, relative paths taken from the object directory that names
 * them, and C-style quoting (git's quote_c_style / unquote_c_style) for a
 * path that needs it. One reader for the object database, the storage
 * check and receive-pack's `.have` lines; the writer for the quarantine's
 * environment.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';

const ESCAPES: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '"': 34 };

/** unquote_c_style(): the bytes of a `"…"` path as a string, or undefined when the quoting is bad. */
export function unquoteC(q: string): string | undefined {
  if (q.length < 2 || !q.startsWith('"') || !q.endsWith('"')) return undefined;
  const src = Buffer.from(q.slice(1, -1), 'utf8');
  const out: number[] = [];
  for (let i = 0; i < src.length; i++) {
    const c = src[i]!;
    if (c === 0x22) return undefined; // an unescaped quote inside
    if (c !== 0x5c) { out.push(c); continue; }
    const e = src[++i];
    if (e === undefined) return undefined;
    if (e >= 0x30 && e <= 0x33) { // \ooo, three octal digits
      const d1 = src[i + 1], d2 = src[i + 2];
      if (d1 === undefined || d2 === undefined || d1 < 0x30 || d1 > 0x37 || d2 < 0x30 || d2 > 0x37) return undefined;
      out.push(((e - 0x30) << 6) | ((d1 - 0x30) << 3) | (d2 - 0x30));
      i += 2;
      continue;
    }
    const v = ESCAPES[String.fromCharCode(e)];
    if (v === undefined) return undefined;
    out.push(v);
  }
  return Buffer.from(out).toString('utf8');
}

/** quote_c_style for one alternates entry, only when needed (tmp-objdir.c env_append). */
export function quoteAlternate(p: string): string {
  if (!p.startsWith('"') && !p.includes(':')) return p;
  let out = '"';
  for (const ch of p) {
    const c = ch.charCodeAt(0);
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\${c.toString(8).padStart(3, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

export interface Alternates {
  /** the named directories, resolved against the object directory that names them, in file order */
  dirs: string[];
  /** lines whose quoting could not be read (git reports and skips them) */
  unreadable: string[];
}

/** The alternates `objectsDir` names (none when it has no alternates file). */
export function readAlternates(objectsDir: string): Alternates {
  const out: Alternates = { dirs: [], unreadable: [] };
  let text: string;
  try { text = readFileSync(join(objectsDir, 'info', 'alternates'), 'utf8'); } catch { return out; }
  for (const raw of text.split('\n')) {
    let line: string | undefined = raw.trim();
    if (!line || line.startsWith('#')) continue;
    if (line.startsWith('"')) {
      line = unquoteC(line);
      if (line === undefined) { out.unreadable.push(raw); continue; }
    }
    out.dirs.push(isAbsolute(line) ? resolve(line) : resolve(objectsDir, line));
  }
  return out;
}
