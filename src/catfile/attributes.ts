/**
 * gitattributes lookup for cat-file's --textconv/--filters: the builtin
 * `binary` macro, core.attributesFile, every .gitattributes from the root
 * down to the path's directory (the work tree, or the tree named by
 * GIT_ATTR_SOURCE / attr.tree; none in a bare repository), then
 * $GIT_DIR/info/attributes. The index is not read.
 * Later sources and later lines win.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import { NameResolver } from './names.js';
import { worktreeOf } from './worktree.js';
import { ObjType } from '../repo/object-type.js';
import { parseTree } from '../repo/objects.js';
import type { Repository } from '../repo/repository.js';

/** true: set; false: unset (`-attr`); string: a value; absent: unspecified */
export type AttrValue = true | false | string;

interface Rule { pattern: string; attrs: Array<[string, AttrValue | null]> }

const BUILTIN_MACROS = new Map<string, Array<[string, AttrValue | null]>>([['binary', [['diff', false], ['merge', false], ['text', false]]]]);

function parseAttrFile(text: string, macros: Map<string, Array<[string, AttrValue | null]>>, allowMacros: boolean): Rule[] {
  const rules: Rule[] = [];
  for (let line of text.split('\n')) {
    line = line.replace(/\r$/, '').replace(/^[ \t]+/, '');
    if (!line || line.startsWith('#')) continue;
    let pattern: string, rest: string;
    if (line.startsWith('"')) {
      const m = /^"((?:[^"\\]|\\.)*)"(.*)$/.exec(line);
      if (!m) continue;
      pattern = m[1]!.replace(/\\(.)/g, '$1');
      rest = m[2]!;
    } else {
      const m = /^(\S+)(.*)$/.exec(line)!;
      pattern = m[1]!; rest = m[2]!;
    }
    const attrs: Array<[string, AttrValue | null]> = [];
    for (const tok of rest.trim().split(/[ \t]+/).filter(Boolean)) {
      if (tok.startsWith('-')) attrs.push([tok.slice(1), false]);
      else if (tok.startsWith('!')) attrs.push([tok.slice(1), null]);
      else if (tok.includes('=')) attrs.push([tok.slice(0, tok.indexOf('=')), tok.slice(tok.indexOf('=') + 1)]);
      else attrs.push([tok, true]);
    }
    if (pattern.startsWith('[attr]')) {
      if (allowMacros) macros.set(pattern.slice(6), attrs);
      continue;
    }
    if (pattern.startsWith('!')) continue; // negative patterns are forbidden in attributes
    rules.push({ pattern, attrs });
  }
  return rules;
}

