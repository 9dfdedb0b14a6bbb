/**
 * The pack-objects cache key: a SHA-256 over everything that decides what
 * pack-objects writes to stdout, and nothing else.
 *
 * In: the repository's identity (its real path), pack-objects' arguments
 * (without `--progress`, which only changes stderr), the exact stdin
 * (wants, haves, shallows), the object format, the hook command when
 * `uploadpack.packObjectsHook` is set, the configuration that changes the
 * pack's bytes (`pack.*`, `core.compression`, `core.bigFileThreshold`) and
 * the environment that changes which objects exist or which configuration
 * applies (`GIT_OBJECT_DIRECTORY`, `GIT_ALTERNATE_OBJECT_DIRECTORIES`,
 * `GIT_CONFIG_*`, replace refs).
 *
 * Out: client identity, session ids, the protocol version, sideband
 * choices and progress. `GIT_NAMESPACE` is out too: the namespace only
 * decides which ids the client may ask for, and those ids are already in
 * stdin; pack-objects' `--include-tag` walks `refs/tags/` of the whole
 * repository whatever the namespace (git's pack-objects.c).
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { packObjectsArgs, packObjectsInput, type PackObjectsRequest } from '../pack-objects.js';

export interface PackKeyInput {
  /** the repository's real path (commonDir) */
  repository: string;
  /** pack-objects' argv after `git` */
  args: string[];
  /** pack-objects' stdin */
  stdin: Buffer;
  objectFormat: 'sha1' | 'sha256';
  hook?: string;
  /** configuration entries that change the pack's bytes, `key=value` */
  config?: string[];
  /** environment entries that change the inputs, `NAME=value` */
  env?: string[];
}

/** Environment variables that change which objects pack-objects sees or which configuration it reads. */
const KEY_ENV = /^(GIT_OBJECT_DIRECTORY|GIT_ALTERNATE_OBJECT_DIRECTORIES|GIT_CONFIG(_.*)?|GIT_NO_REPLACE_OBJECTS|GIT_REPLACE_REF_BASE|GIT_SHALLOW_FILE|GIT_GRAFT_FILE|GIT_COMMON_DIR)$/;
/** Configuration that changes the bytes pack-objects writes. */
const KEY_CONFIG = /^(pack\.|core\.compression$|core\.bigfilethreshold$|core\.deltabasecachelimit$|repack\.)/;

/** pack-objects' arguments as far as they decide stdout: `--progress` only touches stderr. */
export function keyArgs(args: string[]): string[] {
  return args.filter((a) => a !== '--progress');
}

export function envForKey(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(env)) if (v !== undefined && KEY_ENV.test(k)) out.push(`${k}=${v}`);
  return out.sort();
}

export function configForKey(entries: Iterable<{ key: string; value: string | null }>): string[] {
  const out: string[] = [];
  for (const e of entries) if (KEY_CONFIG.test(e.key)) out.push(`${e.key}=${e.value ?? ''}`);
  return out;
}

function field(h: ReturnType<typeof createHash>, name: string, v: Buffer | string): void {
  const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
  const len = Buffer.allocUnsafe(8);
  len.writeBigUInt64BE(BigInt(b.length));
  h.update(name).update(len).update(b);
}

/** The key as 64 hex digits. Each field is length-prefixed, so no two inputs collide by concatenation. */
export function packCacheKey(k: PackKeyInput): string {
  const h = createHash('sha256');
  field(h, 'gitwire-pack-cache-v1', '');
  field(h, 'repository', k.repository);
  field(h, 'format', k.objectFormat);
  field(h, 'args', keyArgs(k.args).join('\0'));
  field(h, 'stdin', k.stdin);
  field(h, 'hook', k.hook ?? '');
  field(h, 'config', (k.config ?? []).join('\0'));
  field(h, 'env', (k.env ?? []).join('\0'));
  return h.digest('hex');
}

/** The key for a pack-objects request on a repository. */
export function keyForRequest(r: PackObjectsRequest, repo: { commonDir: string; format: 'sha1' | 'sha256'; config: { each(): Iterable<{ key: string; value: string | null }> } }): string {
  let real = repo.commonDir;
  try { real = realpathSync(repo.commonDir); } catch { /* keep the path as given */ }
  return packCacheKey({
    repository: real,
    args: packObjectsArgs(r),
    stdin: packObjectsInput(r),
    objectFormat: repo.format,
    hook: r.hook,
    config: configForKey(repo.config.each()),
    env: envForKey(r.env ?? process.env),
  });
}
