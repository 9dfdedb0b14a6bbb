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

interface Pattern {
  pattern: Buffer;
  /** bytes before the first glob character */
  prefix: number;
  flags: number;
  /** for a pattern with a slash: the pattern without its leading '/', and the prefix of that */
  anchored: Buffer;
  anchoredPrefix: number;
}

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
  const pattern = p.subarray(0, len);
  const lead = pattern[0] === 0x2f ? 1 : 0;
  return { pattern, prefix, flags, anchored: pattern.subarray(lead), anchoredPrefix: prefix - lead };
}

export class PatternList {
  readonly patterns: Pattern[] = [];

  /** add_patterns_from_blob_to_list(): the blob's lines (a missing final newline is supplied) */
  static fromBlob(data: Buffer): PatternList {
    const b = new PatternReader();
    b.push(data);
    return b.end();
  }

  /** more patterns than a cheap match can go through: the walk reads the clock after each path */
  get costly(): boolean { return this.patterns.length > 64; }

  /**
   * path_matches_pattern_list() in non-cone mode: `path` is the whole
   * path (no trailing slash), `nameAt` where its last component starts.
   */
  match(path: Buffer, nameAt: number, isDir: boolean): Match {
    const base = path.subarray(nameAt);
    for (let i = this.patterns.length - 1; i >= 0; i--) {
      const pt = this.patterns[i]!;
      if ((pt.flags & MUSTBEDIR) && !isDir) continue;
      const hit = (pt.flags & NODIR) ? matchBasename(base, pt) : matchPathname(path, pt);
      if (hit) return (pt.flags & NEGATIVE) ? Match.NotMatched : Match.Matched;
    }
    return Match.Undecided;
  }
}

/** `base`: the path's last component */
function matchBasename(base: Buffer, pt: Pattern): boolean {
  const pat = pt.pattern;
  const len = pat.length;
  if (pt.prefix === len) return len === base.length && (len === 0 || (pat[len - 1] === base[len - 1] && pat.equals(base)));
  if (pt.flags & ENDSWITH) {
    const n = len - 1;
    return n <= base.length && (n === 0 || pat[len - 1] === base[base.length - 1]) && pat.compare(base, base.length - n, base.length, 1, len) === 0;
  }
  return wildmatch(pat, base, 0);
}

function matchPathname(path: Buffer, pt: Pattern): boolean {
  let pat = pt.anchored;
  let prefix = pt.anchoredPrefix;
  // base is "" (patterns of a blob at the top): the whole path is the name
  let name = path;
  if (path.length < 1) return false;
  // no glob character: the path is the pattern, or it is not matched (what the wildmatch below would say)
  if (prefix === pat.length && prefix > 0) return name.length === prefix && pat[prefix - 1] === name[prefix - 1] && pat.equals(name);
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

/**
 * The lines of a pattern blob as they arrive (the blob is read in chunks,
 * never whole). Lines are split as add_patterns_from_buffer() splits
 * them: a leading UTF-8 BOM goes, `#` lines and empty lines are skipped,
 * a "\r" before the newline goes, a missing final newline is supplied.
 * `max` bounds the patterns kept: one more throws `tooMany()`.
 */
export class PatternReader {
  private readonly pl = new PatternList();
  /** the start of a line whose newline has not come yet (joined once it comes: never copied twice) */
  private parts: Buffer[] = [];
  private partsLen = 0;
  private start = true;

  constructor(private readonly max = Infinity, private readonly tooMany: () => Error = () => new Error('too many patterns')) {}

  get count(): number { return this.pl.patterns.length; }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.start) {
      // a BOM is looked for in the first three bytes, however the blob was cut
      if (this.partsLen + chunk.length < 3) { this.hold(chunk); return; }
      const head = this.take(chunk);
      this.start = false;
      this.split(head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? head.subarray(3) : head);
      return;
    }
    const nl = chunk.indexOf(0x0a);
    if (nl < 0) { this.hold(chunk); return; }
    if (this.partsLen) {
      const line = this.take(chunk.subarray(0, nl));
      this.line(line, 0, line.length);
      this.split(chunk.subarray(nl + 1));
    } else this.split(chunk);
  }

  end(): PatternList {
    if (this.start) {
      // fewer than three bytes in all: no BOM
      this.start = false;
      const all = this.take(Buffer.alloc(0));
      if (all.length) this.split(all);
    }
    if (this.partsLen) {
      const line = this.take(Buffer.alloc(0));
      this.line(line, 0, line.length);
    }
    return this.pl;
  }

  private hold(b: Buffer): void { this.parts.push(b); this.partsLen += b.length; }

  /** what is held, then `tail`, as one buffer; nothing is held after */
  private take(tail: Buffer): Buffer {
    const b = this.partsLen ? Buffer.concat([...this.parts, tail]) : tail;
    this.parts = [];
    this.partsLen = 0;
    return b;
  }

  /** whole lines of `buf`; what follows its last newline is held */
  private split(buf: Buffer): void {
    let entry = 0;
    for (let i = buf.indexOf(0x0a); i >= 0; i = buf.indexOf(0x0a, entry)) {
      this.line(buf, entry, i);
      entry = i + 1;
    }
    if (entry < buf.length) this.hold(buf.subarray(entry));
  }

  /** the line [entry, nl) of `buf` (nl: where its newline is, or the end) */
  private line(buf: Buffer, entry: number, nl: number): void {
    if (entry === nl || buf[entry] === 0x23) return;
    // (a lone "\r" line becomes empty, as git's in-place NUL makes it)
    const end = nl - (buf[nl - 1] === 0x0d ? 1 : 0);
    if (this.pl.patterns.length >= this.max) throw this.tooMany();
    this.pl.patterns.push(parsePattern(trimTrailingSpaces(buf.subarray(entry, Math.max(entry, end)))));
  }
}
