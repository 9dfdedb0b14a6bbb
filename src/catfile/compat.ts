/**
 * cat-file in a repository with `extensions.compatObjectFormat`: objects
 * are stored under the main hash and can be named by the compat one, as
 * git 2.55 serves them (odb.c oid_object_info_convert): a compat id is
 * mapped to the stored object (through loose-object-idx), replace refs
 * apply to the stored id, and what is printed is the object as the compat
 * hash names it: trees, commits and tags with their ids mapped, sizes of
 * that content, a delta base mapped back. Names in the main hash never
 * touch the map.
 *
 * A compat id is told apart by its length (20 and 32 bytes), which is
 * why the two formats must differ (git refuses the same one twice).
 * The map is the repository's own `objects/loose-object-idx` (git reads
 * the common directory's, whatever GIT_OBJECT_DIRECTORY says).
 */
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import { ObjType } from '../repo/object-type.js';
import type { Repository } from '../repo/repository.js';
import type { ReplaceMap } from '../repo/replace.js';
import { CompatMap, compatFormatOf, type HashName } from '../repo/compat-map.js';
import { convertObject, SIG_HEADER, type ConvertHashes } from '../repo/object-convert.js';
import type { ObjectInfo, RawObject } from '../repo/odb.js';

export type Diag = (line: string) => void;

const views = new WeakMap<Repository, CompatView | null>();

export class CompatView {
  readonly len: number;
  private readonly hashes: ConvertHashes;

  constructor(readonly repo: Repository, readonly map: CompatMap) {
    this.len = map.compatLen;
    this.hashes = {
      fromLen: map.storageLen, toLen: map.compatLen,
      fromSigHeader: SIG_HEADER[map.storageLen]!, toSigHeader: SIG_HEADER[map.compatLen]!,
    };
  }

  /**
   * The view of a repository that sets the extension (undefined when it
   * does not); throws git's error for a bad setting.
   */
  static of(repo: Repository): CompatView | undefined {
    const known = views.get(repo);
    if (known !== undefined) return known ?? undefined;
    const compat = compatFormatOf(repo.config, repo.gitDir, repo.format as HashName);
    const view = compat ? new CompatView(repo, new CompatMap(join(repo.commonDir, 'objects'), repo.format as HashName, compat)) : undefined;
    views.set(repo, view ?? null);
    return view;
  }

  /** Is this id in the compat hash? */
  is(oid: Buffer): boolean { return oid.length === this.len; }

  storageOf(oid: Buffer): Buffer | undefined { return this.map.toStorage(oid); }

  /** The stored object to read for a compat id: mapped, then through replace refs. */
  real(oid: Buffer, replace: ReplaceMap | undefined): Buffer | undefined {
    const s = this.map.toStorage(oid);
    return s && (replace ? replace.lookup(s) : s);
  }

  /** Stored content as the compat hash names it; undefined when an id inside is not mapped. */
  convert(o: RawObject, diag?: Diag): RawObject | undefined {
    if (o.type === ObjType.Blob) return o;
    const data = convertObject(o.type, o.data, this.hashes, (x) => this.map.toCompat(x), diag);
    return data ? { type: o.type, data } : undefined;
  }

  /**
   * Read a compat id (converted). A conversion that fails dies, as git's
   * odb_read_object() does (`Failed to convert object from sha1 to
   * sha256`, after the conversion's own error line); `gentle`: it is
   * missing instead, as for an object-info query.
   */
  read(oid: Buffer, replace: ReplaceMap | undefined, diag?: Diag, gentle = false): RawObject | undefined {
    const real = this.real(oid, replace);
    const o = real && this.repo.odb.read(real);
    if (!o) return undefined;
    const c = this.convert(o, diag);
    if (!c && !gentle) throw new GitwireError('GW_USAGE', `Failed to convert object from ${this.map.storage} to ${this.map.compat}`);
    return c;
  }

  /**
   * Type (and, with `size`, the converted size, which needs the content of
   * a tree, commit or tag) of a compat id; disk size and delta base as
   * stored, the base mapped back to the compat hash.
   */
  info(oid: Buffer, replace: ReplaceMap | undefined, want: { size?: boolean; disk?: boolean; delta?: boolean } = {}, diag?: Diag): ObjectInfo | undefined {
    const real = this.real(oid, replace);
    if (!real) return undefined;
    const odb = this.repo.odb;
    const loc = odb.locate(real);
    if (!loc) return undefined;
    const i = odb.infoAt(loc, !!want.disk, !!want.delta);
    const out: ObjectInfo = { type: i.type, size: i.size };
    if (want.size && i.type !== ObjType.Blob) {
      const c = this.convert(odb.readAt(loc), diag);
      if (!c) return undefined;
      out.size = c.data.length;
    }
    if (want.disk && i.diskSize !== undefined) out.diskSize = i.diskSize;
    if (want.delta) {
      const base = i.deltaBase ?? Buffer.alloc(this.map.storageLen);
      const mapped = this.map.toCompat(base);
      if (!mapped) return undefined;
      out.deltaBase = mapped;
    }
    return out;
  }

  /** Compat ids starting with a hex prefix. */
  findByPrefix(hexPrefix: string, limit: number): Buffer[] { return this.map.findCompatByPrefix(hexPrefix, limit); }
}
