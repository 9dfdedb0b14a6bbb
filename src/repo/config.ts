/**
 * git config reader: git's syntax, scopes, include.path, and the command
 * line (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { homedir } from 'node:os';
import { GitwireError } from '../errors.js';

export type ConfigScope = 'system' | 'global' | 'local' | 'worktree' | 'command';

export interface ConfigEntry {
  /** canonical key: section and name lowercased, subsection as written */
  key: string;
  /** `null` for a key with no `=` (implicit true) */
  value: string | null;
  scope: ConfigScope;
  origin: string;
  /** line of a file entry, as git reports it in config errors */
  line?: number;
}

const configError = (msg: string) => new GitwireError('GW_CONFIG', msg);

/** Canonicalise `Section.Sub.Sect.Key` → `section.Sub.Sect.key`. */
export function canonicalKey(key: string): string {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first < 0 || last === key.length - 1 || first === 0) throw configError(`key does not contain a section: ${key}`);
  if (first === last) return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}

/** Parse one config file's text. `includes` resolves include.path. */
export function parseConfig(
  text: string,
  origin: string,
  scope: ConfigScope,
  out: ConfigEntry[],
  depth = 0,
): ConfigEntry[] {
  let i = 0;
  const n = text.length;
  let line = 1;
  let section = '';
  const bad = () => configError(`bad config line ${line} in file ${origin}`);
  const peek = () => (i < n ? text[i]! : '');
  const next = (): string => {
    if (i >= n) return '\n'; // EOF behaves as end of line
    let c = text[i++]!;
    if (c === '\r' && text[i] === '\n') { c = '\n'; i++; }
    if (c === '\n') line++;
    return c;
  };
  const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';
  const isKeyChar = (c: string) => /[A-Za-z0-9-]/.test(c);

  const parseValue = (): string => {
    let v = '';
    let quote = false, comment = false, space = 0;
    for (;;) {
      const atEof = i >= n;
      const c = next();
      if (c === '\n') {
        if (quote) throw bad();
        return v;
      }
      if (comment) { if (atEof) return v; continue; }
      if (isSpace(c) && !quote) { if (v.length) space++; continue; }
      if (!quote && (c === ';' || c === '#')) { comment = true; continue; }
      for (; space; space--) v += ' ';
      if (c === '\\') {
        const e = next();
        switch (e) {
          case '\n': continue;
          case 't': v += '\t'; continue;
          case 'b': v += '\b'; continue;
          case 'n': v += '\n'; continue;
          case '\\': case '"': v += e; continue;
          default: throw bad();
        }
      }
      if (c === '"') { quote = !quote; continue; }
      v += c;
    }
  };

  while (i < n) {
    const c = next();
    if (c === '\n' || isSpace(c)) continue;
    if (c === '#' || c === ';') { while (i < n && next() !== '\n'); continue; }
    if (c === '\ufeff' && i === 1) continue;
    if (c === '[') {
      // section header
      let name = '';
      for (;;) {
        const d = next();
        if (d === '\n') throw bad();
        if (d === ']') { section = name.toLowerCase(); break; }
        if (isSpace(d)) {
          // extended: [section "sub"]
          while (isSpace(peek()) && peek() !== '\n') next();
          if (next() !== '"') throw bad();
          let sub = '';
          for (;;) {
            let e = next();
            if (e === '\n') throw bad();
            if (e === '"') break;
            if (e === '\\') { e = next(); if (e === '\n') throw bad(); }
            sub += e;
          }
          if (next() !== ']') throw bad();
          section = `${name.toLowerCase()}.${sub}`;
          break;
        }
        if (!isKeyChar(d) && d !== '.') throw bad();
        name += d;
      }
      // legacy [section.sub] lowercases the whole thing
      continue;
    }
    if (!/[A-Za-z]/.test(c)) throw bad();
    let name = c;
    while (isKeyChar(peek())) name += next();
    while (peek() === ' ' || peek() === '\t') next();
    let value: string | null = null;
    if (peek() === '=') { next(); value = parseValue(); }
    else if (peek() === '\n' || peek() === '' || peek() === '#' || peek() === ';' || peek() === '\r') {
      if (peek() === '#' || peek() === ';') while (i < n && next() !== '\n');
      else if (i < n) next();
    } else throw bad();
    if (!section) throw bad();
    const key = `${section}.${name.toLowerCase()}`;
    out.push({ key, value, scope, origin, line: text[i - 1] === '\n' ? line - 1 : line });
    if (key === 'include.path' && value !== null && depth < 10) {
      let p = value.startsWith('~/') ? join(homedir(), value.slice(2)) : value;
      if (!isAbsolute(p)) p = resolve(dirname(origin), p);
      let inc: string | undefined;
      try { inc = readFileSync(p, 'utf8'); } catch { inc = undefined; }
      if (inc !== undefined) parseConfig(inc, p, scope, out, depth + 1);
    }
  }
  return out;
}

