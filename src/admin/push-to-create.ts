/**
 * Push-to-create (`gitwire serve --push-to-create`): a push to a path
 * where no repository is makes one there, when
 *   - the pusher is an authenticated user,
 *   - the path is a name a repository may be created under (names.ts),
 *   - the transport's own `authorize` would let that user push to the
 *     repository once made (--auth-rules: a `push` or `admin` rule), and
 *   - the user's creation budget (budget.ts) has room.
 * Otherwise the push gets what a push to a missing repository gets today
 * (not found), but for the budget, which says so. Two pushes racing for
 * one name end with one repository: createRepository renames a finished
 * one into place, and the loser pushes into the winner's.
 */
import { createRepository, type CreateOptions } from './create.js';
import { CreationBudget } from './budget.js';
import { newRepositoryName, newRepositoryPath } from './names.js';

/** what a refusal carries to the transport (a ServeHooks Deny) */
export interface CreateRefusal { status: number; message: string; headers?: Record<string, string> }

export interface PushToCreateOptions extends Pick<CreateOptions, 'objectFormat' | 'refFormat' | 'initialBranch'> {
  root: string;
  budget?: CreationBudget;
  /** one line per repository made */
  log?(fields: { repository: string; user: string; path: string }): void;
}

/**
 * The ServeHooks `createOnPush` hook: given a receive-pack request that
 * found no repository and `may(dir)` (the transport's authorize for that
 * directory), the directory created (or found made by a racing push), a
 * refusal, or undefined (answered as not found).
 */
export function pushToCreate(o: PushToCreateOptions) {
  const budget = o.budget ?? new CreationBudget();
  return async (info: { user?: string; path: string }, may: (dir: string) => Promise<true | CreateRefusal>): Promise<string | CreateRefusal | undefined> => {
    const user = info.user;
    if (user === undefined) return undefined;
    let name: string, dir: string;
    try { name = newRepositoryName(info.path); dir = newRepositoryPath(o.root, name); } catch { return undefined; }
    if ((await may(dir)) !== true) return undefined;
    if (!budget.take(user)) {
      const wait = budget.retryAfter(user);
      return { status: 429, message: `${user} may create no more repositories now (${budget.perMinute} a minute); try again in ${wait} s`, headers: { 'Retry-After': String(wait) } };
    }
    let made;
    try { made = createRepository(dir, { objectFormat: o.objectFormat, refFormat: o.refFormat, initialBranch: o.initialBranch, exclusive: false }); } catch (e) {
      budget.refund(user);
      throw e;
    }
    if (!made.created) budget.refund(user);
    else o.log?.({ repository: name, user, path: made.path });
    return made.path;
  };
}
