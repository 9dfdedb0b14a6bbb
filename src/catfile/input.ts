/**
 * cat-file's batch input as bytes: lines split on LF (or NUL with -z/-Z),
 * read as git's strbuf_getdelim_strip_crlf() and C strings see them.
 */

export interface InputLine {
  /** the line as git sees it: up to the first NUL, CR-LF stripped */
  bytes: Buffer;
}

/** Split `carry + chunk` into complete lines; the unterminated tail is the new carry. */
export function splitInput(carry: Buffer, chunk: Buffer, delim: number): { lines: Buffer[]; carry: Buffer } {
  const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
  const lines: Buffer[] = [];
  let start = 0;
  for (;;) {
    const i = buf.indexOf(delim, start);
    if (i < 0) break;
    lines.push(lineOf(buf.subarray(start, i), delim === 10));
    start = i + 1;
  }
  // copy the tail: `chunk` may be reused by the stream that produced it
  return { lines, carry: Buffer.from(buf.subarray(start)) };
}

/** The last line, unterminated at end of input: no CR stripping, as git. */
export function finalLine(carry: Buffer): Buffer { return lineOf(carry, false); }

function lineOf(b: Buffer, terminatedByLf: boolean): Buffer {
  if (terminatedByLf && b.length && b[b.length - 1] === 13) b = b.subarray(0, b.length - 1);
  const nul = b.indexOf(0);
  return nul >= 0 ? b.subarray(0, nul) : b;
}

/** Split at the first space or tab: the name, and %(rest) after the run of blanks (undefined when none). */
export function splitRest(input: Buffer): { name: Buffer; rest: Buffer | undefined } {
  let i = 0;
  while (i < input.length && input[i] !== 0x20 && input[i] !== 0x09) i++;
  if (i === input.length) return { name: input, rest: undefined };
  let j = i;
  while (j < input.length && (input[j] === 0x20 || input[j] === 0x09)) j++;
  return { name: input.subarray(0, i), rest: input.subarray(j) };
}
