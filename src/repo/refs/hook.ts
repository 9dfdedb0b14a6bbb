/**
 * The reference-transaction hook's input (git's refs.c,
 * transaction_hook_feed_stdin): one `<old> SP <new> SP <ref> LF` per
 * update of the transaction. `<old>` is the value the caller expected
 * (zeros when it expected none or said nothing), `<new>` the value
 * written (zeros for a deletion). In the "preparing" state refs are
 * named as queued; from "prepared" on, an update made through a symref
 * names the ref it reached, after the others (git splits it off into an
 * update of its own at the end). Both backends call it the same way.
 */
import { TxError, type RefEdit, type TransactionOptions } from './transaction.js';

export type HookState = 'preparing' | 'prepared' | 'committed' | 'aborted';

/** The message git dies with when the hook refuses a transaction. */
export function hookAbortMessage(state: HookState): string {
  return `in '${state}' phase, update aborted by the reference-transaction hook`;
}

export function hookLine(edit: RefEdit, name: string, zero: string): string {
  const old = edit.expected.kind === 'must-exist-and-match' ? edit.expected.oid.toString('hex') : zero;
  const nw = edit.change.kind === 'update' ? edit.change.new.toString('hex') : zero;
  return `${old} ${nw} ${name}\n`;
}

/** The lines of `edits`, each named by `target(i)` (its resolved name from "prepared" on). */
export function hookInput(edits: readonly RefEdit[], zero: string, target?: (i: number) => string | undefined): string {
  if (!target) return edits.map((e) => hookLine(e, e.name, zero)).join('');
  const direct: string[] = [], split: string[] = [];
  edits.forEach((e, i) => {
    const t = target(i) ?? e.name;
    (t === e.name ? direct : split).push(hookLine(e, t, zero));
  });
  return direct.join('') + split.join('');
}

/**
 * The hook refused the transaction in "preparing" or "prepared": git
 * dies with this message (refs.c), the process's whole answer; a caller
 * that reports per ref (receive-pack) lets it through.
 */
export class HookAbortError extends TxError {
  readonly hookAbort = true;
  constructor(readonly state: 'preparing' | 'prepared') {
    super('generic', hookAbortMessage(state));
  }

  // (GitwireError's own instanceof answers for every GitwireError: this one asks for the hook's abort)
  static override [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as { hookAbort?: unknown }).hookAbort === true;
  }
}

/** The input lines, or a function making them (called only when there is a hook to feed). */
export type HookLines = string | (() => string);

/** Run the hook if the caller gave one; its exit code (0 when there is none). */
export async function runHook(opts: TransactionOptions, state: HookState, input: HookLines): Promise<number> {
  if (!opts.hook) return 0;
  return opts.hook(state, typeof input === 'string' ? input : input());
}

/**
 * The "preparing" and "prepared" calls every backend makes: a hook that
 * refuses has the transaction aborted, hears "aborted" with the same lines
 * (git aborts before it dies), and the caller gets git's message.
 */
export async function hookGate(opts: TransactionOptions, state: 'preparing' | 'prepared', input: HookLines, abort: () => void): Promise<void> {
  if (!opts.hook) return;
  const lines = typeof input === 'string' ? input : input();
  if (await runHook(opts, state, lines) === 0) return;
  abort();
  await runHook(opts, 'aborted', lines);
  throw new HookAbortError(state);
}

/** git's refusal of two updates to one ref in one transaction (after `abort`). */
export function oneUpdatePerRef(edits: readonly RefEdit[], abort: () => void): void {
  const seen = new Set<string>();
  for (const e of edits) {
    if (seen.has(e.name)) { abort(); throw new TxError('generic', `multiple updates for ref '${e.name}' not allowed`); }
    seen.add(e.name);
  }
}
