/**
 * A repository on disk: config, refs and objects, without the git binary.
 */
import { join } from 'node:path';
import { GitwireError } from '../errors.js';
import { Config } from './config.js';
import { discoverRepository, locateRepository } from './discover.js';
import { assertOwnership } from './ownership.js';
import { HideRefs, namespacePrefix } from './hiderefs.js';
import { commitGraphAllowed } from './commit-graph.js';
import { ObjType } from './object-type.js';
import { ObjectDatabase, limitsFromConfig } from './odb.js';
import { parseCommit, parseTag, type Commit } from './objects.js';
import { openRefStore, refFormatOf, type RefStore } from './refs/index.js';

export type ObjectFormat = 'sha1' | 'sha256';

export interface OpenOptions {
  strict?: boolean;
  env?: NodeJS.ProcessEnv;
}

/**
 * Heap held per cached commit: the object, its parents array, the id
 * views and the cache's key and entry (measured, node 20: 505-578 bytes
 * read from a commit-graph, 497-571 from objects; test/commit-graph.test.ts
 * checks it in a child process against the heap it really takes).
 */
const CACHED_COMMIT_BYTES = 512;

export class Repository {
  readonly config: Config;
  readonly format: ObjectFormat;
  readonly hashLen: number;
  readonly refs: RefStore;
  readonly odb: ObjectDatabase;
  /** `refs/namespaces/<ns>/…` prefix from GIT_NAMESPACE, or '' */
  readonly namespace: string;
  private commitCache = new Map<string, Commit>();

  constructor(readonly gitDir: string, readonly commonDir: string, readonly env: NodeJS.ProcessEnv = process.env) {
    this.config = Config.load(commonDir, env);
    const version = this.config.getInt('core.repositoryformatversion', 0);
    const fmt = (this.config.get('extensions.objectformat') ?? 'sha1') as string;
    if (version >= 1 || fmt !== 'sha1') {
      if (fmt !== 'sha1' && fmt !== 'sha256') throw new GitwireError('GW_UNSUPPORTED_REPO', `invalid value for 'extensions.objectformat': '${fmt}'`);
    }
    this.format = fmt as ObjectFormat;
    this.hashLen = fmt === 'sha256' ? 32 : 20;
    this.refs = openRefStore(refFormatOf(this.config), gitDir, commonDir, this.hashLen, this.config);
    const objDir = env.GIT_OBJECT_DIRECTORY ?? join(commonDir, 'objects');
    const alts = (env.GIT_ALTERNATE_OBJECT_DIRECTORIES ?? '').split(':').filter(Boolean);
    this.odb = new ObjectDatabase(objDir, this.hashLen, alts, limitsFromConfig(this.config));
    this.odb.commitGraphGate = () => commitGraphAllowed(commonDir, this.config.getBool('core.commitGraph', true), env);
    this.namespace = namespacePrefix(env.GIT_NAMESPACE);
  }

  /** The repository the current directory is in (git's discovery, for cat-file). */
  static discover(cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): Repository {
    const loc = discoverRepository(cwd, env);
    // setup_git_directory(): a repository found by discovery (not named by GIT_DIR) must be the user's
    if (!env.GIT_DIR) {
      const dir = loc.workTree ?? loc.gitDir;
      assertOwnership({ path: loc.gitDir, workTree: loc.workTree, gitFile: loc.gitFile, shown: dir }, env, (m) => { try { process.stderr.write(`warning: ${m}\n`); } catch { /* closed */ } });
    }
    return new Repository(loc.gitDir, loc.commonDir, env);
  }

  static open(dir: string, opts: OpenOptions = {}): Repository {
    const loc = locateRepository(dir, opts.strict ?? false);
    return new Repository(loc.gitDir, loc.commonDir, opts.env ?? process.env);
  }

  get hexLen(): number { return this.hashLen * 2; }

  /**
   * This repository as one request sees it: the same config and objects,
   * with refs read from one snapshot (RefStore.snapshot): everything the
   * request asks about refs agrees with its advertisement. End it with
   * `endRequest()`; the repository itself stays open.
   */
  forRequest(): Repository {
    const view = Object.create(this) as Repository;
    Object.defineProperty(view, 'refs', { value: this.refs.snapshot(), enumerable: true });
    return view;
  }

  /** End a view made by forRequest(): its ref snapshot is let go. */
  endRequest(): void {
    if (Object.getPrototypeOf(this) instanceof Repository) this.refs.close();
  }

  hideRefs(section = 'uploadpack'): HideRefs { return HideRefs.fromConfig(this.config, section); }

  /**
   * Peel tags until a non-tag; undefined when the id is not a tag (or
   * missing, or cannot be read: git's peel_object() gives up quietly on a
   * corrupt object too, so an advertisement leaves the `^{}` line out and
   * the error comes from pack-objects, with the object and its file).
   */
  peel(oid: Buffer): Buffer | undefined {
    let cur = oid;
    let peeled = false;
    for (let i = 0; i < 100; i++) {
      let o;
      try {
        if (this.odb.typeOf(cur) !== ObjType.Tag) return peeled ? cur : undefined;
        o = this.odb.read(cur);
      } catch (e) {
        if (e instanceof GitwireError && e.code === 'GW_OBJECT_CORRUPT') return undefined;
        throw e;
      }
      if (!o) return undefined;
      cur = parseTag(o.data, this.hashLen).object;
      peeled = true;
    }
    return cur;
  }

  /** Parse a commit (cached); undefined if missing or not a commit. */
  commit(oid: Buffer): Commit | undefined {
    const k = oid.toString('latin1');
    const c = this.commitCache.get(k);
    if (c) return c;
    let parsed: Commit | undefined = this.odb.graphCommit(oid);
    if (!parsed) {
      const o = this.odb.read(oid);
      if (!o || o.type !== ObjType.Commit) return undefined;
      parsed = parseCommit(o.data, this.hashLen);
    }
    if (this.commitCache.size > 200_000) this.commitCache.clear();
    this.commitCache.set(k, parsed);
    return parsed;
  }

  /** Rough bytes held by caches of this repository (for pools). */
  memoryEstimate(): number {
    let n = this.commitCache.size * CACHED_COMMIT_BYTES + this.refs.memoryBytes + this.odb.commitGraphBytes;
    // only indexes already opened count (they open lazily); a whole index holds its length, a paged one its page budget
    for (const s of this.odb.sources) {
      for (const p of s.packs) if (p.indexOpened) n += p.index.buf.isWhole ? p.index.buf.length : Math.min(p.index.buf.length, 1 << 20);
    }
    return n;
  }

  close(): void { this.odb.close(); this.refs.close(); this.commitCache.clear(); }
}
