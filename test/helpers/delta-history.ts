/**
 * A history of real files for the delta tests: successive versions of a
 * few files as git's own repository has them (read from the mirror of
 * git.git when it is there), else versions made by seeded edits of a
 * generated text (also when GITWIRE_TEST_NO_MIRROR is set). Written as
 * blobs into a fresh fixture repository by git itself; nothing is
 * committed to this repository.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { git } from './git.js';

/** a clone of git.git to read real file histories from (GITWIRE_GIT_MIRROR); without it, a synthetic history */
const MIRROR = process.env.GITWIRE_GIT_MIRROR ?? '';
const TAG = 'v2.55.0';

export interface HistoryBlob { oid: string; path: string; data: Buffer }

export { packNameHash } from '../../src/pack/name-hash.js';

function fromMirror(files: Array<[string, number]>): Array<{ path: string; data: Buffer }> {
  const out: Array<{ path: string; data: Buffer }> = [];
  for (const [path, versions] of files) {
    const commits = execFileSync('git', ['-C', MIRROR, 'log', '--format=%H', `-n${versions}`, TAG, '--', path]).toString().trim().split('\n');
    for (const c of commits) out.push({ path, data: execFileSync('git', ['-C', MIRROR, 'show', `${c}:${path}`], { maxBuffer: 1 << 28 }) });
  }
  return out;
}

/** versions made by seeded line edits (insert, delete, change) of a generated text */
function synthetic(files: Array<[string, number]>): Array<{ path: string; data: Buffer }> {
  let seed = 12345;
  const rnd = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n; };
  const words = ['static', 'int', 'return', 'struct', 'object', 'delta', 'size', 'window', 'if', 'for', 'while', '(void)', 'unsigned', 'char', '*buf', 'len', '{', '}', ';'];
  const line = () => Array.from({ length: 2 + rnd(10) }, () => words[rnd(words.length)]).join(' ');
  const out: Array<{ path: string; data: Buffer }> = [];
  for (const [path, versions] of files) {
    let lines = Array.from({ length: 2000 + rnd(2000) }, line);
    for (let v = 0; v < versions; v++) {
      out.push({ path, data: Buffer.from(lines.join('\n') + '\n') });
      lines = lines.slice();
      for (let e = 0; e < 5 + rnd(40); e++) {
        const at = rnd(lines.length);
        const k = rnd(3);
        if (k === 0) lines.splice(at, 0, ...Array.from({ length: 1 + rnd(8) }, line));
        else if (k === 1) lines.splice(at, 1 + rnd(5));
        else lines[at] = line();
      }
    }
  }
  return out;
}

export const HISTORY_FILES: Array<[string, number]> = [
  ['builtin/pack-objects.c', 24],
  ['diff-delta.c', 12],
  ['Makefile', 24],
  ['pack-bitmap.c', 16],
  ['upload-pack.c', 24],
];

/** Whether the versions come from git.git (else they are synthetic). */
export const historyIsReal = (): boolean =>
  !process.env.GITWIRE_TEST_NO_MIRROR && MIRROR !== '' && (existsSync(join(MIRROR, 'HEAD')) || existsSync(join(MIRROR, 'objects')));

/** The versions, written as blobs into `repo` (made with `git init` beforehand). */
export function writeHistory(repo: string, files = HISTORY_FILES): HistoryBlob[] {
  const versions = historyIsReal() ? fromMirror(files) : synthetic(files);
  const seen = new Set<string>();
  const blobs: HistoryBlob[] = [];
  for (const v of versions) {
    const oid = git(['hash-object', '-w', '--stdin'], { cwd: repo, input: v.data }).trim();
    if (seen.has(oid)) continue;
    seen.add(oid);
    blobs.push({ oid, path: v.path, data: v.data });
  }
  return blobs;
}
