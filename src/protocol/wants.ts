/**
 * Want policy: a want must be an advertised tip unless
 * uploadpack.allowTipSHA1InWant / allowReachableSHA1InWant /
 * allowAnySHA1InWant say otherwise. Refs are streamed, never loaded.
 */
import { notOurRef } from '../errors.js';
import { ObjType } from '../repo/object-type.js';
import { rawFromHexBytes, toHex } from '../repo/oid.js';
import type { Peel } from '../repo/refs/index.js';
import { TimeBudget } from '../util/budget.js';
import { derefTag, negotiationState } from './negotiation.js';
import { AllowUor, Flag, type UploadPackSession } from './session.js';

export interface VisibleRef { stripped: Buffer; full: Buffer; hex: Buffer; hidden: boolean; peeled?: Buffer; peel?: Peel }

/**
 * HEAD and every ref in the namespace, with hidden-ness (git's check_ref).
 * v0 walks `<ns>refs/` (for_each_namespaced_ref); v2 ls-refs walks the
 * whole namespace (`<ns>`), which includes a namespaced HEAD ref.
 */
export function* visibleRefs(s: UploadPackSession, whole = false, headOnly = false): Generator<VisibleRef> {
  const ns = s.repo.namespace;
  const headName = ns ? `${ns}HEAD` : 'HEAD';
  const head = ns ? s.repo.refs.resolve(headName) : { hex: s.repo.refs.head().hex };
  if (head?.hex) {
    const full = Buffer.from(headName);
    yield { stripped: Buffer.from('HEAD'), full, hex: head.hex, hidden: s.isHidden(Buffer.from('HEAD'), full) };
  }
  if (headOnly) return;
  const prefix = ns ? (whole ? ns : `${ns}refs/`) : 'refs/';
  for (const r of s.repo.refs.iterate(prefix)) {
    const stripped = ns ? r.name.subarray(ns.length) : r.name;
    yield { stripped, full: r.name, hex: r.hex, hidden: s.isHidden(stripped, r.name), peeled: r.peeled, peel: r.peel };
  }
}

/**
 * Mark wanted objects that are ref tips: OUR_REF, or HIDDEN_REF when
 * hidden. Every ref is looked at (git's check_ref over all of them), so
 * the loop yields on the request's slicer, and a ref's id is compared as
 * the hex it is stored as, with nothing built per ref.
 */
async function markWantedTips(s: UploadPackSession): Promise<void> {
  if (s.wants.length === 0) return;
  const wanted = new Set(s.wants.map((w) => w.toString('hex')));
  const one = wanted.size === 1 ? Buffer.from(s.wants[0]!.toString('hex'), 'latin1') : undefined;
  const slicer = negotiationState(s).slicer;
  await s.repo.refs.prepare(slicer);
  for (const r of visibleRefs(s)) {
    const tick = slicer.tick();
    if (tick) await tick;
    if (one ? !one.equals(r.hex) : !wanted.has(r.hex.toString('latin1'))) continue;
    s.set(rawFromHexBytes(r.hex), r.hidden ? Flag.HiddenRef : Flag.OurRef);
  }
}

export function isOurRef(s: UploadPackSession, oid: Buffer): boolean {
  const hiddenOk = (s.cfg.allowUor & (AllowUor.Tip | AllowUor.Reachable)) !== 0;
  return (s.get(oid) & ((hiddenOk ? Flag.HiddenRef : 0) | Flag.OurRef)) !== 0;
}

/**
 * Are all non-tip wants reachable from our refs (git's has_unreachable via
 * rev-list)? Non-commit wants pass, as they do with rev-list. git runs
 * rev-list in a process of its own; here the walk shares the event loop,
 * so it yields on the request's slicer, and past the negotiation budget
 * what is still unfound counts as unreachable (the want is refused).
 */
async function hasUnreachable(s: UploadPackSession): Promise<boolean> {
  const targets = new Set<string>();
  for (const w of s.wants) {
    if (isOurRef(s, w)) continue;
    const d = derefTag(s, w);
    if (d && d.type === ObjType.Commit) targets.add(s.key(d.oid));
  }
  if (targets.size === 0) return false;
  const hiddenOk = (s.cfg.allowUor & (AllowUor.Tip | AllowUor.Reachable)) !== 0;
  const { slicer, limits } = negotiationState(s);
  const budget = new TimeBudget(limits.negotiationBudgetMs);
  const stop = budget.start();
  const stack: Buffer[] = [];
  const seen = new Set<string>();
  try {
    for (const r of visibleRefs(s)) {
      const tick = slicer.tick();
      if (tick) { await tick; if (budget.exhausted) return true; }
      if (r.hidden && !hiddenOk) continue;
      const d = derefTag(s, rawFromHexBytes(r.hex));
      if (d && d.type === ObjType.Commit) stack.push(d.oid);
    }
    while (stack.length && targets.size) {
      const tick = slicer.tick();
      if (tick) { await tick; if (budget.exhausted) break; }
      const o = stack.pop()!;
      const k = s.key(o);
      if (seen.has(k)) continue;
      seen.add(k);
      targets.delete(k);
      const c = s.repo.commit(o);
      if (c) for (const p of c.parents) stack.push(p);
    }
  } finally {
    stop();
  }
  return targets.size > 0;
}

/** check_non_tip(): run after all wants are in. The boundary tells the client. */
export async function checkWants(s: UploadPackSession, stateless = s.opts.statelessRpc): Promise<void> {
  if ((s.cfg.allowUor & AllowUor.Any) === AllowUor.Any) return;
  await markWantedTips(s);
  const nonTip = s.wants.some((w) => !isOurRef(s, w));
  if (!nonTip) return;
  if ((stateless || (s.cfg.allowUor & AllowUor.Reachable)) && !(await hasUnreachable(s))) return;
  for (const w of s.wants) if (!isOurRef(s, w)) throw notOurRef(toHex(w));
}
