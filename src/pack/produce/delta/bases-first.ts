/**
 * A write order that keeps every base ahead of its deltas (what OFS_DELTA
 * needs, and what git's write_one() does by writing a base when its first
 * delta comes up): the writer's own order (recency, say), with each base
 * that has not been written yet moved up to just before its first delta.
 * Bases outside `order` (preferred bases of a thin pack: the client has
 * them) are not written. Chains are followed without recursion.
 */
import { GitwireError } from '../../../errors.js';
import type { DeltaChoice } from './search.js';

export function basesFirst(order: ArrayLike<number>, choices: ReadonlyArray<DeltaChoice | undefined>): Uint32Array {
  const n = choices.length;
  const inPack = new Uint8Array(n);
  for (let k = 0; k < order.length; k++) inPack[order[k]!] = 1;
  const done = new Uint8Array(n);
  const out = new Uint32Array(order.length);
  const chain: number[] = [];
  let o = 0;
  for (let k = 0; k < order.length; k++) {
    let i = order[k]!;
    // walk up to the first base already written (or not in the pack), then write downwards
    while (!done[i]) {
      chain.push(i);
      if (chain.length > n) throw new GitwireError('GW_PACK_FAILED', 'delta bases form a cycle');
      const b = choices[i]?.base;
      if (b === undefined || !inPack[b]) break;
      i = b;
    }
    while (chain.length) {
      const j = chain.pop()!;
      if (done[j]) continue;
      done[j] = 1;
      out[o++] = j;
    }
  }
  return out;
}
