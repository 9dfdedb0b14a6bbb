/** Repository features cat-file does not handle, refused up front with a clear message. */
import { GitwireError } from '../errors.js';
import type { Repository } from '../repo/repository.js';

/** extensions.compatObjectFormat (objects addressable by a second hash) is out of scope. */
export function assertCatFileSupported(repo: Repository): void {
  const compat = repo.config.get('extensions.compatobjectformat');
  if (compat !== undefined) {
    throw new GitwireError('GW_UNSUPPORTED_REPO',
      `extensions.compatObjectFormat is not supported by gitwire cat-file (repository ${repo.gitDir} sets it to '${compat ?? ''}')`);
  }
}
