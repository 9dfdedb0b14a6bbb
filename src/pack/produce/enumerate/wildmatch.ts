/**
 * git's wildmatch() (wildmatch.c) over bytes: `?`, `*`, `**`, `[...]` with
 * POSIX classes, and `\` escapes; with WM_PATHNAME, `*` and `?` stop at
 * `/` and `**` spans directories. The end of a buffer plays the part of
 * C's NUL.
 */

export const WM_PATHNAME = 2;
const WM_MATCH = 0, WM_NOMATCH = 1, WM_ABORT_ALL = -1, WM_ABORT_TO_STARSTAR = -2;

const isGlobSpecial = (c: number) => c === 0x2a || c === 0x3f || c === 0x5b || c === 0x5c; // * ? [ \
const isUpper = (c: number) => c >= 0x41 && c <= 0x5a;
const isLower = (c: number) => c >= 0x61 && c <= 0x7a;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isAlpha = (c: number) => isUpper(c) || isLower(c);
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isPunct = (c: number) => (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
const isPrint = (c: number) => c >= 0x20 && c <= 0x7e;
const isCntrl = (c: number) => c < 0x20 || c === 0x7f;
const isXdigit = (c: number) => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

function classMatch(name: string, t: number): boolean | undefined {
  switch (name) {
    case 'alnum': return isAlpha(t) || isDigit(t);
    case 'alpha': return isAlpha(t);
    case 'blank': return t === 0x20 || t === 0x09;
    case 'cntrl': return isCntrl(t);
    case 'digit': return isDigit(t);
    case 'graph': return t >= 0x21 && t <= 0x7e;
    case 'lower': return isLower(t);
    case 'print': return isPrint(t);
    case 'punct': return isPunct(t);
    case 'space': return isSpace(t);
    case 'upper': return isUpper(t);
    case 'xdigit': return isXdigit(t);
    default: return undefined;
  }
}

function dowild(pat: Buffer, pi: number, text: Buffer, ti: number, flags: number): number {
  const pn = pat.length, tn = text.length;
  const P = (i: number) => (i < pn ? pat[i]! : 0);
  const T = (i: number) => (i < tn ? text[i]! : 0);
  const pathname = (flags & WM_PATHNAME) !== 0;
  for (; P(pi) !== 0; ti++, pi++) {
    let pCh = P(pi);
    let tCh = T(ti);
    if (tCh === 0 && pCh !== 0x2a) return WM_ABORT_ALL;
    switch (pCh) {
      case 0x5c: // '\\'
        pCh = P(++pi);
        if (tCh !== pCh) return WM_NOMATCH;
        continue;
      case 0x3f: // '?'
        if (pathname && tCh === 0x2f) return WM_NOMATCH;
        continue;
      case 0x2a: { // '*'
        let matchSlash: boolean;
        if (P(++pi) === 0x2a) {
          const prevP = pi;
          while (P(++pi) === 0x2a) { /* skip */ }
          if (!pathname) matchSlash = true;
          else if ((prevP < 2 || P(prevP - 2) === 0x2f) &&
            (P(pi) === 0 || P(pi) === 0x2f || (P(pi) === 0x5c && P(pi + 1) === 0x2f))) {
            if (P(pi) === 0x2f && dowild(pat, pi + 1, text, ti, flags) === WM_MATCH) return WM_MATCH;
            matchSlash = true;
          } else matchSlash = false;
        } else matchSlash = !pathname;
        if (P(pi) === 0) {
          if (!matchSlash && text.indexOf(0x2f, ti) >= 0 && ti < tn) return WM_ABORT_TO_STARSTAR;
          return WM_MATCH;
        } else if (!matchSlash && P(pi) === 0x2f) {
          const slash = ti < tn ? text.indexOf(0x2f, ti) : -1;
          if (slash < 0) return WM_ABORT_ALL;
          ti = slash;
          break;
        }
        for (;;) {
          if (tCh === 0) break;
          if (!isGlobSpecial(P(pi))) {
            const want = P(pi);
            while ((tCh = T(ti)) !== 0 && (matchSlash || tCh !== 0x2f)) {
              if (tCh === want) break;
              ti++;
            }
            if (tCh !== want) return matchSlash ? WM_ABORT_ALL : WM_ABORT_TO_STARSTAR;
          }
          const m = dowild(pat, pi, text, ti, flags);
          if (m !== WM_NOMATCH) {
            if (!matchSlash || m !== WM_ABORT_TO_STARSTAR) return m;
          } else if (!matchSlash && tCh === 0x2f) return WM_ABORT_TO_STARSTAR;
          tCh = T(++ti);
        }
        return WM_ABORT_ALL;
      }
      case 0x5b: { // '['
        pCh = P(++pi);
        if (pCh === 0x5e) pCh = 0x21; // '^' as '!'
        const negated = pCh === 0x21;
        if (negated) pCh = P(++pi);
        let prevCh = 0;
        let matched = false;
        do {
          if (!pCh) return WM_ABORT_ALL;
          if (pCh === 0x5c) {
            pCh = P(++pi);
            if (!pCh) return WM_ABORT_ALL;
            if (tCh === pCh) matched = true;
          } else if (pCh === 0x2d && prevCh && P(pi + 1) && P(pi + 1) !== 0x5d) {
            pCh = P(++pi);
            if (pCh === 0x5c) {
              pCh = P(++pi);
              if (!pCh) return WM_ABORT_ALL;
            }
            if (tCh <= pCh && tCh >= prevCh) matched = true;
            pCh = 0;
          } else if (pCh === 0x5b && P(pi + 1) === 0x3a) {
            pi += 2;
            const s = pi;
            for (; (pCh = P(pi)) && pCh !== 0x5d; pi++) { /* to ']' */ }
            if (!pCh) return WM_ABORT_ALL;
            const i = pi - s - 1;
            if (i < 0 || P(pi - 1) !== 0x3a) {
              // no ":]": a plain '[' in the set
              pi = s - 2;
              pCh = 0x5b;
              if (tCh === pCh) matched = true;
            } else {
              const m = classMatch(pat.toString('latin1', s, s + i), tCh);
              if (m === undefined) return WM_ABORT_ALL;
              if (m) matched = true;
              pCh = 0;
            }
          } else if (tCh === pCh) matched = true;
          prevCh = pCh;
          pCh = P(++pi);
        } while (pCh !== 0x5d);
        if (matched === negated || (pathname && tCh === 0x2f)) return WM_NOMATCH;
        continue;
      }
      default:
        if (tCh !== pCh) return WM_NOMATCH;
        continue;
    }
  }
  return ti < tn ? WM_NOMATCH : WM_MATCH;
}

/** Does `text` match `pattern` (git's wildmatch() == WM_MATCH)? */
export function wildmatch(pattern: Buffer, text: Buffer, flags = 0): boolean {
  return dowild(pattern, 0, text, 0, flags) === WM_MATCH;
}
