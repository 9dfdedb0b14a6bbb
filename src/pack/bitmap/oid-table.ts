/**
 * A hash table from object id to index position over a sorted id table
 * held whole in memory (a pack .idx or a midx): what a bitmap walk asks
 * for every tree entry it meets. A probe reads a slot and compares the id
 * in place, where a binary search takes a dozen probes into the index.
 * Slots hold position + 1 (0: empty); 4 bytes a slot, two slots an object
 * or more. Built once per loaded bitmap and kept with it.
 */
export class OidTable {
  private readonly slots: Uint32Array;
  private readonly mask: number;
  /** ids sit at base + pos * stride */
  private readonly base: number;
  private readonly stride: number;

  private constructor(public ids: Buffer, readonly count: number, readonly hashLen: number, base: number, stride: number, size: number) {
    this.slots = new Uint32Array(size);
    this.mask = size - 1;
    this.base = base;
    this.stride = stride;
  }

  /**
   * Build the table, giving the event loop away through `pause` every few
   * thousand ids.
   * @param ids the index file's bytes (any copy of the same file may replace them later)
   * @param nameOffset where the id of a position starts in `ids`
   */
  static async build(ids: Buffer, count: number, hashLen: number, nameOffset: (pos: number) => number, pause: () => Promise<void> | undefined): Promise<OidTable> {
    let size = 1024;
    while (size < count * 2) size *= 2;
    const base = nameOffset(0);
    const t = new OidTable(ids, count, hashLen, base, count > 1 ? nameOffset(1) - base : hashLen, size);
    const s = t.slots, m = t.mask, stride = t.stride;
    for (let p = 0; p < count; p++) {
      let h = hashAt(ids, base + p * stride) & m;
      while (s[h] !== 0) h = (h + 1) & m;
      s[h] = p + 1;
      if ((p & 0x7fff) === 0x7fff) { const w = pause(); if (w) await w; }
    }
    return t;
  }

  get bytes(): number { return this.slots.byteLength; }

  /** The position of the id at buf[at…at+hashLen), or -1. */
  find(buf: Buffer, at: number): number {
    const s = this.slots, m = this.mask, ids = this.ids, hl = this.hashLen, base = this.base, stride = this.stride;
    let h = hashAt(buf, at) & m;
    for (;;) {
      const v = s[h]!;
      if (v === 0) return -1;
      const o = base + (v - 1) * stride;
      let k = 0;
      while (k < hl && ids[o + k] === buf[at + k]) k++;
      if (k === hl) return v - 1;
      h = (h + 1) & m;
    }
  }
}

/** Ids are uniformly spread: bytes 1-4 are a hash already (byte 0 is the index's fan-out, also uniform). */
function hashAt(b: Buffer, at: number): number {
  return ((b[at + 1]! << 24) | (b[at + 2]! << 16) | (b[at + 3]! << 8) | b[at + 4]!) >>> 0;
}
