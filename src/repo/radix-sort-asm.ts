/**
 * The assembler and the program of the radix sort in radix-sort.ts: the
 * WebAssembly module's source. radix-sort.ts holds the bytes this writes
 * (a one-shot process would otherwise spend ~2 ms running this assembler
 * cold); test/reverse-index.test.ts checks that they are the same.
 */

/** memory layout (bytes): two histograms of 65,536 counters, then the arrays */
export const H0 = 0;
export const H1 = 65536 * 4;
export const K0 = 2 * 65536 * 4;

// opcodes (WebAssembly core spec, binary format)
const BLOCK = 0x02, LOOP = 0x03, END = 0x0b, BR = 0x0c, BR_IF = 0x0d, VOID = 0x40;
const LOCAL_GET = 0x20, LOCAL_SET = 0x21, LOCAL_TEE = 0x22;
const I32_LOAD = 0x28, I32_STORE = 0x36, I32_CONST = 0x41;
const I32_GE_U = 0x4f, I32_ADD = 0x6a, I32_AND = 0x71, I32_SHL = 0x74, I32_SHR_U = 0x76;
const I32 = 0x7f;

/** unsigned LEB128 */
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

/** signed LEB128 of a 32-bit value */
function sleb(n: number): number[] {
  const out: number[] = [];
  n |= 0;
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && (b & 0x40))) { out.push(b); return out; }
    out.push(b | 0x80);
  }
}

const get = (l: number) => [LOCAL_GET, l];
const set = (l: number) => [LOCAL_SET, l];
const tee = (l: number) => [LOCAL_TEE, l];
const cst = (v: number) => [I32_CONST, ...sleb(v)];
/** load / store a 32-bit word at (address on the stack) + offset */
const load = (offset = 0) => [I32_LOAD, 2, ...uleb(offset)];
const store = (offset = 0) => [I32_STORE, 2, ...uleb(offset)];
/** value on the stack times 4 (an index to a byte address) */
const x4 = [...cst(2), I32_SHL];

/** `for (i = 0; i < limit; i++) body`, limit and i being locals */
function loop(i: number, limit: number, body: number[]): number[] {
  return [
    ...cst(0), ...set(i),
    BLOCK, VOID, LOOP, VOID,
    ...get(i), ...get(limit), I32_GE_U, BR_IF, 1,
    ...body,
    ...get(i), ...cst(1), I32_ADD, ...set(i),
    BR, 0, END, END,
  ];
}

function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

function vec(items: number[][]): number[] {
  return [...uleb(items.length), ...items.flat()];
}

function name(s: string): number[] {
  return [...uleb(s.length), ...Buffer.from(s, 'latin1')];
}

/**
 * sort(n): keys at K0 (n words, offsets) sorted with their positions
 * (0…n-1): the keys end where they were, the positions at K0 + 12n.
 */
export function radixSortModule(): Uint8Array<ArrayBuffer> {
  // locals: 0 n (param), 1 i, 2 k, 3 a, 4 d, 5 s0, 6 s1, 7 t, 8 K1, 9 P1, 10 K2, 11 P2, 12 buckets
  // (the second pass puts the keys back where they came from: K2 = K0)
  const n = 0, i = 1, k = 2, a = 3, d = 4, s0 = 5, s1 = 6, t = 7, K1 = 8, P1 = 9, K2 = 10, P2 = 11, NB = 12;
  const body = [
    // K1 = K0 + 4n, P1 = K1 + 4n, P2 = P1 + 4n
    ...cst(K0), ...set(K2),
    ...get(n), ...x4, ...cst(K0), I32_ADD, ...tee(K1),
    ...get(n), ...x4, I32_ADD, ...tee(P1),
    ...get(n), ...x4, I32_ADD, ...set(P2),
    ...cst(65536), ...set(NB),
    // both histograms to zero (memory.fill)
    ...cst(H0), ...cst(0), ...cst(K0), 0xfc, 0x0b, 0x00,
    // count the low and the high halves of every key
    ...loop(i, n, [
      ...get(i), ...x4, ...load(K0), ...set(k),
      ...get(k), ...cst(0xffff), I32_AND, ...x4, ...tee(a),
      ...get(a), ...load(H0), ...cst(1), I32_ADD, ...store(H0),
      ...get(k), ...cst(16), I32_SHR_U, ...x4, ...tee(a),
      ...get(a), ...load(H1), ...cst(1), I32_ADD, ...store(H1),
    ]),
    // counts to starts
    ...cst(0), ...set(s0), ...cst(0), ...set(s1),
    ...loop(i, NB, [
      ...get(i), ...x4, ...tee(a), ...load(H0), ...set(t),
      ...get(a), ...get(s0), ...store(H0),
      ...get(s0), ...get(t), I32_ADD, ...set(s0),
      ...get(a), ...load(H1), ...set(t),
      ...get(a), ...get(s1), ...store(H1),
      ...get(s1), ...get(t), I32_ADD, ...set(s1),
    ]),
    // by the low half: keys and positions to K1, P1
    ...loop(i, n, [
      ...get(i), ...x4, ...load(K0), ...set(k),
      ...get(k), ...cst(0xffff), I32_AND, ...x4, ...tee(a), ...load(H0), ...set(d),
      ...get(a), ...get(d), ...cst(1), I32_ADD, ...store(H0),
      ...get(d), ...x4, ...get(K1), I32_ADD, ...get(k), ...store(),
      ...get(d), ...x4, ...get(P1), I32_ADD, ...get(i), ...store(),
    ]),
    // by the high half: to K2 (K0), P2
    ...loop(i, n, [
      ...get(i), ...x4, ...get(K1), I32_ADD, ...load(), ...set(k),
      ...get(k), ...cst(16), I32_SHR_U, ...x4, ...tee(a), ...load(H1), ...set(d),
      ...get(a), ...get(d), ...cst(1), I32_ADD, ...store(H1),
      ...get(d), ...x4, ...get(K2), I32_ADD, ...get(k), ...store(),
      ...get(d), ...x4, ...get(P2), I32_ADD,
      ...get(i), ...x4, ...get(P1), I32_ADD, ...load(),
      ...store(),
    ]),
  ];
  const code = [...vec([[12, I32]]), ...body, END];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, ...vec([[I32]]), ...vec([])]])),
    ...section(3, vec([[0]])),
    ...section(5, vec([[0x00, ...uleb(1)]])),
    ...section(7, vec([[...name('sort'), 0x00, 0], [...name('mem'), 0x02, 0]])),
    ...section(10, vec([[...uleb(code.length), ...code]])),
  ]);
}

