/**
 * The command of an SSH `exec` request, read as git-shell reads it
 * (shell.c): `git-upload-pack '<path>'`, `git receive-pack '<path>'`
 * (`git ` is `git-`), the argument quoted as git's sq_quote writes it
 * (`'`, with `'\''` and `'\!'` inside) and dequoted by sq_dequote.
 */

import { parseLfsExec, type LfsExec } from '../../lfs/ssh.js';

/** What a client may ask for by exec. */
export type ExecService = 'git-upload-pack' | 'git-receive-pack' | 'git-upload-archive';

const SERVICES: readonly ExecService[] = ['git-upload-pack', 'git-receive-pack', 'git-upload-archive'];

export type ExecRequest =
  | { kind: 'service'; service: ExecService; path: string }
  /** a known service with an argument git-shell would refuse (`bad argument`) */
  | { kind: 'bad-argument'; service: ExecService }
  | { kind: 'unknown'; command: string }
  /** git-lfs-authenticate / git-lfs-transfer (served when LFS is on) */
  | LfsExec;

/**
 * git's sq_dequote: the whole of `s` must be one single-quoted word,
 * possibly several quoted pieces joined by `\'` or `\!`. undefined when
 * it is not.
 */
export function sqDequote(s: string): string | undefined {
  if (s[0] !== "'") return undefined;
  let out = '';
  let i = 1;
  for (;;) {
    const q = s.indexOf("'", i);
    if (q < 0) return undefined;
    out += s.slice(i, q);
    i = q + 1;
    if (i === s.length) return out;
    // out of the quote: only \' or \! followed by a new quote may follow
    if (s[i] === '\\' && (s[i + 1] === "'" || s[i + 1] === '!') && s[i + 2] === "'") {
      out += s[i + 1];
      i += 3;
      continue;
    }
    return undefined;
  }
}

/** Parse an exec command. */
export function parseExec(command: string): ExecRequest {
  // shell.c: "git" followed by a space is "git-"
  const lfs = parseLfsExec(command, sqDequote);
  if (lfs) return lfs;
  let cmd = command;
  if (/^git\s/.test(cmd)) cmd = `git-${cmd.slice(4)}`;
  const sp = cmd.indexOf(' ');
  const prog = sp < 0 ? cmd : cmd.slice(0, sp);
  const service = SERVICES.find((s) => s === prog);
  if (!service) return { kind: 'unknown', command };
  if (sp < 0) return { kind: 'bad-argument', service };
  const path = sqDequote(cmd.slice(sp + 1));
  if (path === undefined || path.startsWith('-') || path.includes('\0')) return { kind: 'bad-argument', service };
  return { kind: 'service', service, path };
}

/** A message as git's vreportf() writes it: control characters but tab and newline shown as `?`. */
export function reportSafe(s: string): string {
  return s.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '?');
}

/** A client-supplied string made safe for a one-line message or a log: printable, at most `max` characters. */
export function printable(s: string, max = 200): string {
  const clean = s.replace(/[\x00-\x1f\x7f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}
