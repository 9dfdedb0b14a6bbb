/**
 * Object names as git's get_oid_with_context understands them for
 * cat-file: full and abbreviated ids, refs (git's DWIM rules),
 * `<rev>:<path>`, `^{<type>}`, `^{}`, `~N`, `^N`.
 */
import { ObjType, typeFromName, typeName } from '../repo/object-type.js';
import { parseTag, parseTree } from '../repo/objects.js';
import type { Repository } from '../repo/repository.js';

export type NameResult =
  | { status: 'found'; oid: Buffer; mode?: number; path?: string }
  | { status: 'missing' }
  | { status: 'ambiguous' }
  | { status: 'dangling' | 'loop' | 'notdir' }
  | { status: 'symlink'; target: string };

const DWIM = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];
const MINIMUM_ABBREV = 4;

/** Where diagnostics (git's error:/hint: lines) go. */
export type Diag = (line: string) => void;

const TYPE_SORT: Record<number, number> = { [ObjType.Tag]: 0, [ObjType.Commit]: 1, [ObjType.Tree]: 2, [ObjType.Blob]: 3 };

export class NameResolver {
  constructor(readonly repo: Repository, readonly diag: Diag = () => undefined) {}

  /** Shortest unique abbreviation, at least 7 hex digits (git's auto abbrev). */
  abbrev(oid: Buffer): string {
    const hex = oid.toString('hex');
    let count = 0;
    for (const s of this.repo.odb.sources) for (const p of s.packs) count += p.index.count;
    let len = Math.max(7, Math.ceil(Math.log2(Math.max(count, 1)) / 2) + 1);
    while (len < hex.length && this.repo.odb.findByPrefix(hex.slice(0, len), 2).length > 1) len++;
    return hex.slice(0, len);
  }

  private describe(oid: Buffer): string {
    const hash = this.abbrev(oid);
    const o = this.repo.odb.read(oid);
    if (!o) return `${hash} [bad object]`;
    const shortDate = (secs: number, tz: string) => {
      const m = /^([+-])(\d\d)(\d\d)$/.exec(tz);
      const off = m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
      return new Date((secs + off * 60) * 1000).toISOString().slice(0, 10);
    };
    const text = o.data.toString('utf8');
    if (o.type === ObjType.Commit) {
      const a = /^author .*> (\d+) ([+-]\d{4})$/m.exec(text);
      const body = text.slice(text.indexOf('\n\n') + 2);
      const subject = body.split('\n\n')[0]!.replace(/\n/g, ' ').trim();
      return `${hash} commit ${a ? shortDate(Number(a[1]), a[2]!) : ''} - ${subject}`;
    }
    if (o.type === ObjType.Tag) {
      const tg = /^tagger .*> (\d+) [+-]\d{4}$/m.exec(text);
      const name = /^tag (.*)$/m.exec(text)?.[1] ?? '';
      return `${hash} tag ${tg ? shortDate(Number(tg[1]), '+0000') : ''} - ${name}`;
    }
    return `${hash} ${o.type === ObjType.Tree ? 'tree' : 'blob'}`;
  }

  private reportAmbiguous(prefix: string): void {
    const all = this.repo.odb.findByPrefix(prefix, Number.MAX_SAFE_INTEGER);
    const typed = all.map((oid) => ({ oid, t: this.repo.odb.info(oid)?.type ?? 0 }));
    typed.sort((a, b) => (a.t === b.t ? Buffer.compare(a.oid, b.oid) : (TYPE_SORT[a.t] ?? 9) - (TYPE_SORT[b.t] ?? 9)));
    this.diag(`error: short object ID ${prefix} is ambiguous`);
    this.diag('hint: The candidates are:');
    for (const x of typed) this.diag(`hint:   ${this.describe(x.oid)}`);
  }

  private isHex(s: string): boolean { return /^[0-9a-fA-F]+$/.test(s); }

  /** Ref DWIM: the first rule that resolves wins. */
  private dwimRef(name: string): Buffer | undefined {
    for (const rule of DWIM) {
      const full = rule.replace('%s', name);
      if (rule === '%s' && !full.startsWith('refs/') && !/^[A-Z_]+HEAD$|^HEAD$/.test(full)) continue;
      const r = this.repo.refs.resolve(full);
      if (r?.hex) return Buffer.from(r.hex.toString('latin1'), 'hex');
    }
    return undefined;
  }

  private basic(name: string): NameResult {
    const hexLen = this.repo.hexLen;
    if (name.length === hexLen && this.isHex(name)) return { status: 'found', oid: Buffer.from(name, 'hex') };
    if (name === '@') name = 'HEAD';
    const ref = name ? this.dwimRef(name) : undefined;
    if (ref) return { status: 'found', oid: ref };
    if (name.length >= MINIMUM_ABBREV && name.length <= hexLen && this.isHex(name)) {
      const found = this.repo.odb.findByPrefix(name.toLowerCase(), 2);
      if (found.length === 1) return { status: 'found', oid: found[0]! };
      if (found.length > 1) { this.reportAmbiguous(name); return { status: 'ambiguous' }; }
    }
    return { status: 'missing' };
  }

  private typeOf(oid: Buffer): ObjType | undefined { return this.repo.odb.info(oid)?.type; }

