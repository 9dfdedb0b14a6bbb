/**
 * HTTP Basic users from an Apache htpasswd file with bcrypt entries
 * (`htpasswd -B`: `$2y$`, also `$2a$`/`$2b$`; cost 4 to 31). Other formats (MD5
 * `$apr1$`, `{SHA}`, crypt) are skipped with a warning. The file is
 * re-read when it changes: on use when its mtime, size or inode differ,
 * and at most `recheckMs` after the last look by its content (a SHA-256 of
 * the bytes), so two edits within one timestamp tick that keep the size and
 * inode are seen too.
 *
 * The password check is bcryptjs's hash compared in constant time. An
 * unknown user costs what a known one does: it is compared against a dummy
 * hash at the file's most common cost (a fresh random salt per load of the
 * file), through the same worker and the same steps. With a fixed cost-10
 * dummy, a 401 for an unknown user took 100 ms against 4 ms for a cost-5
 * user's wrong password (and 108 against 434 ms at cost 12), so names could
 * be told apart. The hash runs on a worker thread (bcrypt-worker.ts):
 * bcryptjs's own async mode works in 100 ms chunks on the event loop, and
 * 16 clients sending wrong passwords pushed a signed-in user's info/refs
 * from 4 ms to 0.9 s.
 */
import { statSync, readFileSync } from 'node:fs';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

/**
 * What bcryptjs can check: `$2a$`, `$2b$`, `$2y$`, cost 4 to 31. It refuses
 * `$2x$` and other costs at once, without a bcrypt round, so such a user
 * would answer faster than an unknown one (and could never sign in): the
 * line is skipped with a warning, and the name costs what an unknown one does.
 */
