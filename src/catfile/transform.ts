/**
 * --textconv and --filters: a blob as `git diff` (textconv) or a checkout
 * (smudge filters, ident, end-of-line and working-tree-encoding, in the
 * order of git's convert_to_working_tree) would show it.
 *
 * Textconv and smudge commands are the user's own programs, run through
 * the shell as git runs them. Long-running `filter.<driver>.process`
 * filters are not spoken.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import type { Repository } from '../repo/repository.js';
import { checkAttrs, type AttrValue } from './attributes.js';

export type Transform = 'c' | 'w';

const die = (msg: string) => new GitwireError('GW_USAGE', msg);

/** sq_quote_buf(): a word for the shell */
const sq = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/**
 * The converted blob. Returns `data` itself (the same Buffer) when nothing
 * applies (no textconv driver, no conversion), as git's textconv_object()
 * and convert_to_working_tree() report "not converted".
 */
export function transformBlob(repo: Repository, t: Transform, pathBytes: Buffer, mode: number, oid: Buffer, data: Buffer, _batch: boolean): Buffer {
  if ((mode & 0o170000) !== 0o100000) return data;
  const path = pathBytes.toString('utf8');
  return t === 'c' ? textconv(repo, path, data) : toWorktree(repo, path, oid, data);
}

function textconv(repo: Repository, path: string, data: Buffer): Buffer {
  const driver = checkAttrs(repo, path, ['diff']).get('diff');
  if (typeof driver !== 'string') return data;
  const cmd = repo.config.getString(`diff.${driver}.textconv`);
  if (!cmd) return data;
  const dir = mkdtempSync(join(tmpdir(), 'gitwire-textconv-'));
  try {
    const base = path.slice(path.lastIndexOf('/') + 1);
    const file = join(dir, `XXXXXX_${base}`);
    writeFileSync(file, data);
    const r = spawnSync('/bin/sh', ['-c', `${cmd} "$@"`, cmd, file], { env: repo.env, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
    if (r.status !== 0 || r.error) throw die('unable to read files to diff');
    return r.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Stats { lonecr: number; lonelf: number; crlf: number; nul: number; printable: number; nonprintable: number }

/** gather_stats() */
function stats(b: Buffer): Stats {
  const s: Stats = { lonecr: 0, lonelf: 0, crlf: 0, nul: 0, printable: 0, nonprintable: 0 };
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === 13) { if (b[i + 1] === 10) { s.crlf++; i++; } else s.lonecr++; continue; }
    if (c === 10) { s.lonelf++; continue; }
    if (c === 127) { s.nonprintable++; continue; }
    if (c < 32) {
      if (c === 8 || c === 9 || c === 27 || c === 12) s.printable++;
      else if (c === 0) { s.nul++; s.nonprintable++; } else s.nonprintable++;
      continue;
    }
    s.printable++;
  }
  if (b.length && b[b.length - 1] === 0x1a) s.nonprintable--;
  return s;
}

const isBinary = (s: Stats) => s.lonecr > 0 || s.nul > 0 || (s.printable >> 7) < s.nonprintable;

type Crlf = 'undefined' | 'binary' | 'text' | 'input' | 'crlf' | 'auto' | 'auto-input' | 'auto-crlf';

function toWorktree(repo: Repository, path: string, oid: Buffer, data: Buffer): Buffer {
  const a = checkAttrs(repo, path, ['crlf', 'ident', 'filter', 'eol', 'text', 'working-tree-encoding']);
  const cfg = repo.config;
  const crlfOf = (v: AttrValue | undefined): Crlf => (v === true ? 'text' : v === false ? 'binary' : v === 'input' ? 'input' : v === 'auto' ? 'auto' : 'undefined');
  let action = crlfOf(a.get('text'));
  if (action === 'undefined') action = crlfOf(a.get('crlf'));
  if (action !== 'binary') {
    const eol = a.get('eol');
    if (action === 'auto' && eol === 'lf') action = 'auto-input';
    else if (action === 'auto' && eol === 'crlf') action = 'auto-crlf';
    else if (eol === 'lf') action = 'input';
    else if (eol === 'crlf') action = 'crlf';
  }
  const autocrlfRaw = cfg.get('core.autocrlf');
  const autocrlf = autocrlfRaw === 'input' ? 'input' : autocrlfRaw !== undefined && cfg.getBool('core.autocrlf', false) ? 'true' : 'false';
  const coreEol = cfg.getString('core.eol');
  const eolIsCrlf = autocrlf === 'true' ? true : autocrlf === 'input' ? false : coreEol === 'crlf';
  if (action === 'text') action = eolIsCrlf ? 'crlf' : 'input';
  if (action === 'undefined') action = autocrlf === 'true' ? 'auto-crlf' : autocrlf === 'input' ? 'auto-input' : 'binary';
  const outputCrlf = action === 'crlf' || action === 'auto-crlf' || (action === 'auto' && eolIsCrlf);

  let cur = data;
  let converted = false;
  // ident: $Id$ → $Id: <blob id> $
  if (a.get('ident') === true) {
    const r = identToWorktree(cur, repo.hashLen);
    if (r) { cur = r; converted = true; }
  }
  // end of line
  if (cur.length && outputCrlf) {
    const s = stats(cur);
    const auto = action === 'auto' || action === 'auto-crlf';
    if (s.lonelf && !(auto && (s.lonecr || s.crlf || isBinary(s)))) {
      const parts: Buffer[] = [];
      let start = 0;
      for (let i = 0; i < cur.length; i++) {
        if (cur[i] === 10 && (i === 0 || cur[i - 1] !== 13)) { parts.push(cur.subarray(start, i), Buffer.from('\r\n')); start = i + 1; }
      }
      parts.push(cur.subarray(start));
      cur = Buffer.concat(parts);
      converted = true;
    }
  }
  // working-tree-encoding
  const enc = a.get('working-tree-encoding');
  if (typeof enc === 'string' && cur.length) {
    const e = encodeFromUtf8(cur, enc);
    if (!e) throw die(`failed to encode '${path}' from UTF-8 to ${enc}`);
    cur = e; converted = true;
  }
  // smudge filter
  const driver = a.get('filter');
  if (typeof driver === 'string') {
    const smudge = cfg.getString(`filter.${driver}.smudge`);
    const required = cfg.getBool(`filter.${driver}.required`, false);
    if (smudge) {
      const cmd = smudge.replace(/%(.)/g, (m, c: string) => (c === 'f' ? sq(path) : c === '%' ? '%' : m));
      const r = spawnSync('/bin/sh', ['-c', cmd], { input: cur, env: repo.env, maxBuffer: 1 << 30, stdio: ['pipe', 'pipe', 'inherit'] });
      if (r.status === 0 && !r.error) { cur = r.stdout; converted = true; }
      else {
        // run-command's line (with the exit code), then apply_single_file_filter()'s
        if (r.status !== null && r.status !== 0) process.stderr.write(`error: external filter '${smudge}' failed ${r.status}\n`);
        process.stderr.write(`error: external filter '${smudge}' failed\n`);
        if (required) throw die(`${path}: smudge filter ${driver} failed`);
      }
    } else if (required) {
      throw die(`${path}: smudge filter ${driver} failed`);
    }
  }
  void oid;
  return converted ? cur : data;
}

function identToWorktree(b: Buffer, hashLen: number): Buffer | undefined {
  const text = b.toString('latin1');
  if (!/\$Id(:[^$\n]*)?\$/.test(text)) return undefined;
  const id = createHash(hashLen === 32 ? 'sha256' : 'sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
  return Buffer.from(text.replace(/\$Id(:[^$\n]*)?\$/g, `$Id: ${id} $`), 'latin1');
}

function encodeFromUtf8(b: Buffer, enc: string): Buffer | undefined {
  const e = enc.toUpperCase().replace(/_/g, '-');
  const s = b.toString('utf8');
  if (e === 'UTF-8' || e === 'UTF8') return b;
  if (e === 'UTF-16LE' || e === 'UTF16LE') return Buffer.from(s, 'utf16le');
  if (e === 'UTF-16LE-BOM') return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')]);
  if (e === 'UTF-16BE' || e === 'UTF16BE' || e === 'UTF-16' || e === 'UTF16') {
    const le = Buffer.from(s, 'utf16le');
    const be = Buffer.from(le);
    be.swap16();
    // iconv's UTF-16 writes a byte-order mark (big-endian)
    return e.endsWith('BE') ? be : Buffer.concat([Buffer.from([0xfe, 0xff]), be]);
  }
  if (e === 'ISO-8859-1' || e === 'LATIN1' || e === 'ISO8859-1') {
    for (const ch of s) if (ch.codePointAt(0)! > 0xff) return undefined;
    return Buffer.from(s, 'latin1');
  }
  return undefined;
}
