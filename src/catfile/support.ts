/** Repository settings cat-file checks up front, with git's messages. */
import type { Repository } from '../repo/repository.js';
import { CompatView } from './compat.js';

/**
 * extensions.compatObjectFormat is served (see compat.ts); a bad value,
 * or one in a repository that says it is version 0, is refused before
 * any output, as git's setup does.
 */
export function assertCatFileSupported(repo: Repository): void {
  CompatView.of(repo);
}
