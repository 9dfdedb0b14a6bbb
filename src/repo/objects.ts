/** Minimal parsers for commits, tags and trees. */
import { GitwireError } from '../errors.js';
import { typeFromName, type ObjType } from './object-type.js';

export interface Commit { tree: Buffer; parents: Buffer[]; /** committer time, seconds */ time: number }
export interface Tag { object: Buffer; type: ObjType; tag: string }
export interface TreeEntry { mode: number; name: Buffer; oid: Buffer }

const bad = (what: string) => new GitwireError('GW_OBJECT_CORRUPT', `bad ${what} object`);

function hexAt(data: Buffer, at: number, hexLen: number): Buffer {
  return Buffer.from(data.toString('latin1', at, at + hexLen), 'hex');
}

export function parseCommit(data: Buffer, hashLen: number): Commit {
  const hexLen = hashLen * 2;
  let p = 0;
  if (data.toString('latin1', 0, 5) !== 'tree ') throw bad('commit');
  const tree = hexAt(data, 5, hexLen);
  p = 5 + hexLen + 1;
  const parents: Buffer[] = [];
  while (data.toString('latin1', p, p + 7) === 'parent ') {
    parents.push(hexAt(data, p + 7, hexLen));
    p += 7 + hexLen + 1;
  }
  let time = 0;
  // find the committer line
  for (;;) {
    const nl = data.indexOf(10, p);
    if (nl < 0 || nl === p) break;
    if (data.toString('latin1', p, p + 10) === 'committer ') {
      const gt = data.lastIndexOf(0x3e, nl); // '>'
      if (gt > 0) {
        const m = /^ (\d+)/.exec(data.toString('latin1', gt + 1, nl));
        if (m) time = Number(m[1]);
      }
      break;
    }
    p = nl + 1;
  }
  return { tree, parents, time };
}

export function parseTag(data: Buffer, hashLen: number): Tag {
  const hexLen = hashLen * 2;
  if (data.toString('latin1', 0, 7) !== 'object ') throw bad('tag');
  const object = hexAt(data, 7, hexLen);
  let p = 7 + hexLen + 1;
  if (data.toString('latin1', p, p + 5) !== 'type ') throw bad('tag');
  const nl = data.indexOf(10, p);
  const type = typeFromName(data.toString('latin1', p + 5, nl));
  if (type === undefined) throw bad('tag');
  p = nl + 1;
  let tag = '';
  if (data.toString('latin1', p, p + 4) === 'tag ') {
    const e = data.indexOf(10, p);
    tag = data.toString('utf8', p + 4, e < 0 ? data.length : e);
  }
  return { object, type, tag };
}

export function* parseTree(data: Buffer, hashLen: number): Generator<TreeEntry> {
  let p = 0;
  while (p < data.length) {
    const sp = data.indexOf(0x20, p);
    const nul = data.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 1 + hashLen > data.length) throw bad('tree');
    const mode = parseInt(data.toString('latin1', p, sp), 8);
    yield { mode, name: data.subarray(sp + 1, nul), oid: data.subarray(nul + 1, nul + 1 + hashLen) };
    p = nul + 1 + hashLen;
  }
}
