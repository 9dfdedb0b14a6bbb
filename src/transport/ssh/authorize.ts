/**
 * Users and rules for SSH, as `gitwire serve` wires them: the key
 * directory says who a key is, `--auth-rules` (when given) what that user
 * may do, exactly as for HTTP users. Without rules any known key may fetch
 * and push, as with OpenSSH's authorized_keys.
 */
import { realpathSync } from 'node:fs';
import { relative, sep } from 'node:path';
import type { AuthRules } from '../auth-rules.js';
import type { Deny, RequestInfo } from '../http.js';
import { KeyDir } from './keydir.js';
import type { SshAuthInfo } from './server.js';

/** `authenticate` from a key directory (gitolite's keydir layout). */
export function keyDirAuthenticate(keys: KeyDir): (a: SshAuthInfo) => Promise<string | false> {
  return async (a) => (await keys.lookup(a.key.data))?.user ?? false;
}

/**
 * The names rules see for a repository: its path under the root as it is
 * on disk (`group/project.git`; a work tree without its `/.git`), and the
 * same without `.git`. However the client spelled it (`group/project`,
 * `/group/project.git/`, `group//project`), the rules see these.
 */
export function ruleNames(root: string, dir: string): string[] {
  let realRoot = root;
  try { realRoot = realpathSync(root); } catch { /* as given */ }
  let rel = relative(realRoot, dir).split(sep).join('/');
  if (rel === '.git' || rel.endsWith('/.git')) rel = rel.slice(0, -5);
  const bare = rel.replace(/\.git$/, '');
  return bare !== rel ? [rel, bare] : [rel];
}

/**
 * `authorize` for SSH requests under rules: a repository the user may not
 * fetch is answered as missing (404: the SSH server says upload-pack's
 * "does not appear to be a git repository"); one they may fetch but not
 * push to says so.
 */
export function rulesAuthorize(rules: AuthRules | undefined, root: string): ((info: RequestInfo, dir: string) => true | Deny) | undefined {
  if (!rules) return undefined;
  return (info, dir) => {
    const user = info.user;
    const names = ruleNames(root, dir);
    const may = (access: 'fetch' | 'push') => !!user && names.some((n) => rules.allows(user, n, access));
    if (!may('fetch')) return { status: 404, message: 'Not Found' };
    if ((info.service === 'receive-pack' || info.service === 'lfs-upload') && !may('push')) {
      return { status: 403, message: `${user} may not push to '${info.path}'` }; // shown through reportSafe
    }
    return true;
  };
}