/** Dequote one shell single-quoted word; returns [word, rest] or null. */
function sqDequoteStep(s: string, at: number): [string, number] | null {
  if (s[at] !== "'") return null;
  let out = '';
  let i = at + 1;
  for (;;) {
    const c = s[i];
    if (c === undefined) return null;
    if (c !== "'") { out += c; i++; continue; }
    i++;
    const d = s[i];
    if (d === undefined || d === ' ' || d === '\t' || d === '\n' || d === '=') return [out, i];
    if (d === '\\' && (s[i + 1] === '!' || s[i + 1] === "'") && s[i + 2] === "'") { out += s[i + 1]; i += 3; continue; }
    return null;
  }
}

function parseParameter(text: string, out: ConfigEntry[]): void {
  const eq = text.indexOf('=');
  const key = (eq < 0 ? text : text.slice(0, eq)).trim();
  if (!key) throw configError(`bogus config parameter: ${text}`);
  out.push({ key: canonicalKey(key), value: eq < 0 ? null : text.slice(eq + 1), scope: 'command', origin: 'command line' });
}

/** Entries from GIT_CONFIG_COUNT/KEY/VALUE and GIT_CONFIG_PARAMETERS, in git's order. */
export function parseCommandLineConfig(env: NodeJS.ProcessEnv): ConfigEntry[] {
  const out: ConfigEntry[] = [];
  const count = env.GIT_CONFIG_COUNT;
  if (count !== undefined && count !== '') {
    const k = Number(count);
    if (!Number.isInteger(k) || k < 0) throw configError('bogus count in GIT_CONFIG_COUNT');
    for (let j = 0; j < k; j++) {
      const key = env[`GIT_CONFIG_KEY_${j}`];
      if (key === undefined) throw configError(`missing config key GIT_CONFIG_KEY_${j}`);
      const value = env[`GIT_CONFIG_VALUE_${j}`];
      if (value === undefined) throw configError(`missing config value GIT_CONFIG_VALUE_${j}`);
      out.push({ key: canonicalKey(key), value, scope: 'command', origin: 'command line' });
    }
  }
  const s = env.GIT_CONFIG_PARAMETERS;
  if (s) {
    let i = 0;
    const bogus = () => configError('bogus format in GIT_CONFIG_PARAMETERS');
    while (i < s.length) {
      while (i < s.length && /\s/.test(s[i]!)) i++;
      if (i >= s.length) break;
      const r = sqDequoteStep(s, i);
      if (!r) throw bogus();
      const [word, after] = r;
      i = after;
      if (i >= s.length || /\s/.test(s[i]!)) { parseParameter(word, out); continue; }
      if (s[i] === '=') {
        i++;
        if (s[i] === "'") {
          const v = sqDequoteStep(s, i);
          if (!v || (v[1] < s.length && !/\s/.test(s[v[1]]!))) throw bogus();
          out.push({ key: canonicalKey(word), value: v[0], scope: 'command', origin: 'command line' });
          i = v[1];
        } else if (i >= s.length || /\s/.test(s[i]!)) {
          out.push({ key: canonicalKey(word), value: null, scope: 'command', origin: 'command line' });
        } else throw bogus();
        continue;
      }
      throw bogus();
    }
  }
  return out;
}