/** wildmatch() for one pattern (FNM_PATHNAME when it has a slash) */
function globToRegExp(pat: string): RegExp {
  let re = '';
  for (let i = 0; i < pat.length; i++) {
    const c = pat[i]!;
    if (c === '*') {
      if (pat[i + 1] === '*' && (i === 0 || pat[i - 1] === '/') && (pat[i + 2] === '/' || i + 2 === pat.length)) {
        if (pat[i + 2] === '/') { re += '(?:.*/)?'; i += 2; } else { re += '.*'; i += 1; }
        continue;
      }
      re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pat.indexOf(']', i + 2);
      if (end < 0) { re += '\\['; continue; }
      let cls = pat.slice(i + 1, end);
      if (cls.startsWith('!') || cls.startsWith('^')) cls = `^${cls.slice(1)}`;
      re += `[${cls.replace(/\\/g, '\\\\')}]`;
      i = end;
    } else if (c === '\\' && i + 1 < pat.length) { re += pat[++i]!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'); }
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's');
}

function matches(pattern: string, relPath: string): boolean {
  if (pattern.endsWith('/')) return false; // directory-only patterns never match a file
  if (!pattern.includes('/')) return globToRegExp(pattern).test(relPath.slice(relPath.lastIndexOf('/') + 1));
  return globToRegExp(pattern.replace(/^\//, '')).test(relPath);
}

/**
 * Where .gitattributes files are read from: a tree (GIT_ATTR_SOURCE, or
 * attr.tree), else the work tree; a bare repository has none.
 */
function attrSource(repo: Repository): (dir: string) => string | undefined {
  const treeish = repo.env.GIT_ATTR_SOURCE ?? repo.config.getString('attr.tree');
  if (treeish) {
    const names = new NameResolver(repo);
    const r = names.resolveRev(treeish);
    const root = r.status === 'found' ? names.peelTo(r.oid, ObjType.Tree) : undefined;
    if (!root && repo.env.GIT_ATTR_SOURCE) throw new GitwireError('GW_USAGE', 'bad --attr-source or GIT_ATTR_SOURCE');
    return (dir) => (root ? blobAt(repo, root, dir) : undefined);
  }
  const worktree = worktreeOf(repo);
  if (!worktree) return () => undefined;
  return (dir) => { try { return readFileSync(join(worktree, dir, '.gitattributes'), 'utf8'); } catch { return undefined; } };
}

function blobAt(repo: Repository, root: Buffer, dir: string): string | undefined {
  let tree: Buffer | undefined = root;
  for (const part of dir.split('/').filter(Boolean)) {
    const o = repo.odb.read(tree);
    if (!o || o.type !== ObjType.Tree) return undefined;
    tree = undefined;
    for (const e of parseTree(o.data, repo.hashLen)) if (e.name.toString() === part && e.mode === 0o40000) tree = e.oid;
    if (!tree) return undefined;
  }
  const o = repo.odb.read(tree);
  if (!o || o.type !== ObjType.Tree) return undefined;
  for (const e of parseTree(o.data, repo.hashLen)) {
    if (e.name.toString() === '.gitattributes' && (e.mode & 0o170000) === 0o100000) return repo.odb.read(e.oid)?.data.toString('utf8');
  }
  return undefined;
}

/** The attributes `names` for `path` (a path in the repository, '/'-separated). */
export function checkAttrs(repo: Repository, path: string, names: readonly string[]): Map<string, AttrValue> {
  const macros = new Map(BUILTIN_MACROS);
  const layers: Array<{ dir: string; rules: Rule[] }> = [];
  const globalFile = repo.config.getString('core.attributesfile')
    ?? join(repo.env.XDG_CONFIG_HOME || join(repo.env.HOME || homedir(), '.config'), 'git', 'attributes');
  try { layers.push({ dir: '', rules: parseAttrFile(readFileSync(globalFile.replace(/^~(?=\/)/, repo.env.HOME || homedir()), 'utf8'), macros, true) }); } catch { /* none */ }
  const read = attrSource(repo);
  const parts = path.split('/');
  for (let i = 0; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    const text = read(dir);
    if (text !== undefined) layers.push({ dir, rules: parseAttrFile(text, macros, i === 0) });
  }
  try { layers.push({ dir: '', rules: parseAttrFile(readFileSync(join(repo.commonDir, 'info', 'attributes'), 'utf8'), macros, true) }); } catch { /* none */ }

  const out = new Map<string, AttrValue>();
  const assign = (name: string, v: AttrValue | null, depth = 0) => {
    if (v === null) out.delete(name); else out.set(name, v);
    const m = macros.get(name);
    if (m && v === true && depth < 10) for (const [n, mv] of m) assign(n, mv, depth + 1);
  };
  for (const layer of layers) {
    const rel = layer.dir ? path.slice(layer.dir.length + 1) : path;
    for (const rule of layer.rules) if (matches(rule.pattern, rel)) for (const [n, v] of rule.attrs) assign(n, v);
  }
  const wanted = new Map<string, AttrValue>();
  for (const n of names) if (out.has(n)) wanted.set(n, out.get(n)!);
  return wanted;
}
