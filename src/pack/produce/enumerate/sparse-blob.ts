/**
 * The blob a `sparse:oid=<name>` filter names, found as git's
 * get_oid_with_flags() finds it for the filter: a full object id, a ref
 * (git's dwim rules), or `<rev>:<path>`, and its patterns, read as
 * add_patterns_from_blob_to_list() reads them.
 */
import { GitwireError, limitError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import { parseCommit, parseTag, parseTree } from '../../../repo/objects.js';
import { isHex } from '../../../repo/oid.js';
import type { Repository } from '../../../repo/repository.js';
import type { Slicer } from '../../../util/budget.js';
import { PatternReader, type PatternList } from './sparse-patterns.js';

const PATTERN_MAX_FILE_SIZE = 100 * 1024 * 1024;
const DWIM = ['%s', 'refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];

function resolveRev(repo: Repository, rev: string): Buffer | undefined {
  if (isHex(rev, repo.hexLen, true)) return Buffer.from(rev, 'hex');
  if (rev === '' || rev.includes('..') || /[\s~^:?*[\\]/.test(rev)) return undefined;
  for (const f of DWIM) {
    const r = repo.refs.resolve(f.replace('%s', rev));
    if (r?.hex) return Buffer.from(r.hex.toString('latin1'), 'hex');
  }
  return undefined;
}

/** `oid` peeled (tags) and, for a commit, its tree: the tree a `<rev>:<path>` starts at. */
function treeOf(repo: Repository, oid: Buffer): Buffer | undefined {
  for (let i = 0; i < 64; i++) {
    const o = repo.odb.read(oid);
    if (!o) return undefined;
    if (o.type === ObjType.Tag) { oid = parseTag(o.data, repo.hashLen).object; continue; }
    if (o.type === ObjType.Commit) return parseCommit(o.data, repo.hashLen).tree;
    return o.type === ObjType.Tree ? oid : undefined;
  }
  return undefined;
}

function lookupPath(repo: Repository, tree: Buffer, path: string): Buffer | undefined {
  let cur = tree;
  for (const part of path.split('/').filter(Boolean)) {
    const o = repo.odb.read(cur);
    if (!o || o.type !== ObjType.Tree) return undefined;
    let next: Buffer | undefined;
    for (const e of parseTree(o.data, repo.hashLen)) if (e.name.toString('utf8') === part) { next = Buffer.from(e.oid); break; }
    if (!next) return undefined;
    cur = next;
  }
  return cur;
}

/** the patterns a sparse:oid filter may have: git has no bound, and matches every path against every one */
export const MAX_SPARSE_PATTERNS = 100_000;

/** bytes of the patterns blob read between two looks at the clock */
const CHUNK = 64 * 1024;

export interface SparseReadOptions {
  slicer?: Slicer;
  signal?: AbortSignal;
  /** warning lines (without "\n"), said on band 2 as pack-objects says them */
  warn?: (line: string) => void;
}

/**
 * The patterns of the blob a sparse:oid filter names, with git's errors
 * when it cannot be had. The blob's size is looked at before it is read
 * (git ignores one over PATTERN_MAX_FILE_SIZE, 100 MiB, and then cannot
 * use the filter); it is read in chunks, yielding between them, and never
 * held whole. Past MAX_SPARSE_PATTERNS patterns the filter is refused
 * with git's error for pattern data it cannot use, after a warning
 * saying why.
 */
export async function sparsePatterns(repo: Repository, name: string, opts: SparseReadOptions = {}): Promise<PatternList> {
  let oid: Buffer | undefined;
  const colon = name.indexOf(':');
  if (colon >= 0) {
    const rev = colon === 0 ? undefined : resolveRev(repo, name.slice(0, colon));
    const tree = rev && treeOf(repo, rev);
    oid = tree && lookupPath(repo, tree, name.slice(colon + 1));
  } else oid = resolveRev(repo, name);
  if (!oid) throw new GitwireError('GW_OBJECT_MISSING', `unable to access sparse blob in '${name}'`);
  const hex = oid.toString('hex');
  const cannot = () => new GitwireError('GW_OBJECT_MISSING', `unable to parse sparse filter data in ${hex}`);
  const info = repo.odb.info(oid);
  if (!info || info.type !== ObjType.Blob) throw cannot();
  if (info.size > PATTERN_MAX_FILE_SIZE) {
    opts.warn?.(`warning: ignoring excessively large pattern blob: ${hex}`);
    throw cannot();
  }
  const reader = new PatternReader(MAX_SPARSE_PATTERNS, () => {
    opts.warn?.(`warning: sparse filter data in ${hex} has more than ${MAX_SPARSE_PATTERNS} patterns`);
    return limitError(`unable to parse sparse filter data in ${hex}`, MAX_SPARSE_PATTERNS);
  });
  for (const chunk of repo.odb.stream(oid, CHUNK)) {
    reader.push(chunk);
    const p = opts.slicer?.due();
    if (p) await p;
    if (opts.signal?.aborted) throw opts.signal.reason instanceof Error ? opts.signal.reason : new GitwireError('GW_CLIENT_GONE', 'object enumeration was stopped');
  }
  return reader.end();
}
