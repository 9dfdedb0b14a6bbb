/**
 * `extensions.compatObjectFormat`: a repository whose objects are stored
 * under one hash (SHA-1, say) and can also be named by a second one
 * (SHA-256). git 2.55 keeps the mapping in `objects/loose-object-idx`, a
 * text file of `<storage-hex> <compat-hex>` lines under the header
 * `# loose-object-idx`, which it appends to as it writes objects (loose.c);
 * the empty tree, the empty blob and the null id are mapped without being
 * written. Packs carry no compat table in 2.55, and git reads only the
 * repository's own file (not the alternates'), so neither does this.
 *
 * The map is held as two sorted tables of raw ids (not a JS Map): about
 * 2 x (20 + 32) bytes an entry, read once, searched by bisection, read
 * again only when a lookup misses and the file has changed since (git
 * reloads it on a miss too, for objects another process has just added).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import type { Config } from './config.js';

export type HashName = 'sha1' | 'sha256';
export const HASH_LEN: Record<HashName, number> = { sha1: 20, sha256: 32 };

const HEADER = Buffer.from('# loose-object-idx\n', 'latin1');

/** v1-only extensions (setup.c handle_extension), named in git's "repo version is 0" error */
const V1_ONLY = new Set(['noop-v1', 'objectformat', 'compatobjectformat', 'refstorage', 'relativeworktrees', 'submodulepathconfig']);

function configPath(gitDir: string): string {
  return gitDir.endsWith('/.git') ? '.git/config' : './config';
}

/**
 * The compat format a repository's config asks for, checked as git's
 * setup does: only the repository's own config counts, a missing or
 * unknown value is git's config error, and a repository that says it is
 * version 0 may not use it. Undefined when none is set (or the version is
 * not given, where git ignores v1 extensions).
 */
export function compatFormatOf(config: Config, gitDir: string, storage: HashName): HashName | undefined {
  const local = config.entries.filter((e) => e.scope === 'local');
  const version = local.filter((e) => e.key === 'core.repositoryformatversion').pop();
  let found: HashName | undefined;
  for (const e of local) {
    if (e.key !== 'extensions.compatobjectformat') continue;
    const where = `bad config line ${e.line ?? 0} in file ${configPath(gitDir)}`;
    if (e.value === null) throw new GitwireError('GW_CONFIG', where, { errors: ["missing value for 'extensions.compatobjectformat'"] });
    if (e.value !== 'sha1' && e.value !== 'sha256') {
      throw new GitwireError('GW_CONFIG', where, { errors: [`invalid value for 'extensions.compatobjectformat': '${e.value}'`] });
    }
    if (found) throw new GitwireError('GW_CONFIG', where, { errors: [`'extensions.compatobjectformat' already specified as '${found}'`] });
    found = e.value;
  }
  if (!found) return undefined;
  if (!version || version.value === null) return undefined;
  if (Number(version.value) === 0) {
    const names: string[] = [];
    for (const e of local) {
      if (!e.key.startsWith('extensions.')) continue;
      const ext = e.key.slice('extensions.'.length);
      if (V1_ONLY.has(ext)) names.push(ext);
    }
    const head = names.length === 1 ? 'repo version is 0, but v1-only extension found:' : 'repo version is 0, but v1-only extensions found:';
    throw new GitwireError('GW_UNSUPPORTED_REPO', `${head}${names.map((n) => `\n\t${n}`).join('')}`);
  }
  if (found === storage) {
    throw new GitwireError('GW_UNSUPPORTED_REPO', `extensions.compatObjectFormat is '${found}', the same as the repository's object format`);
  }
  return found;
}

/** The id git gives an object under `algo` (`<type> <size>\0<data>`). */
export function hashObject(algo: HashName, type: string, data: Buffer): Buffer {
  return createHash(algo).update(`${type} ${data.length}\0`, 'latin1').update(data).digest();
}

const HEXVAL = (() => {
  const t = new Int8Array(256).fill(-1);
  for (let i = 0; i < 10; i++) t[48 + i] = i;
  for (let i = 0; i < 6; i++) { t[97 + i] = 10 + i; t[65 + i] = 10 + i; }
  return t;
})();

/** hex at b[at, at + 2*len) into out[o, o+len); false on a non-hex digit */
function hexInto(b: Buffer, at: number, len: number, out: Buffer, o: number): boolean {
  for (let i = 0; i < len; i++) {
    const hi = HEXVAL[b[at + 2 * i]!]!, lo = HEXVAL[b[at + 2 * i + 1]!]!;
    if (hi < 0 || lo < 0) return false;
    out[o + i] = (hi << 4) | lo;
  }
  return true;
}

/** One direction of the map: keys sorted, each with the value of its first (file-order) entry. */
class Table {
  constructor(readonly keys: Buffer, readonly values: Buffer, readonly kl: number, readonly vl: number, readonly n: number) {}

