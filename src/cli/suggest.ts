/**
 * "Did you mean": the closest command or option to a mistyped one, chosen
 * as git's help.c chooses "The most similar command is": a weighted
 * Damerau-Levenshtein distance (levenshtein.c: a swap of two neighbours
 * costs 0, a substitution 2, an insertion 1, a deletion 3), a prefix of a
 * candidate counting as the best match, and nothing suggested unless the
 * best is under git's SIMILARITY_FLOOR.
 */

/** git's levenshtein(): the distance from `from` to `to` with the weights of help.c */
export function gitLevenshtein(from: string, to: string, swap = 0, substitution = 2, insertion = 1, deletion = 3): number {
  const n = to.length;
  let row0 = new Array<number>(n + 1).fill(0);
  let row1 = Array.from({ length: n + 1 }, (_, j) => j * insertion);
  let row2 = new Array<number>(n + 1).fill(0);
  for (let i = 0; i < from.length; i++) {
    row2[0] = (i + 1) * deletion;
    for (let j = 0; j < n; j++) {
      // substitution (or nothing, for the same character)
      let d = row1[j]! + (from[i] === to[j] ? 0 : substitution);
      // a swap of two neighbours
      if (i > 0 && j > 0 && from[i - 1] === to[j] && from[i] === to[j - 1]) d = Math.min(d, row0[j - 1]! + swap);
      // deletion, insertion
      d = Math.min(d, row1[j + 1]! + deletion, row2[j]! + insertion);
      row2[j + 1] = d;
    }
    [row0, row1, row2] = [row1, row2, row0];
  }
  return row1[n]!;
}

/** help.c's SIMILARITY_FLOOR: a candidate as far as this or further is not suggested */
export const SIMILARITY_FLOOR = 7;

/**
 * The candidates closest to `word`, as help_unknown_cmd() picks them: every
 * candidate `word` is a prefix of (score 0), then those tied at the best
 * score of the rest; nothing when that best score reaches the floor (git
 * judges the non-prefix score even when a prefix matched), or when `word`
 * is a prefix of every candidate (too ambiguous).
 */
export function mostSimilar(word: string, candidates: readonly string[]): string[] {
  if (!word) return [];
  const scored = [...new Set(candidates)].map((c) => ({ c, d: c.startsWith(word) ? 0 : gitLevenshtein(word, c) + 1 }));
  scored.sort((a, b) => a.d - b.d || (a.c < b.c ? -1 : a.c > b.c ? 1 : 0));
  let n = 0;
  while (n < scored.length && scored[n]!.d === 0) n++;
  if (n >= scored.length) return [];
  const best = scored[n++]!.d;
  while (n < scored.length && scored[n]!.d === best) n++;
  return best < SIMILARITY_FLOOR ? scored.slice(0, n).map((s) => s.c) : [];
}

/** git's closing lines after "'x' is not a git command": "\nThe most similar command is\n\tx\n" */
export function similarCommandsText(word: string, candidates: readonly string[]): string {
  const best = mostSimilar(word, candidates);
  if (!best.length) return '';
  return `\n${best.length === 1 ? 'The most similar command is' : 'The most similar commands are'}\n${best.map((c) => `\t${c}\n`).join('')}`;
}
