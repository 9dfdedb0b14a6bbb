/** Object types as stored in packs, and their names. */
export const enum ObjType { Commit = 1, Tree = 2, Blob = 3, Tag = 4, OfsDelta = 6, RefDelta = 7 }

export type ObjectTypeName = 'commit' | 'tree' | 'blob' | 'tag';

const NAMES: Array<ObjectTypeName | undefined> = [undefined, 'commit', 'tree', 'blob', 'tag'];

export function typeName(t: number): ObjectTypeName {
  const n = NAMES[t];
  if (!n) throw new Error(`bad object type ${t}`);
  return n;
}

export function typeFromName(n: string): ObjType | undefined {
  switch (n) {
    case 'commit': return ObjType.Commit;
    case 'tree': return ObjType.Tree;
    case 'blob': return ObjType.Blob;
    case 'tag': return ObjType.Tag;
    default: return undefined;
  }
}