  /**
   * repo_peel_to_type(): follow tags (and commit → tree) until `want`;
   * undefined `want` peels tags fully. `name` enables git's error line.
   */
  peelTo(oid: Buffer, want: ObjType | undefined, name?: string): Buffer | undefined {
    let cur = oid;
    for (let i = 0; i < 100; i++) {
      const t = this.typeOf(cur);
      if (t === undefined) return undefined;
      if (want === undefined ? t !== ObjType.Tag : t === want) return cur;
      if (t === ObjType.Tag) {
        const o = this.repo.odb.read(cur);
        if (!o) return undefined;
        cur = parseTag(o.data, this.repo.hashLen).object;
        continue;
      }
      if (t === ObjType.Commit) {
        const c = this.repo.commit(cur);
        if (!c) return undefined;
        cur = c.tree;
        continue;
      }
      if (name !== undefined && want !== undefined) {
        this.diag(`error: ${name}: expected ${typeName(want)} type, but the object dereferences to ${typeName(t)} type`);
      }
      return undefined;
    }
    return undefined;
  }

  private applySuffixes(oid: Buffer, ops: string, fullName: string): Buffer | undefined {
    let cur: Buffer | undefined = oid;
    let i = 0;
    while (cur && i < ops.length) {
      const c = ops[i]!;
      if (c === '^' && ops[i + 1] === '{') {
        const end = ops.indexOf('}', i);
        if (end < 0) return undefined;
        const what = ops.slice(i + 2, end);
        i = end + 1;
        if (what === '') { cur = this.peelTo(cur, undefined); continue; }
        if (what === 'object') { if (this.typeOf(cur) === undefined) return undefined; continue; }
        const t = typeFromName(what);
        if (t === undefined) return undefined;
        cur = this.peelTo(cur, t, fullName.slice(0, fullName.length - ops.length + end + 1));
        continue;
      }
      let j = i + 1;
      while (j < ops.length && ops[j]! >= '0' && ops[j]! <= '9') j++;
      const n = j > i + 1 ? Number(ops.slice(i + 1, j)) : 1;
      i = j;
      const commit = this.peelTo(cur, ObjType.Commit);
      if (!commit) return undefined;
      if (c === '~') {
        cur = commit;
        for (let k = 0; k < n && cur; k++) cur = this.repo.commit(cur)?.parents[0];
      } else if (c === '^') {
        if (n === 0) { cur = commit; continue; }
        cur = this.repo.commit(commit)?.parents[n - 1];
      } else return undefined;
    }
    return cur;
  }

  /** <rev> (no path part). */
  resolveRev(name: string): NameResult {
    const m = /[~^]/.exec(name);
    const base = m ? name.slice(0, m.index) : name;
    const r = this.basic(base);
    if (r.status !== 'found' || !m) return r;
    const oid = this.applySuffixes(r.oid, name.slice(m.index), name);
    return oid ? { status: 'found', oid } : { status: 'missing' };
  }

  resolve(name: string, followSymlinks = false): NameResult {
    const colon = name.indexOf(':');
    if (colon < 0 || name.startsWith(':')) {
      if (name.startsWith(':')) return { status: 'missing' }; // index lookups: no index is read
      return this.resolveRev(name);
    }
    const rev = this.resolveRev(name.slice(0, colon));
    if (rev.status !== 'found') return rev;
    const tree = this.peelTo(rev.oid, ObjType.Tree);
    if (!tree) return { status: 'missing' };
    const path = name.slice(colon + 1);
    return followSymlinks ? this.walkFollow(tree, path) : this.walk(tree, path);
  }

  private lookupEntry(tree: Buffer, name: string): { mode: number; oid: Buffer } | undefined {
    const o = this.repo.odb.read(tree);
    if (!o || o.type !== ObjType.Tree) return undefined;
    const want = Buffer.from(name);
    for (const e of parseTree(o.data, this.repo.hashLen)) if (e.name.equals(want)) return { mode: e.mode, oid: Buffer.from(e.oid) };
    return undefined;
  }

  private walk(tree: Buffer, path: string): NameResult {
    const parts = path.split('/').filter((p) => p.length > 0);
    if (parts.length === 0) return { status: 'found', oid: tree, mode: 0o40000, path };
    let cur = tree;
    let mode = 0o40000;
    for (const p of parts) {
      if (mode !== 0o40000) return { status: 'missing' };
      const e = this.lookupEntry(cur, p);
      if (!e) return { status: 'missing' };
      cur = e.oid;
      mode = e.mode;
    }
    return { status: 'found', oid: cur, mode, path };
  }

  /** get_tree_entry_follow_symlinks(): resolve in-tree symlinks. */
  private walkFollow(root: Buffer, path: string): NameResult {
    let todo = path.split('/').filter((p) => p.length > 0);
    const stack: Buffer[] = [root]; // trees from root to current dir
    let hops = 0;
    let followed = false;
    while (todo.length) {
      const p = todo.shift()!;
      if (p === '.') continue;
      if (p === '..') {
        if (stack.length === 1) return { status: 'symlink', target: ['..', ...todo].join('/') };
        stack.pop();
        continue;
      }
      const e = this.lookupEntry(stack[stack.length - 1]!, p);
      if (!e) return { status: followed ? 'dangling' : 'missing' };
      if (e.mode === 0o40000) { stack.push(e.oid); if (!todo.length) return { status: 'found', oid: e.oid, mode: e.mode, path }; continue; }
      if (e.mode === 0o120000) {
        if (++hops > 40) return { status: 'loop' };
        followed = true;
        const o = this.repo.odb.read(e.oid);
        if (!o) return { status: 'missing' };
        const target = o.data.toString('latin1');
        if (target.startsWith('/')) return { status: 'symlink', target: [target, ...todo].join('/') };
        todo = [...target.split('/').filter((x) => x.length > 0), ...todo];
        if (todo.length === 0) return { status: 'dangling' };
        continue;
      }
      if (todo.length) return { status: 'notdir' };
      return { status: 'found', oid: e.oid, mode: e.mode, path };
    }
    return { status: 'found', oid: stack[stack.length - 1]!, mode: 0o40000, path };
  }
}
