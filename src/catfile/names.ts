/**
 * Object names as git's get_oid_with_context() understands them, built the
 * way object-name.c is: `<rev>:<path>`, `:/<regex>`, then get_oid_1() from
 * the end of the name (`~N`, `^N`, `^{<type>}`, `^{/<regex>}`), then
 * get_oid_basic() (full ids, refs by git's DWIM rules, `@`, `@{-N}`,
 * `<ref>@{N}` from the reflog), describe output and abbreviated ids.
 *
 * Names are bytes: a name given as a Buffer is used as is, a string is
 * taken as UTF-8. Inside, a name is a "byte string" (one char per byte,
 * latin1), so that `HEAD:ünï.txt` matches the tree entry's bytes.
 * Objects are read through replace refs, as git's parse_object() does.
 *
 * With extensions.compatObjectFormat, cat-file's names may be in either
 * hash (GET_OID_HASH_ANY): an id or abbreviation in the compat hash is
 * looked up in the compat map, and the objects it leads to (a compat
 * tree's entries) are compat ids too. git carries that flag through
 * `^{...}` and `<rev>:<path>` but not through `~`/`^` or describe names,
 * and its parse_object() cannot parse a compat commit or tag (or check a
 * compat blob's hash), so only compat trees peel and have paths: the
 * rest fails as git's does, with its error line.
 */
import { GitwireError } from '../errors.js';
import { ObjType, typeName } from '../repo/object-type.js';
import { parseTag, parseTree, parseCommit, type Commit } from '../repo/objects.js';
import type { Repository } from '../repo/repository.js';
import { isValidRefName } from '../repo/refs/index.js';
import { ReplaceMap } from '../repo/replace.js';
import { listRefs } from '../repo/ref-list.js';
import { isHex, parseHex, rawFromHexBytes } from '../repo/oid.js';
import { readRefAtCount } from '../repo/reflog.js';
import { resolveRelativePath, worktreeOf } from './worktree.js';
import { readIndex } from '../repo/index-file.js';
import { CompatView } from './compat.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type NameResult =
  | { status: 'found'; oid: Buffer; mode?: number; path?: Buffer }
  | { status: 'missing' }
  | { status: 'ambiguous' }
  | { status: 'dangling' | 'loop' | 'notdir' }
  | { status: 'symlink'; target: Buffer };

export interface ResolveFlags {
  followSymlinks?: boolean;
  /** GET_OID_ONLY_TO_DIE: die with git's diagnosis instead of returning missing */
  onlyToDie?: boolean;
  /** GET_OID_REQUIRE_PATH (--textconv/--filters without --path) */
  requirePath?: boolean;
}

const DWIM = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];
const MINIMUM_ABBREV = 4;
const MAX_HEX = 64;

/** Where diagnostics (git's error:/hint:/warning: lines) go. */
export type Diag = (line: string) => void;

type Hint = 'commit' | 'committish' | 'tree' | 'treeish' | 'blob' | undefined;
type R1 = { status: 'found'; oid: Buffer } | { status: 'missing' } | { status: 'ambiguous' };
const MISSING: R1 = { status: 'missing' };

const die = (msg: string) => new GitwireError('GW_USAGE', msg);
const bytes = (s: string) => Buffer.from(s, 'latin1');
/** a byte string as a JS string (UTF-8), for file names and ref names */
const utf8 = (s: string) => Buffer.from(s, 'latin1').toString('utf8');
const isXdigit = (c: string | undefined) => c !== undefined && /^[0-9a-fA-F]$/.test(c);

const TYPE_SORT: Record<number, number> = { [ObjType.Tag]: 0, [ObjType.Commit]: 1, [ObjType.Tree]: 2, [ObjType.Blob]: 3 };

export class NameResolver {
  readonly replace: ReplaceMap;
  /** the compat hash's view, when the repository has one */
  readonly compat: CompatView | undefined;

