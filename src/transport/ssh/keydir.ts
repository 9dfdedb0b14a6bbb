/**
 * Users from a directory of public keys, in gitolite's keydir layout:
 * `alice.pub` and `alice@laptop.pub` (anywhere below the directory) hold
 * keys of user `alice`; `bob@example.com.pub` is user `bob@example.com`
 * (gitolite strips `@<location>` only when it has no dot). Each non-empty,
 * non-comment line of a file is one key (`ssh-ed25519 AAAA… comment`).
 *
 * A file added, changed or removed is seen by the next login, without a
 * restart: every directory of the tree is watched (inotify), and a change
 * makes the next login look again, as does a look older than
 * KEYDIR_RESCAN_MS (or every login, where watching fails). A look reads
 * directory entries and file stats (asynchronously; ctime included, so an
 * edit that keeps size and mtime is seen); the keys are re-read only when
 * something changed. A key found under two users belongs to neither: it is
 * refused, with a warning naming both.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import ssh2 from 'ssh2';
import { fingerprint, type ParsedKey } from './keys.js';

/** how deep below the key directory files are looked for */
export const KEYDIR_MAX_DEPTH = 16;
/** key files read at most (the rest are ignored, with a warning) */
export const KEYDIR_MAX_FILES = 100_000;
/** ms after which the directory is looked at again even without a change seen */
export const KEYDIR_RESCAN_MS = 30_000;
/** a key file larger than this is skipped */
export const KEYFILE_MAX_BYTES = 64 * 1024;

/** gitolite's user name rule */
const USER_RE = /^[0-9a-zA-Z][-0-9a-zA-Z._@+]*$/;

/** The user a key file belongs to (gitolite's rule), or undefined for a name gitolite would not take. */
export function keyFileUser(file: string): string | undefined {
  const base = file.slice(file.lastIndexOf('/') + 1);
  if (!base.endsWith('.pub')) return undefined;
  const user = base.replace(/(@[^.]+)?\.pub$/, '');
  return USER_RE.test(user) ? user : undefined;
}

export interface KeyEntry { user: string; file: string; key: ParsedKey; fingerprint: string }

interface Scan { stamp: string; files: Array<{ path: string; user: string }>; dirs: string[] }

/** A key line: type, base64 blob, optional comment (no authorized_keys options). */
function parseKeyLine(line: string): Buffer | undefined {
  const m = /^(\S+)\s+([A-Za-z0-9+/]+={0,2})(?:\s.*)?$/.exec(line);
  if (!m) return undefined;
  const blob = Buffer.from(m[2]!, 'base64');
  if (blob.length < 4 || blob.readUInt32BE(0) + 4 > blob.length) return undefined;
  return blob.subarray(4, 4 + blob.readUInt32BE(0)).toString('latin1') === m[1] ? blob : undefined;
}

export class KeyDir {
  /** base64 of a key blob → its entry */
  private keys = new Map<string, KeyEntry>();
  private stamp: string | undefined;
  private running: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  /** something may have changed since the last look */
  private dirty = true;
  private lookedAt = 0;
  private watchers: FSWatcher[] = [];
  private watching = false;
  constructor(readonly dir: string, readonly warn: (msg: string) => void = () => undefined) {}

  /** stop watching */
  close(): void { for (const w of this.watchers) w.close(); this.watchers = []; this.watching = false; }

  /** number of usable keys */
  get size(): number { return this.keys.size; }

  /** The entry for a public key blob, after checking the directory for changes. */
  async lookup(blob: Buffer): Promise<KeyEntry | undefined> {
    if (this.dirty || !this.watching || Date.now() - this.lookedAt > KEYDIR_RESCAN_MS) await this.refresh();
    return this.keys.get(blob.toString('base64'));
  }

  /**
   * Bring the keys up to date with the directory. Callers that arrive
   * while a check runs share the next one (it starts after they arrived,
   * so it sees what they saw).
   */
  refresh(): Promise<void> {
    if (!this.running) {
      this.running = this.check().finally(() => { this.running = undefined; });
      return this.running;
    }
    this.again ??= this.running.then(() => { this.again = undefined; return this.refresh(); });
    return this.again;
  }

