/**
 * Protected refs (`protect` in --auth-rules, or a library's predicate): on a
 * protected ref a push may create and fast-forward, but a non-fast-forward
 * update or a deletion is refused with `protected ref`, the way git's
 * receive.denyNonFastForwards and receive.denyDeletes refuse theirs.
 *
 * Checked once the pack is in (its objects still in quarantine) and
 * before any ref moves. Fast-forward is judged on the object store: the
 * old commit must be reachable from the new one (repo/reach.ts); an old
 * object that is missing or is not a commit counts as non-fast-forward,
 * as in git. The client's old value is the one judged: the ref
 * transaction then refuses the update unless the ref still holds it.
 *
 * A ref that is a symbolic ref is judged by its target's name too (a push
 * to `refs/heads/alias` → `refs/heads/main` writes main).
 *
 * AGit (`refs/for/<branch>[/<topic>]`, a command proc-receive handles):
 * the command itself always creates a ref nobody has, so it is judged as
 * the change it proposes to `refs/heads/<branch>`: when that branch is
 * protected, the proposal must be a fast-forward of the branch's current
 * tip (it contains it), and a deletion is refused. The hook that applies a
 * proposal (merges it, fast-forwards the branch) can then never rewind a
 * protected branch for someone the rule does not name. A branch name with
 * slashes is ambiguous in `refs/for/a/b` (branch `a`, topic `b`, or
 * branch `a/b`): every reading is checked, and so is Gerrit's spelling
 * of the branch in full (`refs/for/refs/heads/main`). What follows a `%`
 * (Gerrit's options) is not part of the branch.
 */
import { forEachSliced } from '../../util/budget.js';
import { isAncestor, type CommitSource } from '../../repo/reach.js';
import type { PointReader } from '../../repo/refs/index.js';
import { parseHex } from '../../repo/oid.js';
import { isNullOid, type Command } from './commands.js';

/** The `ng` reason: the client prints `! [remote rejected] main -> main (protected ref)`. */
export const PROTECTED_REF = 'protected ref';

export interface ProtectCheck {
  /** true: this ref is protected for this pusher */
  isProtected(ref: string): boolean;
  /** the repository's objects and the quarantined ones */
  objects: CommitSource;
  /** the repository's refs, for symbolic refs and AGit targets */
  refs: PointReader;
  /** GIT_NAMESPACE prefix (`refs/namespaces/x/`), or '' */
  namespace: string;
  /** a line for the pusher (rp_error) */
  error(msg: string): void;
}

/**
 * An AGit ref deeper than this many components is not read every way (a
 * ref of 30,000 components would be 30,000 readings of up to 64 KiB each):
 * where some protection applies to the pusher, it is refused.
 */
export const MAX_AGIT_READINGS = 64;

/**
 * The `refs/heads/…` branches an AGit ref may target (each reading of its
 * slashes); undefined when there are more than MAX_AGIT_READINGS of them.
 */
export function agitTargets(ref: string): string[] | undefined {
  if (!ref.startsWith('refs/for/')) return [];
  let rest = ref.slice('refs/for/'.length);
  const pct = rest.indexOf('%');
  if (pct >= 0) rest = rest.slice(0, pct);
  const out: string[] = [];
  for (let at = rest.indexOf('/'); ; at = rest.indexOf('/', at + 1)) {
    const b = at < 0 ? rest : rest.slice(0, at);
    if (b) out.push(`refs/heads/${b}`);
    // Gerrit's spelling, `refs/for/refs/heads/main[/topic]`: the branch named in full
    if (b.startsWith('refs/heads/') && b.length > 'refs/heads/'.length) out.push(b);
    if (out.length > MAX_AGIT_READINGS) return undefined;
    if (at < 0) return out;
  }
}

/** Mark every command that would rewind or delete a protected ref; returns how many were refused. */
export async function refuseProtected(commands: Command[], p: ProtectCheck): Promise<number> {
  let refused = 0;
  const ns = p.namespace;
  /** the ref and, when it is a symbolic ref, its target (without the namespace) */
  const names = (ref: string): string[] => {
    const raw = p.refs.readRaw(ns + ref);
    if (!raw?.symref) return [ref];
    const t = p.refs.resolve(ns + ref)?.target ?? raw.symref;
    return [ref, ns && t.startsWith(ns) ? t.slice(ns.length) : t];
  };
  const pending: Array<{ c: Command; old: Buffer; name: string }> = [];
  await forEachSliced(commands, (c) => {
    if (c.error || c.skipUpdate) return;
    const del = isNullOid(c.new);
    if (c.procReceive) {
      const targets = agitTargets(c.ref);
      if (!targets) { refuse(c, `denying ${c.ref.slice(0, 200)}…: too deep to tell which branch it targets (protected ref)`); return; }
      for (const target of targets) {
        if (!p.isProtected(target)) continue;
        if (del) { refuse(c, `denying ref deletion for ${c.ref} (protected ref ${target})`); return; }
        // resolve() gives the id as hex text
        const hex = p.refs.resolve(ns + target)?.hex;
        if (hex) pending.push({ c, old: parseHex(hex.toString('latin1')), name: target });
      }
      if (!p.isProtected(c.ref)) return;
    } else if (!names(c.ref).some((n) => p.isProtected(n))) return;
    if (del) { refuse(c, `denying ref deletion for ${c.ref} (protected ref)`); return; }
    if (!isNullOid(c.old)) pending.push({ c, old: c.old, name: c.ref });
  });
  for (const { c, old, name } of pending) {
    if (c.error) continue;
    if (await isAncestor(p.objects, old, c.new)) continue;
    refuse(c, name === c.ref ? `denying non-fast-forward ${c.ref} (protected ref)` : `denying non-fast-forward ${c.ref}: not a fast-forward of ${name} (protected ref)`);
  }
  return refused;

  function refuse(c: Command, msg: string): void {
    p.error(msg);
    c.error = PROTECTED_REF;
    refused++;
  }
}
