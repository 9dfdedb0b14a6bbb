/**
 * The sort behind an in-memory reverse index (reverse-index.ts), in
 * WebAssembly: a pack's offsets with their index positions, sorted by
 * offset in two 16-bit LSD radix passes, as git's create_pack_revindex()
 * sorts them in C.
 *
 * Why WebAssembly: a one-shot process (`gitwire upload-pack`, one per
 * fetch over SSH or file://) sorts once and exits, so the JavaScript sort
 * runs in V8's interpreter before it is ever optimized — ~25 ms for the
 * 330,000 entries of a git.git-sized pack, where git spends ~3 ms. The
 * module is 466 bytes, compiled at once by V8's baseline compiler
 * (no optimizing tier to wait for), and sorts the same entries in a few
 * milliseconds. Its bytes are written by a tiny assembler in
 * radix-sort-asm.ts: that file is the program's source.
 *
 * Where WebAssembly is not available (node --jitless), radixSort()
 * answers undefined and the caller sorts in JavaScript.
 */

/** memory layout (bytes): two histograms of 65,536 counters, then the arrays (as radix-sort-asm.ts lays them out) */
const K0 = 2 * 65536 * 4;
const PAGE = 65536;

/**
 * sort(n), exported with its memory `mem`: n offsets at K0 sorted with
 * their positions 0…n-1; the offsets end where they were, the positions
 * at K0 + 12n. Written by radixSortModule() in radix-sort-asm.ts.
 */
export const RADIX_SORT_WASM = 'AGFzbQEAAAABBQFgAX8AAwIBAAUDAQABBw4CBHNvcnQAAANtZW0CAAqnAwGkAwEMf0GAgCAhCiAAQQJ0QYCAIGoiCCAAQQJ0aiIJIABBAnRqIQtBgIAEIQxBAEEAQYCAIPwLAEEAIQECQANAIAEgAE8NASABQQJ0KAKAgCAhAiACQf//A3FBAnQiAyADKAIAQQFqNgIAIAJBEHZBAnQiAyADKAKAgBBBAWo2AoCAECABQQFqIQEMAAsLQQAhBUEAIQZBACEBAkADQCABIAxPDQEgAUECdCIDKAIAIQcgAyAFNgIAIAUgB2ohBSADKAKAgBAhByADIAY2AoCAECAGIAdqIQYgAUEBaiEBDAALC0EAIQECQANAIAEgAE8NASABQQJ0KAKAgCAhAiACQf//A3FBAnQiAygCACEEIAMgBEEBajYCACAEQQJ0IAhqIAI2AgAgBEECdCAJaiABNgIAIAFBAWohAQwACwtBACEBAkADQCABIABPDQEgAUECdCAIaigCACECIAJBEHZBAnQiAygCgIAQIQQgAyAEQQFqNgKAgBAgBEECdCAKaiACNgIAIARBAnQgC2ogAUECdCAJaigCADYCACABQQFqIQEMAAsLCw==';

interface Sorter { sort: (n: number) => void; mem: WebAssembly.Memory }
let compiled: WebAssembly.Module | null | undefined;

/** A fresh instance (its own memory), or null where WebAssembly cannot run. */
function instance(): Sorter | null {
  if (compiled === undefined) {
    try { compiled = new WebAssembly.Module(Buffer.from(RADIX_SORT_WASM, 'base64')); } catch { compiled = null; }
  }
  if (!compiled) return null;
  try { return new WebAssembly.Instance(compiled).exports as unknown as Sorter; } catch { return null; }
}

/**
 * `keys` (offsets by index position) sorted ascending, with the index
 * position of each; undefined when WebAssembly is not available. Each
 * call has an instance of its own, let go when it returns: its memory is
 * 16 bytes an entry, and a process sorts once per pack.
 */
export function radixSort(keys: Uint32Array): { offsets: Uint32Array; positions: Uint32Array } | undefined {
  const n = keys.length;
  const need = K0 + 16 * n;
  // (past 4 GiB of wasm32 memory: the caller sorts in JavaScript)
  if (need > 0xffff0000) return undefined;
  const s = instance();
  if (!s) return undefined;
  try {
    const have = s.mem.buffer.byteLength;
    if (need > have) s.mem.grow(Math.ceil((need - have) / PAGE));
  } catch {
    return undefined; // (no room for it)
  }
  new Uint32Array(s.mem.buffer, K0, n).set(keys);
  s.sort(n);
  const buf = s.mem.buffer;
  return { offsets: new Uint32Array(buf, K0, n).slice(), positions: new Uint32Array(buf, K0 + 12 * n, n).slice() };
}
