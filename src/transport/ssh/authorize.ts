/**
 * Users and rules for SSH, as `gitwire serve` wires them: the key
 * directory says who a key is, `--auth-rules` (when given) what that user
 * may do, exactly as for HTTP users. Without rules any known key may fetch
 * and push, as with OpenSSH's authorized_keys.
 */
import type { AuthRules } from '../auth-rules.js';
import type { Deny, RequestInfo } from '../http.js';
import { KeyDir } from './keydir.js';
import type { SshAuthInfo } from './server.js';

/** `authenticate` from a key directory (gitolite's keydir layout). */
export function keyDirAuthenticate(keys: KeyDir): (a: SshAuthInfo) => Promise<string | false> {
  return async (a) => (await keys.lookup(a.key.data))?.user ?? false;
}

/**
 * `authorize` for SSH requests under rules: a repository the user may not
 * fetch is answered as missing (404: the SSH server says upload-pack's
 * "does not appear to be a git repository"); one they may fetch but not
 * push to says so.
 */
export function rulesAuthorize(rules: AuthRules | undefined): ((info: RequestInfo, dir: string) => true | Deny) | undefined {
  if (!rules) return undefined;
  return (info) => {
    const user = info.user;
    if (!user || !rules.allows(user, info.path, 'fetch')) return { status: 404, message: 'Not Found' };
    if (info.service === 'receive-pack' && !rules.allows(user, info.path, 'push')) {
      return { status: 403, message: `${user} may not push to '${info.path}'` };
    }
    return true;
  };
}