function readOptional(path: string): string | undefined {
  try { return readFileSync(path, 'utf8'); } catch { return undefined; }
}

export function parseBool(value: string | null, key = 'value'): boolean {
  if (value === null) return true;
  const v = value.toLowerCase();
  if (v === 'true' || v === 'yes' || v === 'on') return true;
  if (v === 'false' || v === 'no' || v === 'off' || v === '') return false;
  const n = parseIntStrict(value);
  if (n !== undefined) return n !== 0;
  throw configError(`bad boolean config value '${value}' for '${key}'`);
}

function parseIntStrict(value: string): number | undefined {
  const m = /^\s*([-+]?\d+)\s*([kKmMgG]?)$/.exec(value);
  if (!m) return undefined;
  const unit = m[2]!.toLowerCase();
  const mul = unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : unit === 'g' ? 1024 ** 3 : 1;
  return Number(m[1]) * mul;
}

export function parseInt_(value: string | null, key = 'value'): number {
  const n = value === null ? undefined : parseIntStrict(value);
  if (n === undefined) throw configError(`bad numeric config value '${value ?? ''}' for '${key}': invalid unit`);
  return n;
}

export class Config {
  constructor(readonly entries: ConfigEntry[]) {}

  /** Load system, global, repository and command-line config for a git dir. */
  static load(gitDir: string | undefined, env: NodeJS.ProcessEnv = process.env): Config {
    const out: ConfigEntry[] = [];
    if (!env.GIT_CONFIG_NOSYSTEM || !parseBool(env.GIT_CONFIG_NOSYSTEM)) {
      const sys = env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig';
      const t = readOptional(sys);
      if (t !== undefined) parseConfig(t, sys, 'system', out);
    }
    if (env.GIT_CONFIG_GLOBAL !== undefined) {
      const t = env.GIT_CONFIG_GLOBAL ? readOptional(env.GIT_CONFIG_GLOBAL) : undefined;
      if (t !== undefined) parseConfig(t, env.GIT_CONFIG_GLOBAL, 'global', out);
    } else {
      const home = env.HOME ?? homedir();
      const xdg = env.XDG_CONFIG_HOME ? join(env.XDG_CONFIG_HOME, 'git', 'config') : join(home, '.config', 'git', 'config');
      for (const p of [xdg, join(home, '.gitconfig')]) {
        const t = readOptional(p);
        if (t !== undefined) parseConfig(t, p, 'global', out);
      }
    }
    if (gitDir) {
      const p = join(gitDir, 'config');
      const t = readOptional(p);
      if (t !== undefined) parseConfig(t, p, 'local', out);
    }
    out.push(...parseCommandLineConfig(env));
    return new Config(out);
  }

  /** Last value wins, as in git. `undefined` if unset. */
  get(key: string): string | null | undefined {
    const k = canonicalKey(key);
    for (let j = this.entries.length - 1; j >= 0; j--) if (this.entries[j]!.key === k) return this.entries[j]!.value;
    return undefined;
  }

  getEntry(key: string, protectedOnly = false): ConfigEntry | undefined {
    const k = canonicalKey(key);
    for (let j = this.entries.length - 1; j >= 0; j--) {
      const e = this.entries[j]!;
      if (e.key === k && (!protectedOnly || e.scope !== 'local' && e.scope !== 'worktree')) return e;
    }
    return undefined;
  }

  getAll(key: string): Array<string | null> {
    const k = canonicalKey(key);
    return this.entries.filter((e) => e.key === k).map((e) => e.value);
  }

  getString(key: string): string | undefined {
    const v = this.get(key);
    if (v === null) throw configError(`missing value for '${canonicalKey(key)}'`);
    return v;
  }

  getBool(key: string, dflt: boolean): boolean {
    const v = this.get(key);
    return v === undefined ? dflt : parseBool(v, canonicalKey(key));
  }

  getInt(key: string, dflt: number): number {
    const v = this.get(key);
    return v === undefined ? dflt : parseInt_(v, canonicalKey(key));
  }

  /** Every entry in order, for callbacks that must see them all (hideRefs). */
  *each(): Iterable<ConfigEntry> { yield* this.entries; }
}