const BCRYPT = /^\$2[aby]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/;
/** bcrypt's base-64 alphabet */
const B64 = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** the cost of the dummy for a file without bcrypt users (Apache's htpasswd -B default) */
const DEFAULT_COST = 5;

/** The cost most users of the file have (the higher one on a tie); DEFAULT_COST for none. */
export function commonCost(hashes: Iterable<string>): number {
  const counts = new Map<number, number>();
  for (const h of hashes) {
    const c = Number(BCRYPT.exec(h)?.[1]);
    if (c) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let best = DEFAULT_COST, n = 0;
  for (const [c, k] of counts) if (k > n || (k === n && c > best)) { best = c; n = k; }
  return best;
}

/** A hash nobody's password matches, at `cost`, with a random salt (no bcrypt round is spent making it). */
export function dummyHash(cost: number): string {
  const r = randomBytes(53);
  let tail = '';
  for (const b of r) tail += B64[b & 63];
  return `$2y$${String(cost).padStart(2, '0')}$${tail}`;
}

export interface Credentials { user: string; password: string }

/** `Authorization: Basic …` → user and password (undefined when absent or malformed). */
export function parseBasic(header: string | undefined): Credentials | undefined {
  if (!header) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return undefined;
  const s = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = s.indexOf(':');
  if (i < 0) return undefined;
  return { user: s.slice(0, i), password: s.slice(i + 1) };
}

export class Htpasswd {
  private users = new Map<string, string>();
  /** mtime, size and inode at the last load */
  private stamp = '';
  /** SHA-256 of the bytes last loaded, and when the content was last compared */
  private digest = '';
  private lookedMs = 0;
  /** what an unknown user is compared against: the file's most common cost, a new salt per load */
  private dummy = dummyHash(DEFAULT_COST);
  /** recent successful checks: HMAC(user, password, hash) with a per-process key, so a push's two requests pay one bcrypt */
  private readonly ok = new Map<string, number>();
  private readonly key = randomBytes(32);

  constructor(readonly path: string, readonly warn: (msg: string) => void = () => undefined, readonly cacheMs = 60_000, readonly recheckMs = 1000) {
    this.reload();
  }

  /** the hash unknown users are compared against (its cost is the file's most common one) */
  get dummyHash(): string { return this.dummy; }

  /**
   * Re-read the file when it changed: at once when its mtime, size or inode
   * differ, else by content once `recheckMs` passed since the last look.
   * Keep the last good copy when it cannot be read.
   */
  reload(): void {
    let st;
    try { st = statSync(this.path); } catch (e) {
      if (this.stamp !== 'missing') this.warn(`htpasswd: cannot read ${this.path}: ${(e as Error).message}`);
      this.stamp = 'missing';
      this.digest = '';
      this.users = new Map();
      this.dummy = dummyHash(DEFAULT_COST);
      this.ok.clear();
      return;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    const now = Date.now();
    if (stamp === this.stamp && now - this.lookedMs < this.recheckMs) return;
    let bytes: Buffer;
    try { bytes = readFileSync(this.path); } catch (e) { this.warn(`htpasswd: cannot read ${this.path}: ${(e as Error).message}`); return; }
    this.lookedMs = now;
    this.stamp = stamp;
    const digest = createHash('sha256').update(bytes).digest('base64');
    if (digest === this.digest) return;
    const users = new Map<string, string>();
    bytes.toString('utf8').split(/\r?\n/).forEach((line, n) => {
      if (!line.trim() || line.startsWith('#')) return;
      const i = line.indexOf(':');
      if (i <= 0) { this.warn(`htpasswd: ${this.path}:${n + 1}: not user:hash`); return; }
      const user = line.slice(0, i), hash = line.slice(i + 1).trim();
      if (!BCRYPT.test(hash)) { this.warn(`htpasswd: ${this.path}:${n + 1}: user '${user}' has no bcrypt hash bcryptjs checks ($2y$, $2a$ or $2b$, cost 4 to 31: use htpasswd -B); ignored`); return; }
      users.set(user, hash);
    });
    this.users = users;
    this.digest = digest;
    this.dummy = dummyHash(commonCost(users.values()));
    this.ok.clear();
  }

  get size(): number { return this.users.size; }

  /** one bcrypt hash of `password` with `salt` (`$2y$NN$` and 22 salt characters), on the worker */
  protected hash(password: string, salt: string): Promise<string | undefined> {
    return bcryptHash(password, salt);
  }

  /**
   * true when the user exists and the password matches. Known and unknown
   * users take the same steps: the cache of successful checks is looked up
   * for both (a wrong password is never in it), one bcrypt hash on the
   * worker, one constant-time compare.
   */
  async verify(user: string, password: string): Promise<boolean> {
    this.reload();
    const hash = this.users.get(user);
    const target = hash ?? this.dummy;
    const tag = createHmac('sha256', this.key).update(`${user}\0${password}\0${target}`).digest('base64');
    const seen = this.ok.get(tag);
    if (seen !== undefined && Date.now() - seen < this.cacheMs) return true;
    const computed = await this.hash(password, target.slice(0, 29));
    if (computed === undefined) return false;
    const a = Buffer.from(computed), b = Buffer.from(target);
    const match = a.length === b.length && timingSafeEqual(a, b) && hash !== undefined;
    if (match) {
      if (this.ok.size >= 1000) this.ok.clear();
      this.ok.set(tag, Date.now());
    }
    return match;
  }
}

let worker: Worker | undefined;
/** a worker failed before it answered anything (cannot load): checks stay on the loop, no new thread each time */
let workerBroken = false;
let nextId = 0;
const pending = new Map<number, { done: (hash: string | undefined) => void; password: string; salt: string }>();

function onLoop(password: string, salt: string): Promise<string | undefined> {
  return bcrypt.hash(password, salt).then((h) => h, () => undefined);
}

/** bcrypt on the worker thread (started on first use; kept alive only while it has checks to answer); on the loop where no worker starts. */
function bcryptHash(password: string, salt: string): Promise<string | undefined> {
  if (workerBroken) return onLoop(password, salt);
  if (!worker) {
    try {
      const w = new Worker(new URL('./bcrypt-worker.js', import.meta.url));
      let answered = false;
      w.unref();
      w.on('message', (m: { id: number; hash?: string }) => {
        answered = true;
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (pending.size === 0) w.unref();
        p?.done(m.hash);
      });
      const lost = () => {
        if (worker === w) worker = undefined;
        if (!answered) workerBroken = true;
        // what was asked of it is checked on the loop instead
        const asked = [...pending.values()];
        pending.clear();
        for (const p of asked) void onLoop(p.password, p.salt).then(p.done);
      };
      w.on('error', lost);
      w.on('exit', lost);
      worker = w;
    } catch {
      return onLoop(password, salt);
    }
  }
  const id = nextId++;
  const w = worker;
  return new Promise((resolve) => {
    pending.set(id, { done: resolve, password, salt });
    // an idle worker does not keep the process alive; one with a check to answer does
    w.ref();
    w.postMessage({ id, password, salt });
  });
}
