/** cat-file's single-object modes: -t, -s, -e, -p, --textconv, --filters and `<type> <object>` (git 2.55's cat_one_file). */
import { GitwireError } from '../errors.js';
import { ObjType, typeFromName, typeName } from '../repo/object-type.js';
import { parseTag, parseTree } from '../repo/objects.js';
import type { Repository } from '../repo/repository.js';
import { ReplaceMap } from '../repo/replace.js';
import { NameResolver, type Diag } from './names.js';
import { transformBlob } from './transform.js';
import { Mailmap } from './mailmap.js';
import { diagnoseLoose, dictLines, headerTooLong } from './unreadable.js';

const die = (msg: string) => new GitwireError('GW_USAGE', msg);

/** git's quote_c_style for path names (core.quotePath defaults to true). */
export function quotePath(name: Buffer): string {
  let needs = false;
  for (const c of name) if (c < 0x20 || c === 0x22 || c === 0x5c || c >= 0x7f) { needs = true; break; }
  if (!needs) return name.toString('latin1');
  let out = '"';
  const named: Record<number, string> = { 7: 'a', 8: 'b', 9: 't', 10: 'n', 11: 'v', 12: 'f', 13: 'r', 0x22: '"', 0x5c: '\\' };
  for (const c of name) {
    if (named[c]) out += `\\${named[c]}`;
    else if (c < 0x20 || c >= 0x7f) out += `\\${c.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(c);
  }
  return `${out}"`;
}

export type SingleMode = 't' | 's' | 'e' | 'p' | 'c' | 'w' | { type: string };

export interface SingleOptions {
  diag?: Diag;
  /** --path=<path> for --textconv/--filters */
  path?: string;
  /** --use-mailmap */
  mailmap?: boolean;
}

/** ls-tree's listing of a tree (what -p prints for trees); `hashLen`: the length of the ids in it */
function listTree(data: Buffer, hashLen: number): Buffer {
  const parts: Buffer[] = [];
  for (const e of parseTree(data, hashLen)) {
    const t = e.mode === 0o40000 ? 'tree' : e.mode === 0o160000 ? 'commit' : 'blob';
    parts.push(Buffer.from(`${e.mode.toString(8).padStart(6, '0')} ${t} ${e.oid.toString('hex')}\t`, 'latin1'), Buffer.from(quotePath(e.name), 'latin1'), Buffer.from('\n'));
  }
  return Buffer.concat(parts);
}

/** Returns the bytes to print and the exit code (git's behaviour). */
export function catOne(repo: Repository, mode: SingleMode, name: string, opts: SingleOptions = {}): { out: Buffer; code: number } {
  const replace = new ReplaceMap(repo);
  const names = new NameResolver(repo, opts.diag, replace);
  const cw = mode === 'c' || mode === 'w';
  const r = names.resolve(name, { onlyToDie: true, requirePath: cw && opts.path === undefined });
  if (r.status !== 'found') throw die(`Not a valid object name ${name}`);
  const oid = r.oid;
  const odb = repo.odb;
  // a compat id (extensions.compatObjectFormat) names a stored object, read and shown in the compat hash
  const cv = names.compat?.is(oid) ? names.compat : undefined;
  const real = cv ? cv.real(oid, replace) : replace.lookup(oid);
  const hashLen = oid.length;
  const read = (id: Buffer) => (cv ? cv.read(id, replace, opts.diag) : odb.read(replace.lookup(id)));
  const info = (size: boolean) => (cv ? cv.info(oid, replace, { size }, opts.diag) : real && odb.info(real));
  const mm = opts.mailmap ? Mailmap.load(repo) : undefined;
  if (mode === 'e') return { out: Buffer.alloc(0), code: real && odb.has(real) ? 0 : 1 };
  // an unreadable loose object: git's errors, then it counts as missing (or dies for a bogus type)
  const unreadable = (times: number): boolean => {
    const d = real && diagnoseLoose(odb.locate(real));
    if (!d) return false;
    if (d.kind === 'badtype') throw die('invalid object type');
    if (d.kind === 'toolong') { opts.diag?.(headerTooLong(real)); return true; }
    for (let i = 0; i < times; i++) for (const l of dictLines(real)) opts.diag?.(l);
    return true;
  };
  const guard = <T>(f: () => T, times: number, fail: string): T => {
    try { return f(); } catch (e) { if (unreadable(times)) throw die(fail); throw e; }
  };
  if (mode === 't' || mode === 's') {
    const i = guard(() => info(mode === 's'), 1, 'git cat-file: could not get object info');
    if (!i) throw die('git cat-file: could not get object info');
    let size = i.size;
    if (mode === 's' && mm && (i.type === ObjType.Commit || i.type === ObjType.Tag)) size = mm.rewrite(read(oid)!.data).length;
    return { out: Buffer.from(`${mode === 't' ? typeName(i.type) : size}\n`), code: 0 };
  }
  const path = opts.path !== undefined ? Buffer.from(opts.path) : r.path;
  const fileMode = r.mode ?? 0o100644;
  if (mode === 'w') {
    const o = guard(() => read(oid), 1, `cannot read object ${(real ?? oid).toString('hex')} '${path?.toString() ?? ''}'`);
    if (!o) return { out: Buffer.alloc(0), code: 255 };
    if (o.type === ObjType.Blob && (fileMode & 0o170000) === 0o100000 && path) {
      return { out: transformBlob(repo, 'w', path, fileMode, oid, o.data, true), code: 0 };
    }
    return { out: o.data, code: 0 };
  }
  if (mode === 'c' || mode === 'p') {
    const o = guard(() => read(oid), 1, `Not a valid object name ${name}`);
    if (!o) throw die(`Not a valid object name ${name}`);
    if (mode === 'c' && path) { // textconv_object() converts whatever object it is given
      const t = transformBlob(repo, 'c', path, fileMode, oid, o.data, false);
      if (t !== o.data) return { out: t, code: 0 };
    }
    if (o.type === ObjType.Tree) return { out: listTree(o.data, hashLen), code: 0 };
    if (o.type === ObjType.Blob) return { out: o.data, code: 0 };
    return { out: mm ? mm.rewrite(o.data) : o.data, code: 0 };
  }
  const want = typeFromName(mode.type);
  if (want === undefined) throw die(`invalid object type "${mode.type}"`);
  const gitDir = repo.gitDir;
  const loosePath = () => {
    const hex = (real ?? oid).toString('hex');
    const rel = `objects/${hex.slice(0, 2)}/${hex.slice(2)}`;
    return gitDir.endsWith('/.git') ? `.git/${rel}` : `./${rel}`;
  };
  const corruptMsg = () => `loose object ${(real ?? oid).toString('hex')} (stored in ${loosePath()}) is corrupt`;
  if (want === ObjType.Blob) {
    // a tag of a blob is followed one step, as git does (a compat tag's target is a compat id)
    let blob = oid;
    const first = guard(() => read(oid), 3, corruptMsg());
    if (first?.type === ObjType.Tag) blob = parseTag(first.data, hashLen).object;
    const b = read(blob);
    if (b?.type === ObjType.Blob) return { out: b.data, code: 0 };
  }
  const o = guard(() => {
    // odb_read_object_peeled() reads a tag's or commit's id in the main hash: a compat one only matches as it is
    if (cv) { const c = read(oid); return c?.type === want ? c : undefined; }
    const peeled = names.peelTo(oid, want);
    return peeled && odb.read(replace.lookup(peeled));
  }, 1, corruptMsg());
  if (!o || o.type !== want) throw die(`git cat-file ${name}: bad file`);
  return { out: mm ? mm.rewrite(o.data) : o.data, code: 0 };
}
