/**
 * The blob a `sparse:oid=<name>` filter names, found as git's
 * get_oid_with_flags() finds it for the filter: a full object id, a ref
 * (git's dwim rules), or `<rev>:<path>`.
 */
import { GitwireError } from '../../../errors.js';
import { ObjType } from '../../../repo/object-type.js';
import { parseCommit, parseTag, parseTree } from '../../../repo/objects.js';
import { isHex } from '../../../repo/oid.js';
import type { Repository } from '../../../repo/repository.js';

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

/** The patterns blob's content; git's errors when it cannot be had. */
export function sparseBlob(repo: Repository, name: string): Buffer {
  let oid: Buffer | undefined;
  const colon = name.indexOf(':');
  if (colon >= 0) {
    const rev = colon === 0 ? undefined : resolveRev(repo, name.slice(0, colon));
    const tree = rev && treeOf(repo, rev);
    oid = tree && lookupPath(repo, tree, name.slice(colon + 1));
  } else oid = resolveRev(repo, name);
  if (!oid) throw new GitwireError('GW_OBJECT_MISSING', `unable to access sparse blob in '${name}'`);
  const o = repo.odb.read(oid);
  // git ignores a pattern blob over PATTERN_MAX_FILE_SIZE (100 MiB), and then cannot use the filter
  if (!o || o.type !== ObjType.Blob || o.data.length > PATTERN_MAX_FILE_SIZE) throw new GitwireError('GW_OBJECT_MISSING', `unable to parse sparse filter data in ${oid.toString('hex')}`);
  return o.data;
}
