/**
 * Mapping a requested path to a repository under a root, safely: nothing
 * outside the root is ever served, whatever the path says (`..`,
 * absolute paths, percent-encoding, NUL bytes, symlinks leading out).
 */
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, relative, resolve, sep } from 'node:path';
import { locateRepository } from '../repo/discover.js';

/** A repository directory under `root`, or undefined ("not found" and "not allowed" alike). */
export function resolveUnderRoot(root: string, requested: string): string | undefined {
  if (requested.includes('\0') || requested.includes('\\')) return undefined;
  const segments = requested.split('/').filter((s) => s.length > 0 && s !== '.');
  if (segments.some((s) => s === '..' || s.startsWith('~'))) return undefined;
  let realRoot: string;
  try { realRoot = realpathSync(root); } catch { return undefined; }
  // a root that is itself a repository is served as `/`, `/<name>` and `/<name>.git`
  const name = basename(realRoot).replace(/\.git$/, '');
  if (segments.length === 0 || (segments.length === 1 && (segments[0] === name || segments[0] === `${name}.git`))) {
    try {
      const gd = realpathSync(locateRepository(realRoot, true).gitDir);
      if (within(realRoot, gd)) return gd;
    } catch {
      try {
        const gd = realpathSync(locateRepository(`${realRoot}/.git`, true).gitDir);
        if (within(realRoot, gd)) return gd;
      } catch { /* not a repository itself */ }
    }
  }
  const candidate = resolve(realRoot, ...segments);
  if (!within(realRoot, candidate)) return undefined;
  let gitDir: string;
  try { gitDir = locateRepository(candidate).gitDir; } catch { return undefined; }
  let real: string;
  try { real = realpathSync(gitDir); } catch { return undefined; }
  if (!within(realRoot, real)) return undefined;
  return real;
}

function within(root: string, p: string): boolean {
  const r = relative(root, p);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r));
}
