import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;
/** gitwire's package version (from the nearest package.json named gitwire). */
export function version(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) {
      const pkg = JSON.parse(readFileSync(p, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'gitwire' && pkg.version) return (cached = pkg.version);
    }
    dir = dirname(dir);
  }
  return (cached = '0.0.0');
}

/** git_user_agent_sanitized(): GIT_USER_AGENT or gitwire/<version>, spaces → '.' */
export function userAgent(env: NodeJS.ProcessEnv = process.env): string {
  const ua = env.GIT_USER_AGENT ?? `gitwire/${version()}`;
  let out = '';
  for (const ch of ua) {
    const c = ch.charCodeAt(0);
    out += c <= 32 || c >= 127 ? '.' : ch;
  }
  return out;
}