  /** first index whose key is >= k (k may be a shorter prefix) */
  private lower(k: Buffer): number {
    let lo = 0, hi = this.n;
    const kl = this.kl, len = Math.min(k.length, kl);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.keys.compare(k, 0, len, mid * kl, mid * kl + len) < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  get(k: Buffer): Buffer | undefined {
    if (k.length !== this.kl) return undefined;
    const i = this.lower(k);
    if (i >= this.n || this.keys.compare(k, 0, this.kl, i * this.kl, (i + 1) * this.kl) !== 0) return undefined;
    return Buffer.from(this.values.subarray(i * this.vl, (i + 1) * this.vl));
  }

  /** keys starting with `prefix` (whole bytes) and, when given, the high nibble `odd` after it; at most `limit` */
  prefixed(prefix: Buffer, odd: number | undefined, limit: number): Buffer[] {
    const out: Buffer[] = [];
    const kl = this.kl;
    for (let i = this.lower(prefix); i < this.n && out.length < limit; i++) {
      const at = i * kl;
      if (this.keys.compare(prefix, 0, prefix.length, at, at + prefix.length) !== 0) break;
      if (odd !== undefined && this.keys[at + prefix.length]! >> 4 !== odd) {
        if (this.keys[at + prefix.length]! >> 4 > odd) break;
        continue;
      }
      out.push(Buffer.from(this.keys.subarray(at, at + kl)));
    }
    return out;
  }

  static build(a: Buffer, b: Buffer, al: number, bl: number, n: number): Table {
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((x, y) => a.compare(a, y * al, y * al + al, x * al, x * al + al) || x - y);
    const keys = Buffer.allocUnsafe(n * al), values = Buffer.allocUnsafe(n * bl);
    let m = 0;
    for (let j = 0; j < n; j++) {
      const i = order[j]!;
      // equal keys sort by file order: the first is git's (insert_oid_pair keeps it)
      if (m > 0 && a.compare(keys, (m - 1) * al, m * al, i * al, i * al + al) === 0) continue;
      a.copy(keys, m * al, i * al, i * al + al);
      b.copy(values, m * bl, i * bl, i * bl + bl);
      m++;
    }
    return new Table(keys, values, al, bl, m);
  }
}

export class CompatMap {
  readonly storageLen: number;
  readonly compatLen: number;
  private toCompatT: Table | undefined;
  private toStorageT: Table | undefined;
  private stamp = '';
  private readonly path: string;

  constructor(objectsDir: string, readonly storage: HashName, readonly compat: HashName) {
    this.storageLen = HASH_LEN[storage];
    this.compatLen = HASH_LEN[compat];
    this.path = join(objectsDir, 'loose-object-idx');
  }

  /** The compat id of a stored object (its mapping in loose-object-idx), or undefined. */
  toCompat(oid: Buffer): Buffer | undefined { return this.lookup(oid, true); }

  /** The stored object a compat id names, or undefined. */
  toStorage(oid: Buffer): Buffer | undefined { return this.lookup(oid, false); }

  /** Compat ids starting with a hex prefix, at most `limit`. */
  findCompatByPrefix(hexPrefix: string, limit: number): Buffer[] {
    if (hexPrefix.length > this.compatLen * 2) return [];
    this.load();
    const even = hexPrefix.length & ~1;
    const prefix = Buffer.from(hexPrefix.slice(0, even), 'hex');
    const odd = hexPrefix.length & 1 ? parseInt(hexPrefix[even]!, 16) : undefined;
    return this.toStorageT!.prefixed(prefix, odd, limit);
  }

  private lookup(oid: Buffer, forward: boolean): Buffer | undefined {
    this.load();
    const t = forward ? this.toCompatT! : this.toStorageT!;
    const hit = t.get(oid);
    if (hit || !this.changed()) return hit;
    // another process may have written the object since: read the file again (git's repo_read_loose_object_map)
    this.stamp = '';
    this.load();
    return (forward ? this.toCompatT! : this.toStorageT!).get(oid);
  }

  private fileStamp(): string {
    try {
      const s = statSync(this.path, { bigint: true });
      return `${s.ino}:${s.size}:${s.mtimeNs}`;
    } catch { return 'none'; }
  }

  private changed(): boolean { return this.fileStamp() !== this.stamp; }

  private load(): void {
    if (this.toCompatT && this.stamp) return;
    const sl = this.storageLen, cl = this.compatLen;
    this.stamp = this.fileStamp();
    let file: Buffer = Buffer.alloc(0);
    try { file = readFileSync(this.path); } catch { /* no file: only the built-in entries */ }
    const lineLen = 2 * sl + 1 + 2 * cl;
    const max = 3 + Math.ceil(file.length / (lineLen + 1));
    const st = Buffer.allocUnsafe(max * sl), cp = Buffer.allocUnsafe(max * cl);
    let n = 0;
    // git's load_one_loose_object_map() maps these before it reads the file
    for (const [type, data] of [['tree', Buffer.alloc(0)], ['blob', Buffer.alloc(0)]] as const) {
      hashObject(this.storage, type, data).copy(st, n * sl);
      hashObject(this.compat, type, data).copy(cp, n * cl);
      n++;
    }
    st.fill(0, n * sl, (n + 1) * sl); cp.fill(0, n * cl, (n + 1) * cl); n++;
    // the header, then `<storage> <compat>` lines; git stops at the first line it cannot parse
    if (file.length >= HEADER.length && file.compare(HEADER, 0, HEADER.length, 0, HEADER.length) === 0) {
      let p = HEADER.length;
      while (p < file.length) {
        let e = file.indexOf(10, p);
        if (e < 0) e = file.length;
        if (e - p !== lineLen || file[p + 2 * sl] !== 0x20) break;
        if (!hexInto(file, p, sl, st, n * sl) || !hexInto(file, p + 2 * sl + 1, cl, cp, n * cl)) break;
        n++;
        p = e + 1;
      }
    }
    this.toCompatT = Table.build(st, cp, sl, cl, n);
    this.toStorageT = Table.build(cp, st, cl, sl, n);
  }
}
