import { readFileSync } from 'node:fs';

let cached: string | undefined;
/** gitwire's package version. */
export function version(): string {
  if (!cached) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    cached = pkg.version;
  }
  return cached;
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
