/**
 * The cat-file engine as a library: look up info, read content, stream a
 * large blob, iterate all objects.
 */
import { Repository } from '../repo/repository.js';
import { typeName, type ObjectTypeName } from '../repo/object-type.js';
import { NameResolver, type NameResult } from './names.js';
import { assertCatFileSupported } from './support.js';

export interface ObjectMeta { oid: string; type: ObjectTypeName; size: number }
export interface ObjectData extends ObjectMeta { data: Buffer }

export class ObjectService {
  private readonly names: NameResolver;
  constructor(readonly repo: Repository) {
    assertCatFileSupported(repo);
    this.names = new NameResolver(repo);
  }

  static open(dir: string, env: NodeJS.ProcessEnv = process.env): ObjectService {
    return new ObjectService(Repository.open(dir, { env }));
  }

  /** Resolve any name cat-file accepts (`HEAD~2`, `v1.0^{tree}`, `main:README`, abbreviated ids). */
  resolve(name: string): NameResult { return this.names.resolve(name); }

  private oidOf(name: string | Buffer): Buffer | undefined {
    if (Buffer.isBuffer(name)) return name;
    const r = this.names.resolve(name);
    return r.status === 'found' ? r.oid : undefined;
  }

  info(name: string | Buffer): ObjectMeta | undefined {
    const oid = this.oidOf(name);
    const i = oid && this.repo.odb.info(oid);
    return i ? { oid: oid.toString('hex'), type: typeName(i.type), size: i.size } : undefined;
  }

  read(name: string | Buffer): ObjectData | undefined {
    const oid = this.oidOf(name);
    const o = oid && this.repo.odb.read(oid);
    return o ? { oid: oid.toString('hex'), type: typeName(o.type), size: o.data.length, data: o.data } : undefined;
  }

  /**
   * Content in chunks (for piping a large blob to a response). Large
   * loose and non-delta packed objects are inflated chunk by chunk as the
   * consumer pulls, never held whole.
   */
  async *stream(name: string | Buffer, chunkSize = 64 * 1024): AsyncGenerator<Buffer> {
    const oid = this.oidOf(name);
    if (!oid) return;
    for (const c of this.repo.odb.stream(oid, chunkSize)) yield c;
  }

  /** Every object id (hex), sorted, or in storage order. */
  *all(opts: { unordered?: boolean } = {}): Generator<string> {
    const it = opts.unordered ? this.repo.odb.allObjectsUnordered() : this.repo.odb.allObjectsSorted();
    for (const o of it) yield o.toString('hex');
  }

  close(): void { this.repo.close(); }
}
