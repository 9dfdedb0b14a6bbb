/**
 * Per-repository access rules for `gitwire serve --auth-rules FILE`:
 *
 *     # access  repositories  users…
 *     push      group/*       alice bob
 *     fetch     **            *
 *
 * One rule per line: `admin` (may create and delete matching repositories
 * over SSH, `repo create` / `repo delete`; implies push), `push` (implies
 * fetch) or `fetch`, a repository
 * pattern (`*` within one path segment, `**` across segments), then user
 * names (`*`: any authenticated user). Patterns are matched against the
 * resolved repository's name (paths.ts repositoryName: `group/p` for
 * `group/p.git`, `wt` for a work tree), whatever the request's spelling;
 * a pattern's own leading `/`, trailing `/`, `.git` or `/.git` are
 * dropped the same way, so `alpha` and `alpha.git` are one rule. A user
 * may do what some rule grants; nothing else. The file is re-read when it
 * changes.
 *
 *     # protect  repositories  refs               users who may still rewind or delete them…
 *     protect    **            refs/heads/main    alice
 *
 * `protect` lines guard refs (a ref pattern, `*` and `**` as for
 * repositories): on a matching repository and ref, a non-fast-forward
 * update and a deletion are refused for everyone but the users the line
 * names (none: no one). They grant nothing; fast-forwards follow the push
 * rules. Several lines matching one ref: each must name the user.
 */
import { readFileSync, statSync } from 'node:fs';
import { canonicalName } from './paths.js';

export type Access = 'fetch' | 'push' | 'admin';

/** each access implies those ranked below it */
const RANK: Record<Access, number> = { fetch: 0, push: 1, admin: 2 };

interface Rule { access: Access; re: RegExp; users: Set<string> }

/** A `protect` line: repositories, refs, and who is exempt. */
interface Protect { re: RegExp; ref: RegExp; users: Set<string> }

function globToRegExp(glob: string): RegExp {
  let s = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') { s += '.*'; i++; } else s += '[^/]*';
    } else if (c === '?') s += '[^/]';
    else s += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${s}$`);
}

/** Parse rules; throws with the file position on a bad line. */
export function parseAuthRules(text: string, name = 'rules', protects: Protect[] = []): Rule[] {
  const rules: Rule[] = [];
  text.split(/\r?\n/).forEach((raw, n) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [access, pattern, ...users] = line.split(/\s+/);
    if (access === 'protect') {
      const ref = users.shift();
      if (!pattern || !ref || !ref.startsWith('refs/')) throw new Error(`${name}:${n + 1}: expected 'protect <repository-pattern> <ref-pattern> [<user>…]' (refs/…)`);
      protects.push({ re: globToRegExp(canonicalName(pattern)), ref: globToRegExp(ref), users: new Set(users) });
      return;
    }
    if ((access !== 'push' && access !== 'fetch' && access !== 'admin') || !pattern || !users.length) {
      throw new Error(`${name}:${n + 1}: expected 'admin|push|fetch <repository-pattern> <user>…'`);
    }
    rules.push({ access, re: globToRegExp(canonicalName(pattern)), users: new Set(users) });
  });
  return rules;
}

export class AuthRules {
  private rules: Rule[] = [];
  private protects: Protect[] = [];
  private stamp = '';
  constructor(readonly path: string, readonly warn: (msg: string) => void = () => undefined) {
    this.reload(true);
  }

  reload(first = false): void {
    let stamp: string;
    try { const st = statSync(this.path); stamp = `${st.mtimeMs}:${st.size}:${st.ino}`; } catch (e) {
      if (first) throw e;
      return;
    }
    if (stamp === this.stamp) return;
    try {
      const protects: Protect[] = [];
      this.rules = parseAuthRules(readFileSync(this.path, 'utf8'), this.path, protects);
      this.protects = protects;
      this.stamp = stamp;
    } catch (e) {
      if (first) throw e;
      this.warn(`auth rules not reloaded: ${(e as Error).message}`);
    }
  }

  /** May `user` do `access` on the repository named `name` (repositoryName; spelled otherwise, canonicalName applies)? */
  allows(user: string, name: string, access: Access): boolean {
    this.reload();
    const p = canonicalName(name);
    return this.rules.some((r) => RANK[r.access] >= RANK[access] && (r.users.has('*') || r.users.has(user)) && r.re.test(p));
  }

  /**
   * The refs of repository `name` that `user` (undefined: anonymous) may
   * neither rewind nor delete: a predicate on full ref names, or undefined
   * when no `protect` line applies to this repository and user.
   */
  protectedRefs(user: string | undefined, name: string): ((ref: string) => boolean) | undefined {
    this.reload();
    const p = canonicalName(name);
    const apply = this.protects.filter((r) => r.re.test(p) && !(user !== undefined && (r.users.has(user) || r.users.has('*'))));
    if (!apply.length) return undefined;
    return (ref) => apply.some((r) => r.ref.test(ref));
  }
}
