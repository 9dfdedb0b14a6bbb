/**
 * The cache readers' side of reading in place (PackSource.readInto): the
 * relay hands over the payload areas of a frame block, and a reader fills
 * them with one vectored read of its file, or from the chunks it holds in
 * memory, and hashes what it read where it verifies.
 */

/** The first of `views` holding at most `max` bytes (the last one cut short); `views` itself when all fit. */
export function limitViews(views: Buffer[], max: number): Buffer[] {
  let left = max;
  for (let i = 0; i < views.length; i++) {
    const v = views[i]!;
    if (v.length >= left) {
      if (v.length === left && i === views.length - 1) return views;
      const out = views.slice(0, i);
      if (left > 0) out.push(v.subarray(0, left));
      return out;
    }
    left -= v.length;
  }
  return views;
}

/** Bytes the views hold. */
export function viewsLength(views: Buffer[]): number {
  let n = 0;
  for (const v of views) n += v.length;
  return n;
}

/** Read into `views` at `pos`: one preadv where the store offers it, else into the first view. */
export function readViews(f: { read(buf: Buffer, pos: number): Promise<number>; readv?(bufs: Buffer[], pos: number): Promise<number> }, views: Buffer[], pos: number): Promise<number> {
  if (views.length === 0) return Promise.resolve(0);
  return f.readv && views.length > 1 ? f.readv(views, pos) : f.read(views[0]!, pos);
}

/** Call `fn` on the first `n` bytes of `views`, one view (or part) at a time. */
export function eachFilled(views: Buffer[], n: number, fn: (b: Buffer) => void): void {
  for (const v of views) {
    if (n <= 0) return;
    fn(v.length <= n ? v : v.subarray(0, n));
    n -= v.length;
  }
}

/**
 * Copy `src` into `views` from byte `at` of the views on; returns the bytes
 * copied (as many as fit).
 */
export function copyIntoViews(views: Buffer[], at: number, src: Buffer): number {
  let copied = 0;
  for (const v of views) {
    if (copied === src.length) break;
    if (at >= v.length) { at -= v.length; continue; }
    const n = src.copy(v, at, copied);
    copied += n;
    at = 0;
  }
  return copied;
}
