/**
 * `gitwire serve --config FILE` and `GITWIRE_*` environment variables: the
 * same settings as the flags, by the same names. A YAML file's keys are the
 * long flag names (`http`, `pack-cache`, …) plus `root`; an environment
 * variable is `GITWIRE_` and the name in capitals with `_` for `-`
 * (`GITWIRE_PACK_CACHE`, `GITWIRE_ROOT`). Flags win over the environment,
 * the environment over the file. A key the file does not know is an error
 * that names it; unknown `GITWIRE_*` variables are left alone (other parts
 * of gitwire read some). Relative paths in a file are taken from the
 * file's directory, as the flags' are from the working directory.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** One parseArgs row: what a value of this key may be. */
export interface FlagSpec { type: 'string' | 'boolean'; multiple?: boolean }

export type Values = Record<string, string | boolean | string[] | undefined>;

/** keys whose values are paths (resolved against the file's directory) */
const PATH_KEYS = new Set(['root', 'htpasswd', 'auth-rules', 'pack-cache', 'ssh-keys', 'ssh-host-key', 'lfs-token-key-file', 'webhook-secret']);
/** flags that are not settings */
const NOT_SETTINGS = new Set(['help', 'config']);

export class ConfigError extends Error {}

const envName = (key: string) => `GITWIRE_${key.toUpperCase().replace(/-/g, '_')}`;

/** One value from the file, checked against its flag's type. */
function fromFile(file: string, key: string, spec: FlagSpec, v: unknown): string | boolean | string[] {
  const where = `${file}: ${key}`;
  const scalar = (x: unknown): string => {
    if (typeof x === 'string') return x;
    if (key === 'webhook' && typeof x === 'object' && x !== null && !Array.isArray(x)) return webhookEntry(where, x as Record<string, unknown>);
    if (typeof x === 'number' && Number.isFinite(x)) return String(x);
    throw new ConfigError(`${where}: expected a string or a number, not ${x === null ? 'null' : Array.isArray(x) ? 'a list' : typeof x}`);
  };
  let out: string | boolean | string[];
  if (spec.type === 'boolean') {
    if (typeof v !== 'boolean') throw new ConfigError(`${where}: expected true or false, not ${JSON.stringify(v)}`);
    out = v;
  } else if (spec.multiple) out = Array.isArray(v) ? v.map(scalar) : [scalar(v)];
  else out = scalar(v);
  if (PATH_KEYS.has(key)) {
    const base = dirname(file);
    out = Array.isArray(out) ? out.map((p) => resolve(base, p)) : typeof out === 'string' ? resolve(base, out) : out;
  }
  return out;
}

/**
 * A `webhook` entry written as a mapping, `{ url, repositories: [globs] }`:
 * the flag's form, `URL GLOB…`.
 */
function webhookEntry(where: string, m: Record<string, unknown>): string {
  for (const k of Object.keys(m)) if (k !== 'url' && k !== 'repositories') throw new ConfigError(`${where}: unknown key '${k}' (url, repositories)`);
  if (typeof m.url !== 'string' || /\s/.test(m.url)) throw new ConfigError(`${where}: expected url: <http(s) URL>`);
  const repos = m.repositories === undefined ? [] : Array.isArray(m.repositories) ? m.repositories : [m.repositories];
  for (const r of repos) if (typeof r !== 'string' || !r || /\s/.test(r)) throw new ConfigError(`${where}: repositories: expected repository globs, not ${JSON.stringify(r)}`);
  return [m.url, ...(repos as string[])].join(' ');
}

/** The settings of a YAML file (keys checked, values typed). */
export async function loadConfigFile(file: string, flags: Record<string, FlagSpec>): Promise<Values> {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new ConfigError(`cannot read config file '${file}': ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`); }
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length) throw new ConfigError(`${file}: ${doc.errors[0]!.message}`);
  const data: unknown = doc.toJS();
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) throw new ConfigError(`${file}: expected a mapping of settings (key: value)`);
  const out: Values = {};
  for (const [key, v] of Object.entries(data as Record<string, unknown>)) {
    const spec: FlagSpec | undefined = key === 'root' ? { type: 'string' } : !NOT_SETTINGS.has(key) && Object.hasOwn(flags, key) ? flags[key] : undefined;
    if (!spec) throw new ConfigError(`${file}: unknown key '${key}'`);
    if (v === null || v === undefined) continue;
    out[key] = fromFile(file, key, spec, v);
  }
  return out;
}

/** The settings given as GITWIRE_* variables. */
export function configFromEnv(env: NodeJS.ProcessEnv, flags: Record<string, FlagSpec>): Values {
  const out: Values = {};
  for (const [key, spec] of [['root', { type: 'string' } as FlagSpec] as const, ...Object.entries(flags)]) {
    if (NOT_SETTINGS.has(key)) continue;
    const name = envName(key);
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (spec.type === 'boolean') {
      if (/^(1|true|yes|on)$/i.test(raw)) out[key] = true;
      else if (/^(0|false|no|off)$/i.test(raw)) out[key] = false;
      else throw new ConfigError(`${name}: expected true or false, not '${raw}'`);
    } else out[key] = spec.multiple ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw;
  }
  return out;
}

/** flags > environment > file; `root` is the positional argument's setting. */
export function mergeSettings(file: Values, env: Values, flags: Values): Values {
  const out: Values = { ...file };
  for (const src of [env, flags]) for (const [k, v] of Object.entries(src)) if (v !== undefined) out[k] = v;
  return out;
}

/** The name of the variable that sets `key` (for docs and errors). */
export { envName };
