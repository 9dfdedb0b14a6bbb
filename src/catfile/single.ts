/** cat-file's single-object modes: -t, -s, -e, -p and `<type> <object>`. */
import { GitwireError } from '../errors.js';
import { ObjType, typeFromName, typeName } from '../repo/object-type.js';
import { parseTree } from '../repo/objects.js';
import type { Repository } from '../repo/repository.js';
import { NameResolver } from './names.js';

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

export type SingleMode = 't' | 's' | 'e' | 'p' | { type: string };

/** Returns the bytes to print and the exit code (git's behaviour). */
export function catOne(repo: Repository, mode: SingleMode, name: string): { out: Buffer; code: number } {
  const r = new NameResolver(repo).resolve(name);
  if (r.status !== 'found') throw die(`Not a valid object name ${name}`);
  const oid = r.oid;
  const odb = repo.odb;
  if (mode === 'e') return { out: Buffer.alloc(0), code: odb.has(oid) ? 0 : 1 };
  if (mode === 't' || mode === 's') {
    const i = odb.info(oid);
    if (!i) throw die('git cat-file: could not get object info');
    return { out: Buffer.from(`${mode === 't' ? typeName(i.type) : i.size}\n`), code: 0 };
  }
  if (mode === 'p') {
    const o = odb.read(oid);
    if (!o) throw die(`Not a valid object name ${name}`);
    if (o.type !== ObjType.Tree) return { out: o.data, code: 0 };
    let s = '';
    for (const e of parseTree(o.data, repo.hashLen)) {
      const t = e.mode === 0o40000 ? 'tree' : e.mode === 0o160000 ? 'commit' : 'blob';
      s += `${e.mode.toString(8).padStart(6, '0')} ${t} ${e.oid.toString('hex')}\t${quotePath(e.name)}\n`;
    }
    return { out: Buffer.from(s, 'latin1'), code: 0 };
  }
  const want = typeFromName(mode.type);
  if (want === undefined) throw die(`invalid object type "${mode.type}"`);
  const peeled = new NameResolver(repo).peelTo(oid, want);
  const o = peeled && odb.read(peeled);
  if (!o || o.type !== want) throw die(`git cat-file ${name}: bad file`);
  return { out: o.data, code: 0 };
}