  constructor(readonly repo: Repository, readonly diag: Diag = () => undefined, replace?: ReplaceMap) {
    this.replace = replace ?? new ReplaceMap(repo);
    this.compat = CompatView.of(repo);
  }

  private isCompat(oid: Buffer): boolean { return this.compat !== undefined && this.compat.is(oid); }

  // ---- objects, read through replace refs ---------------------------------

  private read(oid: Buffer) {
    if (this.isCompat(oid)) return this.compat!.read(oid, this.replace, this.diag);
    return this.repo.odb.read(this.replace.lookup(oid));
  }
  private typeOf(oid: Buffer): ObjType | undefined {
    if (this.isCompat(oid)) return this.compat!.info(oid, this.replace)?.type;
    return this.repo.odb.info(this.replace.lookup(oid))?.type;
  }
  private commit(oid: Buffer): Commit | undefined {
    if (this.isCompat(oid)) return undefined; // parse_commit() reads its ids in the main hash
    const o = this.read(oid);
    return o && o.type === ObjType.Commit ? parseCommit(o.data, this.repo.hashLen) : undefined;
  }

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

  private reportAmbiguous(prefix: string, hashAny: boolean): void {
    const all = this.candidates(prefix, Number.MAX_SAFE_INTEGER, hashAny);
    const typed = all.map((oid) => ({ oid, t: this.repo.odb.info(oid)?.type ?? 0 }));
    typed.sort((a, b) => (a.t === b.t ? Buffer.compare(a.oid, b.oid) : (TYPE_SORT[a.t] ?? 9) - (TYPE_SORT[b.t] ?? 9)));
    this.diag(`error: short object ID ${prefix} is ambiguous`);
    this.diag('hint: The candidates are:');
    for (const x of typed) this.diag(`hint:   ${this.describe(x.oid)}`);
  }

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
      if (this.isCompat(cur) && (t === ObjType.Tag || t === ObjType.Commit)) return undefined; // not parsed in the compat hash
      if (t === ObjType.Tag) {
        const o = this.read(cur);
        if (!o) return undefined;
        cur = parseTag(o.data, cur.length).object;
        continue;
      }
      if (t === ObjType.Commit) {
        const c = this.commit(cur);
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

  /** lookup_commit_reference(): peel tags to a commit */
  private commitRef(oid: Buffer): Buffer | undefined {
    let cur = oid;
    for (let i = 0; i < 100; i++) {
      const t = this.typeOf(cur);
      if (t === ObjType.Commit) return cur;
      if (t !== ObjType.Tag) return undefined;
      const o = this.read(cur);
      if (!o) return undefined;
      cur = parseTag(o.data, this.repo.hashLen).object;
    }
    return undefined;
  }

  // ---- refs -----------------------------------------------------------------

  /** refs_resolve_ref_unsafe() for reading: the value, and the ref it ends at */
  private readRef(full: string): { oid: Buffer; target: string } | undefined {
    if (full.startsWith('refs/')) { if (!isValidRefName(utf8(full))) return undefined; }
    else if (!/^[A-Z_]+$/.test(full)) return undefined; // root refs: HEAD, FETCH_HEAD, ...
    const r = this.repo.refs.resolve(utf8(full));
    if (!r?.hex) return undefined;
    return { oid: rawFromHexBytes(r.hex), target: Buffer.from(r.target).toString('latin1') };
  }

  /** @{-N}: the branch (or detached id) checked out N switches ago, from HEAD's reflog */
  private nthPriorCheckout(name: string): { used: number; value: string } | 'none' | undefined {
    const m = /^@\{-(\d+)\}/.exec(name);
    if (!m) return undefined;
    const n = Number(m[1]);
    if (n <= 0) return undefined;
    const log = this.repo.refs.readReflog('HEAD');
    let remaining = n;
    for (let i = log.length - 1; i >= 0; i--) {
      const mm = /^checkout: moving from (.*?) to /.exec(log[i]!.message);
      if (!mm) continue;
      if (--remaining === 0) return { used: m[0].length, value: Buffer.from(mm[1]!).toString('latin1') };
    }
    return 'none';
  }

  /** repo_interpret_branch_name() for `@{-N}` and a lone `@` */
  private substituteBranchName(name: string): string {
    const prior = this.nthPriorCheckout(name);
    if (prior && prior !== 'none') return prior.value + name.slice(prior.used);
    if (name === '@' || /^@@\{/.test(name)) return `HEAD${name.slice(1)}`;
    return name;
  }

  /** repo_dwim_ref(): every DWIM rule is tried; the first match wins */
  private dwimRef(name: string): { count: number; oid?: Buffer; ref?: string } {
    const str = this.substituteBranchName(name);
    let count = 0, oid: Buffer | undefined, ref: string | undefined;
    for (const rule of DWIM) {
      const full = rule.replace('%s', str);
      const r = this.readRef(full);
      if (!r) continue;
      if (count++ === 0) { oid = r.oid; ref = full; }
    }
    return { count, oid, ref };
  }

  /** repo_dwim_log(): the first rule whose ref (or its symref target) has a reflog */
  private dwimLog(name: string): { count: number; oid?: Buffer; log?: string } {
    const str = this.substituteBranchName(name);
    let count = 0, oid: Buffer | undefined, log: string | undefined;
    for (const rule of DWIM) {
      const full = rule.replace('%s', str);
      const r = this.readRef(full);
      if (!r) continue;
      let it: string;
      if (this.repo.refs.reflogExists(utf8(full))) it = full;
      else if (r.target !== full && this.repo.refs.reflogExists(utf8(r.target))) it = r.target;
      else continue;
      if (count++ === 0) { log = it; oid = r.oid; }
    }
    return { count, oid, log };
  }

  // ---- get_oid_basic / get_oid_1 ------------------------------------------

  private basic(str: string, quiet: boolean): R1 {
    const hexLen = this.repo.hexLen;
    if (isHex(str, hexLen, true)) return { status: 'found', oid: parseHex(str) };
    let len = str.length, reflogLen = 0, at = 0, nthPrior = false;
    if (len && str[len - 1] === '}') {
      for (at = len - 4; at >= 0; at--) {
        if (str[at] === '@' && str[at + 1] === '{') {
          if (str[at + 2] === '-') {
            if (at !== 0) return MISSING;
            nthPrior = true;
            continue;
          }
          const tail = str.slice(at).toLowerCase();
          if (!/^@\{(upstream|u|push)\}/.test(tail)) { reflogLen = len - 1 - (at + 2); len = at; }
          break;
        }
      }
    }
    const base = str.slice(0, len);
    if (len && ambiguousPath(base)) return MISSING;
    if (nthPrior) {
      const p = this.nthPriorCheckout(base);
      if (p && p !== 'none' && p.used === base.length && isHex(p.value, hexLen, true)) {
        return { status: 'found', oid: parseHex(p.value) };
      }
    }
    let found: { count: number; oid?: Buffer; ref?: string };
    if (!len && reflogLen) found = this.dwimRef('HEAD');
    else if (reflogLen) { const l = this.dwimLog(base); found = { count: l.count, oid: l.oid, ref: l.log }; }
    else found = this.dwimRef(base);
    if (!found.count || !found.oid) return MISSING;
    if (!quiet && (found.count > 1 || this.shortOid(base, undefined, true).status === 'found')) {
      this.diag(`warning: refname '${base}' is ambiguous.`);
    }
    let oid = found.oid;
    if (reflogLen) {
      const spec = str.slice(at + 2, at + 2 + reflogLen);
      if (!/^\d+$/.test(spec) || Number(spec) >= 100000000) {
        // approxidate (`@{yesterday}`, `@{2.weeks.ago}`) and timestamps are not read here
        return MISSING;
      }
      const nth = Number(spec);
      const ref = found.ref!;
      const entries = this.repo.refs.readReflog(utf8(ref));
      if (!entries.length && nth > 0) throw die(`log for ${utf8(ref)} is empty`);
      const r = readRefAtCount(entries, nth, oid);
      if (r.found) oid = r.oid;
      else {
        let shown = base;
        if (!len) shown = ref.startsWith('refs/heads/') ? ref.slice(11) : 'HEAD';
        if (nth === r.count && r.oldest && !r.oldest.equals(Buffer.alloc(this.repo.hashLen))) oid = r.oldest;
        else throw die(`log for '${utf8(shown)}' only has ${r.count} entries`);
      }
    }
    return { status: 'found', oid };
  }

  /** objects whose id starts with `prefix`: stored ones and, with `hashAny`, compat ids in the map */
  private candidates(prefix: string, limit: number, hashAny: boolean): Buffer[] {
    const found = prefix.length <= this.repo.hexLen ? this.repo.odb.findByPrefix(prefix, limit) : [];
    if (hashAny && this.compat) for (const c of this.compat.findByPrefix(prefix, limit + 1)) found.push(c);
    return found;
  }

  /** get_short_oid() with a disambiguation hint; `hashAny`: GET_OID_HASH_ANY */
  private shortOid(name: string, hint: Hint, quiet: boolean, hashAny = false): R1 {
    if (name.length < MINIMUM_ABBREV || name.length > MAX_HEX || !/^[0-9a-fA-F]+$/.test(name)) return MISSING;
    const maxLen = hashAny && this.compat ? Math.max(this.repo.hexLen, this.compat.len * 2) : this.repo.hexLen;
    if (name.length > maxLen) return MISSING;
    const prefix = name.toLowerCase();
    const found = this.candidates(prefix, hint ? Number.MAX_SAFE_INTEGER : 2, hashAny);
    if (found.length === 1) return { status: 'found', oid: found[0]! };
    if (found.length === 0) return MISSING;
    if (hint) {
      const ok = found.filter((o) => this.satisfies(o, hint));
      if (ok.length === 1) return { status: 'found', oid: ok[0]! };
    }
    if (!quiet) this.reportAmbiguous(prefix, hashAny);
    return { status: 'ambiguous' };
  }

  private satisfies(oid: Buffer, hint: Hint): boolean {
    const t = this.isCompat(oid) ? this.typeOf(oid) : this.repo.odb.info(oid)?.type;
    const deref = () => (t === ObjType.Tag ? this.peelTo(oid, undefined) : oid);
    switch (hint) {
      case 'commit': return t === ObjType.Commit;
      case 'tree': return t === ObjType.Tree;
      case 'blob': return t === ObjType.Blob;
      case 'committish': { const d = deref(); return !!d && this.typeOf(d) === ObjType.Commit; }
      case 'treeish': { const d = deref(); const dt = d && this.typeOf(d); return dt === ObjType.Commit || dt === ObjType.Tree; }
      default: return true;
    }
  }

  /** get_describe_name(): `<ref>-<n>-g<hex>` */
  private describeName(name: string): R1 {
    for (let cp = name.length - 1; cp >= 2; cp--) {
      const ch = name[cp]!;
      if (isXdigit(ch)) continue;
      if (ch === 'g' && name[cp - 1] === '-' && refAndCountValid(name, cp - 1)) return this.shortOid(name.slice(cp + 1), 'commit', true);
    }
    return MISSING;
  }

  private peelOnion(name: string, hint: Hint, hashAny: boolean): R1 | undefined {
    const len = name.length;
    if (len < 4 || name[len - 1] !== '}') return undefined;
    let sp = len - 1;
    for (; sp >= 0; sp--) if (name[sp] === '{' && sp > 0 && name[sp - 1] === '^') break;
    if (sp <= 0) return undefined;
    sp++;
    const rest = name.slice(sp);
    let want: ObjType | 'any' | 'none';
    if (rest.startsWith('commit}')) want = ObjType.Commit;
    else if (rest.startsWith('tag}')) want = ObjType.Tag;
    else if (rest.startsWith('tree}')) want = ObjType.Tree;
    else if (rest.startsWith('blob}')) want = ObjType.Blob;
    else if (rest.startsWith('object}')) want = 'any';
    else if (rest[0] === '}') want = 'none';
    else if (rest[0] === '/') want = ObjType.Commit;
    else return undefined;
    void hint;
    const inner = this.oid1(name.slice(0, sp - 2), want === ObjType.Commit ? 'committish' : want === ObjType.Tree ? 'treeish' : undefined, false, hashAny);
    if (inner.status !== 'found') return MISSING;
    const outer = inner.oid;
    const outerType = this.typeOf(outer);
    if (outerType === undefined) return MISSING;
    if (this.isCompat(outer) && outerType !== ObjType.Tree) {
      // parse_object() on a compat id: a blob's hash does not check, a commit does not parse, a tag fails quietly
      if (outerType === ObjType.Blob) this.diag(`error: hash mismatch ${outer.toString('hex')}`);
      if (outerType === ObjType.Commit) this.diag(`error: bogus commit object ${outer.toString('hex')}`);
      return MISSING;
    }
    if (want === 'none') {
      const d = this.peelTo(outer, undefined);
      return d ? { status: 'found', oid: d } : MISSING;
    }
    if (want === 'any') return { status: 'found', oid: outer };
    const o = this.peelTo(outer, want, name);
    if (!o) return MISSING;
    if (rest[0] === '/') {
      if (rest[1] === '}') return { status: 'found', oid: o };
      return this.oneline(name.slice(sp + 1, len - 1), [o]);
    }
    return { status: 'found', oid: o };
  }

  /** get_oid_1(): suffixes from the end, then ^{...}, basic, describe, short id */
  private oid1(name: string, hint: Hint, quiet = false, hashAny = false): R1 {
    let cp = name.length - 1;
    while (cp >= 0 && name[cp]! >= '0' && name[cp]! <= '9') cp--;
    const suffix = cp >= 0 && (name[cp] === '~' || name[cp] === '^') ? name[cp] : undefined;
    if (suffix) {
      const digits = name.slice(cp + 1);
      let num = digits ? Number(digits) : 0;
      if (!digits) num = 1;
      if (num > 0x7fffffff) return MISSING;
      const base = this.oid1(name.slice(0, cp), 'committish');
      if (base.status !== 'found') return base;
      const commit = this.commitRef(base.oid);
      if (!commit) return MISSING;
      if (suffix === '^') {
        if (num === 0) return { status: 'found', oid: commit };
        const c = this.commit(commit);
        const p = c?.parents[num - 1];
        return p ? { status: 'found', oid: p } : MISSING;
      }
      let cur = commit;
      for (let i = 0; i < num; i++) {
        const c = this.commit(cur);
        if (!c || !c.parents.length) return MISSING;
        cur = c.parents[0]!;
      }
      return { status: 'found', oid: cur };
    }
    const peeled = this.peelOnion(name, hint, hashAny);
    if (peeled?.status === 'found') return peeled;
    const b = this.basic(name, quiet);
    if (b.status === 'found') return b;
    const d = this.describeName(name);
    if (d.status === 'found') return d;
    return this.shortOid(name, hint, quiet, hashAny);
  }

  // ---- :/<regex> --------------------------------------------------------------

  /** get_oid_oneline(): newest commit (by committer date) reachable from `from` whose message matches */
  private oneline(pattern: string, from: Buffer[]): R1 {
    let negative = false;
    if (pattern[0] === '!') {
      pattern = pattern.slice(1);
      if (pattern[0] === '-') { pattern = pattern.slice(1); negative = true; } else if (pattern[0] !== '!') return MISSING;
    }
    let re: RegExp;
    try { re = new RegExp(utf8(pattern), 's'); } catch { return MISSING; }
    const seen = new Set<string>();
    const queue: Array<{ oid: Buffer; time: number; ctr: number }> = [];
    let ctr = 0;
    const push = (oid: Buffer) => {
      const c = this.commit(oid);
      queue.push({ oid, time: c ? c.time : 0, ctr: ctr++ });
    };
    for (const oid of from) { const k = oid.toString('hex'); if (!seen.has(k)) { seen.add(k); push(oid); } }
    while (queue.length) {
      let best = 0;
      for (let i = 1; i < queue.length; i++) {
        const a = queue[i]!, b = queue[best]!;
        if (a.time > b.time || (a.time === b.time && a.ctr < b.ctr)) best = i;
      }
      const { oid } = queue.splice(best, 1)[0]!;
      const o = this.read(oid);
      if (!o || o.type !== ObjType.Commit) continue;
      const c = parseCommit(o.data, this.repo.hashLen);
      for (const p of c.parents) { const k = p.toString('hex'); if (!seen.has(k)) { seen.add(k); push(p); } }
      const at = o.data.indexOf('\n\n');
      let text = at < 0 ? undefined : o.data.subarray(at + 2);
      if (text) { const nul = text.indexOf(0); if (nul >= 0) text = text.subarray(0, nul); }
      const matches = negative !== (text !== undefined && re.test(text.toString('utf8')));
      if (matches) return { status: 'found', oid };
    }
    return MISSING;
  }

  private refTips(): Buffer[] {
    const tips: Buffer[] = [];
    const add = (hex: string) => {
      const oid = Buffer.from(hex, 'hex');
      const c = this.peelTo(oid, undefined);
      if (c && this.typeOf(c) === ObjType.Commit) tips.push(c);
    };
    for (const r of listRefs(this.repo.refs, 'refs/')) add(r.hex);
    const head = this.readRef('HEAD');
    if (head) add(head.oid.toString('hex'));
    return tips.reverse(); // commit_list_insert() prepends
  }

  // ---- get_oid_with_context --------------------------------------------------

  /** <rev> alone (no path part). */
  resolveRev(name: string | Buffer): NameResult {
    const s = typeof name === 'string' ? Buffer.from(name).toString('latin1') : name.toString('latin1');
    return this.oid1(s, undefined);
  }

  resolve(name: string | Buffer, followSymlinks: boolean | ResolveFlags = false): NameResult {
    // a full hex id (either case) names itself, as get_oid_basic() finds first: read from its
    // bytes, without a string (a batch asks this once per line)
    if (typeof name !== 'string' && (typeof followSymlinks === 'boolean' || !followSymlinks.requirePath) && isHex(name, this.repo.hexLen, true)) {
      return { status: 'found', oid: rawFromHexBytes(name) };
    }
    const flags: ResolveFlags = typeof followSymlinks === 'boolean' ? { followSymlinks } : followSymlinks;
    const s = typeof name === 'string' ? Buffer.from(name).toString('latin1') : name.toString('latin1');
    const r = this.oid1(s, undefined, false, true);
    if (r.status === 'found') {
      if (flags.requirePath) throw die(`<object>:<path> required, only <object> '${utf8(s)}' given`);
      return r;
    }
    if (s[0] === ':') {
      if (!flags.onlyToDie && s.length > 2 && s[1] === '/') return this.oneline(s.slice(2), this.refTips());
      return this.fromIndex(s, !!flags.onlyToDie);
    }
    let depth = 0, cp = 0;
    for (; cp < s.length; cp++) {
      const c = s[cp]!;
      if ((c === '@' || c === '^') && s[cp + 1] === '{') { cp++; depth++; }
      else if (depth && c === '}') depth--;
      else if (!depth && c === ':') break;
    }
    if (cp >= s.length) return r;
    const revName = s.slice(0, cp);
    const rev = this.oid1(revName, 'treeish', false, true);
    if (rev.status !== 'found') {
      if (flags.onlyToDie) throw die(`invalid object name '${utf8(revName)}'.`);
      return r;
    }
    const tree = this.peelTo(rev.oid, ObjType.Tree);
    let path = s.slice(cp + 1);
    const rel = resolveRelativePath(this.repo, utf8(path));
    if (rel && 'error' in rel) throw die(rel.error);
    if (rel) path = Buffer.from(rel.path).toString('latin1');
    if (!tree) {
      // get_tree_entry() failed to read a tree: the same diagnosis as a path not in it
      if (flags.onlyToDie) this.diagnoseTreePath(rev.oid, path, revName);
      return MISSING;
    }
    if (flags.followSymlinks) return this.walkFollow(tree, path);
    const w = this.walk(tree, path);
    if (w.status !== 'found' && flags.onlyToDie) this.diagnoseTreePath(tree, path, revName);
    return w;
  }

  /**
   * diagnose_invalid_oid_path(): git's message for `<rev>:<path>` that does
   * not exist. cat-file passes no prefix, so there is no `Did you mean` hint.
   */
  private diagnoseTreePath(_tree: Buffer, path: string, revName: string): never {
    const wt = worktreeOf(this.repo);
    const file = utf8(path);
    if (wt && existsSync(join(wt, file))) throw die(`path '${file}' exists on disk, but not in '${utf8(revName)}'`);
    throw die(`path '${file}' does not exist in '${utf8(revName)}'`);
  }

  /** `:<path>` and `:<stage>:<path>`: an entry of the index */
  private fromIndex(s: string, onlyToDie: boolean): NameResult {
    let stage = 0;
    let cp = s.slice(1);
    if (s.length >= 3 && s[2] === ':' && s[1]! >= '0' && s[1]! <= '3') { stage = Number(s[1]); cp = s.slice(3); }
    const rel = resolveRelativePath(this.repo, utf8(cp));
    if (rel && 'error' in rel) throw die(rel.error);
    if (rel) cp = Buffer.from(rel.path).toString('latin1');
    const want = bytes(cp);
    const entries = readIndex(this.repo.gitDir, this.repo.hashLen, this.repo.env);
    for (const e of entries) {
      if (!e.path.equals(want) || e.stage !== stage) continue;
      if (e.mode === 0o40000) { if (onlyToDie) this.diagnoseIndexPath(entries, stage, cp); return MISSING; } // a sparse directory
      return { status: 'found', oid: e.oid, mode: e.mode, path: want };
    }
    if (onlyToDie && s[1] && s[1] !== '/') this.diagnoseIndexPath(entries, stage, cp);
    return MISSING;
  }

  /** diagnose_invalid_index_path() */
  private diagnoseIndexPath(entries: ReturnType<typeof readIndex>, stage: number, path: string): never {
    const file = utf8(path);
    const other = entries.find((e) => e.path.equals(bytes(path)));
    if (other) throw die(`path '${file}' is in the index, but not at stage ${stage}\nhint: Did you mean ':${other.stage}:${file}'?`);
    const wt = worktreeOf(this.repo);
    if (wt && existsSync(join(wt, file))) throw die(`path '${file}' exists on disk, but not in the index`);
    throw die(`path '${file}' does not exist (neither on disk nor in the index)`);
  }

  private lookupEntry(tree: Buffer, name: string): { mode: number; oid: Buffer } | undefined {
    const o = this.read(tree);
    if (!o || o.type !== ObjType.Tree) return undefined;
    const want = bytes(name);
    for (const e of parseTree(o.data, tree.length)) if (e.name.equals(want)) return { mode: e.mode, oid: Buffer.from(e.oid) };
    return undefined;
  }

  private walk(tree: Buffer, path: string): NameResult {
    const parts = path.split('/').filter((p) => p.length > 0);
    if (parts.length === 0) return { status: 'found', oid: tree, mode: 0o40000, path: bytes(path) };
    let cur = tree;
    let mode = 0o40000;
    for (const p of parts) {
      if (mode !== 0o40000) return { status: 'missing' };
      const e = this.lookupEntry(cur, p);
      if (!e) return { status: 'missing' };
      cur = e.oid;
      mode = e.mode;
    }
    return { status: 'found', oid: cur, mode, path: bytes(path) };
  }

  /**
   * get_tree_entry_follow_symlinks(): resolve in-tree symlinks, walking the
   * name as git does: one component at a time off the front of a string
   * that a symlink's target is spliced into, `..` popping a directory (and
   * above the root, the rest of the name, as given, is the answer), `.`
   * being no special name, and a link to an absolute path answering with
   * the link's target alone.
   */
  private walkFollow(root: Buffer, path: string): NameResult {
    let name = path;
    const parents: Buffer[] = []; // trees from the root to the current directory
    let current: Buffer | undefined = root; // a tree to descend into, not yet read
    let mode = 0o40000;
    let status: 'missing' | 'dangling' = 'missing';
    let follows = 40;
    for (;;) {
      if (current) {
        const tree = this.peelTo(current, ObjType.Tree);
        if (!tree || this.typeOf(tree) !== ObjType.Tree) return { status };
        parents.push(tree);
        current = undefined;
        if (name === '') return { status: 'found', oid: tree, mode, path: bytes(path) };
      }
      let lead = 0;
      while (name[lead] === '/') lead++;
      name = name.slice(lead);
      const slash = name.indexOf('/');
      const first = slash < 0 ? name : name.slice(0, slash);
      if (first === '..') {
        if (parents.length === 1) return { status: 'symlink', target: bytes(name) };
        parents.pop();
        name = name.slice(slash < 0 ? 2 : 3);
        continue;
      }
      // a symlink to dir/.. ends here
      if (name === '') return { status: 'found', oid: parents[parents.length - 1]!, mode, path: bytes(path) };
      const e = this.lookupEntry(parents[parents.length - 1]!, first);
      if (!e) return { status };
      mode = e.mode;
      // a gitlink is neither tree, file nor link: git tries to read it as a tree and gives up
      if (e.mode === 0o160000) return { status };
      if (e.mode === 0o40000) {
        if (slash < 0) return { status: 'found', oid: e.oid, mode, path: bytes(path) };
        current = e.oid;
        name = name.slice(slash + 1);
        continue;
      }
      if (e.mode !== 0o120000) {
        if (slash >= 0) return { status: 'notdir' };
        return { status: 'found', oid: e.oid, mode, path: bytes(path) };
      }
      if (follows-- === 0) return { status: 'loop' };
      status = 'dangling'; // from here on a failure is a dangling link
      const o = this.read(e.oid);
      if (!o) return { status };
      const target = o.data.toString('latin1');
      if (target.startsWith('/')) return { status: 'symlink', target: bytes(target) };
      name = target + (slash < 0 ? '' : name.slice(slash));
    }
  }
}

/** ambiguous_path(): a name made only of dots and slashes */
function ambiguousPath(path: string): boolean {
  let slash = true;
  for (const c of path) {
    if (c === '/') { if (slash) return true; slash = true; continue; }
    if (c === '.') continue;
    slash = false;
  }
  return slash;
}

/** ref_and_count_parts_valid(): `<refname>-<count>` before `-g<hex>` */
function refAndCountValid(name: string, len: number): boolean {
  if (!isXdigit(name[len - 1])) return false;
  let cp = len - 2;
  for (; cp > 0; cp--) {
    if (name[cp] === '-') break;
    if (!isXdigit(name[cp])) return false;
  }
  if (name[cp] !== '-') return false;
  return isValidRefName(utf8(name.slice(0, cp)));
}
