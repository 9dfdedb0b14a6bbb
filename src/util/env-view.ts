/**
 * An environment that is another one with a few variables set or removed,
 * without a copy: reads go to the base (process.env itself, or the
 * library user's object) as they are at the time of the read, except for
 * the variables changed here. `{ ...view }`, `Object.keys`, `for…in` and
 * child_process see the same set of variables a copy would have.
 *
 * A server's every request used to copy process.env to change one variable
 * (GIT_PROTOCOL): each key of process.env is a getenv() and a new string,
 * ~0.1 ms a request, where a request reads a dozen variables at most.
 * Writes to the view stay in the view, as they stayed in the copy.
 */

/** A variable removed in the view. */
const REMOVED = Symbol('removed');

export function envView(base: NodeJS.ProcessEnv, changes: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const own = new Map<string, string | undefined | typeof REMOVED>();
  for (const [k, v] of Object.entries(changes)) own.set(k, v === undefined ? REMOVED : v);
  const read = (k: string): string | undefined => {
    if (!own.has(k)) return base[k];
    const c = own.get(k);
    return c === REMOVED ? undefined : c;
  };
  const present = (k: string): boolean => (own.has(k) ? own.get(k) !== REMOVED : Object.hasOwn(base, k));
  return new Proxy({} as NodeJS.ProcessEnv, {
    get: (_t, k) => (typeof k === 'string' ? read(k) : undefined),
    has: (_t, k) => typeof k === 'string' && present(k),
    set: (_t, k, v) => {
      if (typeof k !== 'string') return false;
      own.set(k, v as string | undefined);
      return true;
    },
    deleteProperty: (_t, k) => {
      if (typeof k === 'string') own.set(k, REMOVED);
      return true;
    },
    defineProperty: (_t, k, d) => {
      if (typeof k !== 'string' || !('value' in d)) return false;
      own.set(k, d.value as string | undefined);
      return true;
    },
    ownKeys: () => {
      const keys: string[] = [];
      for (const k of Object.keys(base)) if (own.get(k) !== REMOVED) keys.push(k);
      for (const [k, c] of own) if (c !== REMOVED && !Object.hasOwn(base, k)) keys.push(k);
      return keys;
    },
    getOwnPropertyDescriptor: (_t, k) => {
      if (typeof k !== 'string' || !present(k)) return undefined;
      return { value: read(k), writable: true, enumerable: true, configurable: true };
    },
  });
}
