/**
 * The patterns of a `sparse:oid=<blob>` filter, read and matched as git's
 * dir.c does in non-cone mode (add_patterns_from_buffer, parse_path_pattern,
 * last_matching_pattern_from_list): gitignore syntax, the last pattern
 * that matches decides, `!` negates, a trailing `/` matches directories
 * only, a pattern without `/` matches the base name anywhere.
 */
import { WM_PATHNAME, wildmatch } from './wildmatch.js';

const NODIR = 1, ENDSWITH = 4, MUSTBEDIR = 8, NEGATIVE = 16;

export const enum Match { Undecided = -1, NotMatched = 0, Matched = 1 }

interface Pattern { pattern: Buffer; /** bytes before the first glob character */ prefix: number; flags: number }

const isGlobSpecial = (c: number) => c === 0x2a || c === 0x3f || c === 0x5b || c === 0x5c;

function simpleLength(b: Buffer, from: number): number {
  let i = from;
  while (i < b.length && b[i] !== 0 && !isGlobSpecial(b[i]!)) i++;
  return i - from;
}

/** trim_trailing_spaces(): unescaped trailing spaces go */
function trimTrailingSpaces(b: Buffer): Buffer {
  let lastSpace = -1;
  for (let p = 0; p < b.length; p++) {
    const c = b[p]!;
    if (c === 0x20) { if (lastSpace < 0) lastSpace = p; } else if (c === 0x5c) {
      p++;
      if (p >= b.length) return b;
      lastSpace = -1;
    } else lastSpace = -1;
  }
  return lastSpace >= 0 ? b.subarray(0, lastSpace) : b;
}

function parsePattern(line: Buffer): Pattern {
  let p = line;
  let flags = 0;
  const nul = p.indexOf(0);
  if (nul >= 0) p = p.subarray(0, nul); // C strings end at NUL
  if (p[0] === 0x21) { flags |= NEGATIVE; p = p.subarray(1); }
  let len = p.length;
  if (len && p[len - 1] === 0x2f) { len--; flags |= MUSTBEDIR; }
  if (p.subarray(0, len).indexOf(0x2f) < 0) flags |= NODIR;
  let prefix = simpleLength(p, 0);
  if (prefix > len) prefix = len;
  if (p[0] === 0x2a && simpleLength(p, 1) === p.length - 1) flags |= ENDSWITH;
  return { pattern: p.subarray(0, len), prefix, flags };
}

export class PatternList {
  readonly patterns: Pattern[] = [];

  /** add_patterns_from_blob_to_list(): the blob's lines (a missing final newline is supplied) */
  static fromBlob(data: Buffer): PatternList {
    const pl = new PatternList();
    let buf = data;
    if (buf.length === 0) return pl;
    if (buf[buf.length - 1] !== 0x0a) buf = Buffer.concat([buf, Buffer.from('\n')]);
    if (buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) buf = buf.subarray(3);
    let entry = 0;
    for (let i = 0; i < buf.length; i++) {
      if (buf[i] !== 0x0a) continue;
      if (entry !== i && buf[entry] !== 0x23) {
        const end = i - (i && buf[i - 1] === 0x0d ? 1 : 0);
        // (a lone "\r" line becomes empty, as git's in-place NUL makes it)
        pl.patterns.push(parsePattern(trimTrailingSpaces(buf.subarray(entry, Math.max(entry, end)))));
      }
      entry = i + 1;
    }
    return pl;
  }

  /**
   * path_matches_pattern_list() in non-cone mode: `path` is the whole
   * path (no trailing slash), `nameAt` where its last component starts.
   */
  match(path: Buffer, nameAt: number, isDir: boolean): Match {
    for (let i = this.patterns.length - 1; i >= 0; i--) {
      const pt = this.patterns[i]!;
      if ((pt.flags & MUSTBEDIR) && !isDir) continue;
      const hit = (pt.flags & NODIR) ? matchBasename(path, nameAt, pt) : matchPathname(path, pt);
      if (hit) return (pt.flags & NEGATIVE) ? Match.NotMatched : Match.Matched;
    }
    return Match.Undecided;
  }
}

function matchBasename(path: Buffer, nameAt: number, pt: Pattern): boolean {
  const base = path.subarray(nameAt);
  const pat = pt.pattern;
  if (pt.prefix === pat.length) return pat.length === base.length && pat.equals(base);
  if (pt.flags & ENDSWITH) {
    const n = pat.length - 1;
    return n <= base.length && pat.compare(base, base.length - n, base.length, 1, pat.length) === 0;
  }
  return wildmatch(pat, base, 0);
}

function matchPathname(path: Buffer, pt: Pattern): boolean {
  let pat = pt.pattern;
  let prefix = pt.prefix;
  if (pat[0] === 0x2f) { pat = pat.subarray(1); prefix--; }
  // base is "" (patterns of a blob at the top): the whole path is the name
  let name = path;
  if (path.length < 1) return false;
  if (prefix > 0) {
    if (prefix > name.length) return false;
    if (pat.compare(name, 0, prefix, 0, prefix) !== 0) return false;
    if (pat.length === prefix && name.length === prefix) return true;
    prefix--;
    pat = pat.subarray(prefix);
    name = name.subarray(prefix);
  }
  return wildmatch(pat, name, WM_PATHNAME);
}