  private async scan(): Promise<Scan> {
    const files: Scan['files'] = [];
    const dirs: string[] = [];
    const parts: string[] = [];
    let skipped = false;
    const walk = async (d: string, depth: number): Promise<void> => {
      let st;
      try { st = await stat(d); } catch { return; }
      parts.push(`${d}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`);
      dirs.push(d);
      let ents;
      try { ents = await readdir(d, { withFileTypes: true }); } catch { return; }
      ents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const e of ents) {
        if (e.name.startsWith('.')) continue;
        const p = join(d, e.name);
        if (e.isDirectory()) { if (depth < KEYDIR_MAX_DEPTH) await walk(p, depth + 1); continue; }
        if (!e.name.endsWith('.pub') || !(e.isFile() || e.isSymbolicLink())) continue;
        if (files.length >= KEYDIR_MAX_FILES) { skipped = true; continue; }
        const user = keyFileUser(e.name);
        let fst;
        try { fst = await stat(p); } catch { continue; }
        parts.push(`${p}:${fst.mtimeMs}:${fst.ctimeMs}:${fst.size}:${fst.ino}`);
        if (user) files.push({ path: p, user });
        else parts.push(`bad:${p}`);
      }
    };
    await walk(this.dir, 0);
    if (skipped) parts.push('skipped');
    return { stamp: parts.join('\n'), files, dirs };
  }

  /** Watch the directories of the last look; a failure to watch means looking at every login. */
  private rewatch(dirs: string[]): void {
    this.close();
    try {
      for (const d of dirs) {
        const w = watch(d, { persistent: false }, () => { this.dirty = true; });
        w.on('error', () => { this.dirty = true; this.watching = false; });
        this.watchers.push(w);
      }
      this.watching = dirs.length > 0;
    } catch {
      this.close();
    }
  }

  private async check(): Promise<void> {
    // a change seen from here on makes the next login look again
    this.dirty = false;
    const s = await this.scan();
    this.lookedAt = Date.now();
    if (s.stamp === this.stamp && this.watching) return;
    this.rewatch(s.dirs);
    if (s.stamp === this.stamp) return;
    this.stamp = s.stamp;
    const keys = new Map<string, KeyEntry>();
    const refused = new Set<string>();
    const rel = (p: string) => relative(this.dir, p);
    for (const f of s.files) {
      let text: string;
      try {
        const st = await stat(f.path);
        if (st.size > KEYFILE_MAX_BYTES) { this.warn(`ssh key file ${rel(f.path)} is larger than ${KEYFILE_MAX_BYTES} bytes: skipped`); continue; }
        text = await readFile(f.path, 'utf8');
      } catch { continue; }
      text.split(/\r?\n/).forEach((raw, i) => {
        const line = raw.trim();
        if (!line || line.startsWith('#')) return;
        const blob = parseKeyLine(line);
        const parsed = blob ? ssh2.utils.parseKey(blob) : undefined;
        if (!blob || !parsed || parsed instanceof Error) { this.warn(`ssh key file ${rel(f.path)}:${i + 1}: not a public key: skipped`); return; }
        const id = blob.toString('base64');
        const key = Array.isArray(parsed) ? (parsed as ParsedKey[])[0]! : parsed;
        const seen = keys.get(id);
        if (refused.has(id)) return;
        if (seen && seen.user !== f.user) {
          this.warn(`ssh key ${seen.fingerprint} is in ${rel(seen.file)} (user ${seen.user}) and ${rel(f.path)} (user ${f.user}): refused for both`);
          keys.delete(id);
          refused.add(id);
          return;
        }
        if (!seen) keys.set(id, { user: f.user, file: f.path, key, fingerprint: fingerprint(blob) });
      });
    }
    if (s.files.length === 0) this.warn(`ssh key directory ${this.dir} has no key files (<user>.pub)`);
    this.keys = keys;
  }
}
