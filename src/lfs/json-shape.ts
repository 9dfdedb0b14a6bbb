/**
 * A bound on what a JSON request body may build before it is parsed.
 * JSON.parse runs on the event loop and cannot be sliced: 4 MiB of `[[[[…`
 * or of `{},{},…` took 1.2–2.9 s of the loop and 100–200 MB of heap each
 * (measured against serve on this 2-core machine), sent by anyone, as the
 * body is read before credentials are checked (a batch says in it whether
 * it downloads or uploads). git-lfs's bodies are a few levels deep and a
 * few values per object, so the nesting depth and the number of values
 * (`{`, `[`, `,` and `:` outside strings) are counted in one pass over the
 * bytes, and a body past either is refused unparsed.
 */

/** deepest nesting of objects and arrays a body may have (git-lfs's bodies: 3) */
export const MAX_JSON_DEPTH = 16;

/** Why `body` is refused unparsed (too deep: 400; too many values: 413), or undefined when JSON.parse may have it. */
export function jsonShapeError(body: Buffer, maxValues: number): { status: 400 | 413; message: string } | undefined {
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next byte is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    switch (c) {
      case 0x22: inString = true; break;
      case 0x7b: case 0x5b: // { [
        if (++depth > MAX_JSON_DEPTH) return { status: 400, message: `request body nested deeper than ${MAX_JSON_DEPTH} levels` };
        if (++values > maxValues) return { status: 413, message: `request body has more than ${maxValues} JSON values` };
        break;
      case 0x7d: case 0x5d: depth--; break; // } ]
      case 0x2c: case 0x3a: // , :
        if (++values > maxValues) return { status: 413, message: `request body has more than ${maxValues} JSON values` };
        break;
    }
  }
  return undefined;
}
