/**
 * HTTP Basic users from an Apache htpasswd file with bcrypt entries
 * (`htpasswd -B`: `$2y$`, also `$2a$`/`$2b$`). Other formats (MD5
 * `$apr1$`, `{SHA}`, crypt) are skipped with a warning. The file is
 * re-read when it changes (checked on use, by mtime, size and inode).
 * The password check is bcryptjs's hash compared in constant time; an
 * unknown user costs the same bcrypt round as a known one. The hash runs
 * on a worker thread (bcrypt-worker.ts): bcryptjs's own async mode works
 * in 100 ms chunks on the event loop, and 16 clients sending wrong
 * passwords pushed a signed-in user's info/refs from 4 ms to 0.9 s.
 */
import { statSync, readFileSync } from 'node:fs';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

const BCRYPT = /^\$2[abxy]\$\d\d\$[./A-Za-z0-9]{53}$/;
/** compared against when the user is unknown, so timing does not tell */
const DUMMY = '$2y$10$' + 'C'.repeat(22) + 'O'.repeat(31);

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
  private stamp = '';
  /** recent successful checks: HMAC(user, password, hash) with a per-process key, so a push's two requests pay one bcrypt */
  private readonly ok = new Map<string, number>();
  private readonly key = randomBytes(32);

  constructor(readonly path: string, readonly warn: (msg: string) => void = () => undefined, readonly cacheMs = 60_000) {
    this.reload();
  }

  /** Re-read the file when it changed; keep the last good copy when it cannot be read. */
  reload(): void {
    let st;
    try { st = statSync(this.path); } catch (e) {
      if (this.stamp !== 'missing') this.warn(`htpasswd: cannot read ${this.path}: ${(e as Error).message}`);
      this.stamp = 'missing';
      this.users = new Map();
      this.ok.clear();
      return;
    }
    const stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    if (stamp === this.stamp) return;
    let text: string;
    try { text = readFileSync(this.path, 'utf8'); } catch (e) { this.warn(`htpasswd: cannot read ${this.path}: ${(e as Error).message}`); return; }
    const users = new Map<string, string>();
    text.split(/\r?\n/).forEach((line, n) => {
      if (!line.trim() || line.startsWith('#')) return;
      const i = line.indexOf(':');
      if (i <= 0) { this.warn(`htpasswd: ${this.path}:${n + 1}: not user:hash`); return; }
      const user = line.slice(0, i), hash = line.slice(i + 1).trim();
      if (!BCRYPT.test(hash)) { this.warn(`htpasswd: ${this.path}:${n + 1}: user '${user}' has no bcrypt hash (use htpasswd -B); ignored`); return; }
      users.set(user, hash);
    });
    this.users = users;
    this.stamp = stamp;
    this.ok.clear();
  }

  get size(): number { return this.users.size; }

  /** true when the user exists and the password matches. */
  async verify(user: string, password: string): Promise<boolean> {
    this.reload();
    const hash = this.users.get(user);
    const target = hash ?? DUMMY;
    const tag = createHmac('sha256', this.key).update(`${user}\0${password}\0${target}`).digest('base64');
    const seen = this.ok.get(tag);
    if (hash && seen !== undefined && Date.now() - seen < this.cacheMs) return true;
    const computed = await bcryptHash(password, target.slice(0, 29));
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
