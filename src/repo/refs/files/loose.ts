/** What the files backend reads loose refs with. */
import { constants as fsc } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import type { Ref } from '../ref.js';

/** A loose ref found by listing the refs directory. */
export interface LooseEntry {
  name: Buffer;
  nameStr: string;
  /** the record, for a ref holding an id */
  ref?: Ref;
  symref?: string;
}

/** a loose ref file is an id or `ref: <name>`: anything bigger is not a ref */
export const MAX_LOOSE_REF_SIZE = 64 * 1024;
/** O_NOFOLLOW: a symlink is looked at before it is followed; O_NONBLOCK: opening a FIFO cannot block */
export const OPEN_FLAGS = fsc.O_RDONLY | (fsc.O_NOFOLLOW ?? 0) | (fsc.O_NONBLOCK ?? 0);

export function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}
